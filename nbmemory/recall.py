"""Recall: an agent searching everything it was ever told, its archives included.

Compaction keeps a memory small, but a summary cannot keep every fact. Every raw transcript is
in ``archive/``, so an agent with persistent memory gets a tool to search them: the passages
that best match the query (BM25 over MEMORY.md and every archive, words Snowball-stemmed,
re-ranked by who said it, whether it says when, and which is newer, then widened by the words
its best matches share: pseudo-relevance feedback), each with who said it, when, and where it
is kept, and with the question or answer that goes with it. A question that asks several
things ("What do Maya and Tomas play?") is also asked one part at a time, and the passages
hold the best of each part. Each archive
is indexed once and its index kept beside the memory (``recall_index``), as is the index of
MEMORY.md's messages; in a process, a grown MEMORY.md is indexed for its new messages only,
and what the archives hold taken together (each word's figures across them, the messages
ranked by meaning) is worked out once, until an archive is added, removed or indexed again.
A query's cost is bounded: only its first ``QUERY_TERMS`` distinct words (of its first
``QUERY_CHARS`` characters) count, and only its best matches by words are re-ranked.

With an agent's embedding model (``embeddings.SemanticIndex``: by default the offline word
vectors of ``word_vectors``), a second ranking by meaning is fused with the ranking by words
(reciprocal rank fusion, weighed by the index's ``weight`` and by how much of the question the
best match by words holds), then passages are made as above; if a provider fails, recall is
by words alone. With none (``"none"``), nothing is embedded.

Recall's own results are written to memory like any tool result; they are never recalled,
nor are requests to call tools, nor an agent's replies that only repeat what it was told
(``_own_words``): what recall returns is only what was said, by whoever said it. A line that
opens with a name ("Maya: I play the cello"), as a transcript fed to an agent does, is said
by that person (``_teller``).

``recall(folder, query, k)`` takes an agent's documents or its folder on files, and ranks
as the agent's recall tool does unless told otherwise (``DEFAULT_MODEL``).
"""

from __future__ import annotations

import bisect
import dataclasses
import enum
import functools
import heapq
import os
import re
import stat
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from nbmemory import llm, memory_file, provenance, recall_index
from nbmemory.conversation import SUMMARY_MARKER
from nbmemory.errors import AgentNotFoundError
from nbmemory.follow import FollowedFile, follow
from nbmemory.provenance import Cell, Lineage
from nbmemory.recall_index import EMBEDDED_CHARS, text_key
from nbmemory.recall_text import (
    DEFAULT_BUDGET,
    DEFAULT_PASSAGES,
    LISTED,
    PASSAGE_CHARS,
    QUERY_CHARS,
    TOOL_NAME,
    Passage,
    describe,
    sub_queries,
)
from nbmemory.search import content_text
from nbmemory.store import AgentDocs, FileDocs
from nbmemory.terms import bm25_term, idf, words
from nbmemory.tokens import TokenCounter
from nbmemory.wording import cell_words, superseded_words
from nbmemory.workspace import ARCHIVE_DIR, MEMORY_FILE, as_path, holds_memory

PROMPT_LINE = (
    f"Earlier sessions are archived, not lost: when a question needs something that is not in "
    f"this conversation (a name, a number, a date, a decision), call {TOOL_NAME} before you "
    "answer."
)
QUERY_TERMS = 24
_FEW = 50
_POOL = 100


def _recallable(message: dict[str, Any]) -> str | None:
    """The text recall may return for a message, or ``None`` for recall's own results, for
    requests to call tools, and for compaction summaries (what they keep was said in a message
    the archives hold, with who said it and when). A question is kept: "Did you know I moved
    to Lyon?" tells, and an answer is found through the question it answers."""
    content = message.get("content")
    if isinstance(content, dict):
        if content.get("tool_calls") or content.get("name") == TOOL_NAME:
            return None
        if isinstance(content.get("content"), str):
            content = content["content"]
    text = content_text(content)
    return text if text.strip() and not text.startswith(SUMMARY_MARKER) else None


_QUOTED = re.compile(r"^[ \t]*>.*\n?", re.MULTILINE)
_INTRODUCES = re.compile(r"^.*:[ \t]*$\n?", re.MULTILINE)
_ECHOED = 20
"""Characters a message must have for a reply that repeats it whole to count as an echo."""


_LABEL = re.compile(
    r"(?:[\[(][^\])\n]{1,60}[\])][ \t]*)?([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}): (?=\S)"
)
_HEADINGS = frozenset(
    "note notes update reminder summary answer question decision todo warning error edit ps fyi "
    "re fwd subject important example task step result output input context tip hint source "
    "agenda action actions status next done plan goal idea issue problem fix solution".split()
)
"""Words of a line's opening that make it a heading ("Note: ...", "Action Items: ..."), not a
speaker's name."""


def _own_words(text: str, answered: str | None) -> str:
    """What an agent's reply says of its own: without the lines it quotes ("> ...") and without
    the message it answers if it repeats it whole. Those are another message's words, which
    recall finds with who said them and when; a reply that only repeats them ("Noted: ...",
    "You said earlier: > ...") is not recalled: ``""``. The lines that introduce what it repeats
    (ending with ":") go with it."""
    own = text
    if answered is not None and len(answered) >= _ECHOED:
        own = own.replace(answered, "")
    own = _QUOTED.sub("", own)
    if own != text:
        own = _INTRODUCES.sub("", own)
    return own.strip()


def _answered(messages: list[dict[str, Any]], k: int, agent: str) -> str | None:
    """The text of the message the agent's reply ``k`` answers: the last one before it that
    someone else said, past the tool calls and results between them (``_BETWEEN`` at most)."""
    for message in reversed(messages[max(0, k - 1 - _BETWEEN) : k]):
        text = _recallable(message)
        if text is not None and str(message.get("role", "")) != agent:
            return text
    return None


def _teller(role: str, text: str | None) -> tuple[str, str | None]:
    """Who says a message, and what they say: the name it opens with and the rest, as a line
    of a transcript ("Maya: I play the cello", up to three capitalized words, perhaps after a
    time in brackets: "[8 May 2023] Maya: ..."); else its role and its text. The name is its
    speaker's, as a role is, not a word said."""
    found = _LABEL.match(text) if text else None
    if found is None or text is None or _HEADINGS.intersection(found[1].lower().split()):
        return role, text
    return found[1], text[: found.start(1)] + text[found.end() :]


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
APART = 0.25
"""What a message counts for, times, when the query names people who neither said it, nor
were told it, nor are named in it: another exchange's."""
TOLD = 0.5
"""How much more a message said to a person the query names counts (the message before or
after it in their exchange is theirs) when recall picks what to re-rank, and by meaning."""
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

    def __init__(self, agent: str, start: int = 0) -> None:
        self.agent = agent
        """The agent's name: the role of its own replies (``_own_words``)."""
        self.start = start
        """The first message of the file it indexes (those before are in a kept index)."""
        self.lock = threading.Lock()
        self.messages: list[dict[str, Any]] = []
        self.texts: list[str | None] = []
        """What recall may return of each message (``_recallable``), worked out once: a
        message of megabytes is not looked through again at every recall that finds it."""
        self.terms: list[Counter[str] | None] = []
        self.lengths: list[int] = []
        self.speakers: list[frozenset[str]] = []
        """The words of each message's speaker (``teller``)."""
        self.tellers: list[str] = []
        self.spoken: Counter[str] = Counter()
        """How many messages each speaker's words are the speaker of."""
        self.dated: list[bool] = []
        """Whether a message says when ("yesterday", "last May", "2026-04-20")."""
        self.asks: list[bool] = []
        """Whether a message ends with a question: the next one, by another, may answer it."""
        self.documents = 0
        self.words = 0
        self._postings: dict[str, tuple[list[int], list[int]]] = {}
        self._vector_keys: list[bytes | None] = []
        """The key of each message's vector (``recall_index.text_key``), made when recall first
        ranks by meaning: without an embedding model no message is hashed."""

    def extend(self, messages: list[dict[str, Any]]) -> None:
        """Index those of ``messages`` (a reading of the file) that are not indexed yet."""
        with self.lock:
            for k in range(self.start + len(self.messages), len(messages)):
                message = messages[k]
                text = said = _recallable(message)
                role = str(message.get("role", ""))
                if text is not None and role == self.agent:
                    said = _own_words(text, _answered(messages, k, self.agent))
                    text = text if said else None
                teller, said = _teller(role, said)
                counts = Counter(words(said)) if said else None
                speaker = speaker_words(teller)
                i = len(self.terms)
                self.terms.append(counts)
                self.lengths.append(sum(counts.values()) if counts else 0)
                self.texts.append(text)
                self.speakers.append(speaker)
                self.tellers.append(teller)
                if counts is not None:
                    self.spoken.update(speaker)
                self.dated.append(counts is not None and _dated(said, counts))
                self.asks.append(counts is not None and said.rstrip().endswith("?"))
                self.messages.append(message)
                self.documents += counts is not None
                self.words += self.lengths[i]
                for term, count in (counts or {}).items():
                    found = self._postings.get(term)
                    if found is None:
                        found = self._postings[term] = ([], [])
                    found[0].append(i)  # a reader zips the two: the shorter one counts
                    found[1].append(count)

    @property
    def count(self) -> int:
        return len(self.messages)

    def postings(self, term: str) -> tuple[list[int], list[int]]:
        """The messages holding ``term`` and how often each does, in message order."""
        return self._postings.get(term, ([], []))

    def frequency(self, term: str) -> int:
        return len(self._postings.get(term, ((),))[0])

    def asked(self, i: int, terms: Collection[str]) -> dict[str, int]:
        """How often each of ``terms`` is in message ``i`` (those it holds)."""
        counts = self.terms[i] or {}
        return {term: counts[term] for term in terms if counts.get(term)}

    def distinct(self, i: int) -> int:
        """How many different words message ``i`` holds (0 if recall never returns it)."""
        return len(self.terms[i] or ())

    def is_recallable(self, i: int) -> bool:
        return self.terms[i] is not None

    def chars(self, i: int) -> int:
        return len(self.texts[i] or "")

    def speaker(self, i: int) -> frozenset[str]:
        return self.speakers[i]

    def role(self, i: int) -> str:
        return str(self.messages[i].get("role", ""))

    def timestamp(self, i: int) -> str:
        return str(self.messages[i].get("timestamp", ""))

    def text(self, i: int) -> str | None:
        return self.texts[i]

    def message_key(self, i: int) -> str:
        """The key of message ``i``'s block, as cell provenance records it."""
        return provenance.message_key(self.messages[i])

    def keys(self) -> list[bytes | None]:
        """The vector keys of the messages (``None`` for what recall never returns), made when
        recall first ranks by meaning: without an embedding model no message is hashed."""
        with self.lock:
            count = len(self.texts)
            for text in self.texts[len(self._vector_keys) : count]:
                self._vector_keys.append(None if text is None else text_key(text))
            return self._vector_keys[:count]

    def built(self) -> recall_index.Built:
        """What is kept of this index for an archive (``recall_index``)."""
        return recall_index.Built(
            texts=self.texts,
            terms=self.terms,
            lengths=self.lengths,
            roles=[self.role(i) for i in range(self.count)],
            tellers=self.tellers,
            timestamps=[self.timestamp(i) for i in range(self.count)],
            dated=self.dated,
            asks=self.asks,
            keys=self.keys(),
            blocks=[self.message_key(i) for i in range(self.count)],
            spoken=dict(self.spoken),
            documents=self.documents,
            words=self.words,
        )


class _Index(Protocol):
    """What recall asks of an index: one of ``MEMORY.md`` in RAM (:class:`_FileIndex`) or one
    of an archive kept beside the memory (``recall_index.StoredIndex``)."""

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


@functools.cache
def speaker_words(role: str) -> frozenset[str]:
    """The words of a speaker's role ("User", a person's or agent's name)."""
    return frozenset(words(role))


def beside(index: _Index, i: int) -> int | None:
    """The message that belongs with message ``i`` and fits beside it in a passage: the
    answer to it if it asks, else the question it answers; ``None`` if neither. Messages recall
    never returns between them (a tool's call and result, a reply that only repeats) are
    stepped over, ``_BETWEEN`` at most."""
    if not index.is_recallable(i):
        return None
    j = _next_said(index, i, 1 if index.asks[i] else -1)
    if j is None or (j < i and not index.asks[j]):
        return None
    if index.chars(i) + index.chars(j) > PASSAGE_CHARS:
        return None
    if index.speaker(i) == index.speaker(j):
        return None
    return j


_BETWEEN = 6
"""Messages recall never returns that may stand between a question and its answer."""


def _next_said(index: _Index, i: int, step: int) -> int | None:
    """The message recall may return next to message ``i`` (after it for ``step`` 1, before it
    for -1), past at most ``_BETWEEN`` that it never returns; ``None`` if there is none."""
    j = i + step
    while 0 <= j < index.count and abs(j - i) <= _BETWEEN + 1:
        if index.is_recallable(j):
            return j
        j += step
    return None


def _toward(index: _Index, i: int, named: Collection[str]) -> float:
    """What message ``i`` counts for, times, for a query naming the people ``named``: said by
    one of them (``1 + NAMED``), said to one of them (``1 + TOLD``: the message before or after
    it, past those recall never returns, is theirs), or neither (1). An agent that hears
    several people keeps each one's exchanges apart this way."""
    if index.speaker(i) & named:
        return 1 + NAMED
    for step in (-1, 1):
        j = _next_said(index, i, step)
        if j is not None and index.speaker(j) & named:
            return 1 + TOLD
    return 1.0


def _index(docs: AgentDocs, followed: FollowedFile) -> _FileIndex | _Chained:
    """``MEMORY.md``'s index, extended with what was appended since it was last asked for.
    A new process starts from the index kept of its first messages (``recall_index``) when
    it was made of this memory, and indexes only the messages after them; otherwise it
    indexes the memory and keeps that index for the next process."""
    with followed.lock:
        index = followed.grown.get("recall")
        if index is None:
            index = followed.grown["recall"] = _memory_index(docs, followed)
    index.extend(followed.messages)
    return index


def _memory_index(docs: AgentDocs, followed: FollowedFile) -> _FileIndex | _Chained:
    count = len(followed.messages)
    kept = recall_index.kept_memory(docs, followed.identity, count, speaker_words)
    # Kept while the messages after it are fewer than those in it: then made anew and kept, so
    # that a memory that keeps growing is indexed whole again only each time it doubles.
    if kept is not None and count - kept.count <= kept.count:
        return _Chained(kept, _FileIndex(docs.name, kept.count))
    index = _FileIndex(docs.name)
    index.extend(followed.messages)
    if followed.end is not None and index.count:
        recall_index.keep_memory(docs, index.built(), followed.identity, followed.end)
    return index


class _Chained:
    """``MEMORY.md``'s index as a kept index of its first messages and one of those after
    them in RAM (``tail``, extended as the memory grows), numbered as one."""

    def __init__(self, kept: recall_index.StoredIndex, tail: _FileIndex) -> None:
        self.kept, self.tail, self.split = kept, tail, kept.count
        self.spoken = _Summed(kept.spoken, tail.spoken)
        self.lengths = _Split(kept.lengths, tail.lengths, self.split)
        self.dated = _Split(kept.dated, tail.dated, self.split)
        self.asks = _Split(kept.asks, tail.asks, self.split)
        self.texts = _Split(kept.texts, tail.texts, self.split)

    def extend(self, messages: list[dict[str, Any]]) -> None:
        self.tail.extend(messages)

    @property
    def documents(self) -> int:
        return self.kept.documents + self.tail.documents

    @property
    def words(self) -> int:
        return self.kept.words + self.tail.words

    @property
    def count(self) -> int:
        return self.split + self.tail.count

    def _at(self, i: int) -> tuple[Any, int]:
        return (self.kept, i) if i < self.split else (self.tail, i - self.split)

    def postings(self, term: str) -> tuple[list[int], list[int]]:
        docs, counts = self.kept.postings(term)
        more, times = self.tail.postings(term)
        shared = min(len(more), len(times))  # an extension under way: its whole entries
        return docs + [i + self.split for i in more[:shared]], counts + times[:shared]

    def frequency(self, term: str) -> int:
        return self.kept.frequency(term) + self.tail.frequency(term)

    def asked(self, i: int, terms: Collection[str]) -> dict[str, int]:
        index, k = self._at(i)
        return index.asked(k, terms)

    def distinct(self, i: int) -> int:
        index, k = self._at(i)
        return index.distinct(k)

    def is_recallable(self, i: int) -> bool:
        index, k = self._at(i)
        return index.is_recallable(k)

    def chars(self, i: int) -> int:
        index, k = self._at(i)
        return index.chars(k)

    def speaker(self, i: int) -> frozenset[str]:
        index, k = self._at(i)
        return index.speaker(k)

    def role(self, i: int) -> str:
        index, k = self._at(i)
        return index.role(k)

    def timestamp(self, i: int) -> str:
        index, k = self._at(i)
        return index.timestamp(k)

    def text(self, i: int) -> str | None:
        index, k = self._at(i)
        return index.text(k)

    def message_key(self, i: int) -> str:
        index, k = self._at(i)
        return index.message_key(k)

    def keys(self) -> list[bytes | None]:
        return self.kept.keys() + self.tail.keys()


class _Split(Sequence[Any]):
    """Two sequences as one: ``first`` up to ``split``, then ``second``."""

    def __init__(self, first: Sequence[Any], second: Sequence[Any], split: int) -> None:
        self.first, self.second, self.split = first, second, split

    def __len__(self) -> int:
        return self.split + len(self.second)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        return self.first[i] if i < self.split else self.second[i - self.split]


class _Summed:
    """Two counts of speakers' words as one (``get`` only, as recall asks)."""

    def __init__(self, first: Mapping[str, int], second: Mapping[str, int]) -> None:
        self.first, self.second = first, second

    def get(self, key: str, default: int = 0) -> int:
        return self.first.get(key, 0) + self.second.get(key, 0) or default


class SemanticIndex(Protocol):
    """What recall asks of an agent's embeddings (``embeddings.SemanticIndex``): a ranking,
    the ``weight`` of a place in it against a place by words (1: as much), and its ``reach``:
    how many of the newest messages it ranks (``None``: all)."""

    weight: float
    reach: int | None

    def ranked(
        self,
        query: str,
        keys: Sequence[bytes | None],
        texts: Sequence[str | None],
        count: int,
    ) -> list[tuple[float, int]] | None: ...


def query_terms(query: str) -> list[str]:
    """The words recall looks for: the first ``QUERY_TERMS`` distinct content words of the
    query's first ``QUERY_CHARS`` characters, so that no query costs more than a short one."""
    return list(dict.fromkeys(words(query[:QUERY_CHARS])))[:QUERY_TERMS]


def sources(docs: AgentDocs) -> list[Path]:
    """The documents recall searches: the agent's archives, oldest first, then MEMORY.md."""
    return [*_archives(docs), docs.path(MEMORY_FILE)]


_archive_lists: dict[str, tuple[tuple[Any, ...], list[Path]]] = {}
"""The archives of each agent's folder on files as last listed, with what they were listed
for (``_listing``)."""
_LISTS_KEPT = 256
"""Agents whose archives a process keeps listed."""


def _archives(docs: AgentDocs) -> list[Path]:
    """``docs.archives()``, listed again only when the names in ``archive/`` or ``MEMORY.md``
    changed: which archives there are, in order, and whether the newest is an unfinished
    compaction's (the start of ``MEMORY.md``) depend on nothing else, and listing them, which
    makes a path of each and compares files, costs more than a query by words."""
    if docs.is_database or docs.unlisted() is not docs:
        return docs.archives()
    key = repr(docs)
    stamp = _listing(docs.folder)
    kept = _archive_lists.get(key)
    if stamp is not None and kept is not None and kept[0] == stamp:
        return kept[1]
    found = docs.archives()
    if stamp is not None:
        if len(_archive_lists) >= _LISTS_KEPT:
            _archive_lists.clear()
        _archive_lists[key] = (stamp, found)
    return found


def _listing(folder: Path) -> tuple[Any, ...] | None:
    """What an agent's list of archives depends on: the names in its ``archive/`` folder and
    ``MEMORY.md``'s identity, size and time; ``None`` if either is missing or not what it
    should be (then the archives are listed every time)."""
    try:
        where = os.lstat(folder / ARCHIVE_DIR)
        if not stat.S_ISDIR(where.st_mode):
            return None
        names = tuple(sorted(os.listdir(folder / ARCHIVE_DIR)))
        memory = os.stat(folder / MEMORY_FILE)
    except OSError:
        return None
    return (where.st_ino, names, memory.st_ino, memory.st_size, memory.st_mtime_ns)


@dataclasses.dataclass(frozen=True)
class Found:
    """What a recall found: its best passages, and how many messages matched the query in all
    (the passages' among them)."""

    passages: list[Passage]
    matched: int


class _Default(enum.Enum):
    MODEL = "the default embedding model"

    def __repr__(self) -> str:
        return "DEFAULT_MODEL"


DEFAULT_MODEL = _Default.MODEL
"""``semantic`` of :func:`recall` and :func:`find` by default: the embedding model an agent
uses by default (``llm.default_embedding_model``: the offline word vectors unless
``$NBMEMORY_EMBEDDING_MODEL`` names another), its vectors kept for the process
(``embeddings.shared``)."""
Semantic = SemanticIndex | None | _Default


def recall(
    docs: AgentDocs | str | os.PathLike[str],
    query: str,
    limit: int = DEFAULT_PASSAGES,
    semantic: Semantic = DEFAULT_MODEL,
) -> list[Passage]:
    """The passages of an agent's memory and archives that best match ``query``, best first.
    ``docs``: the agent's documents (``Workspace.agent(name)``), or its folder on files
    (``$WORKSPACE_DIR/agents/<name>``, or its ``MEMORY.md``).

    BM25 over stemmed words, then: a message said by a person the query names counts more
    (``NAMED``), and one of another exchange (neither by them, nor to them, nor naming them)
    less (``APART``), as an agent may hear several people; one that says when counts more
    for a question asking when (``DATED``); a question counts less (``QUESTION``) unless its
    answer is beside it; of messages that match the same words, said by the same, the newest
    ranks first; and a passage carries the question or answer that goes with its message.
    The rare words the best matches share widen the query (``FEEDBACK``, ``ADDED``): what only
    the widened query finds is placed among the matches at ``WIDENED`` of its score, so an
    answer said in other words than the question is reached through what was said around it.
    A question asking several things (``sub_queries``) is asked whole and one part at a time,
    the rankings taken in turn.

    With ``semantic`` (an agent's embeddings; by default, as an agent's recall tool ranks:
    ``DEFAULT_MODEL``), the ranking by words and the ranking by meaning are fused (reciprocal
    rank fusion, ``FUSION_K``), so a question in other words than the fact finds it; if the
    embedding provider fails, the ranking by words alone (one warning). ``None``: by words
    alone.
    """
    return find(docs, query, limit, semantic).passages


def find(
    docs: AgentDocs | str | os.PathLike[str],
    query: str,
    limit: int = DEFAULT_PASSAGES,
    semantic: Semantic = DEFAULT_MODEL,
) -> Found:
    """:func:`recall`'s passages, and how many messages matched in all."""
    if isinstance(docs, (str, os.PathLike)):
        docs = _agent_folder(docs)
    if semantic is DEFAULT_MODEL:
        semantic = _default_index(docs)
    try:
        return _find(docs, query, limit, semantic)
    except recall_index.Damaged as exc:  # a kept index found damaged as it is read: made again
        recall_index.warn_damaged(docs, exc.name, exc)
        recall_index.discard(docs, exc.name)
        followed = follow(docs.path(MEMORY_FILE), docs)
        if followed is not None:
            with followed.lock:
                followed.grown.pop("recall", None)
        return _find(docs, query, limit, semantic)


def _agent_folder(folder: str | os.PathLike[str]) -> AgentDocs:
    """The documents of an agent's folder on files (or of the folder of the ``MEMORY.md`` named);
    ``AgentNotFoundError`` if it holds none."""
    path = as_path(folder)
    if path.name == MEMORY_FILE and path.is_file():
        path = path.parent
    if not holds_memory(path):
        raise AgentNotFoundError(
            f"{path} holds no agent's memory (MEMORY.md or archive/): pass an agent's folder, "
            "$WORKSPACE_DIR/agents/<name>, or Workspace.agent(name)"
        )
    return FileDocs(path)


def _default_index(docs: AgentDocs) -> SemanticIndex | None:
    model = llm.default_embedding_model()
    if not llm.embedding_model(model):
        return None
    from nbmemory.embeddings import shared  # numpy, at the first recall

    return shared(docs, model)


def _find(docs: AgentDocs, query: str, limit: int, semantic: SemanticIndex | None) -> Found:
    indexes = _indexes(docs)
    if not indexes.documents:
        return Found([], 0)
    lineage = provenance.lineage(docs)
    parts = sub_queries(query)
    asked = [query, *parts] if len(parts) > 1 else [query]
    rankings = [_ranked(indexes, q, limit, semantic, lineage) for q in asked]
    matched = max(count for _, count in rankings)
    passages = [
        _passage(
            path,
            index,
            i,
            score,
            () if j is None else (_passage(path, index, j, 0.0, lineage=lineage),),
            lineage,
        )
        for score, _, i, path, index, j, _ in _interleaved([r for r, _ in rankings], limit)
    ]
    return Found(passages, max(matched, len(passages)))


def _ranked(
    indexes: _Corpus,
    query: str,
    limit: int,
    semantic: SemanticIndex | None,
    lineage: Lineage,
) -> tuple[list[tuple[Any, ...]], int]:
    """The matches of ``query``, best first (newer files and messages win ties), and how
    many messages matched."""
    asked = set(query_terms(query))
    ranked, matched = _lexical(indexes, query, asked, limit)
    added = _feedback(ranked, asked, indexes)
    if added:
        # What only the widened query finds is offered, not counted as matched.
        ranked = _after(ranked, _lexical(indexes, query, asked, limit, added)[0])
    if semantic is not None:
        by_meaning = _by_meaning(semantic, indexes, query, asked, limit)
        if by_meaning is not None:
            # The more of the question the best match by words says, the less meaning reorders.
            held = _held(indexes, asked, ranked[0]) if ranked else 0.0
            ranked = _fused(indexes, ranked, by_meaning, semantic.weight * (1 - held))
            matched = max(matched, len(ranked))
    if len(lineage):
        ranked = _current_first(ranked, lineage)
    return sorted(ranked, key=lambda item: item[:3], reverse=True), matched


def _held(indexes: _Corpus, asked: set[str], best: tuple[Any, ...]) -> float:
    """The share of the query's weight (its words' ``idf``) that a match by words holds, its
    speaker's name included: 1 when it says every word asked."""
    weights = _term_weights(indexes, asked)[2]
    total = sum(weights.values())
    matched, speaker = best[6][0], best[6][1]
    return sum(weights[t] for t in asked & (matched | speaker)) / total if total else 0.0


def _after(ranked: list[tuple[Any, ...]], widened: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``ranked`` with what only ``widened`` (the ranking of the query widened by feedback)
    found, scored ``WIDENED`` of ``ranked``'s best as its own best is: feedback reorders
    nothing the query matched, it finds what was said in other words and places it among
    them."""
    matched = {(item[1], item[2]) for item in ranked}
    top = ranked[0][0] if ranked and ranked[0][0] > 0 else 1.0
    best = widened[0][0] if widened and widened[0][0] > 0 else 1.0
    found = list(ranked)
    found += [
        (WIDENED * top * item[0] / best, *item[1:])
        for item in widened[:_POOL]
        if (item[1], item[2]) not in matched
    ]
    return sorted(found, key=lambda item: item[:3], reverse=True)


WIDENED = 0.5
"""What the ranking widened by feedback counts for, beside the query's own."""
FEEDBACK = 5
"""Best matches whose words widen a query (pseudo-relevance feedback, as RM3 does)."""
ADDED = 10
"""Words, at most, that feedback adds to a query."""
ADDED_WEIGHT = 0.3
"""What the most telling added word counts for, as a share of a word the query said."""


def _feedback(ranked: list[tuple[Any, ...]], asked: set[str], indexes: _Corpus) -> dict[str, float]:
    """Words the best matches share that the query did not say, each with the share of its
    weight it counts for: a question in other words than its answer reaches the answer
    through what was said around its best matches (a question's answer, the same topic)."""
    if not ranked:
        return {}
    documents = indexes.documents
    top = ranked[0][0] or 1.0
    weight: Counter[str] = Counter()
    for score, _, i, _, index, j, _ in ranked[:FEEDBACK]:
        for k in (i,) if j is None else (i, j):
            found, length = _counted((index.text(k) or "")[:EMBEDDED_CHARS])
            for term, count in found.items():
                if term not in asked:
                    weight[term] += score / top * count / length
    if not weight:
        return {}
    # Rare words only: they tell the topic, and each brings few messages to rank again.
    common = min(max(2, documents // 20), max(_FEW, documents // 1000))
    for term in list(weight):
        n = indexes.frequency(term)
        if n > common or n < 1:
            del weight[term]
        else:
            weight[term] *= idf(documents, n)
    best = weight.most_common(ADDED)
    if not best:
        return {}
    most = best[0][1]
    return {term: ADDED_WEIGHT * w / most for term, w in best}


@functools.lru_cache(maxsize=256)
def _counted(text: str) -> tuple[Counter[str], int]:
    """The words of a text (its first ``EMBEDDED_CHARS``), each with its count, and how many
    there are (at least 1), for ``_feedback``: the best matches of one question are often
    those of the next. Read, never changed."""
    found = Counter(words(text))
    return found, sum(found.values()) or 1


def _interleaved(rankings: list[list[tuple[Any, ...]]], limit: int) -> list[tuple[Any, ...]]:
    """The best ``limit`` matches of one ranking, or of several (a question and each of its
    parts) taken in turn: the best of each comes before the second best of any, so that
    ``limit`` passages hold what each part asks.

    A message kept word for word across a compaction is in two files, and a question and its
    answer may each be found: each is returned once (but a question asked twice, answered
    differently, is two passages)."""
    best: list[tuple[Any, ...]] = []
    seen: set[str | None] = set()
    places = [0] * len(rankings)
    while len(best) < limit and any(p < len(r) for p, r in zip(places, rankings, strict=True)):
        for n, ranked in enumerate(rankings):
            while places[n] < len(ranked) and len(best) < limit:
                item = ranked[places[n]]
                places[n] += 1
                index = item[4]
                held = [item[2]] if item[5] is None else [item[2], item[5]]
                said = {index.text(k) for k in held}
                if not said <= seen:
                    seen |= said
                    best.append(item)
                    break
    return best


def _indexes(docs: AgentDocs) -> _Corpus:
    """The index of each document recall searches that holds messages: an archive's kept
    beside the memory (``recall_index``), ``MEMORY.md``'s in RAM, extended as it grows."""
    found: list[tuple[Path, _Index]] = []
    *archives, memory = sources(docs)
    kept = recall_index.archive_indexes(
        docs, archives, lambda path: _build(docs, path), speaker_words
    )
    for path, stored in zip(archives, kept, strict=True):
        if stored is not None and stored.count:
            found.append((path, stored))
    followed = follow(memory, docs)
    current = None
    if followed is not None and followed.messages:
        current = (memory, _index(docs, followed))
    return _Corpus(_archived(docs, found), current)


class _Archived:
    """What recall asks of an agent's archives taken together, worked out once for them: an
    archive never changes, so the figures of a word across a few dozen archives (how many
    messages hold it, how many its person says, which archives hold it) are looked up in
    each archive's index the first time a query asks, not at every query. Made anew when an
    archive is added, removed or indexed again (``same``)."""

    def __init__(self, files: list[tuple[Path, _Index]]) -> None:
        self.files = files
        self.documents = sum(index.documents for _, index in files)
        self.words = sum(index.words for _, index in files)
        self._terms: dict[str, tuple[int, int, tuple[int, ...]]] = {}
        self._near: dict[Any, list[tuple[int | None, frozenset[str], frozenset[str]] | None]] = {}
        self._lock = threading.Lock()
        self.meaning: tuple[Any, ...] | None = None
        """The messages ranked by meaning, after what they were worked out for: the reach,
        ``MEMORY.md``'s index and how many messages it held (``_reach``)."""

    def same(self, files: list[tuple[Path, _Index]]) -> bool:
        """Whether these are the archives and the indexes the figures were worked out for."""
        return len(files) == len(self.files) and all(
            path == kept_path and index is kept_index
            for (path, index), (kept_path, kept_index) in zip(files, self.files, strict=True)
        )

    def near(self, index: _Index, i: int) -> tuple[int | None, frozenset[str], frozenset[str]]:
        """For message ``i`` of one of the archives' ``index``: the message ``beside`` it,
        the words of its speaker, and those of the speakers of the messages recall may return
        before and after it (``_toward``). They never change: worked out once, as asked."""
        found = self._near.get(index)
        if found is None:
            found = self._near.setdefault(index, [None] * index.count)
        near = found[i]
        if near is None:
            told = [_next_said(index, i, step) for step in (-1, 1)]
            near = found[i] = (
                beside(index, i),
                index.speaker(i),
                frozenset().union(*(index.speaker(j) for j in told if j is not None)),
            )
        return near

    def term(self, term: str) -> tuple[int, int, tuple[int, ...]]:
        """How many archived messages hold ``term``, how many its person says, and the ranks
        of the archives that hold it."""
        found = self._terms.get(term)
        if found is None:
            counts = [index.frequency(term) for _, index in self.files]
            spoken = sum(index.spoken.get(term, 0) for _, index in self.files)
            holders = tuple(rank for rank, count in enumerate(counts) if count)
            found = (sum(counts), spoken, holders)
            with self._lock:
                if len(self._terms) >= _TERMS_KEPT:  # made-up words: no memory kept of them
                    self._terms.clear()
                self._terms[term] = found
        return found


_TERMS_KEPT = 50_000
"""Words whose figures one ``_Archived`` keeps."""
_ARCHIVED_KEPT = 16
"""Agents whose ``_Archived`` a process keeps (the least recently used goes first)."""
_archived_kept: OrderedDict[str, _Archived] = OrderedDict()
_archived_lock = threading.Lock()


def _archived(docs: AgentDocs, files: list[tuple[Path, _Index]]) -> _Archived:
    """The figures of agent ``docs``'s archives ``files``: those kept if they were worked out
    for the same archives and indexes, else new ones, kept."""
    key = repr(docs)
    with _archived_lock:
        kept = _archived_kept.pop(key, None)
        if kept is None or not kept.same(files):
            kept = _Archived(files)
        _archived_kept[key] = kept
        while len(_archived_kept) > _ARCHIVED_KEPT:
            _archived_kept.popitem(last=False)
    return kept


class _Corpus(Sequence[tuple[Path, _Index]]):
    """The documents one recall searches, oldest first, as ``(path, index)``: the archives'
    (``_Archived``) then ``MEMORY.md``'s, if it holds messages; with the figures of a word
    across all of them."""

    def __init__(self, archived: _Archived, memory: tuple[Path, _Index] | None) -> None:
        self.archived = archived
        self.memory = memory[1] if memory is not None else None
        self.files = archived.files if memory is None else [*archived.files, memory]

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, n: Any) -> Any:
        return self.files[n]

    def __iter__(self) -> Iterator[tuple[Path, _Index]]:
        return iter(self.files)

    @property
    def documents(self) -> int:
        """How many messages recall may return."""
        return self.archived.documents + (0 if self.memory is None else self.memory.documents)

    @property
    def words(self) -> int:
        return self.archived.words + (0 if self.memory is None else self.memory.words)

    def frequency(self, term: str) -> int:
        """How many messages hold ``term``."""
        found = self.archived.term(term)[0]
        return found if self.memory is None else found + self.memory.frequency(term)

    def spoken(self, term: str) -> int:
        """How many messages the person ``term`` names says."""
        found = self.archived.term(term)[1]
        return found if self.memory is None else found + self.memory.spoken.get(term, 0)

    def beside(self, index: _Index, i: int) -> int | None:
        """``beside(index, i)``, found once for an archive's message."""
        return beside(index, i) if index is self.memory else self.archived.near(index, i)[0]

    def toward(self, index: _Index, i: int, named: frozenset[str] | set[str]) -> float:
        """``_toward(index, i, named)``, its speakers found once for an archive's message."""
        if index is self.memory:
            return _toward(index, i, named)
        _, said_by, told = self.archived.near(index, i)
        return 1 + NAMED if said_by & named else 1 + TOLD if told & named else 1.0

    def holding(self, terms: Collection[str]) -> list[int]:
        """The ranks of the documents that hold any of ``terms``, in order."""
        ranks = {rank for term in terms for rank in self.archived.term(term)[2]}
        if self.memory is not None and any(self.memory.frequency(term) for term in terms):
            ranks.add(len(self.files) - 1)
        return sorted(ranks)


def _build(docs: AgentDocs, path: Path) -> recall_index.Built | None:
    """An archive indexed from its text, for ``recall_index`` to keep."""
    try:
        data = docs.read(path)
    except FileNotFoundError:
        return None
    index = _FileIndex(docs.name)
    index.extend(memory_file.parse(data).messages)
    return index.built()


def _current_first(ranked: list[tuple[Any, ...]], lineage: Lineage) -> list[tuple[Any, ...]]:
    """``ranked`` with the messages of superseded runs of a cell counting ``SUPERSEDED``, best
    first again (ties keep the order of file and message: the newer first)."""
    weighed = []
    for item in ranked:
        cell = lineage.of_key(item[4].message_key(item[2]))
        weighed.append((item[0] * SUPERSEDED, *item[1:]) if cell and cell.superseded else item)
    return sorted(weighed, key=lambda item: item[:3], reverse=True)


def _term_weights(
    indexes: _Corpus, terms: Collection[str]
) -> tuple[dict[str, int], dict[str, int], dict[str, float]]:
    """For each of ``terms``: how many messages hold it, how many its person says (a name
    counts as said by each of them, so that it weighs what it tells), and its weight (``idf``)."""
    documents = indexes.documents
    frequency = {t: indexes.frequency(t) for t in terms}
    spoken = {t: indexes.spoken(t) for t in terms}
    weights = {t: idf(documents, min(documents, n + spoken[t])) for t, n in frequency.items()}
    return frequency, spoken, weights


def _lexical(
    indexes: _Corpus,
    query: str,
    asked: set[str],
    limit: int,
    added: Mapping[str, float] | None = None,
) -> tuple[list[tuple[Any, ...]], int]:
    """The best matches by words, best first: ``(score, file rank, message, path, index,
    message beside it or None, what it says)``; and how many messages matched. ``added``:
    words the query did not say, each with the share of its weight it counts for."""
    documents = indexes.documents
    if not asked:
        return [], 0
    said = asked
    if added:
        asked = asked | set(added)
    average = indexes.words / documents
    frequency, spoken, weights = _term_weights(indexes, asked)
    for t, share in (added or {}).items():
        weights[t] *= share
    named = {t for t, n in spoken.items() if n}
    when = _ASKS_WHEN.match(query[:QUERY_CHARS]) is not None
    # Words rare enough to pick the candidates: then common words are only looked up in them,
    # which keeps a query fast on a long history.
    rare = [t for t, count in frequency.items() if 0 < count <= max(_FEW, documents // 20)]
    others = asked.difference(rare)
    scored: list[tuple[Any, ...]] = []
    found: dict[tuple[int, int], dict[str, int]] = {}  # the query's words in a message
    for rank in indexes.holding(rare or asked):  # the others hold none of the words
        path, index = indexes[rank]
        scores: dict[int, float] = {}
        held: dict[int, int] = {}  # how many of the query's words a message holds
        lengths = index.lengths
        if rare:
            # The rare words' counts come with their postings; only the others are looked up.
            holds: dict[int, dict[str, int]] = {}
            for term in rare:
                for i, count in zip(*index.postings(term), strict=False):
                    holds.setdefault(i, {})[term] = count
            for i, counts in holds.items():
                if others:
                    counts.update(index.asked(i, others))
                length = lengths[i]
                found[rank, i] = counts
                held[i] = len(counts)
                scores[i] = sum(
                    weight * bm25_term(counts[term], length, average)
                    for term, weight in weights.items()
                    if counts.get(term)
                )
        else:
            for term, weight in weights.items():
                for i, count in zip(*index.postings(term), strict=False):
                    gain = weight * bm25_term(count, lengths[i], average)
                    scores[i] = scores.get(i, 0.0) + gain
                    held[i] = held.get(i, 0) + 1
        # A message with nothing the query does not already say (the question itself, an
        # earlier asking of it) answers nothing.
        scored.extend(
            (score, rank, i, path, index)
            for i, score in scores.items()
            if index.distinct(i) > held[i]
        )
    # Who said it, when, and what goes with it re-rank the best by their words alone, so that
    # a query costs no more than before on a long history. A query that names people takes
    # what they said, or was said to them, first.
    size = max(_POOL, limit * 20)
    pool = heapq.nlargest(size * (4 if named else 1), scored, key=lambda item: item[:3])
    if named:
        pool = heapq.nlargest(
            size,
            pool,
            key=lambda item: (item[0] * indexes.toward(item[4], item[2], named), *item[1:3]),
        )
    ranked = []
    latest: dict[tuple[Any, ...], int] = {}
    for score, rank, i, path, index in pool:
        counts = found.get((rank, i))
        if counts is None:
            counts = index.asked(i, asked)
        j = indexes.beside(index, i)
        if j is None and index.asks[i]:
            score *= QUESTION
        # Whose fact it is: the answer's speaker when a question carries its answer.
        teller = j if j is not None and j > i else i
        said_by = index.speaker(teller) & named
        if said_by:
            # The speaker's name is as good as said: "Maya: I play" answers "What does Maya
            # play?" as "Maya plays" would, and more.
            score += sum(
                weights[name] * bm25_term(1, index.lengths[i], average)
                for name in said_by
                if not counts.get(name)
            )
            score *= 1 + NAMED
        elif named and not named & set(counts) and indexes.toward(index, teller, named) == 1:
            score *= APART
        dated = when and (index.dated[i] or (j is not None and index.dated[j]))
        if dated:
            score *= 1 + DATED
        # Messages that match the same words of the query (most of what it asks), said by the
        # same, say the same thing: the newest is the current one (a fact said again later,
        # changed), and ranks with the best of them if it matches at least half as well.
        matched = frozenset(counts)
        same = (matched, index.speaker(teller), dated)
        newest = latest.get(same)
        if newest is None or ranked[newest][1:3] < (rank, i):
            latest[same] = len(ranked)
        ranked.append((score, rank, i, path, index, j, same))
    best_of: dict[tuple[Any, ...], float] = {}
    for item in ranked:
        best_of[item[6]] = max(best_of.get(item[6], 0.0), item[0])
    topic = sum(weights[t] for t in said - named)
    for same, n in latest.items():
        if sum(weights[t] for t in same[0]) >= topic / 2 and ranked[n][0] >= best_of[same] / 2:
            ranked[n] = (best_of[same], *ranked[n][1:])
    return sorted(ranked, key=lambda item: item[:3], reverse=True), len(scored)


def _by_meaning(
    semantic: SemanticIndex,
    indexes: _Corpus,
    query: str,
    asked: set[str],
    limit: int,
) -> list[tuple[int, int]] | None:
    """The best matches by meaning, best first, as ``(file rank, message)``, among the newest
    ``semantic.reach`` messages (all if ``None``); ``None`` if the provider failed. Messages
    recall never returns, and those with nothing the query does not already say, are left
    out; a bare question counts less (``QUESTION``), as by words."""
    parts, keys, starts, texts = _reach(indexes, semantic.reach)
    if not any(keys):
        return []
    pool = max(_POOL, limit * 20)
    # Asked for more than the pool: the question itself and its earlier askings are dropped.
    found = semantic.ranked(query[:QUERY_CHARS], keys, texts, 2 * pool + 16)
    if found is None:
        return None
    named = {t for t in asked if indexes.spoken(t)}
    best = []
    for score, n in found:
        part = bisect.bisect_right(starts, n) - 1
        rank, first = parts[part]
        index, i = indexes[rank][1], n - starts[part] + first
        if not index.is_recallable(i):
            continue
        distinct = index.distinct(i)  # it holds no more of the query's words than it asks
        if distinct <= len(asked) and distinct <= len(index.asked(i, asked)):
            continue
        if index.asks[i] and indexes.beside(index, i) is None:
            score *= QUESTION
        if named:
            toward = indexes.toward(index, i, named)
            if toward == 1:
                continue
            score *= toward
        best.append((score, rank, i))
    best.sort(reverse=True)  # ties: the newer file, the later message
    return [(rank, i) for _, rank, i in best[:pool]]


def _reach(
    indexes: _Corpus, reach: int | None
) -> tuple[list[tuple[int, int]], tuple[bytes | None, ...], list[int], _Joined]:
    """The messages ranked by meaning: the newest ``reach`` that recall may return (all if
    ``None``), as parts ``(file rank, first message)``, their vector keys joined in one
    tuple, where each part begins in it, and their texts. Kept with the archives' figures
    while ``MEMORY.md``'s index holds as many messages: every query asks the same."""
    memory = indexes.memory
    count = memory.count if memory is not None else 0
    kept = indexes.archived.meaning
    if kept is not None and kept[0] == reach and kept[1] is memory and kept[2] == count:
        return kept[3]
    parts: list[tuple[int, int, list[bytes | None]]] = []  # (file rank, first message, keys)
    left = reach
    for rank in reversed(range(len(indexes))):  # the newest file first
        every = indexes[rank][1].keys()
        first = 0
        if left is not None:
            first, left = _reached(every, left)
        parts.insert(0, (rank, first, every[first:]))
        if left is not None and left <= 0:
            break
    keys: list[bytes | None] = []
    starts = []
    for _, _, some in parts:  # whole lists joined: no step per message in Python
        starts.append(len(keys))
        keys += some
    texts = _Joined(
        [indexes[rank][1].texts for rank, _, _ in parts],
        starts,
        len(keys),
        [first for _, first, _ in parts],
    )
    found = ([(rank, first) for rank, first, _ in parts], tuple(keys), starts, texts)
    indexes.archived.meaning = (reach, memory, count, found)
    return found


def _reached(keys: list[bytes | None], left: int) -> tuple[int, int]:
    """Where the newest ``left`` messages with a vector key (recall returns them) begin among
    ``keys``, and how many are left to reach before them: the messages recall never returns
    (tool calls, replies that only repeat) do not use up the reach."""
    end = len(keys)
    while end > 0 and left > 0:
        start = max(0, end - max(left, 256))
        held = end - start - keys[start:end].count(None)
        if held <= left:
            end, left = start, left - held
            continue
        while left > 0:  # this chunk holds the last of them: found one by one
            end -= 1
            left -= keys[end] is not None
    return end, left


FUSION_K = 60
"""Reciprocal rank fusion: a message scores the sum of 1 / (FUSION_K + its place) over the
rankings by words and by meaning (the latter times the index's ``weight``)."""


def _fused(
    indexes: _Corpus,
    lexical: list[tuple[Any, ...]],
    by_meaning: list[tuple[int, int]],
    weight: float,
) -> list[tuple[Any, ...]]:
    """The two rankings fused (``FUSION_K``), a place by meaning counting ``weight`` of one by
    words, best first; ties go to the newer message."""
    items: dict[tuple[int, int], list[Any]] = {}
    pool = max(_POOL, len(by_meaning))
    for place, item in enumerate(lexical[:pool], 1):
        items.setdefault((item[1], item[2]), [0.0, item])[0] += 1 / (FUSION_K + place)
    for place, (rank, i) in enumerate(by_meaning, 1):
        entry = items.get((rank, i))
        if entry is None:
            path, index = indexes[rank]
            j = indexes.beside(index, i)
            entry = items[rank, i] = [0.0, (0.0, rank, i, path, index, j, None)]
        entry[0] += weight / (FUSION_K + place)
    fused = [(score, *item[1:]) for score, item in items.values()]
    return sorted(fused, key=lambda item: item[:3], reverse=True)


def _passage(
    path: Path,
    index: _Index,
    i: int,
    score: float,
    carried: tuple[Passage, ...] = (),
    lineage: Lineage = provenance.EMPTY,
) -> Passage:
    return Passage(
        source=path.name,
        index=i,
        role=index.role(i),
        timestamp=index.timestamp(i),
        text=index.text(i) or "",
        score=score,
        beside=carried,
        cell=_cell_label(lineage.of_key(index.message_key(i))) if len(lineage) else None,
    )


def _cell_label(cell: Cell | None) -> str | None:
    if cell is None:
        return None
    where = cell.provenance
    label = cell_words(where.notebook, where.execution_count)
    return f"{label}, {superseded_words(cell.superseded_by)}" if cell.superseded else label


class _Joined(Sequence[str | None]):
    """The texts of several indexes as one sequence (``starts``: where each begins; ``firsts``:
    the first text taken of each), decoded only when one is asked for: what ranking by meaning
    embeds of messages with no vector, each without the name a transcript line opens with
    (``_teller``), which says who, not what."""

    def __init__(
        self, parts: list[Sequence[str | None]], starts: list[int], total: int, firsts: list[int]
    ) -> None:
        self.parts, self.starts, self.total, self.firsts = parts, starts, total, firsts

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, n: Any) -> Any:
        if isinstance(n, slice):
            return [self[k] for k in range(*n.indices(self.total))]
        if not 0 <= n < self.total:
            raise IndexError(n)
        part = bisect.bisect_right(self.starts, n) - 1
        return _teller("", self.parts[part][n - self.starts[part] + self.firsts[part]])[1]


def recall_tool(
    folder: Callable[[], AgentDocs | None],
    semantic: Callable[[], SemanticIndex | None] = lambda: None,
    budget: Callable[[], int] = lambda: DEFAULT_BUDGET,
    count: Callable[[str], int] | None = None,
) -> Callable[[str], str]:
    """The recall tool for the agent whose documents ``folder()`` returns (``None``: no
    memory), ranking by meaning too when ``semantic()`` gives its embeddings; its answer takes
    at most ``budget()`` tokens as ``count`` counts them (default: the ``cl100k_base``
    encoding, as ``tokens.TokenCounter`` counts for an unknown model)."""
    if count is None:
        count = TokenCounter().count

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
        found = find(where, query, LISTED, semantic())
        return describe(query, found.passages, matched=found.matched, budget=budget(), count=count)

    recall_memory.__name__ = TOOL_NAME
    return recall_memory
