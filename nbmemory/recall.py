"""Recall: an agent searching everything it was ever told, its archives included.

Compaction keeps a memory small, but a summary cannot keep every fact. Every raw transcript is
in ``archive/``, so an agent with persistent memory gets a tool to search them: the passages
that best match the query (BM25 over MEMORY.md and every archive, words Snowball-stemmed,
re-ranked by who said it, whether it says when, and which is newer), each with who said it,
when, and where it is kept, and with the question or answer that goes with it. The index of
a file is built once and kept while the file is unchanged; a grown MEMORY.md is indexed for
its new messages only. A query's cost is bounded: only its first ``QUERY_TERMS`` distinct
words (of its first ``QUERY_CHARS`` characters) count, and only its best matches by words are
re-ranked.

With an agent's embedding model (``embeddings.SemanticIndex``), a second ranking by meaning is
fused with the ranking by words (reciprocal rank fusion), then passages are made as above; if
the provider fails, recall is by words alone. Without one, nothing is hashed or embedded.

Recall's own results are written to memory like any tool result; they are never recalled,
nor are requests to call tools: what recall returns is only what was said.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import hashlib
import heapq
import re
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from nbmemory import provenance
from nbmemory.follow import FollowedFile, follow
from nbmemory.provenance import Cell, Lineage
from nbmemory.search import content_text
from nbmemory.store import AgentDocs
from nbmemory.terms import bm25_term, idf, words
from nbmemory.wording import cell_words, superseded_words
from nbmemory.workspace import MEMORY_FILE

TOOL_NAME = "recall_memory"
PROMPT_LINE = (
    f"Earlier sessions are archived, not lost: when a question needs something that is not in "
    f"this conversation (a name, a number, a date, a decision), call {TOOL_NAME} before you "
    "answer."
)
DEFAULT_PASSAGES = 3
QUERY_CHARS = 1_000
QUERY_TERMS = 24
PASSAGE_CHARS = 600
_FEW = 50
_POOL = 100


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


def _recallable(message: dict[str, Any]) -> str | None:
    """The text recall may return for a message, or ``None`` for recall's own results and for
    requests to call tools. A question is kept: "Did you know I moved to Lyon?" tells, and an
    answer is found through the question it answers."""
    content = message.get("content")
    if isinstance(content, dict):
        if content.get("tool_calls") or content.get("name") == TOOL_NAME:
            return None
        if isinstance(content.get("content"), str):
            content = content["content"]
    text = content_text(content)
    return text if text.strip() else None


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


_ASKS_WHEN = re.compile(
    r"^\s*(?:when|since when|how long ago|(?:on |in )?what (?:date|day|year|month|time)|"
    r"(?:on |in )?which (?:date|day|year|month))\b",
    re.IGNORECASE,
)
NAMED = 1.0
"""How much more a message said by a person the query names counts (score x (1 + NAMED))."""
DATED = 1.0
"""How much more a message that carries a date counts for a "when" question."""
QUESTION = 0.5
"""What a bare question (one that carries no answer beside it) counts: it asks, it tells less."""
SUPERSEDED = 0.5
"""What a message from a cell's earlier run counts once the cell was run again: the later run
is the current one, and ranks first when both match as well."""


class _FileIndex:
    """The BM25 statistics of one file's messages, extended as the file grows.

    One index serves every reading of a file while it only grows (``FollowedFile.grown``):
    an append indexes the new messages alone; a file rewritten (a compaction) gets a new one.
    A message's entries are complete (terms, length, the message) before any posting names
    it, so a reader never waits for an extension, and at worst also sees newer messages.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.messages: list[dict[str, Any]] = []
        self.texts: list[str | None] = []
        """What recall may return of each message (``_recallable``), worked out once: a
        message of megabytes is not looked through again at every recall that finds it."""
        self.terms: list[Counter[str] | None] = []
        self.lengths: list[int] = []
        self.speakers: list[frozenset[str]] = []
        """The words of each message's speaker (its role: "User", a person's or agent's name)."""
        self.spoken: Counter[str] = Counter()
        """How many messages each speaker's words are the speaker of."""
        self.dated: list[bool] = []
        """Whether a message says when ("yesterday", "last May", "2026-04-20")."""
        self.asks: list[bool] = []
        """Whether a message ends with a question: the next one, by another, may answer it."""
        self.documents = 0
        self.words = 0
        self.postings: dict[str, list[tuple[int, int]]] = {}
        self._roles: dict[str, frozenset[str]] = {}
        self.keys: list[bytes | None] = []
        """The key of each message's vector (``embeddings.text_key``), made when recall first
        ranks by meaning: without an embedding model no message is hashed."""

    def extend(self, messages: list[dict[str, Any]]) -> None:
        """Index those of ``messages`` (a reading of the file) that are not indexed yet."""
        with self.lock:
            for message in messages[len(self.messages) :]:
                text = _recallable(message)
                counts = Counter(words(text)) if text is not None else None
                role = str(message.get("role", ""))
                speaker = self._roles.get(role)
                if speaker is None:
                    speaker = self._roles[role] = frozenset(words(role))
                i = len(self.terms)
                self.terms.append(counts)
                self.lengths.append(sum(counts.values()) if counts else 0)
                self.texts.append(text)
                self.speakers.append(speaker)
                if counts is not None:
                    self.spoken.update(speaker)
                self.dated.append(text is not None and _dated(text, counts))
                self.asks.append(text is not None and text.rstrip().endswith("?"))
                self.messages.append(message)
                self.documents += counts is not None
                self.words += self.lengths[i]
                for term, count in (counts or {}).items():
                    self.postings.setdefault(term, []).append((i, count))

    def beside(self, i: int) -> int | None:
        """The message that belongs with message ``i`` and fits beside it in a passage: the
        answer to it if it asks, else the question it answers; ``None`` if neither."""
        j = i + 1 if self.asks[i] else i - 1
        if not 0 <= j < len(self.texts) or (j < i and not self.asks[j]):
            return None
        first, second = self.texts[i], self.texts[j]
        if first is None or second is None or len(first) + len(second) > PASSAGE_CHARS:
            return None
        if self.messages[i].get("role") == self.messages[j].get("role"):
            return None
        return j


def _index(followed: FollowedFile) -> _FileIndex:
    with followed.lock:
        index = followed.grown.setdefault("recall", _FileIndex())
    index.extend(followed.messages)
    return index


EMBEDDED_CHARS = 4_000
"""Characters of a message that are embedded (about 1,000 tokens, under every model's limit)."""


def text_key(text: str) -> bytes:
    """The key of a message's vector: a hash of what is embedded of it."""
    return hashlib.sha256(text[:EMBEDDED_CHARS].encode("utf-8", "surrogatepass")).digest()[:16]


class SemanticIndex(Protocol):
    """What recall asks of an agent's embeddings (``embeddings.SemanticIndex``)."""

    def ranked(
        self, query: str, keys: list[bytes | None], texts: list[str | None], count: int
    ) -> list[tuple[float, int]] | None: ...


def _keys(index: _FileIndex) -> list[bytes | None]:
    """The vector keys of an index's messages (``None`` for what recall never returns)."""
    with index.lock:
        count = len(index.texts)
        for text in index.texts[len(index.keys) : count]:
            index.keys.append(None if text is None else text_key(text))
        return index.keys[:count]


def query_terms(query: str) -> list[str]:
    """The words recall looks for: the first ``QUERY_TERMS`` distinct content words of the
    query's first ``QUERY_CHARS`` characters, so that no query costs more than a short one."""
    return list(dict.fromkeys(words(query[:QUERY_CHARS])))[:QUERY_TERMS]


def sources(docs: AgentDocs) -> list[Path]:
    """The documents recall searches: the agent's archives, oldest first, then MEMORY.md."""
    return [*docs.archives(), docs.path(MEMORY_FILE)]


def recall(
    docs: AgentDocs,
    query: str,
    limit: int = DEFAULT_PASSAGES,
    semantic: SemanticIndex | None = None,
) -> list[Passage]:
    """The passages of an agent's memory and archives (``Workspace.agent(name)``) that best
    match ``query``, best first.

    BM25 over stemmed words, then: a message said by a person the query names counts more
    (``NAMED``), as does one that says when, for a question asking when (``DATED``); a
    question counts less (``QUESTION``) unless its answer is beside it; of messages that
    match the same words, said by the same, the newest ranks first; and a passage carries the
    question or answer that goes with its message.

    With ``semantic`` (the agent's embeddings), the ranking by words and the ranking by meaning
    are fused (reciprocal rank fusion, ``FUSION_K``), so a question in other words than the
    fact finds it; if the embedding provider fails, the ranking by words alone (one warning).
    """
    indexes = []
    for path in sources(docs):
        followed = follow(path, docs)
        if followed is not None and followed.messages:
            indexes.append((path, _index(followed)))
    if not sum(index.documents for _, index in indexes):
        return []
    asked = set(query_terms(query))
    ranked = _lexical(indexes, query, asked, limit)
    if semantic is not None:
        by_meaning = _by_meaning(semantic, indexes, query, asked, limit)
        if by_meaning is not None:
            ranked = _fused(indexes, ranked, by_meaning)
    lineage = provenance.lineage(docs)
    if len(lineage):
        ranked = _current_first(ranked, lineage)
    # Newer files and messages win ties. A message kept word for word across a compaction is
    # in two files, and a question and its answer may each be found: each is returned once
    # (but a question asked twice, answered differently, is two passages).
    best, seen = [], set()
    for item in sorted(ranked, key=lambda item: item[:3], reverse=True):
        index, held = item[4], [item[2]] if item[5] is None else [item[2], item[5]]
        said = {index.texts[k] for k in held}
        if not said <= seen:
            seen |= said
            best.append(item)
            if len(best) == limit:
                break
    return [
        _passage(
            path,
            index,
            i,
            score,
            () if j is None else (_passage(path, index, j, 0.0, lineage=lineage),),
            lineage,
        )
        for score, _, i, path, index, j, _ in best
    ]


def _current_first(ranked: list[tuple[Any, ...]], lineage: Lineage) -> list[tuple[Any, ...]]:
    """``ranked`` with the messages of superseded runs of a cell counting ``SUPERSEDED``, best
    first again (ties keep the order of file and message: the newer first)."""
    weighed = []
    for item in ranked:
        cell = lineage.of(item[4].messages[item[2]])
        weighed.append((item[0] * SUPERSEDED, *item[1:]) if cell and cell.superseded else item)
    return sorted(weighed, key=lambda item: item[:3], reverse=True)


def _lexical(
    indexes: list[tuple[Path, _FileIndex]], query: str, asked: set[str], limit: int
) -> list[tuple[Any, ...]]:
    """The best matches by words, best first: ``(score, file rank, message, path, index,
    message beside it or None, what it says)``."""
    documents = sum(index.documents for _, index in indexes)
    if not asked:
        return []
    average = sum(index.words for _, index in indexes) / documents
    frequency = {t: sum(len(index.postings.get(t, ())) for _, index in indexes) for t in asked}
    # A name counts as said by each message its person says, so that it weighs what it tells.
    spoken = {t: sum(index.spoken.get(t, 0) for _, index in indexes) for t in asked}
    weights = {t: idf(documents, min(documents, n + spoken[t])) for t, n in frequency.items()}
    named = {t for t, n in spoken.items() if n}
    when = _ASKS_WHEN.match(query[:QUERY_CHARS]) is not None
    # Words rare enough to pick the candidates: then common words are only looked up in them,
    # which keeps a query fast on a long history.
    rare = [t for t, count in frequency.items() if 0 < count <= max(_FEW, documents // 20)]
    scored: list[tuple[Any, ...]] = []
    before = 0
    for rank, (path, index) in enumerate(indexes):
        scores: dict[int, float] = {}
        if rare:
            for i in {i for term in rare for i, _ in index.postings.get(term, ())}:
                counts, length = index.terms[i], index.lengths[i]
                scores[i] = sum(
                    weight * bm25_term(counts[term], length, average)
                    for term, weight in weights.items()
                    if counts.get(term)
                )
        else:
            for term, weight in weights.items():
                for i, count in index.postings.get(term, ()):
                    gain = weight * bm25_term(count, index.lengths[i], average)
                    scores[i] = scores.get(i, 0.0) + gain
        # A message with nothing the query does not already say (the question itself, an
        # earlier asking of it) answers nothing.
        scored.extend(
            (score, rank, i, path, index, before + i)
            for i, score in scores.items()
            if not index.terms[i].keys() <= asked
        )
        before += len(index.messages)
    # Who said it, when, and what goes with it re-rank the best by their words alone, so that
    # a query costs no more than before on a long history.
    pool = heapq.nlargest(max(_POOL, limit * 20), scored, key=lambda item: item[:3])
    ranked = []
    latest: dict[tuple[Any, ...], int] = {}
    for score, rank, i, path, index, _ in pool:
        j = index.beside(i)
        if j is None and index.asks[i]:
            score *= QUESTION
        # Whose fact it is: the answer's speaker when a question carries its answer.
        teller = j if j is not None and j > i else i
        said_by = index.speakers[teller] & named
        if said_by:
            # The speaker's name is as good as said: "Maya: I play" answers "What does Maya
            # play?" as "Maya plays" would, and more.
            score += sum(
                weights[name] * bm25_term(1, index.lengths[i], average)
                for name in said_by
                if not index.terms[i].get(name)
            )
            score *= 1 + NAMED
        dated = when and (index.dated[i] or (j is not None and index.dated[j]))
        if dated:
            score *= 1 + DATED
        # Messages that match the same words of the query (most of what it asks), said by the
        # same, say the same thing: the newest is the current one (a fact said again later,
        # changed), and ranks with the best of them if it matches at least half as well.
        matched = frozenset(index.terms[i].keys() & asked)
        same = (matched, index.speakers[teller], dated)
        newest = latest.get(same)
        if newest is None or ranked[newest][1:3] < (rank, i):
            latest[same] = len(ranked)
        ranked.append((score, rank, i, path, index, j, same))
    best_of: dict[tuple[Any, ...], float] = {}
    for item in ranked:
        best_of[item[6]] = max(best_of.get(item[6], 0.0), item[0])
    topic = sum(weights[t] for t in asked - named)
    for same, n in latest.items():
        if sum(weights[t] for t in same[0]) >= topic / 2 and ranked[n][0] >= best_of[same] / 2:
            ranked[n] = (best_of[same], *ranked[n][1:])
    return sorted(ranked, key=lambda item: item[:3], reverse=True)


def _by_meaning(
    semantic: SemanticIndex,
    indexes: list[tuple[Path, _FileIndex]],
    query: str,
    asked: set[str],
    limit: int,
) -> list[tuple[int, int]] | None:
    """The best matches by meaning, best first, as ``(file rank, message)``; ``None`` if the
    provider failed. Messages recall never returns, and those with nothing the query does not
    already say, are left out; a bare question counts less (``QUESTION``), as by words."""
    keys: list[bytes | None] = []
    texts: list[str | None] = []
    starts = []
    for _, index in indexes:  # whole lists joined: no step per message in Python
        starts.append(len(keys))
        found = _keys(index)
        keys += found
        texts += index.texts[: len(found)]
    if not any(keys):
        return []
    pool = max(_POOL, limit * 20)
    # Asked for more than the pool: the question itself and its earlier askings are dropped.
    found = semantic.ranked(query[:QUERY_CHARS], keys, texts, 2 * pool + 16)
    if found is None:
        return None
    best = []
    for score, n in found:
        rank = bisect.bisect_right(starts, n) - 1
        index, i = indexes[rank][1], n - starts[rank]
        terms = index.terms[i]
        if terms is None or terms.keys() <= asked:
            continue
        if index.asks[i] and index.beside(i) is None:
            score *= QUESTION
        best.append((score, rank, i))
    best.sort(reverse=True)  # ties: the newer file, the later message
    return [(rank, i) for _, rank, i in best[:pool]]


FUSION_K = 60
"""Reciprocal rank fusion: a message scores the sum of 1 / (FUSION_K + its place) over the
rankings by words and by meaning."""


def _fused(
    indexes: list[tuple[Path, _FileIndex]],
    lexical: list[tuple[Any, ...]],
    by_meaning: list[tuple[int, int]],
) -> list[tuple[Any, ...]]:
    """The two rankings fused (``FUSION_K``), best first; ties go to the newer message."""
    items: dict[tuple[int, int], list[Any]] = {}
    pool = max(_POOL, len(by_meaning))
    for place, item in enumerate(lexical[:pool], 1):
        items.setdefault((item[1], item[2]), [0.0, item])[0] += 1 / (FUSION_K + place)
    for place, (rank, i) in enumerate(by_meaning, 1):
        entry = items.get((rank, i))
        if entry is None:
            path, index = indexes[rank]
            entry = items[rank, i] = [0.0, (0.0, rank, i, path, index, index.beside(i), None)]
        entry[0] += 1 / (FUSION_K + place)
    fused = [(score, *item[1:]) for score, item in items.values()]
    return sorted(fused, key=lambda item: item[:3], reverse=True)


def _passage(
    path: Path,
    index: _FileIndex,
    i: int,
    score: float,
    beside: tuple[Passage, ...] = (),
    lineage: Lineage = provenance.EMPTY,
) -> Passage:
    message = index.messages[i]
    return Passage(
        source=path.name,
        index=i,
        role=str(message.get("role", "")),
        timestamp=str(message.get("timestamp", "")),
        text=index.texts[i] or "",
        score=score,
        beside=beside,
        cell=_cell_label(lineage.of(message)),
    )


def _cell_label(cell: Cell | None) -> str | None:
    if cell is None:
        return None
    where = cell.provenance
    label = cell_words(where.notebook, where.execution_count)
    return f"{label}, {superseded_words(cell.superseded_by)}" if cell.superseded else label


def describe(query: str, passages: list[Passage]) -> str:
    """Passages as the tool's answer to the model: who said what, when, and where it is kept;
    a message a passage carries (``beside``) comes in the order said, marked ``[n+]``."""
    if not passages:
        return f"Nothing said in this agent's memory or archives matches {query!r}."
    lines = [
        f"{len(passages)} passage(s) from this agent's memory and archives, best first "
        "([n+]: the question or answer that goes with passage n):"
    ]
    for n, passage in enumerate(passages, 1):
        said = sorted(
            [(passage, ""), *((p, "+") for p in passage.beside)], key=lambda x: x[0].index
        )
        for shown, mark in said:
            text = shown.text
            if len(text) > PASSAGE_CHARS:
                text = text[:PASSAGE_CHARS] + f"… ({len(shown.text):,} characters in all)"
            where = f"{shown.source}, message {shown.index}"
            if shown.cell:
                where += f"; {' '.join(shown.cell.split())}"
            lines.append(f"[{n}{mark}] {shown.role} at {shown.timestamp} ({where}):\n{text}")
    return "\n\n".join(lines)


_DESCRIBED = re.compile(
    r"^\[(?P<n>\d+)(?P<beside>\+?)\] (?P<role>.+?) at (?P<timestamp>\S*) \((?P<source>[^\n]*?), "
    r"message (?P<index>\d+)(?:; (?P<cell>[^\n]*))?\):\n(?P<text>.*?)"
    r"(?=\n\n\[\d+\+?\] [^\n]+? at \S* \([^\n]*?, message \d+(?:; [^\n]*)?\):\n|\Z)",
    re.MULTILINE | re.DOTALL,
)


def described(answer: str) -> list[Passage]:
    """The passages of an answer :func:`describe` wrote, best first (text as shown, so a long
    one ends with its length; no scores), each with what it carries: what a model, or the
    offline one, reads back."""
    found: dict[int, Passage] = {}
    carried: dict[int, list[Passage]] = {}
    for match in _DESCRIBED.finditer(answer):
        passage = Passage(
            source=match["source"],
            index=int(match["index"]),
            role=match["role"],
            timestamp=match["timestamp"],
            text=match["text"],
            score=0.0,
            cell=match["cell"],
        )
        n = int(match["n"])
        if match["beside"]:
            carried.setdefault(n, []).append(passage)
        else:
            found[n] = passage
    return [
        dataclasses.replace(passage, beside=tuple(carried.get(n, ())))
        for n, passage in sorted(found.items())
    ]


def recall_tool(
    folder: Callable[[], AgentDocs | None],
    semantic: Callable[[], SemanticIndex | None] = lambda: None,
) -> Callable[[str], str]:
    """The recall tool for the agent whose documents ``folder()`` returns (``None``: no
    memory), ranking by meaning too when ``semantic()`` gives its embeddings."""

    def recall_memory(query: str) -> str:
        """Search everything said in this agent's earlier sessions, archived ones included.
        Call it once per fact when a question needs several ("X and Y?": one call for X, one
        for Y), and again in other words if a search misses.

        Use it when the conversation does not hold what a question needs: a name, a number,
        a date, a decision. Returns the best matching passages with who said them and when.

        Args:
            query: Up to 24 words, such as names, numbers or topics.
        """
        where = folder()
        if where is None:
            return "This agent keeps no memory on disk: there is nothing earlier to search."
        return describe(query, recall(where, query, semantic=semantic()))

    recall_memory.__name__ = TOOL_NAME
    return recall_memory
