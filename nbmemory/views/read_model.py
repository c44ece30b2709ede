"""The read side: one read-only model of a workspace that every view asks.

The magics, the widget, the server and the CLI never parse files or count tokens on their own;
they ask here, so the same thing shows the same number everywhere. Nothing here creates,
changes or locks a file, and files are followed (``nbmemory.store.follow``): when nothing changed a
read costs a ``stat``, and after an append only the new bytes are read.

Each read by name turns the name into the agent's documents once, at its entry
(:meth:`ReadModel._documents`), and hands them down: what it answers is in ``answers``, what
it works out from the files in ``figures``, how messages are paged in ``pages``.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nbmemory.errors import (
    AgentNotFoundError,
    ArchiveNotFoundError,
    InvalidAgentNameError,
    MemoryWarning,
    UnsafeFileError,
)
from nbmemory.memory import note_history
from nbmemory.memory.note_history import HISTORY_FILE, Change, pending
from nbmemory.memory.notes import NOTES_FILE, Notes
from nbmemory.memory.preload import preload_tokens
from nbmemory.memory.provenance import PROVENANCE_FILE, Lineage
from nbmemory.memory.provenance import lineage as lineage_of
from nbmemory.memory.run_settings import SETTINGS_FILE, RunSettings
from nbmemory.memory.search import followed_index
from nbmemory.memory.token_counts import KeptCounts
from nbmemory.recall import index_size
from nbmemory.store import Workspace, folders
from nbmemory.store.archives import archive_time
from nbmemory.store.docs import AgentDocs, FileDocs
from nbmemory.store.follow import EMPTY, FollowedFile, follow, follow_memories
from nbmemory.store.workspace import as_workspace
from nbmemory.views.answers import (
    AgentInfo,
    ArchiveInfo,
    CompactionInfo,
    Item,
    MessageTokens,
    Page,
    PinnedNotes,
    SearchResults,
    TermPage,
    Usage,
)
from nbmemory.views.audit import audit
from nbmemory.views.figures import (
    counter_for,
    followed_block_tokens,
    followed_memory,
    notes_of,
    settings_of,
    tallies,
    usage_of,
)
from nbmemory.views.pages import has_role, item_of, page_of
from nbmemory.wording import FOLD_CHARS


class ReadModel:
    """What a workspace holds, for views: agents, pages of messages, archives, search, usage.

    Every method only reads. A method that takes an agent's ``name`` raises
    ``InvalidAgentNameError`` for a name that cannot name an agent, ``UnsafeFileError`` when
    its folder is a link, and ``AgentNotFoundError`` when it has no memory here.

    Args:
        workspace: A :class:`Workspace`, or a folder on the environment's store; ``None``
            means the environment's workspace (``$WORKSPACE_DIR`` on ``$NBMEMORY_STORE``),
            read once.
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
        """The agents of the workspace.

        A stored name that cannot name an agent (a row or a folder someone else wrote, with
        control characters or a path in it) is left out with a ``MemoryWarning`` naming it,
        escaped: one bad agent never hides the others.

        Returns:
            Their names, sorted.
        """
        return [name for name in self.workspace.agents() if _usable(name)]

    def exists(self, name: str) -> bool:
        """Whether there is an agent ``name``, without listing them all.

        Args:
            name: Any text; one that cannot name an agent names none.

        Returns:
            Whether ``name`` is one of :meth:`names`.
        """
        try:
            folders.validate_agent_name(name)
        except InvalidAgentNameError:
            return False
        return self.workspace.has_agent(name)

    def _documents(self, name: str) -> AgentDocs:
        """Agent ``name``'s documents, for a read by name: the one place a name becomes them.

        ``InvalidAgentNameError`` for a bad name, ``UnsafeFileError`` when its folder on files
        is a link, ``AgentNotFoundError`` when it has no memory here.
        """
        docs = self.workspace.agent(name)
        if not docs.is_database:
            folders.check_folder(docs.folder)
        if not self.workspace.has_agent(name):
            raise AgentNotFoundError(f"no agent named {name!r} in {self.workspace.where()}")
        return docs

    def _listed(self, name: str) -> AgentDocs:
        """Agent ``name``'s documents for one pass over many agents: on files, as one listing
        of its folder finds them (``FileDocs.listed``, which refuses a link as
        :meth:`_documents` does)."""
        docs = self.workspace.agent(name)
        return docs if docs.is_database else FileDocs.listed(docs.folder)

    def settings(self, name: str) -> tuple[RunSettings, bool]:
        """The settings an agent last ran with: what its figures are counted with.

        Args:
            name: The agent.

        Returns:
            The settings (the defaults for its model if it recorded none), and whether they
            were recorded.
        """
        return settings_of(self._documents(name))

    def usage(self, name: str) -> Usage:
        """How full an agent's next request is: every view's gauge.

        Args:
            name: The agent.

        Returns:
            Its next request's tokens, part by part, against its window and threshold (see
            :class:`Usage`).
        """
        docs = self._documents(name)
        return usage_of(docs, followed_memory(docs))

    def agent(self, name: str) -> AgentInfo:
        """One agent at a glance: what a listing shows of it.

        Args:
            name: The agent.

        Returns:
            Its messages, size, archives, last activity, usage and the problems found in its
            ``MEMORY.md``.
        """
        docs = self._documents(name)
        return self._info(docs, followed_memory(docs))

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
            usage=usage_of(docs, followed),
            problems=tuple(followed.problems) if followed is not None else (),
            index_bytes=index_size(docs),
        )

    def agents(self) -> list[AgentInfo]:
        """Every agent of the workspace at a glance, each read once.

        On a database, a few queries read all of them (``Workspace.snapshot``); what did not
        change since the last listing is neither read nor counted again. An agent whose
        folder is a link, or whose stored name cannot name an agent, is left out with a
        ``MemoryWarning``.

        Returns:
            One :class:`AgentInfo` per agent, by name (see :meth:`names`).
        """
        with self.workspace.snapshot():
            agents = []
            for name in self.names():
                try:
                    agents.append(self._listed(name))
                except UnsafeFileError as exc:
                    warnings.warn(f"agent {name!r} left out: {exc}", MemoryWarning, stacklevel=2)
            tallied = tallies(agents)
            read = iter(follow_memories([d for d, t in zip(agents, tallied, strict=True) if not t]))
            memories = [memory or next(read) for memory in tallied]
            return [self._info(docs, memory) for docs, memory in zip(agents, memories, strict=True)]

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
        """A page of an agent's memory (its ``MEMORY.md``), as every view pages it.

        Args:
            name: The agent.
            offset: How many messages to skip, in the order asked.
            limit: How many messages at most.
            newest_first: Newest first (the default), else oldest first.
            fold: Texts longer than this many characters come folded; ``None``: whole.
            role: Only that role's messages (any case); indexes stay the file's.

        Returns:
            The page, each message with its notebook cell if one was recorded.
        """
        return _page(self._documents(name), None, offset, limit, newest_first, fold, role)

    def lineage(self, name: str) -> Lineage:
        """Where an agent's messages came from: the notebook cells that wrote them.

        Unreadable records are skipped with a ``MemoryWarning`` (see ``memory.provenance``).

        Args:
            name: The agent.

        Returns:
            The provenance recorded for its messages.
        """
        return lineage_of(self._documents(name))

    def roles(self, name: str, archive: str | None = None) -> list[tuple[str, int]]:
        """Who speaks in an agent's memory or archive, for a filter by role.

        Args:
            name: The agent.
            archive: The file name of one of its archives; ``None``: ``MEMORY.md``.

        Returns:
            Each role and how many messages it has, in the order they first speak.
        """
        followed = _file(self._documents(name), archive)
        with followed.lock:
            if "roles" not in followed.cache:
                counts: dict[str, int] = {}
                for message in followed.messages:
                    role = str(message.get("role", ""))
                    counts[role] = counts.get(role, 0) + 1
                followed.cache["roles"] = list(counts.items())
            return list(followed.cache["roles"])

    def file_path(self, name: str, archive: str | None = None) -> Path:
        """Where an agent's memory or archive is, for a person to open.

        Args:
            name: The agent.
            archive: The file name of one of its archives; ``None``: ``MEMORY.md``.

        Returns:
            The path of ``MEMORY.md`` (which may not exist yet) or of the archive;
            ``ArchiveNotFoundError`` if the agent has no such archive.
        """
        docs = self._documents(name)
        if archive is None:
            return docs.path(folders.MEMORY_FILE)
        for path in docs.archives():
            if path.name == archive:
                return path
        raise ArchiveNotFoundError(f"{name} has no archive named {archive!r}")

    def notes(self, name: str) -> list[str]:
        """An agent's pinned notes, which every request carries word for word.

        Args:
            name: The agent.

        Returns:
            The notes, in order (see ``nbmemory.memory.notes``).
        """
        docs = self._documents(name)
        return _notes(docs).items()

    def pinned(self, name: str) -> PinnedNotes:
        """An agent's pinned notes with their figures and their review, as every view shows
        them (the panel's notes and the widget's, in one shape).

        Args:
            name: The agent.

        Returns:
            The notes, their tokens and budget, the approval set for the model's edits, the
            edits waiting for review and the latest changes.
        """
        notes = _notes(self._documents(name))
        history = notes.history()
        return PinnedNotes(
            name=name,
            notes=notes.items(),
            tokens=notes.tokens(),
            budget=notes.budget,
            approval=note_history.approval(history) or note_history.DEFAULT,
            pending=pending(history),
            history=history,
        )

    def note_history(self, name: str) -> list[Change]:
        """Every recorded change to an agent's notes, for review and audit.

        Args:
            name: The agent.

        Returns:
            The changes, oldest first, and a last "outside" entry if the file changed since
            (see ``nbmemory.memory.note_history``).
        """
        return _notes(self._documents(name)).history()

    def waiting_notes(self, name: str) -> list[Change]:
        """An agent's note edits that wait for a person's review.

        Args:
            name: The agent.

        Returns:
            The edits not yet accepted or rejected, oldest first.
        """
        return pending(_notes(self._documents(name)).history())

    def records(self, name: str, archive: str | None = None) -> list[dict[str, Any]]:
        """Every message of an agent's memory or archive as stored: what exports write.

        Args:
            name: The agent.
            archive: The file name of one of its archives; ``None``: ``MEMORY.md``.

        Returns:
            Each message's role, content and timestamp; content keeps its structure (tool
            calls stay dicts).
        """
        return [dict(message) for message in _file(self._documents(name), archive).messages]

    def message(self, name: str, index: int, archive: str | None = None) -> Item:
        """One whole message of an agent's memory or archive: what a folded one unfolds to.

        Args:
            name: The agent.
            index: Its index in the file (0 is the first); ``IndexError`` if there is none.
            archive: The file name of one of its archives; ``None``: ``MEMORY.md``.

        Returns:
            The message, never folded, with its notebook cell if one was recorded.
        """
        docs = self._documents(name)
        messages = _file(docs, archive).messages
        if not 0 <= index < len(messages):
            raise IndexError(f"{name} has no message {index} in {archive or 'MEMORY.md'}")
        source = archive or folders.MEMORY_FILE
        return item_of(index, messages[index], source, None, lineage_of(docs))

    def message_tokens(
        self, name: str, indexes: Iterable[int] | None = None, archive: str | None = None
    ) -> MessageTokens:
        """What messages of an agent's memory or archive add to a request, counted as its
        model reads them.

        Args:
            name: The agent.
            indexes: The messages' indexes in the file (``IndexError`` for one it does not
                have); ``None``: all of them.
            archive: The file name of one of its archives; ``None``: ``MEMORY.md``.

        Returns:
            Each message's tokens, what the file adds besides them, and the whole file's.
        """
        docs = self._documents(name)
        followed = _file(docs, archive)
        counter = counter_for(settings_of(docs)[0].model)
        kept = KeptCounts(docs if archive is None else None, counter)
        counts = followed_block_tokens(followed, kept)
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

    def archives(self, name: str) -> list[ArchiveInfo]:
        """An agent's archives: the transcripts its compactions set aside.

        Args:
            name: The agent.

        Returns:
            Each archive's file name, messages, size and time, oldest first.
        """
        return _archives(self._documents(name))

    def compactions(self, name: str) -> list[CompactionInfo]:
        """An agent's compactions: what each archived, the summary that replaced it, and what
        that summary dropped (see :class:`CompactionInfo`).

        Nothing is worked out again while the files stay the same: records and dropped terms
        are kept with each archive's reading, so a request costs a look at each archive and
        its record, and its answer is bounded (``MAX_DROPPED``, ``SUMMARY_CHARS``).

        Args:
            name: The agent.

        Returns:
            One per archive, oldest first.
        """
        return audit(self._documents(name))

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
        """A page of one of an agent's archives, as :meth:`messages` pages its memory.

        Args:
            name: The agent.
            archive: The archive's file name; ``ArchiveNotFoundError`` if it has none such.
            offset: As for :meth:`messages`.
            limit: As for :meth:`messages`.
            newest_first: Newest first, else oldest first (the default).
            fold: As for :meth:`messages`.
            role: As for :meth:`messages`.

        Returns:
            The page, each message with its notebook cell if one was recorded.
        """
        return _page(self._documents(name), archive, offset, limit, newest_first, fold, role)

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
        """The messages of an agent that contain a text, as a person searches them.

        Args:
            name: The agent.
            query: The text to find, in any case.
            archives: Search its archives too, oldest first, before ``MEMORY.md``.
            offset: How many matches to skip.
            limit: How many matches at most.
            fold: As for :meth:`messages`.
            role: Only that role's messages (any case).

        Returns:
            How many messages matched in all, and one page of them.
        """
        docs = self._documents(name)
        sources = [a.name for a in _archives(docs)] if archives else []
        sources.append(None)
        hits: list[tuple[str, int, dict[str, Any]]] = []
        for source in sources:
            followed = _file(docs, source)
            index = followed_index(followed)
            label = source or folders.MEMORY_FILE
            hits.extend(
                (label, i, followed.messages[i])
                for i in index.search(query, within=len(followed.messages))
                if has_role(followed.messages[i], role)
            )
        chosen = hits[max(0, offset) : max(0, offset) + limit]
        lineage = lineage_of(docs)
        items = [item_of(i, message, label, fold, lineage) for label, i, message in chosen]
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
    ) -> TermPage:
        """The page of an agent's memory or archive that first holds a term: what a dropped
        term turns a transcript to, in the widget and the panel alike.

        Args:
            name: The agent.
            term: The text to find, in any case; ``ValueError`` if it is blank.
            archive: The file name of one of its archives; ``None``: ``MEMORY.md``.
            limit: Messages per page.
            newest_first: Whether pages run newest first.
            role: Pages of that role's messages only (any case).

        Returns:
            The first message that holds ``term`` (``None`` if none does) and the offset of
            the page that shows it.
        """
        if not term.strip():
            raise ValueError("the term to find must not be empty")
        followed = _file(self._documents(name), archive)
        index = followed_index(followed)
        messages = followed.messages
        source = archive or folders.MEMORY_FILE
        hits = [i for i in index.search(term, within=len(messages)) if has_role(messages[i], role)]
        limit = max(1, limit)
        if not hits:
            return TermPage(term, source, None, 0, limit)
        listed = [i for i, message in enumerate(messages) if has_role(message, role)]
        position = listed.index(hits[0])
        if newest_first:
            position = len(listed) - 1 - position
        return TermPage(term, source, hits[0], position // limit * limit, limit)

    # ------------------------------------------------------------------------------------------
    # Change tokens

    def version(self, name: str | None = None) -> str:
        """A short token that changes whenever an agent changes in its store: a view that saw
        it has nothing new to fetch (the panel's ``ETag``).

        Args:
            name: The agent; ``None``: any agent of the workspace.

        Returns:
            The token, from the documents' sizes and identities (a few ``stat`` calls).
        """
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


def _usable(name: str) -> bool:
    """Whether a stored agent name can name an agent; warns about one that cannot."""
    try:
        folders.validate_agent_name(name)
    except InvalidAgentNameError as exc:
        warnings.warn(f"agent {name!r} left out: {exc}", MemoryWarning, stacklevel=3)
        return False
    return True


def _file(docs: AgentDocs, archive: str | None) -> FollowedFile:
    """Agent ``docs``'s ``MEMORY.md`` (empty if there is none), or its ``archive``, as
    followed; ``ArchiveNotFoundError`` if it has no such archive."""
    if archive is None:
        followed = followed_memory(docs)
        return followed if followed is not None else EMPTY
    for path in docs.archives():
        if path.name == archive:
            followed = follow(path, docs)
            if followed is not None:
                return followed
    raise ArchiveNotFoundError(f"{docs.name} has no archive named {archive!r}")


def _page(
    docs: AgentDocs,
    archive: str | None,
    offset: int,
    limit: int,
    newest_first: bool,
    fold: int | None,
    role: str | None,
) -> Page:
    """A page of agent ``docs``'s ``MEMORY.md`` or ``archive``, as every view pages a file."""
    messages = _file(docs, archive).messages
    source = archive or folders.MEMORY_FILE
    lineage = lineage_of(docs)
    return page_of(messages, source, offset, limit, newest_first, fold, role=role, lineage=lineage)


def _archives(docs: AgentDocs) -> list[ArchiveInfo]:
    """Agent ``docs``'s archives, oldest first."""
    infos = []
    for path in docs.archives():
        followed = follow(path, docs)
        if followed is not None:
            infos.append(
                ArchiveInfo(path.name, len(followed.messages), followed.size, archive_time(path))
            )
    return infos


def _notes(docs: AgentDocs) -> Notes:
    """Agent ``docs``'s pinned notes, counted with the model it last ran with."""
    return notes_of(docs, settings_of(docs)[0].model)


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
