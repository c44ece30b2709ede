"""Keyword search over messages, indexed once per message and extended as a file grows."""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import operator
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nbmemory.store.docs import AgentDocs
from nbmemory.store.follow import FollowedFile, follow


@dataclass(frozen=True)
class MemoryHit:
    """One message that matched: where it is (``MEMORY.md`` or an archive's file name) and what."""

    source: str
    index: int
    message: dict[str, Any]


def content_text(content: Any) -> str:
    """Message content as searchable text (JSON for structured content)."""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


class MessageIndex:
    """Messages made searchable, extended as more come: a case-insensitive search is one
    ``str.find`` scan over their casefolded text, worked out once per message."""

    def __init__(self, messages: Sequence[dict[str, Any]] = ()) -> None:
        self.messages: list[dict[str, Any]] = []
        self._folded = ""
        self._starts: list[int] = []
        self._lock = threading.Lock()
        self.extend(messages)

    def extend(self, messages: Sequence[dict[str, Any]]) -> None:
        """Take in those of ``messages`` (the same messages, perhaps more) not indexed yet."""
        with self._lock:
            new = messages[len(self.messages) :]
            if not new:
                return
            texts = [content_text(m.get("content")).casefold() for m in new]
            ends = itertools.accumulate((len(t) + 1 for t in texts), initial=len(self._folded))
            self._starts.extend(itertools.islice(ends, len(texts)))
            self._folded += "\x00".join(texts) + "\x00"
            self.messages.extend(new)

    def search(
        self, query: str, *, case_sensitive: bool = False, within: int | None = None
    ) -> list[int]:
        """Indexes of the messages whose content contains ``query``, among the first
        ``within`` messages (a reading of the file that others have since extended)."""
        with self._lock:
            count = len(self.messages) if within is None else min(within, len(self.messages))
            messages, haystack, starts = self.messages[:count], self._folded, self._starts[:count]
            bound = self._starts[count] if count < len(self._starts) else len(haystack)
        if case_sensitive:
            return [i for i, m in enumerate(messages) if query in content_text(m.get("content"))]
        if not query:
            return list(range(count))
        needle = query.casefold()
        found = []
        pos = find(haystack, needle, 0, bound)
        while pos != -1:
            index = bisect.bisect_right(starts, pos) - 1
            found.append(index)
            end = starts[index + 1] if index + 1 < count else bound
            pos = find(haystack, needle, end, bound)
        return found


_COMMON = " etaoinsrhldcumwfgypbvk\n.,-'\"ETAOINSRHLDCUMWFGYPBVK0123456789:;()/_?!=*#>x"
"""Characters from the most to the least common in prose and code: a search looks for the
rarest of a query's characters first (one ``memchr``), then checks the query there."""
_RANK = {c: i for i, c in enumerate(_COMMON)}
_TOO_MANY = 128
"""A check per this many characters scanned at most: else the rarest character is not rare
here, and ``str.find`` looks for the whole query."""


@functools.lru_cache(maxsize=64)
def _rarest(needle: str) -> int:
    """Where ``needle``'s rarest character is (the first of them)."""
    return max(range(len(needle)), key=lambda i: _RANK.get(needle[i], len(_COMMON)))


def find(text: str, needle: str, start: int = 0, end: int | None = None) -> int:
    """``text.find(needle, start, end)``, faster where ``needle`` holds a character rare in
    ``text``: a name, a number, a code (CPython finds a single character by ``memchr``, a
    longer text by a slower scan)."""
    if len(needle) < 2:
        return text.find(needle, start, end)
    start, end, _ = slice(start, end).indices(len(text))
    at = _rarest(needle)
    rare, last = needle[at], end - len(needle) + at + 1
    pos, checks = start + at, 0
    while pos < last:
        hit = text.find(rare, pos, last)
        if hit == -1:
            return -1
        if text.startswith(needle, hit - at):
            return hit - at
        checks += 1
        if checks * _TOO_MANY > hit - start + 4096:
            return text.find(needle, hit - at + 1, end)
        pos = hit + 1
    return -1


_CONTENT = operator.itemgetter("content")
_SEPARATOR = "\x00"


class ContentIndex:
    """Case-sensitive search of messages kept in RAM, which their owner may change at any
    time: their contents are joined, ``CHUNK`` messages to a text, and searched with
    :func:`find`; each search checks that every message still holds the same text (at C
    speed) and joins again only what changed: the last chunk when messages were added, all
    of them otherwise."""

    CHUNK = 512

    def __init__(self) -> None:
        self._contents: list[Any] = []
        self._chunks: list[tuple[int, str, list[int]]] = []
        """(index of its first message, the contents joined, where each starts in it)."""
        self._lock = threading.Lock()

    def search(self, messages: Sequence[dict[str, Any]], keyword: str) -> list[dict[str, Any]]:
        """Those of ``messages`` whose content (as :func:`content_text`) contains ``keyword``."""
        contents = list(map(_CONTENT, messages))
        with self._lock:
            if not self._take(contents):
                pairs = zip(messages, contents, strict=False)  # another thread may add
                return [m for m, c in pairs if keyword in content_text(c)]
            chunks = self._chunks
        found = []
        for first, text, starts in chunks:
            at = find(text, keyword)
            while at != -1:
                index = bisect.bisect_right(starts, at) - 1
                end = starts[index + 1] - 1 if index + 1 < len(starts) else len(text)
                if at + len(keyword) <= end:
                    found.append(messages[first + index])
                    at = find(text, keyword, end + 1)
                else:  # the match runs past the message: text of it holds the separator
                    at = find(text, keyword, at + 1)
        return found

    def _take(self, contents: list[Any]) -> bool:
        """Make the chunks those of ``contents``; whether they could be (all of them text:
        structured content, which may change in place, is never kept)."""
        known = len(self._contents)
        if known == len(contents) and contents == self._contents:
            return True
        chunks = self._chunks
        if 0 < known < len(contents) and _begins_with(contents, self._contents):
            chunks = chunks[:-1]  # the last chunk is joined again with the new messages
        else:
            chunks = []
        first = len(chunks) * self.CHUNK
        try:
            for at in range(first, len(contents), self.CHUNK):
                part = contents[at : at + self.CHUNK]
                lengths = itertools.accumulate((len(c) + 1 for c in part), initial=0)
                chunks.append(
                    (at, _SEPARATOR.join(part), list(itertools.islice(lengths, len(part))))
                )
        except TypeError:
            self._contents, self._chunks = [], []
            return False
        self._contents, self._chunks = contents, chunks
        return True


def _begins_with(items: list[Any], start: list[Any]) -> bool:
    """Whether ``items`` begins with ``start``. Compared in place: a slice of ``items`` would
    touch every object it holds, which costs ten times the comparison on a long history."""
    tail = items[len(start) :]
    del items[len(start) :]
    try:
        return items == start
    finally:
        items.extend(tail)


def followed_index(followed: FollowedFile) -> MessageIndex:
    """The search index of a file as last read: one for every reading while the file only
    grows (an append indexes the new messages alone); a rewritten file gets a new one."""
    with followed.lock:
        index = followed.grown.setdefault("search", MessageIndex())
    index.extend(followed.messages)
    return index


def file_index(docs: AgentDocs, doc: str | os.PathLike[str]) -> MessageIndex:
    """The search index of an agent's memory or archive document as it is now."""
    followed = follow(docs.path(doc), docs)
    if followed is None:
        raise FileNotFoundError(docs.path(doc))
    return followed_index(followed)
