"""Recall's words with the model: the questions it is asked, split into the things they ask
(``sub_queries``), and its answers, the passages it found written out within a token budget
(``describe``), the messages a follow-up lists (``listed_answer``), and both read back
(``described``), as the offline model reads them. A message is cited as every view numbers it,
from 1 (``wording.FIRST_NUMBER``); a ``Passage`` keeps its index from 0.

Apart from ``recall`` so that the offline model, which reads recall's answers, does not depend
on the engine that finds them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from nbmemory.terms import QUESTION_WORDS, words
from nbmemory.tokens import TokenCounter
from nbmemory.wording import FIRST_NUMBER, counted

TOOL_NAME = "recall_memory"
AROUND_TOOL = "recall_around"
BETWEEN_TOOL = "recall_between"
RECALL_TOOLS = frozenset({TOOL_NAME, AROUND_TOOL, BETWEEN_TOOL})
"""The tools whose results are recall's: what they return was said elsewhere, so their results
are never recalled, summarized or taken for something said."""
DEFAULT_PASSAGES = 5
"""Passages recall returns, and its tool shows, by default: on conversations people wrote, 4.8
of five fit the tool's budget (``DEFAULT_BUDGET``) on average (``human_recall.py --tool``)."""
QUERY_CHARS = 1_000
PASSAGE_CHARS = 600


@dataclasses.dataclass(frozen=True)
class Passage:
    """One message recall found: where it is kept (file and index), who said it, when, what;
    ``beside`` holds a neighbouring message it carries (a question and its answer belong
    together), in the order they were said."""

    source: str
    index: int
    role: str
    timestamp: str
    text: str
    score: float
    beside: tuple[Passage, ...] = ()
    cell: str | None = None
    """The notebook cell that wrote it, worded (``cell [12] of analysis.ipynb``, and
    ``, superseded by cell [15]`` when a later run of that cell supersedes it), if recorded."""


_AND = re.compile(r",?\s+(?:and|or)\s+", re.IGNORECASE)
_BOTH = re.compile(r"\s*\b(?:both|each|either)\b", re.IGNORECASE)
_LISTED = re.compile(r"\b\w[\w'-]*(?:\s*,\s*\w[\w'-]*)+,?\s+(?:and|or)\s+\w[\w'-]*")
MAX_PARTS = 4
"""Sub-queries a question is split into at most (``sub_queries``)."""


def sub_queries(question: str) -> list[str]:
    """The parts of a question that asks several things, one query each; else the question.

    "What is the budget and when is the deadline?" asks two questions; "What do Maya and Tomas
    both play?" asks one of each person ("What do Maya play?", "What do Tomas play?": words
    are what recall looks for), as does "Where did Maya, Tomas and Ines go?" of three. Each
    part says something the others do not, or the question is not split; at most
    ``MAX_PARTS`` parts.
    """
    asked = _BOTH.sub("", question[:QUERY_CHARS])
    two = [m for m in _AND.finditer(asked) if _asks(asked[m.end() :])]
    if two:  # two questions, each perhaps about several things
        left, right = asked[: two[0].start()].strip().rstrip("?") + "?", asked[two[0].end() :]
        parts = [*_things(left), *_things(right.strip())]
    else:
        parts = _things(asked)
    parts = parts[:MAX_PARTS]
    said = [set(words(part)) for part in parts]
    if len(parts) < 2 or any(
        not own - set().union(*said[:n], *said[n + 1 :]) for n, own in enumerate(said)
    ):
        return [question]
    return parts


def _asks(text: str) -> bool:
    first = text.split(maxsplit=1)
    return bool(first) and first[0].lower() in QUESTION_WORDS


def _things(question: str) -> list[str]:
    """One question about several things as one per thing: a list of single words ("Maya,
    Tomas and Ines"), or the words either side of its first "and" ("the budget and the
    deadline"; a name of several words before a name: "Fahim Khan and Akib"), which stand for
    each other."""
    listed = _LISTED.search(question)
    if listed is not None:
        items = [item for item in re.split(r",?\s+(?:and|or)\s+|\s*,\s*", listed[0]) if item]
        head, tail = question[: listed.start()], question[listed.end() :]
        return [head + item + tail for item in items]
    found = _AND.search(question)
    if found is None:
        return [question]
    ahead, behind = question[: found.start()].split(), question[found.end() :].split()
    last = max((i for i, w in enumerate(ahead) if words(w)), default=None)
    first = min((i for i, w in enumerate(behind) if words(w)), default=None)
    if last is None or first is None:
        return [question]
    end = first
    if ahead[last][:1].isupper() and behind[first][:1].isupper():  # names, of several words
        while last > 1 and ahead[last - 1][:1].isupper():
            last -= 1
        while end + 1 < len(behind) and behind[end + 1][:1].isupper():
            end += 1
    return [" ".join(ahead + behind[end + 1 :]), " ".join(ahead[:last] + behind)]


DEFAULT_BUDGET = 800
"""Tokens the tool's answer takes at most, by default (``Agent(recall_budget=...)``)."""
LISTED = 8
"""Passages the tool asks for: those that fit the budget are shown (at most
``DEFAULT_PASSAGES``), the others are listed by where they are kept."""
SHORTEST = 80
"""Characters a passage is cut to, at the least, to fit a small budget."""


def describe(
    query: str,
    passages: list[Passage],
    *,
    matched: int | None = None,
    budget: int | None = None,
    count: Callable[[str], int] | None = None,
    shown: int = DEFAULT_PASSAGES,
    again: bool = False,
) -> str:
    """Passages as the tool's answer to the model: who said what, when, and where it is kept;
    a message a passage carries (``beside``) comes in the order said, marked ``[n+]``.
    ``again``: when more matched, say that the same query again gives the next ones.

    With a ``budget`` (tokens, as ``count`` counts them; by default as ``tokens.TokenCounter``
    counts for an unknown model), the answer stays within it: at most ``shown`` passages, as
    many as fit (their texts cut shorter if even one does not), then where the others found
    are kept (file, message, time) and how many more messages matched (``matched``, all of
    them)."""
    if not passages:
        return f"Nothing said in this agent's memory or archives matches {query!r}."
    if budget is None:
        return _described(passages, len(passages), matched, PASSAGE_CHARS, 0, again)
    if count is None:
        count = TokenCounter().count
    # Rather a passage than where others are; rather a shorter passage than none.
    for n in range(min(shown, len(passages)), -1, -1):
        for listed in range(len(passages) - n, -1, -1):
            chars = PASSAGE_CHARS
            while True:
                answer = _described(passages, n, matched, chars, listed, again)
                if count(answer) <= budget:
                    return answer
                if n != 1 or chars <= SHORTEST:
                    break
                chars = max(SHORTEST, chars // 2)
    return answer  # not even the count fits: the count


def _described(
    passages: list[Passage], n: int, matched: int | None, chars: int, listed: int, again: bool
) -> str:
    """The first ``n`` passages, their texts cut at ``chars``, then how many more messages
    matched and where the next ``listed`` passages are kept."""
    shown = passages[:n]
    lines = []
    if shown:
        lines.append(
            f"{counted(len(shown), 'passage')} from this agent's memory and archives, best "
            "first ([n+]: the message that goes with passage n):"
        )
    for k, passage in enumerate(shown, 1):
        said = sorted(
            [(passage, ""), *((p, "+") for p in passage.beside)], key=lambda x: x[0].index
        )
        lines += [said_block(f"{k}{mark}", part, chars) for part, mark in said]
    held = sum(1 + len(p.beside) for p in shown)
    more = max(0, (matched if matched is not None else len(passages)) - held)
    if more:
        rest = passages[n : n + listed]
        how = f"call {TOOL_NAME} again with the same query for the next ones, or " if again else ""
        lines.append(
            f"{counted(more, 'more message')} matched"
            + (f" ({how}ask in other words to narrow them down); next best:" if rest else ".")
            + "".join(f"\n- {citation(p)}, {p.role} at {p.timestamp}" for p in rest)
        )
    return "\n\n".join(lines)


def citation(passage: Passage) -> str:
    """Where a message is kept, as recall cites it: ``history_….md, message 5``."""
    return f"{passage.source}, message {passage.index + FIRST_NUMBER}"


def said_block(label: str, passage: Passage, chars: int = PASSAGE_CHARS) -> str:
    """One message as recall's answers show it: ``[label] role at time (citation):`` then its
    text, cut at ``chars`` (saying how long it is)."""
    text = passage.text
    if len(text) > chars:
        text = text[:chars] + f"… ({len(passage.text):,} characters in all)"
    where = citation(passage)
    if passage.cell:
        where += f"; {' '.join(passage.cell.split())}"
    return f"[{label}] {passage.role} at {passage.timestamp} ({where}):\n{text}"


def listed_answer(
    head: str,
    said: list[Passage],
    asked: int | None = None,
    tail: str = "",
    chars: int = PASSAGE_CHARS,
) -> str:
    """Messages in the order said, as a follow-up of recall lists them: ``head``, then each
    numbered ``[n]`` (``said[asked]``, the one asked about, ``[n*]``), then ``tail``, which
    says how many more messages there are ("3 more messages ..."): read back, it is no text."""
    blocks = [
        said_block(f"{k}{'*' if k - 1 == asked else ''}", passage, chars)
        for k, passage in enumerate(said, 1)
    ]
    return "\n\n".join([head, *blocks, *([tail] if tail else [])])


_DESCRIBED = re.compile(
    r"^\[(?P<n>\d+)(?P<mark>[+*]?)\] (?P<role>.+?) at (?P<timestamp>\S*) \((?P<source>[^\n]*?), "
    r"message (?P<index>\d+)(?:; (?P<cell>[^\n]*))?\):\n(?P<text>.*?)"
    r"(?=\n\n\[\d+[+*]?\] [^\n]+? at \S* \([^\n]*?, message \d+(?:; [^\n]*)?\):\n"
    r"|\n\n[\d,]+ more message|\Z)",
    re.MULTILINE | re.DOTALL,
)


def described(answer: str) -> list[Passage]:
    """The passages of an answer :func:`describe` wrote, best first (text as shown, so a long
    one ends with its length; no scores), each with what it carries; or the messages of one
    :func:`listed_answer` wrote, in the order said: what a model, or the offline one, reads
    back."""
    found: dict[int, Passage] = {}
    carried: dict[int, list[Passage]] = {}
    for match in _DESCRIBED.finditer(answer):
        passage = Passage(
            source=match["source"],
            index=int(match["index"]) - FIRST_NUMBER,
            role=match["role"],
            timestamp=match["timestamp"],
            text=match["text"],
            score=0.0,
            cell=match["cell"],
        )
        n = int(match["n"])
        if match["mark"] == "+":
            carried.setdefault(n, []).append(passage)
        else:
            found[n] = passage
    return [
        dataclasses.replace(passage, beside=tuple(carried.get(n, ())))
        for n, passage in sorted(found.items())
    ]
