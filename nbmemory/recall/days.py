"""The days a question names ("on 21.01.2024", "on 3 Jan 2024", "January 6, 2024",
"2024-01-21"), for recall to count what was said on them more.

A date written with dots or slashes whose day and month could be either way round names both
days. A date after "before", "after", "since", "until" or "by" bounds a span rather than naming
a day, and names none. Each day named brings the ``NEAR`` days either side of it: a day a
person says is in their time zone, a message's time in the one it was stored in.
"""

from __future__ import annotations

import datetime
import re

NEAR = 1
"""Days either side of a day named that count as it."""

_MONTHS = {m: n for n, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_ORDINAL = r"(?:st|nd|rd|th)?"
_WRITTEN = (
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), "ymd"),
    (re.compile(r"\b(\d{1,2})[./](\d{1,2})[./](\d{4})\b"), "either"),
    (re.compile(rf"\b(\d{{1,2}}){_ORDINAL}(?: of)? {_MONTH},? (\d{{4}})\b", re.IGNORECASE), "dMy"),
    (re.compile(rf"\b{_MONTH} (\d{{1,2}}){_ORDINAL},? (\d{{4}})\b", re.IGNORECASE), "Mdy"),
)
_BOUNDS = re.compile(r"\b(?:before|after|since|until|till|by|from)\s+(?:the\s+)?$", re.IGNORECASE)


def named_days(question: str) -> frozenset[str]:
    """The days ``question`` names, each with the ``NEAR`` days either side, as ``YYYY-MM-DD``
    (a message's timestamp starts so); empty if it names none."""
    days: set[datetime.date] = set()
    for pattern, order in _WRITTEN:
        for match in pattern.finditer(question):
            if not _BOUNDS.search(question[: match.start()]):
                days.update(_days(order, match.groups()))
    near = [datetime.timedelta(days=k) for k in range(-NEAR, NEAR + 1)]
    return frozenset((day + step).isoformat() for day in days for step in near)


def _days(order: str, parts: tuple[str, ...]) -> list[datetime.date]:
    """The real days a written date can be (none for "31.02.2024")."""
    if order == "ymd":
        year, month, day = map(int, parts)
        candidates = [(month, day)]
    elif order == "either":
        first, second, year = map(int, parts)
        candidates = [(second, first), (first, second)]
    elif order == "dMy":
        day, month, year = int(parts[0]), _MONTHS[parts[1][:3].lower()], int(parts[2])
        candidates = [(month, day)]
    else:
        month, day, year = _MONTHS[parts[0][:3].lower()], int(parts[1]), int(parts[2])
        candidates = [(month, day)]
    found = []
    for month, day in dict.fromkeys(candidates):
        try:
            found.append(datetime.date(year, month, day))
        except ValueError:
            continue
    return found
