"""The token counts a conversation makes of its memory's blocks, and when it keeps them.

A conversation with a memory counts each block once, as a resumed agent's model reads it
(:func:`~nbmemory.memory.preload.block_text`), taking the counts kept beside the memory
(``nbmemory.memory.token_counts``) as they are; what it counted it keeps there in turn, so
that a resumed agent, and every view, need not count it again.
"""

from __future__ import annotations

from typing import Any

from nbmemory.memory.preload import block_text, preload_texts
from nbmemory.memory.token_counts import KeptCounts, digest, write_counts
from nbmemory.tokens import TokenCounter

KEEP_EVERY = 64
KEEP_SHARE = 8
"""Blocks counted by a conversation between two writes of its kept counts: ``KEEP_EVERY``, or
an eighth of the memory once that is more, so that keeping them costs a constant time per
message however long the memory grows."""


class BlockCounts:
    """The tokens of each block of one memory, oldest first, and of its preload's head and
    header; counted blocks are only ever added to (a memory that changed otherwise than by
    growing gets a new ``BlockCounts``)."""

    def __init__(self) -> None:
        self.counts: list[int] = []
        self.keys: list[str | None] = []
        """Each block's :func:`~nbmemory.memory.token_counts.digest` (``None`` for a blank one)."""
        self.total = 0
        self.preload: list[int] = []
        """Tokens of the preload's head and of the header (see :func:`preload_texts`)."""
        self.unkept = 0
        """Blocks counted (not taken from the kept counts) since the counts were last kept."""

    def __len__(self) -> int:
        return len(self.counts)

    def tokens(self) -> int:
        """Tokens of the memory as preloaded: its head, its header and every block counted."""
        return sum(self.preload) + self.total

    def count(
        self, docs: Any, counter: TokenCounter, header: str, new: list[dict[str, Any] | None]
    ) -> bool:
        """Count the blocks ``new`` (``None`` for a message never written) that follow those
        counted, and the preload's head and ``header`` the first time, taking the counts kept
        for agent ``docs`` as they are; whether enough were counted since the counts were last
        kept to keep them now (:meth:`keep`)."""
        kept = KeptCounts(docs, counter)
        texts = [block_text(m) for m in new if m is not None]
        keys = [digest(text) for text in texts]
        counts = iter(kept.each(texts, keys))
        found = iter(keys)
        for message in new:
            self.counts.append(0 if message is None else next(counts))
            self.keys.append(None if message is None else next(found))
            self.total += self.counts[-1]
        if not self.preload:
            self.preload = [kept.tokens(text) for text in preload_texts(header)]
        self.unkept += kept.counted
        blocks = len(self.counts)
        return self.unkept >= min(max(KEEP_EVERY, blocks // KEEP_SHARE), blocks)

    def keep(self, docs: Any, counter: TokenCounter, header: str, notes: str) -> bool:
        """Keep the counts made so far beside agent ``docs``'s memory, with the count of
        ``notes`` (the pinned notes as a request carries them; none if empty); whether they
        were written (a cache: a failed write costs the next reader a count)."""
        counts = {key: n for key, n in zip(self.keys, self.counts, strict=True) if key is not None}
        for text, n in zip(preload_texts(header), self.preload, strict=True):
            counts[digest(text)] = n
        if notes:
            counts[digest(notes)] = counter.count(notes)
        self.unkept = 0
        return write_counts(docs, counter.encoding_name, counts)
