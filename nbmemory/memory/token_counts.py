"""Token counts kept beside an agent's memory, so that a new process need not count it again.

``.token-counts.json`` in the agent folder (on a database, a document of the agent) maps the
digest of each text counted -- a ``MEMORY.md`` block as the model reads it, the preload's head,
the file's header, the pinned notes -- to its tokens in one encoding. Keyed by content, it can
never answer for a text that changed: a block edited in place, a file replaced, cut short or
compacted has other digests, and only what is not there is counted again.

Writers keep it (``Conversation``, when it has counted anyway); readers only read it. A file
that cannot be trusted -- damaged, of another format or encoding, too big, a link, a FIFO --
reads as no counts at all, never as an error.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nbmemory.errors import StoreError
from nbmemory.store.folders import COUNTS_FILE, open_reader
from nbmemory.tokens import TokenCounter

FORMAT = "nbmemory token counts 1"
MAX_BYTES = 32 * 2**20
"""A larger file is not read: a memory compacts long before its counts take this much."""
ENOUGH = 4
"""Texts to count before the kept counts are worth reading: fewer are counted at once."""
REMEMBERED = 2**16
"""Counts this process remembers by digest (a few MB): see :func:`counted`."""

_remembered: dict[tuple[str, str], int] = {}


def digest(text: str) -> str:
    """The key of ``text``'s count."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _data(docs: Any) -> bytes | None:
    """The file's bytes, if it is a regular file (or a document) of at most ``MAX_BYTES``."""
    if docs.is_database:
        stamp = docs.stamp(COUNTS_FILE)
        if stamp is None or stamp[1] > MAX_BYTES:
            return None
        return docs.db.read(docs.name, COUNTS_FILE)
    if docs.missing(COUNTS_FILE):
        return None
    with open_reader(os.path.join(docs.folder, COUNTS_FILE)) as file:
        data = file.read(MAX_BYTES + 1)
    return data if len(data) <= MAX_BYTES else None


def read_counts(docs: Any, encoding: str) -> dict[str, int]:
    """The counts kept for agent ``docs`` in ``encoding`` (digest -> tokens); empty when there
    are none that can be trusted. Nothing is created, changed or locked."""
    try:
        data = _data(docs)
        kept = json.loads(data) if data else None
    except (OSError, StoreError, ValueError, RecursionError):
        return {}
    if (
        not isinstance(kept, dict)
        or kept.get("format") != FORMAT
        or kept.get("encoding") != encoding
        or not isinstance(kept.get("counts"), dict)
    ):
        return {}
    return {key: n for key, n in kept["counts"].items() if type(n) is int and n >= 0}


def write_counts(docs: Any, encoding: str, counts: Mapping[str, int]) -> bool:
    """Replace the counts kept for agent ``docs`` with ``counts`` (digest -> tokens) in
    ``encoding``, atomically; whether they were written (a cache: a failure only costs the
    next reader a count)."""
    data = json.dumps({"format": FORMAT, "encoding": encoding, "counts": dict(counts)})
    try:
        docs.write(COUNTS_FILE, data, durable=False)
    except (OSError, StoreError):
        return False
    return True


def counted(counter: TokenCounter, text: str, key: str | None = None) -> int:
    """The tokens of ``text`` (whose :func:`digest` is ``key``), counted once per process and
    encoding however many memories hold it: the messages every agent of a team was given, say,
    in a listing of agents that kept no counts."""
    remembered = (counter.encoding_name, key or digest(text))
    found = _remembered.get(remembered)
    if found is None:
        if len(_remembered) >= REMEMBERED:
            _remembered.clear()
        found = _remembered[remembered] = counter.count(text)
    return found


class KeptCounts:
    """The counts kept for agent ``docs`` in ``counter``'s encoding, read when first needed."""

    def __init__(self, docs: Any, counter: TokenCounter) -> None:
        self.docs = docs
        self.counter = counter
        self._counts: dict[str, int] | None = None
        self.counted = 0
        """How many texts were counted: not found among the kept counts."""

    def tokens(self, text: str, key: str | None = None) -> int:
        """The tokens of ``text`` (whose :func:`digest` is ``key``): kept, else counted (once
        per process: :func:`counted`)."""
        kept = self.read()
        key = key or digest(text)
        found = kept.get(key) if kept else None
        if found is None:
            self.counted += 1
            return counted(self.counter, text, key)
        return found

    def read(self) -> dict[str, int]:
        """The kept counts, read now if they were not yet: before a database's memory is
        streamed, whose connection must not wait for another to read them."""
        if self._counts is None:
            encoding = self.counter.encoding_name
            self._counts = read_counts(self.docs, encoding) if self.docs is not None else {}
        return self._counts

    def each(self, texts: Iterable[str], keys: Sequence[str] | None = None) -> list[int]:
        """The tokens of each of ``texts`` (whose digests are ``keys``, when known), kept or
        counted (the kept counts are read only for ``ENOUGH`` texts or more)."""
        texts = list(texts)
        pairs = zip(texts, keys or [None] * len(texts), strict=True)
        if len(texts) < ENOUGH and self._counts is None:
            self.counted += len(texts)
            return [counted(self.counter, text, key) for text, key in pairs]
        return [self.tokens(text, key) for text, key in pairs]
