"""Keyword search over messages, with a cache for files that do not change (archives)."""

from __future__ import annotations

import bisect
import functools
import json
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

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
    """The messages of one file, searchable; case-insensitive search is one ``str.find`` scan."""

    def __init__(self, messages: Sequence[dict[str, Any]]) -> None:
        self.messages = messages

    @functools.cached_property
    def _folded(self) -> tuple[str, list[int]]:
        starts, parts, offset = [], [], 0
        for message in self.messages:
            text = content_text(message.get("content")).casefold() + "\x00"
            starts.append(offset)
            parts.append(text)
            offset += len(text)
        return "".join(parts), starts

    def search(self, query: str, *, case_sensitive: bool = False) -> list[int]:
        """Indexes of the messages whose content contains ``query``."""
        if case_sensitive:
            return [
                i for i, m in enumerate(self.messages) if query in content_text(m.get("content"))
            ]
        if not query:
            return list(range(len(self.messages)))
        haystack, starts = self._folded
        needle = query.casefold()
        found = []
        pos = haystack.find(needle)
        while pos != -1:
            index = bisect.bisect_right(starts, pos) - 1
            found.append(index)
            end = starts[index + 1] if index + 1 < len(starts) else len(haystack)
            pos = haystack.find(needle, end)
        return found


_cache: dict[tuple[str, str], tuple[tuple[int, ...], MessageIndex]] = {}
_cache_lock = threading.Lock()


def file_index(
    docs: AgentDocs,
    doc: str | os.PathLike[str],
    read: Callable[[AgentDocs, str | os.PathLike[str]], list[dict[str, Any]]] | None = None,
) -> MessageIndex:
    """The index of an agent's memory or archive document, reused while it stays the same."""
    stamp = docs.stamp(doc)
    if stamp is None:
        raise FileNotFoundError(docs.path(doc))
    key = (repr(docs), docs.doc(doc))  # the same path can name a file and a database row
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    index = MessageIndex(read(docs, doc) if read is not None else docs.messages(doc))
    with _cache_lock:
        _cache[key] = (stamp, index)
    return index
