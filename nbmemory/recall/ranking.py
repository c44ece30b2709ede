"""Ranking: the passages of an agent's memory that best match a query.

:func:`recall` and :func:`find` rank the messages of an agent's ``Corpus``: BM25 over stemmed
words, re-ranked by who said it, whether it says when and which is newer (``_lexical``); fused
with a ranking by meaning when an embedding model is given (``_by_meaning``, ``_fused``); a
cell's superseded runs counted less; each message shown once, however many files keep it
(``_shown_once``). The weights of the re-ranking are named here."""

from __future__ import annotations

import bisect
import dataclasses
import enum
import heapq
import os
import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Protocol

from nbmemory.errors import AgentNotFoundError
from nbmemory.memory import provenance
from nbmemory.memory.provenance import Cell, Lineage
from nbmemory.models import llm
from nbmemory.recall.corpus import Corpus, corpus_of, within_reach
from nbmemory.recall.days import named_days
from nbmemory.recall.exchanges import SAID_BY_NAMED_GAIN, Index
from nbmemory.recall.kept_indexes import read_trusted
from nbmemory.recall.speakers import spelled_like
from nbmemory.recall.text import DEFAULT_PASSAGES, QUERY_CHARS, Passage
from nbmemory.store.docs import AgentDocs, FileDocs
from nbmemory.store.folders import MEMORY_FILE, as_path, holds_memory
from nbmemory.terms import bm25_term, idf, words
from nbmemory.wording import cell_words, superseded_words

QUERY_TERMS = 24
_RARE_FLOOR = 50
_RERANK_POOL = 100


_ASKS_WHEN = re.compile(
    r"^\s*(?:when|since when|how long ago|(?:on |in )?what (?:date|day|year|month|time)|"
    r"(?:on |in )?which (?:date|day|year|month))\b",
    re.IGNORECASE,
)


BESIDE = 0.5
"""What the message a passage carries beside its own (``exchanges.beside``) adds of how well it
matches the query: a passage is read whole, and two messages about what is asked say more
than one (human_recall.py: multi-hop questions gain most)."""
DATED = 1.0
"""How much more a message that carries a date (or asks, and its answer does) counts for a
"when" question."""
ON_THE_DAY = 2.0
"""How much more a message said on a day the query names counts ("on 21.01.2024", a day
either side: ``days.named_days``)."""
SUPERSEDED = 0.5
"""What a message from a cell's earlier run counts once the cell was run again: the later run
is the current one, and ranks first when both match as well."""


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

    BM25 over stemmed words, then: a message said by a person the query names counts more
    (``SAID_BY_NAMED_GAIN``), and one of another exchange (neither by them, nor to them, nor naming
    them) less (``OTHER_EXCHANGE_WEIGHT``), as an agent may hear several people; one that says when
    counts more for a question asking when (``DATED``), and one said on a day the query names
    (``ON_THE_DAY``); of messages that match the same words, said by the same, the newest ranks
    first; and a passage carries the message that goes with its own (``exchanges.beside``),
    whose match counts too (``BESIDE``). A name the memory holds nowhere is taken for the
    speaker's it is another spelling of ("Mohammed" for "Muhhamed": ``speakers.spelled_like``).
    The question itself is never a passage; asked before, it brings the answer it got then.
    A question that asks several things is ranked whole: the tool's description invites one
    call per fact, and the offline model makes one per part (``text.sub_queries``).

    With ``semantic`` (an agent's embeddings; by default, as an agent's recall tool ranks:
    ``DEFAULT_MODEL``), the ranking by words and the ranking by meaning are fused (reciprocal
    rank fusion, ``FUSION_K``), so a question in other words than the fact finds it; if the
    embedding provider fails, the ranking by words alone (one warning).

    Args:
        docs: The agent's documents (``Workspace.agent(name)``), or its folder on files
            (``$WORKSPACE_DIR/agents/<name>``, or its ``MEMORY.md``).
        query: The question, in any words; only its first ``QUERY_TERMS`` distinct words count.
        limit: How many passages at most.
        semantic: An agent's embeddings to rank by meaning too; by default the ones an agent's
            recall tool uses (``DEFAULT_MODEL``); ``None`` ranks by words alone.

    Returns:
        The passages, best first, each with who said it, when, and where it is kept.

    Raises:
        AgentNotFoundError: ``docs`` names a folder that holds no memory.
    """
    return find(docs, query, limit, semantic).passages


def find(
    docs: AgentDocs | str | os.PathLike[str],
    query: str,
    limit: int = DEFAULT_PASSAGES,
    semantic: Semantic = DEFAULT_MODEL,
) -> Found:
    """:func:`recall`'s passages, and how many messages matched in all.

    Args:
        docs: As for :func:`recall`.
        query: As for :func:`recall`.
        limit: As for :func:`recall`.
        semantic: As for :func:`recall`.

    Returns:
        The passages and the number of messages that matched, for "N more matched".
    """
    if isinstance(docs, (str, os.PathLike)):
        docs = _agent_folder(docs)
    if semantic is DEFAULT_MODEL:
        semantic = _default_index(docs)
    return read_trusted(docs, lambda: _find(docs, query, limit, semantic))


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
    from nbmemory.recall.embeddings import shared  # numpy, at the first recall

    return shared(docs, model)


def _find(docs: AgentDocs, query: str, limit: int, semantic: SemanticIndex | None) -> Found:
    indexes = corpus_of(docs)
    if not indexes.documents:
        return Found([], 0)
    lineage = provenance.lineage(docs)
    ranked, matched = _ranked(indexes, query, limit, semantic, lineage)
    passages = [
        _passage(
            path,
            index,
            i,
            score,
            () if j is None else (_passage(path, index, j, 0.0, lineage=lineage),),
            lineage,
        )
        for score, _, i, path, index, j, _ in _shown_once(ranked, limit)
    ]
    return Found(passages, max(matched, len(passages)))


def _ranked(
    indexes: Corpus,
    query: str,
    limit: int,
    semantic: SemanticIndex | None,
    lineage: Lineage,
) -> tuple[list[tuple[Any, ...]], int]:
    """The matches of ``query``, best first (newer files and messages win ties), and how
    many messages matched."""
    asked = _asked(indexes, query)
    ranked, matched = _lexical(indexes, query, asked, limit)
    if semantic is not None:
        by_meaning = _by_meaning(semantic, indexes, query, asked, limit)
        if by_meaning is not None:
            # The more of the question the best match by words says, the less meaning reorders.
            held = _held(indexes, asked, ranked[0]) if ranked else 0.0
            ranked = _fused(indexes, asked, ranked, by_meaning, semantic.weight * (1 - held))
            matched = max(matched, len(ranked))
    if len(lineage):
        ranked = _current_first(ranked, lineage)
    return sorted(ranked, key=lambda item: item[:3], reverse=True), matched


_NAME = re.compile(r"\b[A-Z][a-z']+")


def _asked(indexes: Corpus, query: str) -> set[str]:
    """The query's words (``query_terms``), a name that nothing in the memory holds taken
    for the speaker it is another spelling of (``speakers.spelled_like``)."""
    asked = set(query_terms(query))
    names = {w for found in _NAME.findall(query[:QUERY_CHARS]) for w in words(found)}
    for term in names & asked:
        if indexes.frequency(term) or indexes.spoken(term):
            continue
        speaker = spelled_like(term, indexes.speakers())
        if speaker is not None:
            asked.discard(term)
            asked.add(speaker)
    return asked


def _held(indexes: Corpus, asked: set[str], best: tuple[Any, ...]) -> float:
    """The share of the query's weight (its words' ``idf``) that a match by words holds, its
    speaker's name included: 1 when it says every word asked."""
    weights = _term_weights(indexes, asked)[2]
    total = sum(weights.values())
    matched, speaker = best[6][0], best[6][1]
    return sum(weights[t] for t in asked & (matched | speaker)) / total if total else 0.0


def _shown_once(ranked: list[tuple[Any, ...]], limit: int) -> list[tuple[Any, ...]]:
    """The best ``limit`` matches, each message shown once.

    A message kept word for word across a compaction is in two files, and a question and its
    answer may each be found: each is returned once, and a passage whose own message an
    earlier one holds (or its copy in another file) is left out; but a question asked twice,
    answered differently, is two passages."""
    best: list[tuple[Any, ...]] = []
    seen: set[str | None] = set()
    # Each message shown, by its words and time: the places (file, message) it was shown from.
    shown: dict[tuple[str | None, str], set[tuple[int, int]]] = {}
    for item in ranked:
        if len(best) == limit:
            break
        rank, i, index = item[1], item[2], item[4]
        held = [i] if item[5] is None else [i, item[5]]
        said = {index.text(k) for k in held}
        where = shown.get((index.text(i), index.timestamp(i)), set())
        if said <= seen or (rank, i) in where or any(r != rank for r, _ in where):
            continue
        seen |= said
        for k in held:
            shown.setdefault((index.text(k), index.timestamp(k)), set()).add((rank, k))
        best.append(item)
    return best


def _current_first(ranked: list[tuple[Any, ...]], lineage: Lineage) -> list[tuple[Any, ...]]:
    """``ranked`` with the messages of superseded runs of a cell counting ``SUPERSEDED``, best
    first again (ties keep the order of file and message: the newer first)."""
    weighed = []
    for item in ranked:
        cell = lineage.of_key(item[4].message_key(item[2]))
        weighed.append((item[0] * SUPERSEDED, *item[1:]) if cell and cell.superseded else item)
    return sorted(weighed, key=lambda item: item[:3], reverse=True)


def _term_weights(
    indexes: Corpus, terms: Collection[str]
) -> tuple[dict[str, int], dict[str, int], dict[str, float]]:
    """For each of ``terms``: how many messages hold it, how many its person says (a name
    counts as said by each of them, so that it weighs what it tells), and its weight (``idf``)."""
    documents = indexes.documents
    frequency = {t: indexes.frequency(t) for t in terms}
    spoken = {t: indexes.spoken(t) for t in terms}
    weights = {t: idf(documents, min(documents, n + spoken[t])) for t, n in frequency.items()}
    return frequency, spoken, weights


def _lexical(
    indexes: Corpus, query: str, asked: set[str], limit: int
) -> tuple[list[tuple[Any, ...]], int]:
    """The best matches by words, best first: ``(score, file rank, message, path, index,
    message beside it or None, what it says)``; and how many messages matched."""
    documents = indexes.documents
    if not asked:
        return [], 0
    average = indexes.words / documents
    frequency, spoken, weights = _term_weights(indexes, asked)
    named = {t for t, n in spoken.items() if n}
    when = _ASKS_WHEN.match(query[:QUERY_CHARS]) is not None
    days = named_days(query[:QUERY_CHARS])
    # Words rare enough to pick the candidates: then common words are only looked up in them,
    # which keeps a query fast on a long history.
    rare = [t for t, count in frequency.items() if 0 < count <= max(_RARE_FLOOR, documents // 20)]
    others = asked.difference(rare)
    scored: list[tuple[Any, ...]] = []
    matches: dict[int, dict[int, float]] = {}  # each file's scores, the query's repeats too
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
        matches[rank] = scores
        answered: set[int] = set()
        for i, score in scores.items():
            if _may_answer(index, i, held[i], len(asked)):
                scored.append((score, rank, i, path, index))
            elif index.asks[i]:
                # The query asked before: what answered it then is what it asks for now.
                j = indexes.beside(index, i)
                if j is not None and j > i and j not in scores and j not in answered:
                    answered.add(j)
                    scored.append((score, rank, j, path, index))
    # Who said it, when, and what goes with it re-rank the best by their words alone, so that
    # a query costs no more than before on a long history. A query that names people takes
    # what they said, or was said to them, first.
    size = max(_RERANK_POOL, limit * 20)
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
        j = _beside(indexes, index, i, asked)
        if j is not None:
            score += BESIDE * matches.get(rank, {}).get(j, 0.0)
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
            score *= 1 + SAID_BY_NAMED_GAIN
        elif named and not named & set(counts):
            score *= indexes.toward(index, teller, named)
        # A question's answer says when for it; the next message's "today" is about its own day.
        answer_dated = j is not None and j > i and index.asks[i] and index.dated[j]
        dated = when and (index.dated[i] or answer_dated)
        if dated:
            score *= 1 + DATED
        if days and index.timestamp(i)[:10] in days:
            score *= 1 + ON_THE_DAY
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
    topic = sum(weights[t] for t in asked - named)
    for same, n in latest.items():
        if sum(weights[t] for t in same[0]) >= topic / 2 and ranked[n][0] >= best_of[same] / 2:
            ranked[n] = (best_of[same], *ranked[n][1:])
    return sorted(ranked, key=lambda item: item[:3], reverse=True), len(scored)


def _beside(indexes: Corpus, index: Index, i: int, asked: set[str]) -> int | None:
    """The message a passage of message ``i`` carries (``Corpus.beside``), unless it comes
    after and answers nothing (``_may_answer``): the question being asked, just said, is not
    shown beside what its asker said before it."""
    j = indexes.beside(index, i)
    if j is None or j < i or index.distinct(j) > len(asked):  # the last: it says more
        return j
    return j if _may_answer(index, j, len(index.asked(j, asked)), len(asked)) else None


def _may_answer(index: Index, i: int, held: int, asked: int) -> bool:
    """Whether message ``i``, holding ``held`` of the query's ``asked`` words, may answer it:
    it says something the query does not, or it tells (not asks) part of what the query asks
    ("I just watched Spongebob for the first time" for "When did Fahim watch Spongebob for the
    first time?"). The question itself, and an earlier asking of it, answer nothing."""
    return index.distinct(i) > held or (held < asked and not index.asks[i])


def _by_meaning(
    semantic: SemanticIndex,
    indexes: Corpus,
    query: str,
    asked: set[str],
    limit: int,
) -> list[tuple[int, int]] | None:
    """The best matches by meaning, best first, as ``(file rank, message)``, among the newest
    ``semantic.reach`` messages (all if ``None``); ``None`` if the provider failed. Messages
    recall never returns, those that answer nothing (``_may_answer``), and another exchange's
    are left out."""
    parts, keys, starts, texts = within_reach(indexes, semantic.reach)
    if not any(keys):
        return []
    pool = max(_RERANK_POOL, limit * 20)
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
        if not _may_answer(index, i, len(index.asked(i, asked)), len(asked)):
            continue
        if named:
            toward = indexes.toward(index, i, named)
            if toward < 1:
                continue
            score *= toward
        best.append((score, rank, i))
    best.sort(reverse=True)  # ties: the newer file, the later message
    return [(rank, i) for _, rank, i in best[:pool]]


FUSION_K = 60
"""Reciprocal rank fusion: a message scores the sum of 1 / (FUSION_K + its place) over the
rankings by words and by meaning (the latter times the index's ``weight``)."""


def _fused(
    indexes: Corpus,
    asked: set[str],
    lexical: list[tuple[Any, ...]],
    by_meaning: list[tuple[int, int]],
    weight: float,
) -> list[tuple[Any, ...]]:
    """The two rankings fused (``FUSION_K``), a place by meaning counting ``weight`` of one by
    words, best first; ties go to the newer message."""
    items: dict[tuple[int, int], list[Any]] = {}
    pool = max(_RERANK_POOL, len(by_meaning))
    for place, item in enumerate(lexical[:pool], 1):
        items.setdefault((item[1], item[2]), [0.0, item])[0] += 1 / (FUSION_K + place)
    for place, (rank, i) in enumerate(by_meaning, 1):
        entry = items.get((rank, i))
        if entry is None:
            path, index = indexes[rank]
            j = _beside(indexes, index, i, asked)
            entry = items[rank, i] = [0.0, (0.0, rank, i, path, index, j, None)]
        entry[0] += weight / (FUSION_K + place)
    fused = [(score, *item[1:]) for score, item in items.values()]
    return sorted(fused, key=lambda item: item[:3], reverse=True)


def _passage(
    path: Path,
    index: Index,
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
