"""Keyword search over messages, indexed once per message and extended as a file grows."""

from __future__ import annotations

import bisect
import itertools
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nbmemory.follow import FollowedFile, follow
from nbmemory.store import AgentDocs


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
        pos = haystack.find(needle, 0, bound)
        while pos != -1:
            index = bisect.bisect_right(starts, pos) - 1
            found.append(index)
            end = starts[index + 1] if index + 1 < count else bound
            pos = haystack.find(needle, end, bound)
        return found


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
