"""What the read model answers: the figures and messages every view gets, and their JSON.

Each type's ``to_json`` is what the panel's REST API sends and the widget syncs, so one
serialization serves every view (``labextension/src/api.ts`` names the same fields).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nbmemory.memory.note_history import VERSIONS, Change
from nbmemory.memory.provenance import Cell
from nbmemory.memory.run_settings import RunSettings, compaction_floor
from nbmemory.views.tool_calls import ToolMessage, tool_text
from nbmemory.wording import (
    cell_words,
    compaction_words,
    counts_words,
    superseded_words,
    usage_words,
)

MEMORY_PARTS = ("earlier sessions", "this session")
"""The parts of a request that are the memory (MEMORY.md, or a memory kept in RAM)."""
MAX_DROPPED = 200
"""Dropped terms listed per compaction: a transcript of megabytes can leave out tens of
thousands, more than anyone reads; ``CompactionInfo.dropped_total`` counts them all."""
HISTORY_SHOWN = 20
"""The latest changes to an agent's notes a view lists (each with the notes after it, which a
restore would bring back)."""
SUMMARY_CHARS = 20_000
"""Characters of a compaction's summary given with it (the whole text is the first message
after the archive, in the next archive or MEMORY.md)."""


@dataclass(frozen=True)
class Usage:
    """How full an agent's next request is: ``tokens`` of ``context_length``.

    ``tokens`` is what the next request carries if the agent resumes from its memory now:
    system prompt and rules, pinned notes, the memory as its model reads it, tool schemas,
    and the room kept for the reply. The agent compresses once it reaches ``threshold``
    (``None``: never). ``recorded`` says whether these settings are the agent's own or the
    defaults.
    """

    tokens: int
    context_length: int
    threshold: float | None
    model: str
    encoding: str
    recorded: bool
    parts: tuple[tuple[str, int], ...] = ()
    """What ``tokens`` is made of, in request order (``wording.PARTS``); they add up to it."""

    @classmethod
    def of_request(
        cls,
        settings: RunSettings,
        parts: tuple[tuple[str, int], ...],
        *,
        encoding: str,
        recorded: bool,
    ) -> Usage:
        """The usage of a request made with ``settings`` that carries ``parts``
        (``agent.request_parts``), counted with ``encoding``."""
        return cls(
            tokens=sum(tokens for _, tokens in parts),
            context_length=settings.context_length,
            threshold=settings.threshold,
            model=settings.model,
            encoding=encoding,
            recorded=recorded,
            parts=parts,
        )

    @property
    def fraction(self) -> float:
        return self.tokens / self.context_length if self.context_length else 0.0

    @property
    def stuck(self) -> tuple[str, int] | None:
        """The largest fixed part, when no compaction can get the request below the threshold
        (``run_settings.compaction_floor``): the agent then does not compact."""
        return compaction_floor(self.parts, self.context_length, self.threshold)

    @property
    def compacts_next(self) -> bool:
        """Whether the agent's next model call starts with a compaction."""
        reached = self.threshold is not None and self.tokens >= self.threshold * self.context_length
        return reached and self.stuck is None

    @property
    def memory_tokens(self) -> int:
        """The memory's share of ``tokens`` (the rest is prompt, notes, tools and reply room)."""
        return sum(tokens for name, tokens in self.parts if name in MEMORY_PARTS)

    def to_json(self) -> dict[str, Any]:
        """Every view's figures of the next request, and their sentences (``words``)."""
        return {
            "tokens": self.tokens,
            "context_length": self.context_length,
            "threshold": self.threshold,
            "fraction": self.fraction,
            "model": self.model,
            "encoding": self.encoding,
            "recorded": self.recorded,
            "compacts_next": self.compacts_next,
            "parts": [{"name": name, "tokens": tokens} for name, tokens in self.parts],
            "stuck": self.stuck is not None,
            "words": usage_words(
                self.tokens, self.context_length, self.threshold, self.recorded, self.stuck
            ),
        }


@dataclass(frozen=True)
class AgentInfo:
    """One agent at a glance."""

    name: str
    path: Path
    messages: int
    size: int
    archives: int
    last_activity: str | None
    usage: Usage
    problems: tuple[str, ...] = ()
    index_bytes: int = 0
    """Bytes of the index recall keeps of the agent's archives beside the memory (rebuilt
    when removed)."""

    def to_json(self) -> dict[str, Any]:
        """The agent's figures with its usage's (``Usage.to_json``) at the same level; ``counts``
        words the messages and archives."""
        return {
            "name": self.name,
            "messages": self.messages,
            "size": self.size,
            "archives": self.archives,
            "last_activity": self.last_activity,
            **self.usage.to_json(),
            "problems": list(self.problems),
            "counts": counts_words(self.messages, self.archives),
        }


@dataclass(frozen=True)
class Item:
    """A message as views show it: ``text`` is folded to ``FOLD_CHARS`` unless asked otherwise.

    ``length`` is the full text's length; ``source`` names the file it was read from.
    """

    index: int
    role: str
    timestamp: str
    text: str
    length: int
    source: str
    cell: Cell | None = None
    """The notebook cell that wrote the message, if it was recorded (``memory.provenance``)."""
    tool: ToolMessage | None = None
    """A tool call or a tool's result as people read it (``text`` is its stored JSON)."""

    @property
    def readable(self) -> str:
        """The text printed views show: ``text``, or a tool message's readable form."""
        return self.text if self.tool is None else tool_text(self.tool)

    @property
    def folded(self) -> bool:
        return len(self.text) < self.length

    @property
    def cell_label(self) -> str | None:
        """``cell [12] of analysis.ipynb``, with ``, superseded by cell [15]`` if a later run
        of that cell supersedes it; ``None`` if no cell is known."""
        if self.cell is None:
            return None
        where = self.cell.provenance
        label = cell_words(where.notebook, where.execution_count)
        if not self.cell.superseded:
            return label
        return f"{label}, {superseded_words(self.cell.superseded_by)}"

    def to_json(self, *, sparse: bool = False) -> dict[str, Any]:
        """The item's fields (``provenance``: see :func:`provenance_json`; ``tool``: a tool
        message as people read it, see :class:`ToolMessage`); ``sparse`` leaves out ``length``
        and ``folded`` when the text is whole, and ``provenance`` and ``tool`` when they are
        ``null`` (the widget's pages: a page of short messages sends a third less)."""
        found = {
            "index": self.index,
            "role": self.role,
            "timestamp": self.timestamp,
            "text": self.text,
            "length": self.length,
            "folded": self.folded,
            "source": self.source,
            "provenance": provenance_json(self.cell),
        }
        if sparse and not self.folded:
            del found["length"], found["folded"]
        if sparse and self.cell is None:
            del found["provenance"]
        found["tool"] = None if self.tool is None else self.tool.to_json()
        if sparse and self.tool is None:
            del found["tool"]
        return found


def provenance_json(cell: Cell | None) -> dict[str, Any] | None:
    """A message's provenance as every view gets it (``null``: not recorded).

    ``notebook`` is the notebook's path as the Jupyter server names it (relative to its root),
    ``cell_id`` the cell's id in it (``null`` if the client did not send it), ``execution_count``
    its ``[n]`` and ``session`` the kernel session that ran it. ``superseded`` says whether a
    later run of the same cell (same notebook and cell id) was recorded since, and
    ``superseded_by`` that run's execution count. ``label`` and ``superseded_label`` word them
    (``cell [12] of analysis.ipynb``, ``superseded by cell [15]`` or ``null``).
    """
    if cell is None:
        return None
    where = cell.provenance
    return {
        "notebook": where.notebook,
        "cell_id": where.cell_id,
        "execution_count": where.execution_count,
        "session": where.session,
        "superseded": cell.superseded,
        "superseded_by": cell.superseded_by,
        "label": cell_words(where.notebook, where.execution_count),
        "superseded_label": superseded_words(cell.superseded_by) if cell.superseded else None,
    }


@dataclass(frozen=True)
class Page:
    """A slice of a file's messages: ``total`` of them, from ``offset`` in the order asked."""

    total: int
    offset: int
    newest_first: bool
    items: list[Item]


@dataclass(frozen=True)
class ArchiveInfo:
    """One archive: its file name, message count, size in bytes, and when it was written."""

    name: str
    messages: int
    size: int
    time: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CompactionInfo:
    """One compaction of an agent's memory: the archive it wrote and the summary that replaced
    the archived transcript.

    ``tokens_before`` is the archived memory as its model read it, ``tokens_after`` the summary
    and the messages kept word for word after it: the memory alone. ``request_before`` and
    ``request_after`` are the whole next request before and after (as recorded; when they
    were not, the memory's figures plus what the rest of a request costs now).
    ``dropped`` lists the names, numbers, dates and identifiers of the transcript (never a
    speaker's label) that neither the summary nor the pinned notes contain: what the active
    memory no longer holds (the archive still does). ``recorded`` says whether
    these come from the record written at the time; otherwise (a compaction by an nbmemory
    older than its records, or by swarms) they are worked out from the files, against the notes
    as they are now, once per archive, summary and notes (see ``views.audit``).
    """

    archive: str
    time: str
    messages: int
    tokens_before: int
    tokens_after: int
    kept_messages: int
    summary: str
    dropped: list[str]
    recorded: bool
    request_before: int = 0
    request_after: int = 0
    dropped_total: int = 0
    """How many terms the summary dropped; ``dropped`` lists the first ``MAX_DROPPED``."""
    summary_length: int = 0
    """The whole summary's length; ``summary`` holds its first ``SUMMARY_CHARS`` characters."""

    @property
    def figures(self) -> str:
        """Both figures, labelled: ``memory 669 → 166 tokens · next request 2,931 → 2,428``."""
        return compaction_words(
            self.tokens_before, self.tokens_after, self.request_before, self.request_after
        )

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "figures": self.figures}


@dataclass(frozen=True)
class MessageTokens:
    """What each message of a file adds to a request, counted with ``encoding``.

    ``tokens`` maps the indexes asked for to their counts; ``preload`` is what the file adds
    besides its messages (the preloaded memory's role, intro and header), and ``total`` the
    whole file as a request carries it: ``preload`` plus every message (0 for an empty file).
    For MEMORY.md, ``total`` is the "earlier sessions" and "this session" parts together.
    """

    encoding: str
    preload: int
    total: int
    tokens: dict[int, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "encoding": self.encoding,
            "preload": self.preload,
            "total": self.total,
            "tokens": {str(index): count for index, count in self.tokens.items()},
        }


@dataclass(frozen=True)
class TermPage:
    """Where ``term`` first appears in ``source``: the first message holding it (``index``,
    ``None`` if none does) and the ``offset`` of the page of ``limit`` messages, in the order
    asked, that shows it (0 if none does)."""

    term: str
    source: str
    index: int | None
    offset: int
    limit: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SearchResults:
    """``total`` messages matched ``query``; ``items`` holds those from ``offset`` on."""

    query: str
    total: int
    offset: int
    items: list[Item]


@dataclass(frozen=True)
class PinnedNotes:
    """An agent's pinned notes and their review: the notes, their tokens for the model it
    recorded and its budget, how the model's edits are taken (``approval``), the model's edits
    waiting for review, and the latest recorded changes (at most ``HISTORY_SHOWN``), each
    oldest first. What the panel's ``notes`` answer and the widget's ``notes`` trait hold."""

    name: str
    notes: list[str]
    tokens: int
    budget: int
    approval: str
    pending: list[Change]
    history: list[Change]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "notes": self.notes,
            "tokens": self.tokens,
            "budget": self.budget,
            "approval": self.approval,
            "pending": [_change_json(c) for c in self.pending],
            "history": [_change_json(c) for c in self.history[-HISTORY_SHOWN:]],
        }


def _change_json(change: Change) -> dict[str, Any]:
    """A change as views get it: the record's entry, the line every view says it in (``said``),
    and whether it made a version of the notes that can be restored (``version``)."""
    return {**change.to_json(), "said": change.describe(), "version": change.change in VERSIONS}
