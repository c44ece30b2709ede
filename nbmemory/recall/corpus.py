"""The documents one recall searches, and what they hold taken together.

``corpus_of(docs)`` gives a ``Corpus``: the index of each archive (kept beside the memory) and
of ``MEMORY.md``, oldest first. An archive never changes, so what the archives hold taken
together (each word's figures across them, the speakers around each archived message, the
messages ranked by meaning: ``within_reach``) is worked out once per set of archives and kept
for the process until one is added, removed or indexed again. On files, the list of archives
is kept too, until the names in ``archive/`` or ``MEMORY.md`` change.
"""

from __future__ import annotations

import bisect
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from nbmemory.recall.exchanges import (
    OTHER_EXCHANGE_WEIGHT,
    SAID_BY_NAMED_GAIN,
    Index,
    beside,
    next_said,
    toward,
)
from nbmemory.recall.file_index import built_archive, memory_index
from nbmemory.recall.kept_indexes import archive_indexes
from nbmemory.recall.speakers import speaker_words, teller_and_text
from nbmemory.store.docs import AgentDocs
from nbmemory.store.folders import ARCHIVE_DIR, MEMORY_FILE
from nbmemory.store.follow import follow


def sources(docs: AgentDocs) -> list[Path]:
    """The documents recall searches: the agent's archives, oldest first, then MEMORY.md."""
    return [*_archives(docs), docs.path(MEMORY_FILE)]


_archive_lists: dict[str, tuple[tuple[Any, ...], list[Path]]] = {}
"""The archives of each agent's folder on files as last listed, with what they were listed
for (``_listing``)."""
_LISTS_KEPT = 256
"""Agents whose archives a process keeps listed."""


def _archives(docs: AgentDocs) -> list[Path]:
    """``docs.archives()``, listed again only when the names in ``archive/`` or ``MEMORY.md``
    changed: which archives there are, in order, and whether the newest is an unfinished
    compaction's (the start of ``MEMORY.md``) depend on nothing else, and listing them, which
    makes a path of each and compares files, costs more than a query by words."""
    if docs.is_database or docs.unlisted() is not docs:
        return docs.archives()
    key = repr(docs)
    stamp = _listing(docs.folder)
    kept = _archive_lists.get(key)
    if stamp is not None and kept is not None and kept[0] == stamp:
        return kept[1]
    found = docs.archives()
    if stamp is not None:
        if len(_archive_lists) >= _LISTS_KEPT:
            _archive_lists.clear()
        _archive_lists[key] = (stamp, found)
    return found


def _listing(folder: Path) -> tuple[Any, ...] | None:
    """What an agent's list of archives depends on: the names in its ``archive/`` folder and
    ``MEMORY.md``'s identity, size and time; ``None`` if either is missing or not what it
    should be (then the archives are listed every time)."""
    try:
        where = os.lstat(folder / ARCHIVE_DIR)
        if not stat.S_ISDIR(where.st_mode):
            return None
        names = tuple(sorted(os.listdir(folder / ARCHIVE_DIR)))
        memory = os.stat(folder / MEMORY_FILE)
    except OSError:
        return None
    return (where.st_ino, names, memory.st_ino, memory.st_size, memory.st_mtime_ns)


def corpus_of(docs: AgentDocs) -> Corpus:
    """The index of each document recall searches that holds messages: an archive's kept
    beside the memory (``kept_indexes``), ``MEMORY.md``'s in RAM, extended as it grows."""
    found: list[tuple[Path, Index]] = []
    *archives, memory = sources(docs)
    kept = archive_indexes(docs, archives, lambda path: built_archive(docs, path), speaker_words)
    for path, stored in zip(archives, kept, strict=True):
        if stored is not None and stored.count:
            found.append((path, stored))
    followed = follow(memory, docs)
    current = None
    if followed is not None and followed.messages:
        current = (memory, memory_index(docs, followed))
    return Corpus(_archived(docs, found), current)


class _Archived:
    """What recall asks of an agent's archives taken together, worked out once for them: an
    archive never changes, so the figures of a word across a few dozen archives (how many
    messages hold it, how many its person says, which archives hold it) are looked up in
    each archive's index the first time a query asks, not at every query. Made anew when an
    archive is added, removed or indexed again (``same``)."""

    def __init__(self, files: list[tuple[Path, Index]]) -> None:
        self.files = files
        self.documents = sum(index.documents for _, index in files)
        self.words = sum(index.words for _, index in files)
        self._terms: dict[str, tuple[int, int, tuple[int, ...]]] = {}
        self._near: dict[Any, list[tuple[int | None, frozenset[str], frozenset[str]] | None]] = {}
        self._lock = threading.Lock()
        self.speakers = frozenset().union(*(index.spoken for _, index in files))
        self.meaning: tuple[Any, ...] | None = None
        """The messages ranked by meaning, after what they were worked out for: the reach,
        ``MEMORY.md``'s index and how many messages it held (``within_reach``)."""

    def same(self, files: list[tuple[Path, Index]]) -> bool:
        """Whether these are the archives and the indexes the figures were worked out for."""
        return len(files) == len(self.files) and all(
            path == kept_path and index is kept_index
            for (path, index), (kept_path, kept_index) in zip(files, self.files, strict=True)
        )

    def near(self, index: Index, i: int) -> tuple[int | None, frozenset[str], frozenset[str]]:
        """For message ``i`` of one of the archives' ``index``: the message ``beside`` it,
        the words of its speaker, and those of the speakers of the messages recall may return
        before and after it (``toward``). They never change: worked out once, as asked."""
        found = self._near.get(index)
        if found is None:
            found = self._near.setdefault(index, [None] * index.count)
        near = found[i]
        if near is None:
            told = [next_said(index, i, step) for step in (-1, 1)]
            near = found[i] = (
                beside(index, i),
                index.speaker(i),
                frozenset().union(*(index.speaker(j) for j in told if j is not None)),
            )
        return near

    def term(self, term: str) -> tuple[int, int, tuple[int, ...]]:
        """How many archived messages hold ``term``, how many its person says, and the ranks
        of the archives that hold it."""
        found = self._terms.get(term)
        if found is None:
            counts = [index.frequency(term) for _, index in self.files]
            spoken = sum(index.spoken.get(term, 0) for _, index in self.files)
            holders = tuple(rank for rank, count in enumerate(counts) if count)
            found = (sum(counts), spoken, holders)
            with self._lock:
                if len(self._terms) >= _TERMS_KEPT:  # made-up words: no memory kept of them
                    self._terms.clear()
                self._terms[term] = found
        return found


_TERMS_KEPT = 50_000
"""Words whose figures one ``_Archived`` keeps."""
_ARCHIVED_KEPT = 16
"""Agents whose ``_Archived`` a process keeps (the least recently used goes first)."""
_archived_kept: OrderedDict[str, _Archived] = OrderedDict()
_archived_lock = threading.Lock()


def _archived(docs: AgentDocs, files: list[tuple[Path, Index]]) -> _Archived:
    """The figures of agent ``docs``'s archives ``files``: those kept if they were worked out
    for the same archives and indexes, else new ones, kept."""
    key = repr(docs)
    with _archived_lock:
        kept = _archived_kept.pop(key, None)
        if kept is None or not kept.same(files):
            kept = _Archived(files)
        _archived_kept[key] = kept
        while len(_archived_kept) > _ARCHIVED_KEPT:
            _archived_kept.popitem(last=False)
    return kept


class Corpus(Sequence[tuple[Path, Index]]):
    """The documents one recall searches, oldest first, as ``(path, index)``: the archives'
    (``_Archived``) then ``MEMORY.md``'s, if it holds messages; with the figures of a word
    across all of them."""

    def __init__(self, archived: _Archived, memory: tuple[Path, Index] | None) -> None:
        self.archived = archived
        self.memory = memory[1] if memory is not None else None
        self.files = archived.files if memory is None else [*archived.files, memory]

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, n: Any) -> Any:
        return self.files[n]

    def __iter__(self) -> Iterator[tuple[Path, Index]]:
        return iter(self.files)

    @property
    def documents(self) -> int:
        """How many messages recall may return."""
        return self.archived.documents + (0 if self.memory is None else self.memory.documents)

    @property
    def words(self) -> int:
        return self.archived.words + (0 if self.memory is None else self.memory.words)

    def frequency(self, term: str) -> int:
        """How many messages hold ``term``."""
        found = self.archived.term(term)[0]
        return found if self.memory is None else found + self.memory.frequency(term)

    def spoken(self, term: str) -> int:
        """How many messages the person ``term`` names says."""
        found = self.archived.term(term)[1]
        return found if self.memory is None else found + self.memory.spoken.get(term, 0)

    def speakers(self) -> frozenset[str]:
        """The words of the names of everyone who says a message."""
        found = self.archived.speakers
        return found if self.memory is None else found.union(self.memory.spoken)

    def beside(self, index: Index, i: int) -> int | None:
        """``beside(index, i)``, found once for an archive's message."""
        return beside(index, i) if index is self.memory else self.archived.near(index, i)[0]

    def toward(self, index: Index, i: int, named: frozenset[str] | set[str]) -> float:
        """``toward(index, i, named)``, its speakers found once for an archive's message."""
        if index is self.memory:
            return toward(index, i, named)
        _, said_by, told = self.archived.near(index, i)
        if said_by & named:
            return 1 + SAID_BY_NAMED_GAIN
        return 1.0 if told & named else OTHER_EXCHANGE_WEIGHT

    def holding(self, terms: Collection[str]) -> list[int]:
        """The ranks of the documents that hold any of ``terms``, in order."""
        ranks = {rank for term in terms for rank in self.archived.term(term)[2]}
        if self.memory is not None and any(self.memory.frequency(term) for term in terms):
            ranks.add(len(self.files) - 1)
        return sorted(ranks)


def within_reach(
    indexes: Corpus, reach: int | None
) -> tuple[list[tuple[int, int]], tuple[bytes | None, ...], list[int], _Joined]:
    """The messages ranked by meaning: the newest ``reach`` that recall may return (all if
    ``None``), as parts ``(file rank, first message)``, their vector keys joined in one
    tuple, where each part begins in it, and their texts. Kept with the archives' figures
    while ``MEMORY.md``'s index holds as many messages: every query asks the same."""
    memory = indexes.memory
    count = memory.count if memory is not None else 0
    kept = indexes.archived.meaning
    if kept is not None and kept[0] == reach and kept[1] is memory and kept[2] == count:
        return kept[3]
    parts: list[tuple[int, int, list[bytes | None]]] = []  # (file rank, first message, keys)
    left = reach
    for rank in reversed(range(len(indexes))):  # the newest file first
        every = indexes[rank][1].keys()
        first = 0
        if left is not None:
            first, left = _reached(every, left)
        parts.insert(0, (rank, first, every[first:]))
        if left is not None and left <= 0:
            break
    keys: list[bytes | None] = []
    starts = []
    for _, _, some in parts:  # whole lists joined: no step per message in Python
        starts.append(len(keys))
        keys += some
    texts = _Joined(
        [indexes[rank][1].texts for rank, _, _ in parts],
        starts,
        len(keys),
        [first for _, first, _ in parts],
    )
    found = ([(rank, first) for rank, first, _ in parts], tuple(keys), starts, texts)
    indexes.archived.meaning = (reach, memory, count, found)
    return found


def _reached(keys: list[bytes | None], left: int) -> tuple[int, int]:
    """Where the newest ``left`` messages with a vector key (recall returns them) begin among
    ``keys``, and how many are left to reach before them: the messages recall never returns
    (tool calls, replies that only repeat) do not use up the reach."""
    end = len(keys)
    while end > 0 and left > 0:
        start = max(0, end - max(left, 256))
        held = end - start - keys[start:end].count(None)
        if held <= left:
            end, left = start, left - held
            continue
        while left > 0:  # this chunk holds the last of them: found one by one
            end -= 1
            left -= keys[end] is not None
    return end, left


class _Joined(Sequence[str | None]):
    """The texts of several indexes as one sequence (``starts``: where each begins; ``firsts``:
    the first text taken of each), decoded only when one is asked for: what ranking by meaning
    embeds of messages with no vector, each without the name a transcript line opens with
    (``teller_and_text``), which says who, not what."""

    def __init__(
        self, parts: list[Sequence[str | None]], starts: list[int], total: int, firsts: list[int]
    ) -> None:
        self.parts, self.starts, self.total, self.firsts = parts, starts, total, firsts

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, n: Any) -> Any:
        if isinstance(n, slice):
            return [self[k] for k in range(*n.indices(self.total))]
        if not 0 <= n < self.total:
            raise IndexError(n)
        part = bisect.bisect_right(self.starts, n) - 1
        return teller_and_text("", self.parts[part][n - self.starts[part] + self.firsts[part]])[1]
