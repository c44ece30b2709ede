"""Recall's index of one file's messages, made in RAM.

``FileIndex`` holds what BM25 and the re-ranking need of each message (its words, length,
speaker, whether it says when, whether it asks) and grows with the file. ``memory_index`` is
``MEMORY.md``'s, extended as messages are appended; a new process starts it from the index
kept of the memory's first messages (``kept_indexes``). ``built_archive`` indexes an archive
from its text, for ``kept_indexes`` to keep.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from nbmemory.memory import provenance
from nbmemory.recall.kept_indexes import keep_memory, kept_memory
from nbmemory.recall.speakers import (
    answered_text,
    own_words,
    recallable,
    speaker_words,
    teller_and_text,
)
from nbmemory.recall.stored_index import Built, StoredIndex, text_key
from nbmemory.store import memory_format
from nbmemory.store.docs import AgentDocs
from nbmemory.store.follow import FollowedFile
from nbmemory.terms import words

_DATE_WORDS = (
    "yesterday today tonight tomorrow ago recently week weekend month year morning afternoon "
    "evening night spring summer autumn winter monday tuesday wednesday thursday friday "
    "saturday sunday weekday january february march april june july august september october "
    "november december"
)


@functools.cache
def _date_words() -> frozenset[str]:
    return frozenset(words(_DATE_WORDS))  # stemmed at first use: importing costs nothing


_DATE_NUMBER = re.compile(r"(?:1[89]|20)\d\d|\d{1,2}(?:st|nd|rd|th)")


def _dated(text: str, counts: Counter[str]) -> bool:
    """Whether a message says when ("yesterday", "last May", "in 2026", "the 3rd"), from its
    words: no second look through its text."""
    if not _date_words().isdisjoint(counts):
        return True
    if "may" in counts and re.search(r"\bMay\b", text):  # the month, not "may"
        return True
    return any(word[0].isdigit() and _DATE_NUMBER.fullmatch(word) for word in counts)


class FileIndex:
    """The BM25 statistics of one file's messages, extended as the file grows.

    One index serves every reading of a file while it only grows (``FollowedFile.grown``):
    an append indexes the new messages alone; a file rewritten (a compaction) gets a new one.
    A message's entries are complete (terms, length, the message) before any posting names
    it, so a reader never waits for an extension, and at worst also sees newer messages.
    """

    def __init__(self, agent: str, start: int = 0) -> None:
        self.agent = agent
        """The agent's name: the role of its own replies (``own_words``)."""
        self.start = start
        """The first message of the file it indexes (those before are in a kept index)."""
        self.lock = threading.Lock()
        self.messages: list[dict[str, Any]] = []
        self.texts: list[str | None] = []
        """What recall may return of each message (``recallable``), worked out once: a
        message of megabytes is not looked through again at every recall that finds it."""
        self.terms: list[Counter[str] | None] = []
        self.lengths: list[int] = []
        self.speakers: list[frozenset[str]] = []
        """The words of each message's speaker (``teller``)."""
        self.tellers: list[str] = []
        self.spoken: Counter[str] = Counter()
        """How many messages each speaker's words are the speaker of."""
        self.dated: list[bool] = []
        """Whether a message says when ("yesterday", "last May", "2026-04-20")."""
        self.asks: list[bool] = []
        """Whether a message ends with a question: the next one, by another, may answer it."""
        self.documents = 0
        self.words = 0
        self._postings: dict[str, tuple[list[int], list[int]]] = {}
        self._vector_keys: list[bytes | None] = []
        """The key of each message's vector (``stored_index.text_key``), made when recall first
        ranks by meaning: without an embedding model no message is hashed."""

    def extend(self, messages: list[dict[str, Any]]) -> None:
        """Index those of ``messages`` (a reading of the file) that are not indexed yet."""
        with self.lock:
            for k in range(self.start + len(self.messages), len(messages)):
                message = messages[k]
                text = said = recallable(message)
                role = str(message.get("role", ""))
                if text is not None and role == self.agent:
                    said = own_words(text, answered_text(messages, k, self.agent))
                    text = text if said else None
                teller, said = teller_and_text(role, said)
                counts = Counter(words(said)) if said else None
                speaker = speaker_words(teller)
                i = len(self.terms)
                self.terms.append(counts)
                self.lengths.append(sum(counts.values()) if counts else 0)
                self.texts.append(text)
                self.speakers.append(speaker)
                self.tellers.append(teller)
                if counts is not None:
                    self.spoken.update(speaker)
                self.dated.append(counts is not None and _dated(said, counts))
                self.asks.append(counts is not None and said.rstrip().endswith("?"))
                self.messages.append(message)
                self.documents += counts is not None
                self.words += self.lengths[i]
                for term, count in (counts or {}).items():
                    found = self._postings.get(term)
                    if found is None:
                        found = self._postings[term] = ([], [])
                    found[0].append(i)  # a reader zips the two: the shorter one counts
                    found[1].append(count)

    @property
    def count(self) -> int:
        return len(self.messages)

    def postings(self, term: str) -> tuple[list[int], list[int]]:
        """The messages holding ``term`` and how often each does, in message order."""
        return self._postings.get(term, ([], []))

    def frequency(self, term: str) -> int:
        return len(self._postings.get(term, ((),))[0])

    def asked(self, i: int, terms: Collection[str]) -> dict[str, int]:
        """How often each of ``terms`` is in message ``i`` (those it holds)."""
        counts = self.terms[i] or {}
        return {term: counts[term] for term in terms if counts.get(term)}

    def distinct(self, i: int) -> int:
        """How many different words message ``i`` holds (0 if recall never returns it)."""
        return len(self.terms[i] or ())

    def is_recallable(self, i: int) -> bool:
        return self.terms[i] is not None

    def chars(self, i: int) -> int:
        return len(self.texts[i] or "")

    def speaker(self, i: int) -> frozenset[str]:
        return self.speakers[i]

    def role(self, i: int) -> str:
        return str(self.messages[i].get("role", ""))

    def timestamp(self, i: int) -> str:
        return str(self.messages[i].get("timestamp", ""))

    def text(self, i: int) -> str | None:
        return self.texts[i]

    def message_key(self, i: int) -> str:
        """The key of message ``i``'s block, as cell provenance records it."""
        return provenance.message_key(self.messages[i])

    def keys(self) -> list[bytes | None]:
        """The vector keys of the messages (``None`` for what recall never returns), made when
        recall first ranks by meaning: without an embedding model no message is hashed."""
        with self.lock:
            count = len(self.texts)
            for text in self.texts[len(self._vector_keys) : count]:
                self._vector_keys.append(None if text is None else text_key(text))
            return self._vector_keys[:count]

    def built(self) -> Built:
        """What is kept of this index for an archive (``kept_indexes``)."""
        return Built(
            texts=self.texts,
            terms=self.terms,
            lengths=self.lengths,
            roles=[self.role(i) for i in range(self.count)],
            tellers=self.tellers,
            timestamps=[self.timestamp(i) for i in range(self.count)],
            dated=self.dated,
            asks=self.asks,
            keys=self.keys(),
            blocks=[self.message_key(i) for i in range(self.count)],
            spoken=dict(self.spoken),
            documents=self.documents,
            words=self.words,
        )


def memory_index(docs: AgentDocs, followed: FollowedFile) -> FileIndex | _Chained:
    """``MEMORY.md``'s index, extended with what was appended since it was last asked for.
    A new process starts from the index kept of its first messages (``kept_indexes``) when
    it was made of this memory, and indexes only the messages after them; otherwise it
    indexes the memory and keeps that index for the next process."""
    with followed.lock:
        index = followed.grown.get("recall")
        if index is None:
            index = followed.grown["recall"] = _kept_or_made(docs, followed)
    index.extend(followed.messages)
    return index


def _kept_or_made(docs: AgentDocs, followed: FollowedFile) -> FileIndex | _Chained:
    count = len(followed.messages)
    kept = kept_memory(docs, followed.identity, count, speaker_words)
    # Kept while the messages after it are fewer than those in it: then made anew and kept, so
    # that a memory that keeps growing is indexed whole again only each time it doubles.
    if kept is not None and count - kept.count <= kept.count:
        return _Chained(kept, FileIndex(docs.name, kept.count))
    index = FileIndex(docs.name)
    index.extend(followed.messages)
    if followed.end is not None and index.count:
        keep_memory(docs, index.built(), followed.identity, followed.end)
    return index


class _Chained:
    """``MEMORY.md``'s index as a kept index of its first messages and one of those after
    them in RAM (``tail``, extended as the memory grows), numbered as one."""

    def __init__(self, kept: StoredIndex, tail: FileIndex) -> None:
        self.kept, self.tail, self.split = kept, tail, kept.count
        self.spoken = _Summed(kept.spoken, tail.spoken)
        self.lengths = _Split(kept.lengths, tail.lengths, self.split)
        self.dated = _Split(kept.dated, tail.dated, self.split)
        self.asks = _Split(kept.asks, tail.asks, self.split)
        self.texts = _Split(kept.texts, tail.texts, self.split)

    def extend(self, messages: list[dict[str, Any]]) -> None:
        self.tail.extend(messages)

    @property
    def documents(self) -> int:
        return self.kept.documents + self.tail.documents

    @property
    def words(self) -> int:
        return self.kept.words + self.tail.words

    @property
    def count(self) -> int:
        return self.split + self.tail.count

    def _at(self, i: int) -> tuple[Any, int]:
        return (self.kept, i) if i < self.split else (self.tail, i - self.split)

    def postings(self, term: str) -> tuple[list[int], list[int]]:
        docs, counts = self.kept.postings(term)
        more, times = self.tail.postings(term)
        shared = min(len(more), len(times))  # an extension under way: its whole entries
        return docs + [i + self.split for i in more[:shared]], counts + times[:shared]

    def frequency(self, term: str) -> int:
        return self.kept.frequency(term) + self.tail.frequency(term)

    def asked(self, i: int, terms: Collection[str]) -> dict[str, int]:
        index, k = self._at(i)
        return index.asked(k, terms)

    def distinct(self, i: int) -> int:
        index, k = self._at(i)
        return index.distinct(k)

    def is_recallable(self, i: int) -> bool:
        index, k = self._at(i)
        return index.is_recallable(k)

    def chars(self, i: int) -> int:
        index, k = self._at(i)
        return index.chars(k)

    def speaker(self, i: int) -> frozenset[str]:
        index, k = self._at(i)
        return index.speaker(k)

    def role(self, i: int) -> str:
        index, k = self._at(i)
        return index.role(k)

    def timestamp(self, i: int) -> str:
        index, k = self._at(i)
        return index.timestamp(k)

    def text(self, i: int) -> str | None:
        index, k = self._at(i)
        return index.text(k)

    def message_key(self, i: int) -> str:
        index, k = self._at(i)
        return index.message_key(k)

    def keys(self) -> list[bytes | None]:
        return self.kept.keys() + self.tail.keys()


class _Split(Sequence[Any]):
    """Two sequences as one: ``first`` up to ``split``, then ``second``."""

    def __init__(self, first: Sequence[Any], second: Sequence[Any], split: int) -> None:
        self.first, self.second, self.split = first, second, split

    def __len__(self) -> int:
        return self.split + len(self.second)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        return self.first[i] if i < self.split else self.second[i - self.split]


class _Summed:
    """Two counts of speakers' words as one (``get`` and the words, as recall asks)."""

    def __init__(self, first: Mapping[str, int], second: Mapping[str, int]) -> None:
        self.first, self.second = first, second

    def get(self, key: str, default: int = 0) -> int:
        return self.first.get(key, 0) + self.second.get(key, 0) or default

    def __iter__(self) -> Iterator[str]:
        return iter(self.first.keys() | self.second.keys())


def built_archive(docs: AgentDocs, path: Path) -> Built | None:
    """An archive indexed from its text, for ``kept_indexes`` to keep."""
    try:
        data = docs.read(path)
    except FileNotFoundError:
        return None
    index = FileIndex(docs.name)
    index.extend(memory_format.parse(data).messages)
    return index.built()
