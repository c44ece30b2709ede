"""The text a resumed memory is sent to the model as, and the marks that open its parts.

An agent resuming from its MEMORY.md sends the model the file as one system message, its
preload: ``PRELOAD_MARKER``, a line that says what follows, then the file as it is (its header
and its blocks, one block a message). A summary that a compaction leaves opens with
``SUMMARY_MARKER``. The token counts of these texts are what the views and the compressor
reckon a memory by, so they are made here for all of them.
"""

from __future__ import annotations

from typing import Any

from nbmemory.memory.token_counts import KeptCounts, counted
from nbmemory.store import memory_format
from nbmemory.store.memory_format import format_block
from nbmemory.tokens import TokenCounter

PRELOAD_MARKER = "[Persistent Memory — MEMORY.md]"
SUMMARY_MARKER = "[Compressed Memory Summary]"
_PRELOAD_INTRO = (
    "Messages kept from earlier sessions of this agent, oldest first. "
    "Treat them as what you remember, not as new requests."
)
_PRELOAD_HEAD = f"{PRELOAD_MARKER}\n{_PRELOAD_INTRO}\n\n"


def preload_text(header: str, blocks: str) -> str:
    """The system message that carries a resumed memory to the model: a marker, a line that
    says what it is, then the file (its header and blocks) as it is; read by
    :func:`preloaded_messages`."""
    return _PRELOAD_HEAD + header + blocks


def file_preload_text(data: bytes) -> str:
    """:func:`preload_text` of a whole file's bytes, decoded with its head in one go (a big
    file's text is not copied again to join them)."""
    return (_PRELOAD_HEAD.encode() + data).decode("utf-8")


def preloaded_messages(text: str) -> list[dict[str, Any]] | None:
    """The messages inside a preloaded-memory system message (:func:`preload_text`), or
    ``None`` if it is not one."""
    if not text.startswith(PRELOAD_MARKER):
        return None
    first = text.find("\n### ")
    return memory_format.parse(text[first + 1 :], header=False).messages if first >= 0 else []


def file_preloaded_messages(data: bytes) -> list[dict[str, Any]]:
    """The messages of a whole file's bytes (one that ``memory_format.read_whole`` found whole):
    what its preload holds."""
    return memory_format.parse(data).messages


def block_text(message: dict[str, Any]) -> str:
    """One message as MEMORY.md holds it (and as a resumed agent's model reads it)."""
    return format_block(message["role"], message["content"], message.get("timestamp", ""))


def block_tokens(counter: TokenCounter, message: dict[str, Any]) -> int:
    """Tokens of one message as MEMORY.md holds it (and as a resumed agent's model reads it)."""
    return counter.count(block_text(message))


def preload_texts(header: str) -> tuple[str, str]:
    """What the preloaded memory adds besides its blocks: its role and intro, and the file's
    header (the preload is the whole file, as the spec says)."""
    return f"System: {_PRELOAD_HEAD}", header


def preload_tokens(counter: TokenCounter, header: str, kept: KeptCounts | None = None) -> int:
    """Tokens of :func:`preload_texts`, ``kept`` ones taken as they are; the head, the same in
    every preload, is counted once per encoding (``token_counts.counted``)."""
    if kept is not None:
        return sum(kept.tokens(text) for text in preload_texts(header))
    head, header = preload_texts(header)
    return counted(counter, head) + counter.count(header)
