"""Words for ranking text: the content words of a text, and the BM25 weight of one of them.

The offline model and recall rank with these, so that what one finds the other would too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_SENTENCE_BREAK = re.compile(r"[.!?]\s+\S|\n\s*\n")
STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in
    into is it its me my no not of on or our so than that the their them then there these they
    this to up us was we were what when where which who why will with would you your about
    please tell say said just also any all some more most very remind""".split()
)
QUESTION_WORDS = frozenset(
    "what when where which who whom whose why how do does did is are was were can could "
    "should would will remind recall".split()
)
K1 = 1.5
B = 0.75


def words(text: str) -> list[str]:
    """Lower-case content words, lightly stemmed so that forms of a word meet ("documents",
    "document" -> "document"; "picked", "pick" -> "pick"; "named", "name" -> "nam")."""
    return [_stem(word) for word in _WORD.findall(text.lower()) if word not in STOPWORDS]


def _stem(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def is_question(text: str) -> bool:
    """Whether a text only asks: one sentence ending with "?" or opening with a question word.

    A longer text that ends with a question ("The code is X. Can you confirm?") also tells.
    """
    text = text.strip()
    if not text or _SENTENCE_BREAK.search(text):
        return False
    return text.endswith("?") or text.split(maxsplit=1)[0].lower() in QUESTION_WORDS


def idf(documents: int, containing: int) -> float:
    """How telling a word is: rare words weigh more (BM25's inverse document frequency)."""
    return math.log(1 + (documents - containing + 0.5) / (containing + 0.5))


def bm25_term(count: int, length: int, average: float) -> float:
    """A word's BM25 weight in a document of ``length`` words where it occurs ``count`` times,
    before the ``idf`` factor."""
    return count * (K1 + 1) / (count + K1 * (1 - B + B * length / (average or 1.0)))


_SALIENT = re.compile(
    r"\b\d{4}-\d\d-\d\d(?:T[\d:]+)?\b"  # ISO dates and times
    r"|\b[A-Za-z]*\d[\w.,/:-]*\w|\b\d\b"  # anything with a digit: amounts, codes, versions
    r"|\b[A-Z][A-Za-z]*[A-Z][\w-]*"  # ACRONYMS and CamelCase names
    r"|\b[A-Z][a-z]{2,}\b"  # capitalised words: names, when they do not open a sentence
)
_OPENS_SENTENCE = re.compile(r"(?:^|[.!?:]\s+|\n\s*)$")


def salient_terms(text: str) -> list[str]:
    """The names, numbers, dates and identifiers of a text, in order, each once."""
    found = []
    for match in _SALIENT.finditer(text):
        term = match.group()
        if term[0].isupper() and term[1:].islower():
            before = text[max(0, match.start() - 3) : match.start()]
            if _OPENS_SENTENCE.search(before) or term.lower() in STOPWORDS:
                continue
        found.append(term)
    return list(dict.fromkeys(found))


def missing_terms(text: str, kept: str, *, ignore: Iterable[str] = ()) -> list[str]:
    """The salient terms of ``text`` that ``kept`` does not contain (any case).

    ``ignore`` names the speakers (roles, the agent's name): a transcript labels its lines with
    them, so they are no term a summary could drop."""
    return left_out(salient_terms(text), kept, ignore=ignore)


def left_out(terms: Iterable[str], kept: str, *, ignore: Iterable[str] = ()) -> list[str]:
    """The ``terms`` that ``kept`` does not contain (any case), but for ``ignore`` (speakers):
    :func:`missing_terms` once the salient terms of a text are known."""
    folded = kept.casefold()
    speakers = {speaker.casefold() for speaker in ignore}
    return [
        term for term in terms if (lower := term.casefold()) not in speakers and lower not in folded
    ]
