"""Token counting and context windows that work with no network.

tiktoken normally downloads its encodings; litellm ships three of them, and nbmemory reads them
from litellm's folder itself (faster than tiktoken's reader, and with the same sha256 check).
Context windows come from litellm's bundled model map, read as a data file so that litellm
itself (seconds to import) is never imported here.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import importlib.util
import json
import math
import re
import threading
import types
import unicodedata
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_CONTEXT_WINDOW = 16000
APPROXIMATE = "approximate (4 characters a token)"

_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")
_load_lock = threading.Lock()


@functools.cache
def _litellm_dir() -> Path | None:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _bare_model(model: str) -> str:
    return model.rsplit("/", 1)[-1].lower()


def encoding_name_for_model(model: str | None) -> str:
    """The tiktoken encoding used for ``model``: o200k for recent OpenAI models, else cl100k.

    For models of other vendors this is an estimate: their tokenizers are not public.
    """
    return (
        "o200k_base" if model and _bare_model(model).startswith(_O200K_PREFIXES) else "cl100k_base"
    )


@functools.cache
def encoding_file(name: str) -> Path | None:
    """litellm's bundled copy of tiktoken's encoding ``name`` (named, as in tiktoken's cache, by
    the SHA-1 of its URL), or ``None`` if it is not there."""
    folder = _litellm_dir()
    if folder is None:
        return None
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    path = folder / "litellm_core_utils" / "tokenizers" / hashlib.sha1(url.encode()).hexdigest()
    return path if path.is_file() else None


def read_ranks(path: Path, expected_hash: str | None) -> dict[bytes, int]:
    """The token ranks of a ``.tiktoken`` file, as ``tiktoken.load.load_tiktoken_bpe`` reads
    them, in half its time: one split of the whole file and one C call per token
    (``binascii.a2b_base64`` is what ``base64.b64decode`` calls). ``ValueError`` if the file's
    sha256 is not ``expected_hash``, as tiktoken would refuse it."""
    data = path.read_bytes()
    if expected_hash is not None and hashlib.sha256(data).hexdigest() != expected_hash:
        raise ValueError(f"{path} is damaged: its sha256 is not the one tiktoken expects")
    parts = data.split()
    if len(parts) % 2:
        raise ValueError(f"{path} is damaged: a line is not a token and its rank")
    return dict(zip(map(binascii.a2b_base64, parts[::2]), map(int, parts[1::2]), strict=True))


@functools.cache
def get_encoding(name: str) -> Any:
    """The tiktoken ``Encoding`` called ``name``, loaded from litellm's bundled files.

    Its pattern and special tokens are those tiktoken's own constructor gives; its ranks are
    read by :func:`read_ranks`. Returns ``None`` when the file is not there or is damaged
    (counting then falls back to an estimate); never downloads.
    """
    import tiktoken
    from tiktoken_ext import openai_public

    constructor = openai_public.ENCODING_CONSTRUCTORS.get(name)
    if constructor is None or encoding_file(name) is None:
        return None

    def ranks(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        path = encoding_file(url.rsplit("/", 1)[-1].removesuffix(".tiktoken"))
        if path is None:
            raise ValueError(f"{url} is not bundled with litellm")
        return read_ranks(path, expected_hash)

    # The constructor run with its own globals but for the reader: no module is patched, so
    # another thread's tiktoken.get_encoding is left alone.
    reading = types.FunctionType(
        constructor.__code__,
        {**constructor.__globals__, "load_tiktoken_bpe": ranks},
        constructor.__name__,
    )
    with _load_lock:
        try:
            return tiktoken.Encoding(**reading())
        except (OSError, ValueError) as exc:
            warnings.warn(f"tiktoken encoding {name} not loaded: {exc}", stacklevel=2)
            return None


@dataclass(frozen=True)
class TokenUsage:
    """How full the context is: tokens used of ``context_length``, counted with ``encoding``."""

    used: int
    context_length: int
    encoding: str

    @property
    def fraction(self) -> float:
        return self.used / self.context_length if self.context_length else 0.0


class TokenCounter:
    """Counts tokens of text for one model; ``encoding_name`` says how."""

    def __init__(self, model: str | None = None) -> None:
        self.model = model
        self._encoding: Any = None
        self._encoding_name = encoding_name_for_model(model)

    @property
    def encoding_name(self) -> str:
        """The tiktoken encoding used, or ``APPROXIMATE`` when none can be loaded. Known
        without loading the encoding when its file is there: loading waits for a count, which
        token counts kept beside a memory may spare (``nbmemory.memory.token_counts``)."""
        if encoding_file(self._encoding_name) is None:
            self._load()
        return self._encoding_name

    def _load(self) -> None:
        if self._encoding is None and self._encoding_name != APPROXIMATE:
            self._encoding = get_encoding(self._encoding_name)
            if self._encoding is None:
                warnings.warn(
                    f"tiktoken encoding {self._encoding_name} is not available offline; "
                    "token counts are estimated from text length",
                    stacklevel=3,
                )
                self._encoding_name = APPROXIMATE

    def count(self, text: str) -> int:
        """The number of tokens in ``text``; special-token text is counted as ordinary text."""
        self._load()
        if self._encoding is None:
            return math.ceil(len(text) / 4)
        if len(text) <= _PIECE * 2:
            if len(text) < _LONG_WORD or max(map(len, text.split())) < _LONG_WORD:
                return len(self._encoding.encode_ordinary(text))
            return self._with_long_words(text)
        total = start = 0
        for run in _LONG_RUN.finditer(text):
            total += self._exact(text[start : run.start()]) + self._estimate(run[0])
            start = run.end()
        return total + self._exact(text[start:])

    def count_ending(self, text: str, end: str) -> tuple[int, int]:
        """The tokens of ``text`` and of ``text + end``, where ``end`` is whitespace (the blank
        line between two messages), counting ``text`` once: only its last words are counted
        again with ``end`` after them, as the tokenizer may join the two."""
        alone = self.count(text)
        if self._encoding is None or self._encoding_name not in _SPACED or not end.isspace():
            return alone, self.count(text + end)
        if not text or unicodedata.category(text[-1])[0] in "LN":
            return alone, alone + self._kept_count(end)
        cut = text.rfind(" ")
        while cut > 0 and unicodedata.category(text[cut - 1])[0] not in "LN":
            cut = text.rfind(" ", 0, cut)
        if cut <= 0 or len(text) - cut > _TAIL:
            return alone, self.count(text + end)
        tail = text[cut:]
        return alone, alone + self.count(tail + end) - self.count(tail)

    def _with_long_words(self, text: str) -> int:
        """Tokens of a text holding words of ``_LONG_WORD`` letters or more (runs that tiktoken
        takes long over: its time grows with the square of a word's length), each long word
        counted once per process and encoding, the text around it as it is."""
        if self._encoding_name not in _SPACED:
            return len(self._encoding.encode_ordinary(text))
        total = start = at = 0
        for word in text.split(" "):
            if len(word) >= _LONG_WORD:
                end = 0
                for run in word.split():
                    first = word.find(run, end)
                    end = first + len(run)
                    if len(run) < _LONG_WORD or not run.isalpha():
                        continue
                    if first == 0:
                        cut = max(at - 1, 0)  # the space before a word starts its piece
                    elif word[first - 1] in "\r\n":
                        cut = at + first
                    else:
                        continue
                    total += len(self._encoding.encode_ordinary(text[start:cut]))
                    total += self._kept_count(text[cut : at + end])
                    start = at + end
            at += len(word) + 1
        return total + len(self._encoding.encode_ordinary(text[start:]))

    def _kept_count(self, text: str) -> int:
        """The tokens of ``text``, counted once per process and encoding: a long word, or the
        blank line between messages."""
        counts = _kept_counts.setdefault(self._encoding_name, {})
        found = counts.get(text)
        if found is None:
            if len(counts) >= _COUNTS_KEPT:
                counts.clear()
            found = counts[text] = len(self._encoding.encode_ordinary(text))
        return found

    def _exact(self, text: str) -> int:
        return sum(len(self._encoding.encode_ordinary(piece)) for piece in _pieces(text))

    def _estimate(self, run: str) -> int:
        """Tokens of a run without whitespace longer than ``_LONG_RUN_CHARS``, estimated from
        three samples (its start, middle and end) counted exactly: tiktoken takes time that
        grows faster than the length on such runs (3 s for 10 MiB), this a few milliseconds.
        Within 2% of the exact count for runs as uniform as encoded data or repeated text."""
        middle = (len(run) - _SAMPLE) // 2
        samples = (run[:_SAMPLE], run[middle : middle + _SAMPLE], run[-_SAMPLE:])
        counted = sum(len(self._encoding.encode_ordinary(sample)) for sample in samples)
        return math.ceil(counted * len(run) / (3 * _SAMPLE))

    def fit(self, text: str, budget: int, *, tail: bool = False) -> str:
        """The longest start (or, with ``tail``, end) of ``text`` that counts at most ``budget``
        tokens: how a message too long for what is left of a window is cut."""
        if budget <= 0:
            return ""
        low, high = 0, len(text)
        while low < high:
            size = (low + high + 1) // 2
            if self.count(text[len(text) - size :] if tail else text[:size]) <= budget:
                low = size
            else:
                high = size - 1
        return text[len(text) - low :] if tail else text[:low]


_PIECE = 4096
_LONG_RUN_CHARS = 32768
_LONG_RUN = re.compile(rf"\S{{{_LONG_RUN_CHARS + 1},}}")
"""A run without whitespace whose tokens are estimated, not counted (see ``_estimate``)."""
_SAMPLE = 8192
_SPACED = frozenset({"cl100k_base", "o200k_base"})
"""The encodings nbmemory counts with (:func:`encoding_name_for_model`), whose split starts a
piece at a space or a line break before a letter, and at whitespace after a letter or digit,
whatever follows: a text cut there counts as the sum of its parts, exactly."""
_LONG_WORD = 40
_COUNTS_KEPT = 1024
_TAIL = 256
"""The longest end of a text recounted with the blank line after it: else all of it is."""
_kept_counts: dict[str, dict[str, int]] = {}


def _pieces(text: str) -> Iterator[str]:
    """``text`` in pieces of at most ``_PIECE`` characters, each cut before a space that starts
    a word where there is one, so the pieces count as the whole does (give or take a token
    where a long run without spaces is cut): tiktoken slows down on very long runs."""
    start = 0
    while len(text) - start > _PIECE:
        end = start + _PIECE
        cut = text.rfind(" ", start + _PIECE // 2, end)
        if cut <= start or text[cut - 1].isspace():
            cut = end
        yield text[start:cut]
        start = cut
    yield text[start:]


_MODEL_MAP = "model_prices_and_context_window_backup.json"
_DECODER = json.JSONDecoder()


@functools.cache
def _model_map_text() -> str:
    folder = _litellm_dir()
    try:
        return "" if folder is None else (folder / _MODEL_MAP).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return ""


@functools.cache
def _model_map() -> dict[str, Any]:
    try:
        return json.loads(_model_map_text() or "{}")
    except ValueError:
        return {}


@functools.cache
def _model_entry(key: str) -> dict[str, Any] | None:
    """litellm's map entry for ``key``, parsing that entry alone where it can be found: the
    map is megabytes of JSON and a token figure needs one window from it. The whole map is
    parsed when the text does not show the entry plainly."""
    text = _model_map_text()
    quoted = json.dumps(key)
    at = text.rfind(quoted + ": {") if key.isascii() else -1
    if at < 0 and key.isascii() and quoted not in text:
        return None
    entry: Any = None
    if at >= 0:
        try:
            entry = _DECODER.raw_decode(text, at + len(quoted) + 2)[0]
        except ValueError:
            entry = None
    if not isinstance(entry, dict) or "litellm_provider" not in entry:
        entry = _model_map().get(key)
    return entry if isinstance(entry, dict) else None


def context_window(model: str | None) -> int:
    """The input context window of ``model`` in tokens, from litellm's bundled map, else 16000
    (nbmemory's own models, ``nbmemory/...``, are not in the map)."""
    if not model or model.startswith("nbmemory/"):
        return DEFAULT_CONTEXT_WINDOW
    for key in (model, model.split("/", 1)[-1], _bare_model(model)):
        window = (_model_entry(key) or {}).get("max_input_tokens")
        if isinstance(window, int) and window > 0:
            return window
    return DEFAULT_CONTEXT_WINDOW
