"""What an agent last ran with, kept beside its ``MEMORY.md`` so that every view can use it.

A gauge needs the agent's real context window and compression threshold, and a token count
needs its model's tokenizer, its system prompt and its tools; none of that is in ``MEMORY.md``.
The agent records them in ``settings.json`` (written atomically, ``0600``) when it is built and
before each run; a reader that finds no record falls back to the defaults and says so.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from nbmemory.store.docs import AgentDocs
from nbmemory.tokens import context_window, encoding_name_for_model

SETTINGS_FILE = "settings.json"
DEFAULT_THRESHOLD = 0.9
"""The compression threshold of an agent built with the defaults."""


def reply_room(context_length: int, max_tokens: int | None = None) -> int:
    """Tokens a request keeps free for the reply: ``max_tokens``, else an eighth of the window."""
    return max_tokens or min(4096, context_length // 8)


FIXED_PARTS = ("system prompt", "rules", "pinned notes", "tool schemas", "reply room")
"""The parts of a request (``wording.PARTS``) that no compaction makes smaller."""
SMALLEST_SUMMARY_TOKENS = 32
"""The least a compaction leaves in the memory: the summary's marker and a sentence."""


def compaction_floor(
    parts: Iterable[tuple[str, int]], context_length: int, threshold: float | None
) -> tuple[str, int] | None:
    """The largest fixed part of a request, as ``(name, tokens)``, when even the smallest
    compaction cannot bring it below ``threshold`` of ``context_length``: the fixed parts
    (:data:`FIXED_PARTS`) and :data:`SMALLEST_SUMMARY_TOKENS` reach the threshold, so
    compacting would cost a summarizer call and change nothing. ``None`` when a compaction can
    get below it (or compression is off)."""
    if threshold is None or not context_length:
        return None
    fixed = [(name, tokens) for name, tokens in parts if name in FIXED_PARTS]
    if sum(t for _, t in fixed) + SMALLEST_SUMMARY_TOKENS < threshold * context_length:
        return None
    return max(fixed, key=lambda part: part[1], default=("system prompt", 0))


@dataclass(frozen=True)
class RunSettings:
    """An agent's model, window and threshold, and the tokens every request carries.

    ``threshold`` is ``None`` when context compression is off. ``static_tokens`` counts the
    system prompt and rules (``rules_tokens`` of them the rules); ``overhead_tokens`` the tool
    schemas (``tool_tokens``) and the room kept for the reply.

    ``session`` says which part of MEMORY.md the agent's live process read at its start: its
    process id, the file's inode then, and how many messages it preloaded. A view splits the
    memory into earlier sessions and this session with it while that process runs.
    """

    model: str
    context_length: int
    threshold: float | None
    encoding: str
    static_tokens: int = 0
    overhead_tokens: int = 0
    rules_tokens: int = 0
    tool_tokens: int = 0
    session: tuple[int, int, int] | None = None


@functools.lru_cache(maxsize=64)  # a listing asks it for every agent that never ran here
def default_settings(model: str) -> RunSettings:
    """What an agent on ``model`` built with the defaults would record (no prompt, no tools)."""
    window = context_window(model)
    return RunSettings(
        model=model,
        context_length=window,
        threshold=DEFAULT_THRESHOLD,
        encoding=encoding_name_for_model(model),
        overhead_tokens=reply_room(window),
    )


def read_settings(docs: AgentDocs) -> RunSettings | None:
    """The settings an agent recorded among its documents, or ``None`` if there are none (or
    they cannot be read)."""
    try:
        data = json.loads(docs.read(SETTINGS_FILE))
        fields = {key: data[key] for key in RunSettings.__dataclass_fields__ if key in data}
        if fields.get("session") is not None:
            fields["session"] = tuple(int(n) for n in fields["session"])
        return RunSettings(**fields)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_settings(docs: AgentDocs, settings: RunSettings) -> None:
    """Record ``settings`` among an agent's documents, replacing the old record atomically."""
    text = json.dumps(asdict(settings), indent=2) + "\n"
    docs.write(SETTINGS_FILE, text, durable=False)
