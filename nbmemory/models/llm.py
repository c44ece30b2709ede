"""Chat completions through litellm, so any provider works; the only module that imports it.

litellm takes seconds to import and by default fetches its price list over the network, so it
is imported on the first call (or ahead of it, in the background: :func:`import_in_background`),
with the variables that keep it offline set beforehand (a user who sets them first keeps their
own values). nbmemory's own offline model is answered here without litellm, as litellm would
hand its answer back, so that a notebook on it never waits for that import. Failures come back
as nbmemory's own exceptions, each keeping the provider's message.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

from nbmemory import errors
from nbmemory.models.reply import Reply, ToolCall

OFFLINE_MODEL = "nbmemory/offline"
_import_lock = threading.Lock()
_PIECES = re.compile(r"\S+\s*|\s+")  # how the offline model streams: word by word


def default_model() -> str:
    """``$NBMEMORY_MODEL`` if set, else the offline model: never a paid model by surprise."""
    return os.environ.get("NBMEMORY_MODEL") or OFFLINE_MODEL


def is_offline(model: str) -> bool:
    """Whether ``model`` is nbmemory's offline model (``nbmemory/...``): no litellm needed."""
    return model.startswith("nbmemory/")


def _keep_litellm_offline() -> None:
    """Set the switches that keep litellm's import from the network, unless the user set them."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")


@functools.cache
def litellm() -> Any:
    """litellm, imported once, offline by default, with nbmemory's offline model registered."""
    with _import_lock:
        _keep_litellm_offline()
        # pydantic complains about litellm's own types the first time they are used: noise in
        # a notebook cell that the user can do nothing about.
        warnings.filterwarnings("ignore", message=".*`ReadOnly` qualifier", category=UserWarning)
        import litellm as module

        module.suppress_debug_info = True
        module.custom_provider_map = [
            *[p for p in module.custom_provider_map if p.get("provider") != "nbmemory"],
            {"provider": "nbmemory", "custom_handler": _offline_provider()},
        ]
        return module


@functools.cache  # one import, however often it is asked for
def import_in_background() -> None:
    """Start importing litellm in a daemon thread, so that the first call to a provider does
    not wait for it (seconds); a call made meanwhile waits for that import to finish.

    Does nothing if litellm is imported already. It prints nothing, and a failure is left for
    the first call to report. For code about to call a model other than the offline one.
    """
    if "litellm" in sys.modules:
        return
    _keep_litellm_offline()  # here, not in the thread: the environment is changed by one thread
    threading.Thread(target=_import_quietly, name="nbmemory: import litellm", daemon=True).start()


def _import_quietly() -> None:
    try:
        litellm()
    except Exception:  # the first call imports it again, and says what went wrong
        return


def missing_keys(model: str, api_base: str | None = None) -> list[str]:
    """The secrets ``model`` needs that are not in the environment (none for local models).

    Endpoint variables (``*_API_BASE``) are not secrets: an ``api_base`` argument, or the
    provider's own default (Ollama's is this machine), stands in for them.
    """
    if is_offline(model):
        return []
    try:
        found = litellm().validate_environment(model)
    except Exception:  # an unknown provider: let the call itself say what is wrong
        return []
    return [name for name in found.get("missing_keys") or [] if not name.endswith("_API_BASE")]


def check_key(model: str, api_key: str | None = None, api_base: str | None = None) -> None:
    """Raise ``MissingKeyError`` naming what to set if ``model`` cannot be called as it is."""
    if api_key is None and (missing := missing_keys(model, api_base)):
        raise errors.MissingKeyError(model, missing)


def _translate(exc: Exception, model: str) -> errors.ModelError:
    """litellm's exception as one of nbmemory's, keeping the provider's message."""
    lib = litellm()
    message = f"{model}: {getattr(exc, 'message', None) or exc}"
    if isinstance(exc, lib.AuthenticationError):
        return errors.AuthenticationError(message, model=model)
    if isinstance(exc, lib.RateLimitError):
        return errors.RateLimitError(message, model=model)
    if isinstance(exc, lib.Timeout):
        return errors.ModelTimeoutError(message, model=model)
    return errors.ProviderError(message, model=model)


def _options(model: str, api_key: str | None, **options: Any) -> dict[str, Any]:
    check_key(model, api_key, options.get("api_base"))
    options["api_key"] = api_key
    options["tools"] = options.get("tools") or None
    return {k: v for k, v in options.items() if v is not None}


def complete(
    model: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    on_delta: Callable[[str], None] | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    timeout: float | None = 600,
    max_retries: int = 2,
    api_base: str | None = None,
    api_key: str | None = None,
) -> Reply:
    """One chat completion. With ``on_delta`` the reply streams, each text piece passed on.

    Rate limits and server errors are retried ``max_retries`` times with backoff. Raises
    ``MissingKeyError`` before any request when a key is missing, else a ``ModelError``.
    """
    options = dict(
        tools=tools,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout=timeout,
        max_retries=max_retries,
        api_base=api_base,
    )
    if on_delta is not None:
        stream = Stream(model, messages, api_key=api_key, **options)
        for piece in stream:
            on_delta(piece)
        assert stream.reply is not None
        return stream.reply
    if is_offline(model):
        return _offline_reply(model, messages, _options(model, api_key, **options))
    return _reply(completion(model=model, messages=messages, api_key=api_key, **options).choices[0])


def completion(
    *, model: str, messages: list[dict[str, Any]], api_key: str | None = None, **options: Any
) -> Any:
    """``litellm.completion`` as nbmemory makes it (a key checked before any request, errors
    as ``ModelError``s; options of :func:`complete`): litellm's response, for code that reads
    ``response.choices[0].message.content`` and for tests that put a double in its place."""
    sent = _options(model, api_key, **options)
    if is_offline(model):
        return _offline_response(model, _offline_reply(model, messages, sent))
    try:
        return litellm().completion(model=model, messages=messages, **sent)
    except errors.NbmemoryError:
        raise
    except Exception as exc:
        raise _translate(exc, model) from exc


class Stream:
    """A streamed chat completion: iterate for the text pieces; ``reply`` holds the whole
    answer, tool calls included, once the iteration is over.

    Takes the options of :func:`complete`; raises the same errors while iterating.
    """

    def __init__(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        api_key: str | None = None,
        **options: Any,
    ) -> None:
        self.model = model
        self.messages = messages
        self.reply: Reply | None = None
        self._options = _options(model, api_key, **options)

    def __iter__(self) -> Iterator[str]:
        if is_offline(self.model):
            reply = _offline_reply(self.model, self.messages, self._options)
            yield from _PIECES.findall(reply.content)
            self.reply = reply
            return
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finish = None
        try:
            chunks = litellm().completion(
                model=self.model, messages=self.messages, stream=True, **self._options
            )
            for chunk in chunks:
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                delta = choice.delta
                for piece in delta.tool_calls or []:
                    call = calls.setdefault(
                        piece.index or 0, {"id": None, "name": "", "arguments": ""}
                    )
                    call["id"] = call["id"] or piece.id
                    if piece.function is not None:
                        call["name"] = call["name"] or piece.function.name or ""
                        call["arguments"] += piece.function.arguments or ""
                finish = choice.finish_reason or finish
                if delta.content:
                    text.append(delta.content)
                    yield delta.content
        except errors.NbmemoryError:
            raise
        except Exception as exc:
            raise _translate(exc, self.model) from exc
        tool_calls = [
            ToolCall(c["id"] or f"call_{i}", c["name"], c["arguments"] or "{}")
            for i, c in sorted(calls.items())
        ]
        self.reply = Reply("".join(text), tool_calls, finish)


def _reply(choice: Any) -> Reply:
    message = choice.message
    calls = [
        ToolCall(c.id or f"call_{i}", c.function.name, c.function.arguments or "{}")
        for i, c in enumerate(message.tool_calls or [])
    ]
    return Reply(message.content or "", calls, choice.finish_reason)


def _offline_reply(model: str, messages: list[dict[str, Any]], options: dict[str, Any]) -> Reply:
    """The offline model's answer, as litellm hands it back from :func:`_offline_provider`."""
    try:
        return _respond(messages, options)
    except Exception as exc:
        raise errors.ProviderError(f"{model}: {exc}", model=model) from exc


def _respond(messages: list[dict[str, Any]], options: dict[str, Any]) -> Reply:
    from nbmemory.models.offline import respond

    return respond(messages, options.get("tools"), options.get("max_tokens"))


def _offline_response(model: str, reply: Reply) -> Any:
    """``reply`` in the shape of litellm's response, as far as callers of :func:`completion`
    read it (``choices[0].message.content``, ``.tool_calls``, ``choices[0].finish_reason``)."""
    calls = [
        SimpleNamespace(
            id=c.id, type="function", function=SimpleNamespace(name=c.name, arguments=c.arguments)
        )
        for c in reply.tool_calls
    ]
    message = SimpleNamespace(
        role="assistant", content=reply.content or None, tool_calls=calls or None
    )
    choice = SimpleNamespace(index=0, message=message, finish_reason=reply.finish_reason)
    return SimpleNamespace(model=model, choices=[choice])


def _offline_provider() -> Any:
    """The litellm custom handler that serves ``nbmemory/offline`` to code calling litellm
    itself (nbmemory's own calls are answered by :func:`_offline_reply`)."""
    from litellm import CustomLLM, ModelResponse

    class OfflineLLM(CustomLLM):
        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            reply = _respond(messages, kwargs.get("optional_params") or {})
            return ModelResponse(
                model="nbmemory/offline",
                choices=[{"message": reply.message(), "finish_reason": reply.finish_reason}],
            )

        def streaming(
            self, model: str, messages: list, *args: Any, **kwargs: Any
        ) -> Iterator[dict]:
            reply = _respond(messages, kwargs.get("optional_params") or {})
            for piece in _PIECES.findall(reply.content):
                yield {
                    "text": piece,
                    "tool_use": None,
                    "is_finished": False,
                    "finish_reason": "",
                    "usage": None,
                    "index": 0,
                }
            for i, call in enumerate(reply.tool_calls):
                use = {
                    "id": call.id,
                    "type": "function",
                    "index": i,
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                yield {
                    "text": "",
                    "tool_use": use,
                    "is_finished": False,
                    "finish_reason": "",
                    "usage": None,
                    "index": 0,
                }
            yield {
                "text": "",
                "tool_use": None,
                "is_finished": True,
                "finish_reason": reply.finish_reason or "stop",
                "usage": None,
                "index": 0,
            }

    return OfflineLLM()


# ----------------------------------------------------------------------------------------------
# Embeddings


WORDS_MODEL = "nbmemory/words"
"""The offline embedding model: word vectors shipped with nbmemory (``word_vectors``)."""


def default_embedding_model() -> str:
    """``$NBMEMORY_EMBEDDING_MODEL`` if set, else the offline word vectors (``WORDS_MODEL``):
    recall ranks by meaning with no call made."""
    return os.environ.get("NBMEMORY_EMBEDDING_MODEL") or WORDS_MODEL


def embedding_model(setting: str | None) -> str:
    """The embedding model a setting names, ``""`` for none: ``None`` is the default
    (:func:`default_embedding_model`), ``"none"`` (any case) is recall by words alone."""
    chosen = default_embedding_model() if setting is None else setting
    return "" if chosen.lower() == "none" else chosen


def embed(model: str, texts: list[str], *, api_key: str | None = None, **options: Any) -> list[Any]:
    """One ``litellm.embedding`` request: a vector per text, in order (``options``: ``api_base``,
    ``timeout``, ``max_retries``, ``dimensions``, …). Raises ``MissingKeyError`` before any
    request when a key is missing, else a ``ModelError`` for any failure, a reply of the wrong
    length included."""
    check_key(model, api_key, options.get("api_base"))
    sent = {k: v for k, v in {**options, "api_key": api_key}.items() if v is not None}
    try:
        response = litellm().embedding(model=model, input=texts, **sent)
        data = sorted(response.data, key=lambda item: item["index"])
        vectors = [item["embedding"] for item in data]
    except errors.NbmemoryError:
        raise
    except Exception as exc:
        raise _translate(exc, model) from exc
    if len(vectors) != len(texts):
        raise errors.ProviderError(
            f"{model}: {len(vectors)} embeddings for {len(texts)} texts", model=model
        )
    return vectors
