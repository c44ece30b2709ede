"""Recall: an agent searching everything it was ever told, its archives included.

Compaction keeps a memory small, but a summary cannot keep every fact. Every raw transcript is
in ``archive/``, so an agent with persistent memory gets a tool to search them: the passages
that best match the query (BM25 over MEMORY.md and every archive), each with who said it,
when, and where it is kept. The index of a file is built once and kept while the file is
unchanged; a grown MEMORY.md is indexed for its new messages only. A query's cost is bounded:
only its first ``QUERY_TERMS`` distinct words (of its first ``QUERY_CHARS`` characters) count.

Recall's own results are written to memory like any tool result; they are never recalled,
nor are requests to call tools: what recall returns is only what was said.
"""

from __future__ import annotations

import heapq
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbmemory.follow import FollowedFile, follow
from nbmemory.search import content_text
from nbmemory.store import AgentDocs
from nbmemory.terms import bm25_term, idf, is_question, words
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


@dataclass(frozen=True)
class Passage:
    """One message recall found: where it is kept (file and index), who said it, when, what."""

    source: str
    index: int
    role: str
    timestamp: str
    text: str
    score: float


def _recallable(message: dict[str, Any]) -> str | None:
    """The text recall may return for a message, or ``None`` for recall's own results, for
    requests to call tools, and for questions (a question is no answer)."""
    content = message.get("content")
    if isinstance(content, dict):
        if content.get("tool_calls") or content.get("name") == TOOL_NAME:
            return None
        if isinstance(content.get("content"), str):
            content = content["content"]
    text = content_text(content)
    return text if text.strip() and not is_question(text) else None


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
        self.documents = 0
        self.words = 0
        self.postings: dict[str, list[tuple[int, int]]] = {}

    def extend(self, messages: list[dict[str, Any]]) -> None:
        """Index those of ``messages`` (a reading of the file) that are not indexed yet."""
        with self.lock:
            for message in messages[len(self.messages) :]:
                text = _recallable(message)
                counts = Counter(words(text)) if text is not None else None
                i = len(self.terms)
                self.terms.append(counts)
                self.lengths.append(sum(counts.values()) if counts else 0)
                self.texts.append(text)
                self.messages.append(message)
                self.documents += counts is not None
                self.words += self.lengths[i]
                for term, count in (counts or {}).items():
                    self.postings.setdefault(term, []).append((i, count))


def _index(followed: FollowedFile) -> _FileIndex:
    with followed.lock:
        index = followed.grown.setdefault("recall", _FileIndex())
    index.extend(followed.messages)
    return index


def query_terms(query: str) -> list[str]:
    """The words recall looks for: the first ``QUERY_TERMS`` distinct content words of the
    query's first ``QUERY_CHARS`` characters, so that no query costs more than a short one."""
    return list(dict.fromkeys(words(query[:QUERY_CHARS])))[:QUERY_TERMS]


def sources(docs: AgentDocs) -> list[Path]:
    """The documents recall searches: the agent's archives, oldest first, then MEMORY.md."""
    return [*docs.archives(), docs.path(MEMORY_FILE)]


def recall(docs: AgentDocs, query: str, limit: int = DEFAULT_PASSAGES) -> list[Passage]:
    """The passages of an agent's memory and archives (``Workspace.agent(name)``) that best
    match ``query``, best first."""
    asked = set(query_terms(query))
    indexes = []
    for path in sources(docs):
        followed = follow(path, docs)
        if followed is not None and followed.messages:
            indexes.append((path, _index(followed)))
    documents = sum(index.documents for _, index in indexes)
    if not asked or not documents:
        return []
    average = sum(index.words for _, index in indexes) / documents
    frequency = {t: sum(len(index.postings.get(t, ())) for _, index in indexes) for t in asked}
    weights = {term: idf(documents, count) for term, count in frequency.items()}
    # Words rare enough to pick the candidates: then common words are only looked up in them,
    # which keeps a query fast on a long history.
    rare = [t for t, count in frequency.items() if 0 < count <= max(_FEW, documents // 20)]
    scored: list[tuple[float, int, int, Path, _FileIndex]] = []
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
            (score, rank, i, path, index)
            for i, score in scores.items()
            if not index.terms[i].keys() <= asked
        )
    # Newer files and messages win ties: a fact restated later is the current one. A message
    # kept word for word across a compaction is in two files: it is returned once.
    best, seen = [], set()
    for item in heapq.nlargest(limit * 4, scored, key=lambda item: item[:3]):
        text = item[4].texts[item[2]]
        if text not in seen and len(best) < limit:
            seen.add(text)
            best.append(item)
    passages = []
    for score, _, i, path, index in best:
        message = index.messages[i]
        passages.append(
            Passage(
                source=path.name,
                index=i,
                role=str(message.get("role", "")),
                timestamp=str(message.get("timestamp", "")),
                text=index.texts[i] or "",
                score=score,
            )
        )
    return passages


def describe(query: str, passages: list[Passage]) -> str:
    """Passages as the tool's answer to the model: who said what, when, and where it is kept."""
    if not passages:
        return f"Nothing said in this agent's memory or archives matches {query!r}."
    lines = [f"{len(passages)} passage(s) from this agent's memory and archives, best first:"]
    for n, passage in enumerate(passages, 1):
        text = passage.text
        if len(text) > PASSAGE_CHARS:
            text = text[:PASSAGE_CHARS] + f"… ({len(passage.text):,} characters in all)"
        where = f"{passage.source}, message {passage.index}"
        lines.append(f"[{n}] {passage.role} at {passage.timestamp} ({where}):\n{text}")
    return "\n\n".join(lines)


_DESCRIBED = re.compile(
    r"^\[(?P<n>\d+)\] (?P<role>.+?) at (?P<timestamp>\S*) \((?P<source>[^\n]*), message "
    r"(?P<index>\d+)\):\n(?P<text>.*?)"
    r"(?=\n\n\[\d+\] [^\n]+? at \S* \([^\n]*, message \d+\):\n|\Z)",
    re.MULTILINE | re.DOTALL,
)


def described(answer: str) -> list[Passage]:
    """The passages of an answer :func:`describe` wrote, best first (text as shown, so a long
    one ends with its length; no scores): what a model, or the offline one, reads back."""
    return [
        Passage(
            source=found["source"],
            index=int(found["index"]),
            role=found["role"],
            timestamp=found["timestamp"],
            text=found["text"],
            score=0.0,
        )
        for found in _DESCRIBED.finditer(answer)
    ]


def recall_tool(folder: Callable[[], AgentDocs | None]) -> Callable[[str], str]:
    """The recall tool for the agent whose documents ``folder()`` returns (``None``: no
    memory)."""

    def recall_memory(query: str) -> str:
        """Search everything said in this agent's earlier sessions, archived ones included.

        Use it when the conversation does not hold what a question needs: a name, a number,
        a date, a decision. Returns the best matching passages with who said them and when.

        Args:
            query: Up to 24 words, such as names, numbers or topics.
        """
        where = folder()
        if where is None:
            return "This agent keeps no memory on disk: there is nothing earlier to search."
        return describe(query, recall(where, query))

    recall_memory.__name__ = TOOL_NAME
    return recall_memory
