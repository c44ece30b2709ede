"""The read side: one read-only model of a workspace that every view asks.

The magics, the widget, the server and the CLI never parse files or count tokens on their own;
they ask here, so the same thing shows the same number everywhere. Nothing here creates,
changes or locks a file, and files are followed (``nbmemory.store.follow``): when nothing changed a
read costs a ``stat``, and after an append only the new bytes are read.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import os
import stat
import threading
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nbmemory.errors import (
    AgentNotFoundError,
    ArchiveNotFoundError,
    InvalidAgentNameError,
    MemoryWarning,
    UnsafeFileError,
)
from nbmemory.memory.compactions import Compaction, read_record, record_path
from nbmemory.memory.conversation import block_text, preload_tokens
from nbmemory.memory.note_history import HISTORY_FILE, Change, pending
from nbmemory.memory.notes import NOTES_FILE, Notes
from nbmemory.memory.provenance import EMPTY as NO_LINEAGE
from nbmemory.memory.provenance import PROVENANCE_FILE, Cell, Lineage
from nbmemory.memory.provenance import lineage as lineage_of
from nbmemory.memory.run_settings import (
    SETTINGS_FILE,
    RunSettings,
    compaction_floor,
    default_settings,
    read_settings,
)
from nbmemory.memory.search import content_text, followed_index
from nbmemory.memory.token_counts import KeptCounts
from nbmemory.models import llm
from nbmemory.recall import index_size
from nbmemory.store import Workspace, folders
from nbmemory.store import follow as follow_module
from nbmemory.store.archives import archive_time
from nbmemory.store.docs import AgentDocs, FileDocs
from nbmemory.store.follow import EMPTY, FollowedFile, follow, follow_memories
from nbmemory.store.workspace import as_workspace
from nbmemory.terms import left_out, salient_terms
from nbmemory.tokens import TokenCounter
from nbmemory.wording import (
    FOLD_CHARS,
    PARTS,
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
SUMMARY_CHARS = 20_000
"""Characters of a compaction's summary given with it (the whole text is the first message
after the archive, in the next archive or MEMORY.md)."""


# ----------------------------------------------------------------------------------------------
# What the views get


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
    """What ``tokens`` is made of, in request order (see :data:`PARTS`); they add up to it."""

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
        """The item's fields (``provenance``: see :func:`provenance_json`); ``sparse`` leaves
        out ``length`` and ``folded`` when the text is whole, and ``provenance`` when it is
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
    as they are now, once per archive, summary and notes (see :func:`_worked_out`).
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
class Found:
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


@functools.lru_cache(maxsize=16)
def _counter(model: str) -> TokenCounter:
    return TokenCounter(model)


@functools.cache  # one per agent and model, as follow keeps one per file
def _notes(docs: AgentDocs, model: str) -> Notes:
    return Notes(docs.unlisted(), model=model)  # kept: never one pass's listing


def _block_counts(followed: FollowedFile, kept: KeptCounts, first: int | None = None) -> list[int]:
    """The tokens of each of the file's (first) messages as its model reads them, each
    message counted once per encoding, unless ``kept`` holds its count."""
    messages = followed.messages[:first]
    with followed.lock:
        counts = followed.per_message.setdefault(f"tokens:{kept.counter.encoding_name}", [])
        if len(counts) < len(messages):
            counts.extend(kept.each(block_text(m) for m in messages[len(counts) :]))
        return counts[: len(messages)]


def _tokens(followed: FollowedFile, kept: KeptCounts, first: int | None = None) -> int:
    """The memory's part of a request (or, given ``first``, the part its first messages would
    make)."""
    counts = _block_counts(followed, kept, first)
    if not counts:
        return 0
    with followed.lock:  # counted once per reading and encoding, as the messages are
        key = f"preload:{kept.counter.encoding_name}"
        if key not in followed.cache:
            followed.cache[key] = preload_tokens(kept.counter, followed.header, kept)
        return followed.cache[key] + sum(counts)


def _usable(name: str) -> bool:
    """Whether a stored agent name can name an agent; warns about one that cannot."""
    try:
        folders.validate_agent_name(name)
    except InvalidAgentNameError as exc:
        warnings.warn(f"agent {name!r} left out: {exc}", MemoryWarning, stacklevel=3)
        return False
    return True


def _settings(docs: AgentDocs) -> tuple[RunSettings, bool]:
    """The settings an agent last ran with, and whether they were recorded."""
    recorded = read_settings(docs)
    if recorded is not None:
        return recorded, True
    return default_settings(llm.default_model()), False


def _record(docs: AgentDocs, archive: Path, followed: FollowedFile) -> Compaction | None:
    """The record beside ``archive``, read again only when it changed (it can hold tens of
    thousands of terms); kept with the archive's reading."""
    stamp = docs.stamp(record_path(archive))
    with followed.lock:
        cached = followed.cache.get("record")
    if cached is not None and cached[0] == stamp:
        return cached[1]
    record = read_record(docs, archive) if stamp is not None else None
    with followed.lock:
        followed.cache["record"] = (stamp, record)
    return record


def _or(recorded: int | None, reckoned: int) -> int:
    """A recorded figure, or the one reckoned now when none was recorded."""
    return reckoned if recorded is None else recorded


def _roles(followed: FollowedFile) -> set[str]:
    """The roles that speak in a file: the labels of its transcript, never a dropped term."""
    with followed.lock:
        if "speakers" not in followed.cache:
            followed.cache["speakers"] = {str(m.get("role", "")) for m in followed.messages}
        return followed.cache["speakers"]


@dataclass
class _Unrecorded:
    """What an archive without a record dropped, worked out for one summary and notes."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    salient: list[str] | None = None
    key: bytes = b""
    dropped: list[str] = field(default_factory=list)


def _worked_out(followed: FollowedFile, kept: str, speakers: list[str]) -> list[str]:
    """The terms of an archive without a record that ``kept`` (its summary and the notes now)
    leaves out, worked out once and kept with the archive's reading, which a changed archive
    never shares. Its salient terms are found once; the dropped ones again only when the
    summary or the notes changed. One reader works them out while the others wait for it."""
    key = hashlib.blake2b(kept.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with followed.lock:
        work = followed.cache.setdefault("unrecorded", _Unrecorded())
    with work.lock:
        if work.salient is None:
            transcript = "\n".join(content_text(m["content"]) for m in followed.messages)
            work.salient = salient_terms(transcript)
        if work.key != key:
            work.key, work.dropped = key, left_out(work.salient, kept, ignore=speakers)
        return work.dropped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by someone else
        return True
    return True


def _earlier_sessions(
    followed: FollowedFile | None,
    kept: KeptCounts,
    session: tuple[int, int, int] | None,
    memory: int,
) -> int:
    """The memory's tokens that the agent's running process preloaded (all of them when no
    process of the agent runs; none when it compacted the file it preloaded)."""
    if followed is None or session is None or not _alive(session[0]):
        return memory
    if followed.identity[1] != session[1]:
        return 0
    return _tokens(followed, kept, session[2])


def _unnested(value: Any) -> Any:
    """``value`` with JSON kept in strings (a tool call's ``arguments``) read as what it holds."""
    if isinstance(value, dict):
        return {key: _unnested(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_unnested(inner) for inner in value]
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return _unnested(json.loads(value))
        except ValueError:
            return value
    return value


def readable(content: Any) -> str:
    """Message content as views show it: text as it is; a tool call or a tool's result as
    indented JSON, its arguments unpacked (no escaped JSON inside JSON)."""
    if isinstance(content, str):
        return content
    return json.dumps(_unnested(content), ensure_ascii=False, indent=2)


def _item(
    index: int,
    message: dict[str, Any],
    source: str,
    fold: int | None,
    lineage: Lineage = NO_LINEAGE,
) -> Item:
    text = readable(message.get("content"))
    shown = text if fold is None or len(text) <= fold else text[:fold]
    return Item(
        index,
        str(message.get("role", "")),
        str(message.get("timestamp", "")),
        shown,
        len(text),
        source,
        lineage.of(message),
    )


def to_items(
    messages: Iterable[tuple[int, dict[str, Any]]], source: str, fold: int | None = None
) -> list[Item]:
    """Items of (index, message) pairs kept elsewhere, such as a memory held in RAM only."""
    return [_item(index, message, source, fold) for index, message in messages]


def has_role(message: dict[str, Any], role: str | None) -> bool:
    """Whether ``message`` is by ``role`` (any case); every message is when ``role`` is None."""
    return role is None or str(message.get("role", "")).casefold() == role.casefold()


def page_of(
    messages: Sequence[dict[str, Any]],
    source: str,
    offset: int,
    limit: int,
    newest_first: bool,
    fold: int | None,
    *,
    role: str | None = None,
    lineage: Lineage = NO_LINEAGE,
) -> Page:
    """A page of ``messages`` kept elsewhere (or of a file's), as views show it; with ``role``,
    of that role's messages only (``total`` counts those; indexes stay the file's); each item
    with its cell, if ``lineage`` knows it."""
    indexes: Sequence[int] = range(len(messages))
    if role is not None:
        indexes = [i for i in indexes if has_role(messages[i], role)]
    total = len(indexes)
    offset = max(0, offset)
    if newest_first:
        chosen = range(total - 1 - offset, max(total - 1 - offset - limit, -1), -1)
    else:
        chosen = range(offset, min(total, offset + limit))
    items = [_item(indexes[j], messages[indexes[j]], source, fold, lineage) for j in chosen]
    return Page(total, offset, newest_first, items)


def usage_in_ram(memory: Any, agent: Any = None) -> Usage:
    """The :class:`Usage` of a memory kept in RAM only (an ``Agent`` with ``persistent_memory``
    off, or a bare ``Conversation``), read from the objects themselves, with its parts: the same
    figures and words as an agent's on disk. ``memory`` is the ``Conversation``; ``agent`` the
    ``Agent`` that owns it, if any (its notes, tools, reply room and threshold)."""
    static, rules = memory.static_tokens(), memory.rules_tokens()
    history = memory.context_tokens() - static
    if agent is None:
        return Usage(
            tokens=static + history,
            context_length=memory.context_length,
            threshold=None,
            model="",
            encoding=memory.encoding_name,
            recorded=True,
            parts=tuple(zip(PARTS, (static - rules, rules, 0, 0, history, 0, 0), strict=True)),
        )
    settings = agent.run_settings()
    notes = agent.notes.tokens() if getattr(agent, "notes", None) is not None else 0
    tools = settings.tool_tokens
    sizes = (static - rules, rules, notes, 0, history, tools, settings.overhead_tokens - tools)
    return Usage(
        tokens=static + notes + history + settings.overhead_tokens,
        context_length=settings.context_length,
        threshold=settings.threshold,
        model=settings.model,
        encoding=settings.encoding,
        recorded=True,
        parts=tuple(zip(PARTS, sizes, strict=True)),
    )


def agent_in_ram(name: str, memory: Any, agent: Any = None) -> AgentInfo:
    """The :class:`AgentInfo` of a memory kept in RAM only (see :func:`usage_in_ram`): the same
    figures as an agent on disk, with no file (``path`` is empty; no size, archives or
    problems)."""
    history = memory.conversation_history
    last = history[-1].get("timestamp") if history else None
    return AgentInfo(
        name=name,
        path=Path(),
        messages=len(history),
        size=0,
        archives=0,
        last_activity=str(last) if last else None,
        usage=usage_in_ram(memory, agent),
    )


# ----------------------------------------------------------------------------------------------
# The model


class ReadModel:
    """What a workspace holds, for views: agents, pages of messages, archives, search, usage.

    ``workspace`` is a :class:`Workspace`, or a folder on the environment's store;
    ``None`` means the environment's workspace (``$WORKSPACE_DIR`` on ``$NBMEMORY_STORE``), read
    once. Every method only reads.
    """

    def __init__(self, workspace: Workspace | str | os.PathLike[str] | None = None) -> None:
        self.workspace = as_workspace(workspace)

    @property
    def root(self) -> Path:
        """The workspace folder."""
        return self.workspace.root

    def __repr__(self) -> str:
        return f"ReadModel({self.workspace!r})"

    @property
    def store(self) -> str:
        """What the agents are read from: ``files`` (in :attr:`root`), or the database's URL
        without its password."""
        return self.workspace.describe()

    # ------------------------------------------------------------------------------------------
    # Agents

    def names(self) -> list[str]:
        """The agents of the workspace, sorted. A stored name that cannot name an agent (a row
        or a folder someone else wrote, with control characters or a path in it) is left out
        with a ``MemoryWarning`` naming it, escaped: one bad agent never hides the others."""
        return [name for name in self.workspace.agents() if _usable(name)]

    def exists(self, name: str) -> bool:
        """Whether ``name`` is one of :meth:`names`, without listing them."""
        try:
            folders.validate_agent_name(name)
        except InvalidAgentNameError:
            return False
        return self.workspace.has_agent(name)

    def _docs(self, name: str) -> AgentDocs:
        """Agent ``name``'s documents (``InvalidAgentNameError`` for a bad name), its folder
        checked on files (``UnsafeFileError`` for a link)."""
        docs = self.workspace.agent(name)
        if not docs.is_database:
            folders.check_folder(docs.folder)
        return docs

    def _listed(self, name: str) -> AgentDocs:
        """Agent ``name``'s documents for one pass over many agents: on files, as one listing
        of its folder finds them (``FileDocs.listed``, which refuses a link as ``_docs``
        does)."""
        docs = self.workspace.agent(name)
        return docs if docs.is_database else FileDocs.listed(docs.folder)

    def _folder(self, name: str) -> AgentDocs:
        docs = self._docs(name)
        if not self.workspace.has_agent(name):
            raise AgentNotFoundError(f"no agent named {name!r} in {self.workspace.where()}")
        return docs

    def _memory(self, name: str) -> tuple[Path, FollowedFile | None]:
        docs = self._folder(name)
        path = docs.path(folders.MEMORY_FILE)
        return path, follow(path, docs)

    def settings(self, name: str) -> tuple[RunSettings, bool]:
        """The settings agent ``name`` last ran with, and whether they were recorded."""
        return _settings(self._folder(name))

    def usage(self, name: str) -> Usage:
        """How full agent ``name``'s next request is (see :class:`Usage`)."""
        docs = self._folder(name)
        return self._usage(docs, follow(docs.path(folders.MEMORY_FILE), docs))

    def _usage(self, docs: AgentDocs, followed: FollowedFile | None) -> Usage:
        settings, recorded = _settings(docs)
        counter = _counter(settings.model)
        kept = KeptCounts(docs, counter)  # read only if something is to be counted
        memory = _tokens(followed, kept) if followed is not None else 0
        earlier = _earlier_sessions(followed, kept, settings.session, memory)
        notes = 0 if docs.missing(NOTES_FILE) else _notes(docs, settings.model).tokens(kept)
        tools = settings.tool_tokens
        sizes = (
            settings.static_tokens - settings.rules_tokens,
            settings.rules_tokens,
            notes,
            earlier,
            memory - earlier,
            tools,
            settings.overhead_tokens - tools,
        )
        return Usage(
            tokens=settings.static_tokens + notes + memory + settings.overhead_tokens,
            context_length=settings.context_length,
            threshold=settings.threshold,
            model=settings.model,
            encoding=counter.encoding_name,
            recorded=recorded,
            parts=tuple(zip(PARTS, sizes, strict=True)),
        )

    def agent(self, name: str) -> AgentInfo:
        """The figures of agent ``name``; ``AgentNotFoundError`` if it has no memory here."""
        docs = self._folder(name)
        return self._info(docs, follow(docs.path(folders.MEMORY_FILE), docs))

    def _info(self, docs: AgentDocs, followed: FollowedFile | None) -> AgentInfo:
        path = docs.path(folders.MEMORY_FILE)
        messages = followed.messages if followed is not None else []
        last = messages[-1].get("timestamp") if messages else None
        if not last and followed is not None:
            moment = datetime.datetime.fromtimestamp(followed.mtime_ns / 1e9)
            last = moment.isoformat(timespec="seconds")
        return AgentInfo(
            name=docs.name,
            path=path,
            messages=len(messages),
            size=followed.size if followed is not None else 0,
            archives=len(docs.archives()),
            last_activity=last or None,
            usage=self._usage(docs, followed),
            problems=tuple(followed.problems) if followed is not None else (),
            index_bytes=index_size(docs),
        )

    def agents(self) -> list[AgentInfo]:
        """Every agent of the workspace, by name (see :meth:`names`), each read once: on a
        database from a few queries for all of them (``Workspace.snapshot``), and what did not
        change since the last listing is neither read nor counted again. An agent whose
        folder is a link is left out with a ``MemoryWarning``."""
        with self.workspace.snapshot():
            agents = []
            for name in self.names():
                try:
                    agents.append(self._listed(name))
                except UnsafeFileError as exc:
                    warnings.warn(f"agent {name!r} left out: {exc}", MemoryWarning, stacklevel=2)
            tallied = self._tallies(agents)
            read = iter(follow_memories([d for d, t in zip(agents, tallied, strict=True) if not t]))
            memories = [memory or next(read) for memory in tallied]
            return [self._info(docs, memory) for docs, memory in zip(agents, memories, strict=True)]

    def _tallies(self, agents: list[AgentDocs]) -> list[FollowedFile | None]:
        """:meth:`_tally` of each of ``agents``; the sizes of the memories on a database that
        are not followed already come from one query for all of them."""
        unread = [d for d in agents if d.is_database and not follow_module.followed(d)]
        sizes = unread[0].db.memory_sizes([d.name for d in unread]) if unread else {}
        return [self._tally(docs, sizes.get(docs.name, 0)) for docs in agents]

    def _tally(self, docs: AgentDocs, stored: int) -> FollowedFile | None:
        """Agent ``docs``'s ``MEMORY.md`` as a listing shows it, when it is too big to read
        whole for that and was not read yet (``follow.tally``, ``follow.tally_database``: the
        same figures, in memory that a piece of it bounds); else ``None``, and it is
        followed. ``stored``: its size on a database, if it is not followed."""
        if docs.is_database:
            if stored < follow_module.LARGE:
                return None
        else:
            path = docs.path(folders.MEMORY_FILE)
            try:
                st = os.lstat(path)
            except OSError:
                return None
            if st.st_size < follow_module.LARGE or not stat.S_ISREG(st.st_mode):
                return None
            if follow_module.current(path, st):
                return None
        kept = KeptCounts(docs, _counter(_settings(docs)[0].model))
        key = f"tokens:{kept.counter.encoding_name}"

        def count(messages: list[dict[str, Any]]) -> list[int]:
            return kept.each(block_text(m) for m in messages)

        if docs.is_database:
            return follow_module.tally_database(docs, key, count, ready=kept.read)
        return follow_module.tally(path, key, count)

    # ------------------------------------------------------------------------------------------
    # Messages

    def messages(
        self,
        name: str,
        offset: int = 0,
        limit: int = 20,
        *,
        newest_first: bool = True,
        fold: int | None = FOLD_CHARS,
        role: str | None = None,
    ) -> Page:
        """A page of agent ``name``'s memory, newest first unless asked otherwise; with
        ``role``, of that role's messages only (any case)."""
        path, followed = self._memory(name)
        messages = followed.messages if followed is not None else []
        lineage = self.lineage(name)
        return page_of(
            messages, path.name, offset, limit, newest_first, fold, role=role, lineage=lineage
        )

    def lineage(self, name: str) -> Lineage:
        """Where agent ``name``'s messages came from (their notebook cells), as recorded;
        unreadable records are skipped with a ``MemoryWarning`` (see ``memory.provenance``)."""
        return lineage_of(self._folder(name))

    def roles(self, name: str, archive: str | None = None) -> list[tuple[str, int]]:
        """The roles of the memory's (or ``archive``'s) messages and how many each has, in
        the order they first speak."""
        followed = self._file(name, archive)
        with followed.lock:
            if "roles" not in followed.cache:
                counts: dict[str, int] = {}
                for message in followed.messages:
                    role = str(message.get("role", ""))
                    counts[role] = counts.get(role, 0) + 1
                followed.cache["roles"] = list(counts.items())
            return list(followed.cache["roles"])

    def file_path(self, name: str, archive: str | None = None) -> Path:
        """Where agent ``name``'s MEMORY.md (which may not exist yet) or ``archive`` is."""
        if archive is None:
            return self._folder(name).path(folders.MEMORY_FILE)
        for path in self._archive_paths(self._folder(name).name):
            if path.name == archive:
                return path
        raise ArchiveNotFoundError(f"{name} has no archive named {archive!r}")

    def notes(self, name: str) -> list[str]:
        """Agent ``name``'s pinned notes, in order (see ``nbmemory.memory.notes``)."""
        return _notes(self._folder(name), self.settings(name)[0].model).items()

    def note_history(self, name: str) -> list[Change]:
        """Every recorded change to agent ``name``'s notes, oldest first, and a last "outside"
        entry if the file changed since (see ``nbmemory.memory.note_history``)."""
        return _notes(self._folder(name), self.settings(name)[0].model).history()

    def waiting_notes(self, name: str) -> list[Change]:
        """Agent ``name``'s note edits that wait for a person's review, oldest first."""
        return pending(self.note_history(name))

    def records(self, name: str, archive: str | None = None) -> list[dict[str, Any]]:
        """Every message of the memory (or of ``archive``) as stored: role, content, timestamp.

        Content keeps its structure (tool calls stay dicts): this is what exports write.
        """
        return [dict(message) for message in self._file(name, archive).messages]

    def message(self, name: str, index: int, archive: str | None = None) -> Item:
        """One whole message of the memory (or of ``archive``), by its index there."""
        messages = self._file(name, archive).messages
        if not 0 <= index < len(messages):
            raise IndexError(f"{name} has no message {index} in {archive or 'MEMORY.md'}")
        source = archive or folders.MEMORY_FILE
        return _item(index, messages[index], source, None, self.lineage(name))

    def message_tokens(
        self, name: str, indexes: Iterable[int] | None = None, archive: str | None = None
    ) -> MessageTokens:
        """The tokens of messages of the memory (or of ``archive``), by index (all of them
        without ``indexes``), counted as agent ``name``'s model reads them in a request."""
        followed = self._file(name, archive)
        counter = _counter(self.settings(name)[0].model)
        kept = KeptCounts(self._folder(name) if archive is None else None, counter)
        counts = _block_counts(followed, kept)
        wanted = range(len(counts)) if indexes is None else indexes
        chosen = {}
        for index in wanted:
            if not 0 <= index < len(counts):
                raise IndexError(f"{name} has no message {index} in {archive or 'MEMORY.md'}")
            chosen[index] = counts[index]
        preload = preload_tokens(counter, followed.header, kept)
        return MessageTokens(
            encoding=counter.encoding_name,
            preload=preload,
            total=preload + sum(counts) if counts else 0,
            tokens=chosen,
        )

    # ------------------------------------------------------------------------------------------
    # Archives

    def _archive_paths(self, name: str) -> list[Path]:
        return self.workspace.agent(name).archives()

    def archives(self, name: str) -> list[ArchiveInfo]:
        """Agent ``name``'s archives, oldest first."""
        docs = self._folder(name)
        infos = []
        for path in docs.archives():
            followed = follow(path, docs)
            if followed is not None:
                infos.append(
                    ArchiveInfo(
                        path.name, len(followed.messages), followed.size, archive_time(path)
                    )
                )
        return infos

    def compactions(self, name: str) -> list[CompactionInfo]:
        """Agent ``name``'s compactions, oldest first: what each one archived, the summary that
        replaced it, and what that summary dropped (see :class:`CompactionInfo`).

        Nothing is worked out again while the files stay the same: records and dropped terms
        are kept with each archive's reading, so a request costs a look at each archive and
        its record, and its answer is bounded (``MAX_DROPPED``, ``SUMMARY_CHARS``)."""
        docs = self._folder(name)
        model = self.settings(name)[0].model
        counter = _counter(model)
        archives, in_memory = KeptCounts(None, counter), KeptCounts(docs, counter)
        notes = _notes(docs, model).text()
        archived = [(path, follow(path, docs)) for path in docs.archives()]
        archived = [(path, followed) for path, followed in archived if followed is not None]
        _, memory = self._memory(name)
        usage = self._usage(docs, memory)
        rest = usage.tokens - usage.memory_tokens  # prompt, notes, tools, reply room: now
        afterwards = [followed for _, followed in archived[1:]] + [memory or EMPTY]
        afterwards = afterwards[: len(archived)]
        found = []
        for (path, followed), after in zip(archived, afterwards, strict=True):
            record = _record(docs, path, followed)
            kept = record.kept_messages if record is not None else 0
            following = after.messages[: 1 + kept]
            summary = content_text(following[0]["content"]) if following else ""
            speakers = [name, *_roles(followed)]
            if record is not None:
                dropped = left_out(record.missing, "", ignore=speakers)
            else:
                dropped = _worked_out(followed, f"{summary}\n{notes}", speakers)
            before = _tokens(followed, archives)
            kept_after = in_memory if after is memory else archives
            after_tokens = _tokens(after, kept_after, len(following))
            found.append(
                CompactionInfo(
                    archive=path.name,
                    time=archive_time(path),
                    messages=len(followed.messages),
                    tokens_before=before,
                    tokens_after=after_tokens,
                    kept_messages=kept,
                    summary=summary[:SUMMARY_CHARS],
                    dropped=dropped[:MAX_DROPPED],
                    recorded=record is not None,
                    request_before=_or(record.tokens_before if record else None, before + rest),
                    request_after=_or(record.tokens_after if record else None, after_tokens + rest),
                    dropped_total=len(dropped),
                    summary_length=len(summary),
                )
            )
        return found

    def _file(self, name: str, archive: str | None) -> FollowedFile:
        if archive is None:
            followed = self._memory(name)[1]
            return followed if followed is not None else EMPTY
        docs = self._folder(name)
        for path in docs.archives():
            if path.name == archive:
                followed = follow(path, docs)
                if followed is not None:
                    return followed
        raise ArchiveNotFoundError(f"{name} has no archive named {archive!r}")

    def archive_messages(
        self,
        name: str,
        archive: str,
        offset: int = 0,
        limit: int = 20,
        *,
        newest_first: bool = False,
        fold: int | None = FOLD_CHARS,
        role: str | None = None,
    ) -> Page:
        """A page of one archive, oldest first unless asked otherwise (``role`` as in
        :meth:`messages`)."""
        followed = self._file(name, archive)
        messages, lineage = followed.messages, self.lineage(name)
        return page_of(
            messages, archive, offset, limit, newest_first, fold, role=role, lineage=lineage
        )

    # ------------------------------------------------------------------------------------------
    # Search

    def search(
        self,
        name: str,
        query: str,
        *,
        archives: bool = False,
        offset: int = 0,
        limit: int = 50,
        fold: int | None = FOLD_CHARS,
        role: str | None = None,
    ) -> SearchResults:
        """Messages of agent ``name`` that contain ``query`` (any case): archives oldest first
        (if asked), then MEMORY.md; ``total`` counts them all, ``items`` is one page. With
        ``role``, only that role's messages (any case)."""
        sources = [a.name for a in self.archives(name)] if archives else []
        sources.append(None)
        hits: list[tuple[str, int, dict[str, Any]]] = []
        for source in sources:
            followed = self._file(name, source)
            index = followed_index(followed)
            label = source or folders.MEMORY_FILE
            hits.extend(
                (label, i, followed.messages[i])
                for i in index.search(query, within=len(followed.messages))
                if has_role(followed.messages[i], role)
            )
        chosen = hits[max(0, offset) : max(0, offset) + limit]
        lineage = self.lineage(name)
        items = [_item(i, message, label, fold, lineage) for label, i, message in chosen]
        return SearchResults(query, len(hits), max(0, offset), items)

    def find(
        self,
        name: str,
        term: str,
        archive: str | None = None,
        *,
        limit: int = 20,
        newest_first: bool = False,
        role: str | None = None,
    ) -> Found:
        """The page of ``archive`` (MEMORY.md without one) that holds ``term`` (any case) first:
        what a dropped term turns a transcript to, in the widget and the panel alike. Pages are
        of ``limit`` messages in the order asked; with ``role``, of that role's messages only."""
        if not term.strip():
            raise ValueError("the term to find must not be empty")
        followed = self._file(name, archive)
        index = followed_index(followed)
        messages = followed.messages
        source = archive or folders.MEMORY_FILE
        hits = [i for i in index.search(term, within=len(messages)) if has_role(messages[i], role)]
        limit = max(1, limit)
        if not hits:
            return Found(term, source, None, 0, limit)
        listed = [i for i, message in enumerate(messages) if has_role(message, role)]
        position = listed.index(hits[0])
        if newest_first:
            position = len(listed) - 1 - position
        return Found(term, source, hits[0], position // limit * limit, limit)

    # ------------------------------------------------------------------------------------------
    # Change tokens

    def version(self, name: str | None = None) -> str:
        """A short token that changes whenever agent ``name`` (or, without one, any agent of
        the workspace) changes on disk: a view that saw this token has nothing new to fetch."""
        if name is not None:
            return self._version([name])
        with self.workspace.snapshot():
            return self._version(self.names())

    def _version(self, names: list[str]) -> str:
        parts = []
        for agent in names:
            docs = self.workspace.agent(agent)
            stamp = docs.folder_stamp()
            if stamp is not None:
                parts.append(f"{agent}:{stamp}")
                continue
            present = _entries(docs.folder)
            for doc in _VERSIONED:
                try:
                    st = os.stat(present[doc])
                except (KeyError, OSError):
                    parts.append(f"{agent}:-")
                    continue
                parts.append(f"{agent}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
        return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


_VERSIONED = (
    folders.MEMORY_FILE,
    folders.ARCHIVE_DIR,
    SETTINGS_FILE,
    NOTES_FILE,
    HISTORY_FILE,
    PROVENANCE_FILE,
)
"""The documents of an agent folder whose changes change :meth:`ReadModel.version`."""


def _entries(folder: Path) -> dict[str, str]:
    """The paths of the ``_VERSIONED`` documents in ``folder``, by name, from one listing: a
    stat of each document that is missing (most, in most folders) costs more."""
    try:
        with os.scandir(folder) as entries:
            return {entry.name: entry.path for entry in entries if entry.name in _VERSIONED}
    except OSError:
        return {}
