"""Following up what recall found: the messages said around a message it cited (``around``),
and those said in a span of time (``between``), across MEMORY.md and the archives.

A passage holds one message (and the question or answer beside it), while the second fact a
question needs is often said a few messages later, in other words, or on the same day. These
read the indexes recall searches (``corpus``: each message's role, time and what recall may
return of it), write nothing, and skip what recall never returns (tool calls, recall's own
results, summaries). Their answers are written as recall's are (``text.listed_answer``, read
back by ``text.described``) within a token budget; a bad argument gets one line saying what is
expected, for the model to correct itself.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from pathlib import Path

from nbmemory.recall.corpus import corpus_of
from nbmemory.recall.exchanges import Index
from nbmemory.recall.kept_indexes import read_trusted
from nbmemory.recall.text import PASSAGE_CHARS, SHORTEST, Passage, listed_answer
from nbmemory.store.docs import AgentDocs
from nbmemory.store.folders import ARCHIVE_DIR
from nbmemory.tokens import TokenCounter
from nbmemory.wording import FIRST_NUMBER, counted

MOST_AROUND = 20
"""Messages before, and after, that ``around`` lists at most."""
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_FORMAT = "give YYYY-MM-DD (that whole day) or YYYY-MM-DDTHH:MM:SS"


def around(
    docs: AgentDocs,
    source: str,
    message: int,
    before: int = 3,
    after: int = 3,
    *,
    budget: int | None = None,
    count: Callable[[str], int] | None = None,
) -> str:
    """The messages said just before and after message ``message`` (numbered from 1, as recall
    cites it) of ``source`` (``MEMORY.md`` or an archive's file name, with or without
    ``archive/``), in the order said, the one asked about marked ``[n*]``.

    Within ``budget`` tokens (as ``count`` counts them) the farthest are left out first, then
    the texts are cut. An unknown source or a number out of range: one line, ``Error: ...``.
    A kept index found damaged as it is read is made again (``kept_indexes.read_trusted``).
    """
    return read_trusted(
        docs, lambda: _around(docs, source, message, before, after, budget=budget, count=count)
    )


def _around(
    docs: AgentDocs,
    source: str,
    message: int,
    before: int,
    after: int,
    *,
    budget: int | None,
    count: Callable[[str], int] | None,
) -> str:
    corpus = list(corpus_of(docs))
    name = source.strip().removeprefix(f"{ARCHIVE_DIR}/")
    found = next(((path, index) for path, index in corpus if path.name == name), None)
    if found is None:
        known = ", ".join(dict.fromkeys(path.name for path, _ in reversed(corpus[-3:])))
        return (
            f"Error: no file {source!r} among this agent's memory and archives: give the file "
            f"recall cited ({known or 'there is none yet'})."
        )
    path, index = found
    i = message - FIRST_NUMBER
    if not 0 <= i < index.count:
        return f"Error: {name} holds messages 1 to {index.count}, not {message}."
    earlier = _said_from(index, i, -1, min(max(before, 0), MOST_AROUND))
    later = _said_from(index, i, 1, min(max(after, 0), MOST_AROUND))
    asked = [i] if index.is_recallable(i) else []
    kept = [*reversed(earlier), *asked, *later]
    cited = f"{name}, message {message}"
    head = f"{{said}} said around {cited}, in the order said ([n*]: the one asked about):"
    if not asked:
        head = f"{{said}} said around {cited} (a tool call, a result or a summary), in order:"

    def written(shown: list[int], chars: int) -> str:
        left_out = len(kept) - len(shown)
        tail = (
            f"{counted(left_out, 'more message')} left out to fit the budget." if left_out else ""
        )
        marked = shown.index(i) if asked else None
        said = [_passage(path, index, j) for j in shown]
        return listed_answer(
            head.format(said=counted(len(shown), "message")), said, marked, tail, chars
        )

    if budget is None:
        return written(kept, PASSAGE_CHARS)
    count = count or TokenCounter().count
    shown, chars = list(kept), PASSAGE_CHARS
    while True:
        answer = written(shown, chars)
        if count(answer) <= budget:
            return answer
        if len(shown) > 1:  # the farthest from the one asked goes first
            shown.remove(max(shown, key=lambda j: (abs(j - i), -j if j < i else j)))
        elif chars > SHORTEST:
            chars = max(SHORTEST, chars // 2)
        else:
            return answer


def between(
    docs: AgentDocs,
    start: str,
    end: str = "",
    *,
    budget: int | None = None,
    count: Callable[[str], int] | None = None,
) -> str:
    """The messages said from ``start`` to ``end`` (each a date, ``YYYY-MM-DD``: that whole
    day, or a time, ``YYYY-MM-DDTHH:MM:SS``; ``end`` empty: the day ``start`` falls on), in
    MEMORY.md and every archive, oldest first.

    Within ``budget`` tokens, the oldest that fit, then how many more there are and the time
    to ask from for them. A date or time it cannot read: one line, ``Error: ...``. A kept index
    found damaged as it is read is made again (``kept_indexes.read_trusted``).
    """
    return read_trusted(docs, lambda: _between(docs, start, end, budget=budget, count=count))


def _between(
    docs: AgentDocs,
    start: str,
    end: str,
    *,
    budget: int | None,
    count: Callable[[str], int] | None,
) -> str:
    first = _moment(start, last=False)
    if first is None:
        return f"Error: start {start!r} is not a date or a time: {_FORMAT}."
    final = _moment(end or start[:10], last=True)
    if final is None:
        return f"Error: end {end!r} is not a date or a time: {_FORMAT}, or leave it empty."
    if final < first:
        return f"Error: end {end!r} is before start {start!r}."
    dated: list[tuple[datetime.datetime, int, int]] = []
    corpus = list(corpus_of(docs))
    for rank, (_, index) in enumerate(corpus):
        for j in range(index.count):
            when = _moment(index.timestamp(j), last=False) if index.is_recallable(j) else None
            if when is not None:
                dated.append((when, rank, j))
    span = sorted(d for d in dated if first <= d[0] <= final)
    if not span:
        held = ""
        if dated:
            held = f" (it holds messages from {_shown(min(dated)[0])} to {_shown(max(dated)[0])})"
        return (
            f"Nothing was said from {_shown(first)} to {_shown(final)} in this agent's memory or "
            f"archives{held}."
        )
    said = [_passage(corpus[rank][0], corpus[rank][1], j) for _, rank, j in span]
    head = f"{{said}} said from {_shown(first)} to {_shown(final)}, oldest first:"

    def written(n: int, chars: int) -> str:
        rest = len(said) - n
        tail = (
            f"{counted(rest, 'more message')} said in this span: ask from "
            f"{said[n].timestamp} for the next ones."
            if rest
            else ""
        )
        return listed_answer(head.format(said=counted(n, "message")), said[:n], None, tail, chars)

    if budget is None:
        return written(len(said), PASSAGE_CHARS)
    count = count or TokenCounter().count
    room = budget - count(written(0, PASSAGE_CHARS))
    n = 0
    while n < len(said) and room > 0:  # blocks counted one by one: a long day is no cost
        room -= count(listed_answer("", said[n : n + 1])) + 1
        n += 1 if room >= 0 else 0
    chars = PASSAGE_CHARS
    while True:
        answer = written(n, chars)
        if count(answer) <= budget or n == 0:
            return answer
        if n > 1:
            n -= 1
        elif chars > SHORTEST:
            chars = max(SHORTEST, chars // 2)
        else:
            return answer


def _said_from(index: Index, i: int, step: int, wanted: int) -> list[int]:
    """The ``wanted`` messages recall may return nearest to ``i``, after it for ``step`` 1,
    before it for -1, nearest first."""
    found: list[int] = []
    j = i + step
    while 0 <= j < index.count and len(found) < wanted:
        if index.is_recallable(j):
            found.append(j)
        j += step
    return found


def _passage(path: Path, index: Index, j: int) -> Passage:
    return Passage(path.name, j, index.role(j), index.timestamp(j), index.text(j) or "", 0.0)


def _shown(moment: datetime.datetime) -> str:
    """A moment as block headings write one, to the second."""
    return moment.isoformat(timespec="seconds")


def _moment(text: str, *, last: bool) -> datetime.datetime | None:
    """A date or time as local time without a zone: a date alone is its first moment, or its
    last (``last``); ``None`` if ``text`` is neither."""
    text = text.strip()
    try:
        if _DAY.fullmatch(text):
            day = datetime.date.fromisoformat(text)
            return datetime.datetime.combine(day, datetime.time.max if last else datetime.time())
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.astimezone().replace(tzinfo=None) if moment.tzinfo else moment
