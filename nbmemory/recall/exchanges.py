"""What recall asks of an index, and how its messages go together in an exchange.

``Index`` is what ranking reads of any index: ``MEMORY.md``'s in RAM (``file_index``) or an
archive's kept beside the memory (``stored_index``). Over it: the message ``beside`` another
(the answer to a question, the question an answer answers, or what its speaker said next), and
what a message counts for ``toward`` the people a query names (said by one of them, said to one
of them, or neither).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from nbmemory.recall.speakers import BETWEEN
from nbmemory.recall.text import PASSAGE_CHARS

SAID_BY_NAMED_GAIN = 1.0
"""How much more a message said by a person the query names counts (score x (1 + this))."""
OTHER_EXCHANGE_WEIGHT = 0.25
"""What a message counts for, times, when the query names people who neither said it nor were
told it: another exchange's."""


class Index(Protocol):
    """What recall asks of an index: one of ``MEMORY.md`` in RAM (``file_index.FileIndex``) or one
    of an archive kept beside the memory (``stored_index.StoredIndex``)."""

    documents: int
    words: int
    count: int
    spoken: Mapping[str, int]
    lengths: Sequence[int]
    dated: Sequence[Any]
    asks: Sequence[Any]
    texts: Sequence[str | None]

    def postings(self, term: str) -> tuple[Sequence[int], Sequence[int]]: ...
    def frequency(self, term: str) -> int: ...
    def asked(self, i: int, terms: Collection[str]) -> dict[str, int]: ...
    def distinct(self, i: int) -> int: ...
    def is_recallable(self, i: int) -> bool: ...
    def chars(self, i: int) -> int: ...
    def speaker(self, i: int) -> frozenset[str]: ...
    def role(self, i: int) -> str: ...
    def timestamp(self, i: int) -> str: ...
    def text(self, i: int) -> str | None: ...
    def message_key(self, i: int) -> str: ...
    def keys(self) -> list[bytes | None]: ...


def beside(index: Index, i: int) -> int | None:
    """The message that belongs with message ``i`` and fits beside it in a passage: the
    answer to it if it asks, else the question it answers (``_answered``); failing both, what
    its speaker said next or just before, unless it asks (``_continued``); ``None`` if none.
    Messages recall never returns between them (a tool's call and result, a reply that only
    repeats) are stepped over, ``BETWEEN`` at most."""
    if not index.is_recallable(i):
        return None
    j = _answered(index, i)
    return _continued(index, i) if j is None else j


def _answered(index: Index, i: int) -> int | None:
    """The answer to message ``i`` if it asks, else the question it answers: said by another,
    fitting beside it."""
    j = next_said(index, i, 1 if index.asks[i] else -1)
    if j is None or (j < i and not index.asks[j]) or index.speaker(i) == index.speaker(j):
        return None
    return j if _fits(index, i, j) else None


def _continued(index: Index, i: int) -> int | None:
    """What the speaker of message ``i`` said next, else just before, fitting beside it: one
    thought sent as several messages, as people write in a chat. Not for a question: what goes
    with it is its answer."""
    if index.asks[i]:
        return None
    for step in (1, -1):
        j = next_said(index, i, step)
        if j is not None and index.speaker(i) == index.speaker(j) and _fits(index, i, j):
            return j
    return None


def _fits(index: Index, i: int, j: int) -> bool:
    return index.chars(i) + index.chars(j) <= PASSAGE_CHARS


def next_said(index: Index, i: int, step: int) -> int | None:
    """The message recall may return next to message ``i`` (after it for ``step`` 1, before it
    for -1), past at most ``BETWEEN`` that it never returns; ``None`` if there is none."""
    j = i + step
    while 0 <= j < index.count and abs(j - i) <= BETWEEN + 1:
        if index.is_recallable(j):
            return j
        j += step
    return None


def toward(index: Index, i: int, named: Collection[str]) -> float:
    """What message ``i`` counts for, times, for a query naming the people ``named``: said by
    one of them, ``1 + SAID_BY_NAMED_GAIN``; said to one of them (the message before or after
    it, past those recall never returns, is theirs), 1; else ``OTHER_EXCHANGE_WEIGHT``: another
    exchange's. An agent that hears several people keeps each one's exchanges apart this way."""
    if index.speaker(i) & named:
        return 1 + SAID_BY_NAMED_GAIN
    for step in (-1, 1):
        j = next_said(index, i, step)
        if j is not None and index.speaker(j) & named:
            return 1.0
    return OTHER_EXCHANGE_WEIGHT
