"""Where agents' documents are kept: a :class:`Workspace` is a folder and a store, files under
the folder (the default) or a PostgreSQL database.

A workspace hands out :class:`AgentDocs` (``nbmemory.store.docs``), one agent's documents by
name (``MEMORY.md``, ``NOTES.md``, ``settings.json``, ``archive/<file>``), so the same API, views
and tools work on either store. A path is mapped to an agent and a document once, when a
handle is made (:meth:`Workspace.locate`): a path inside ``<workspace>/agents/<name>/`` of a
database workspace names a row, any other path is a file. Nothing here reads the environment but
:meth:`Workspace.from_env`, which the front ends and constructors given no workspace call.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbmemory.errors import InvalidAgentNameError, MemoryWarning
from nbmemory.store.docs import AgentDocs, BaseDocs, DatabaseDocs, FileDocs
from nbmemory.store.folders import (
    DEFAULT_WORKSPACE,
    MEMORY_FILE,
    agent_folders,
    agents_root,
    holds_memory,
    validate_agent_name,
)

if TYPE_CHECKING:  # imported when a database is first used: files need none of it
    from nbmemory.store.postgresql import PgStore

ENV = "NBMEMORY_STORE"
WORKSPACE_ENV = "WORKSPACE_DIR"
_stores: dict[str, PgStore] = {}


def check(url: str) -> str:
    """``url`` stripped, if it is empty (files) or a usable database URL; else
    ``StoreConfigError`` saying how to write one. Nothing is connected to."""
    url = url.strip()
    if url:
        database_at(url)
    return url


def database_at(url: str) -> PgStore:
    """The database store at ``url``, one per URL in a process (it keeps a connection pool)."""
    store = _stores.get(url)
    if store is None:
        from nbmemory.store.postgresql import PgStore

        store = _stores[url] = PgStore(url)
    return store


def close_databases() -> None:
    """Close the connections of every database store this process opened."""
    for database in list(_stores.values()):
        database.close()


class Workspace:
    """A workspace: the folder ``path`` and the store of its agents, files under
    ``path/agents/`` unless ``store`` is a PostgreSQL URL.

    Several workspaces, on files and on databases, can be used in one process; nothing is
    kept in the environment. ``StoreConfigError`` if ``store`` is not a usable URL.
    """

    def __init__(self, path: str | os.PathLike[str], store: str | None = None) -> None:
        self.root = Path(path)
        self.url = check(store or "")
        self.database = database_at(self.url) if self.url else None

    @classmethod
    def from_env(
        cls, path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
    ) -> Workspace:
        """The workspace the environment names: ``$WORKSPACE_DIR`` (else ``./agent_workspace``)
        on ``$NBMEMORY_STORE`` (else files); ``path`` overrides the folder."""
        env = os.environ if environ is None else environ
        root = path if path is not None else (env.get(WORKSPACE_ENV) or DEFAULT_WORKSPACE)
        return cls(root, env.get(ENV, ""))

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r}, store={self.describe()!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workspace) and (other.root, other.url) == (self.root, self.url)

    def __hash__(self) -> int:
        return hash((self.root, self.url))

    def describe(self) -> str:
        """What the store is, for people: the database URL without its password, or ``files``."""
        return self.database.shown if self.database is not None else "files"

    def where(self) -> str:
        """Where the agents are, for people: a folder or a database."""
        return self.describe() if self.database is not None else str(agents_root(self.root))

    def agents(self) -> list[str]:
        """Names of the agents that have a memory, sorted, as stored (a name written by
        someone else may be one ``validate_agent_name`` refuses)."""
        if self.database is not None:
            return self.database.agents()
        return agent_folders(self.root)

    def has_agent(self, name: str) -> bool:
        """Whether agent ``name`` (validated) is one of :meth:`agents`, without listing them."""
        if self.database is not None:
            return self.database.has_agent(name)
        return holds_memory(agents_root(self.root) / name)

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """Inside, this thread's reads of many agents are answered from one read of a database
        (see ``PgStore.snapshot``); files have nothing to gather."""
        return self.database.snapshot() if self.database is not None else contextlib.nullcontext()

    def agent(self, name: str) -> FileDocs | DatabaseDocs:
        """The documents of agent ``name`` (validated; nothing is created)."""
        folder = agents_root(self.root) / validate_agent_name(name)
        if self.database is None:
            return FileDocs(folder)
        return DatabaseDocs(self.database, name, folder)

    def memory_path(self, name: str) -> Path:
        """The path of agent ``name``'s ``MEMORY.md`` here, as ``Conversation`` takes it."""
        return self.agent(name).path(MEMORY_FILE)

    def locate(self, path: str | os.PathLike[str]) -> tuple[FileDocs | DatabaseDocs, str]:
        """The agent documents and document name a path means here: an agent's document when
        the path lies in ``<root>/agents/<name>/``, else the file in its folder."""
        path = Path(path)
        parts = _below(path, agents_root(self.root))
        if parts is not None and len(parts) >= 2:
            with contextlib.suppress(InvalidAgentNameError):
                return self.agent(parts[0]), "/".join(parts[1:])
        return FileDocs(path.parent), path.name

    def folder(self, folder: str | os.PathLike[str]) -> FileDocs | DatabaseDocs:
        """The agent documents a folder means here (see :meth:`locate`)."""
        docs, _ = self.locate(Path(folder) / MEMORY_FILE)
        return docs

    def open_memory(self, path: str | os.PathLike[str], conversation_name: str) -> Any:
        """The ``MEMORY.md`` at ``path``: a :class:`MemoryFile`, or a :class:`DatabaseMemory`
        when the store is a database and the path is an agent's ``MEMORY.md`` here."""
        docs, doc = self.locate(path)
        if self.database is not None and not docs.is_database:
            warnings.warn(
                f"{path} is not an agent's memory in {agents_root(self.root)}: it is kept as a "
                "file, not in the database",
                MemoryWarning,
                stacklevel=3,
            )
        if docs.is_database and doc != MEMORY_FILE:
            return FileDocs(Path(path).parent).open_memory(conversation_name, Path(path).name)
        return docs.open_memory(conversation_name, doc)


def _below(path: Path, root: Path) -> tuple[str, ...] | None:
    """The parts of ``path`` below ``root``, or ``None`` if it is not below it."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).parts
    except ValueError:
        return None


def list_agents(workspace: Workspace | str | os.PathLike[str] | None = None) -> list[str]:
    """Names of a workspace's agents (default: the environment's workspace), sorted."""
    return as_workspace(workspace).agents()


def as_workspace(workspace: Workspace | str | os.PathLike[str] | None) -> Workspace:
    """``workspace`` itself, or the environment's store over the folder it names (the
    environment's folder for ``None``): for functions that also take a folder."""
    return workspace if isinstance(workspace, Workspace) else Workspace.from_env(workspace)


def docs_at(folder: AgentDocs | str | os.PathLike[str]) -> AgentDocs:
    """``folder`` itself if it is an agent's documents, else what the environment's workspace
    makes of that folder: for constructors that also take a folder."""
    if isinstance(folder, BaseDocs):
        return folder
    return Workspace.from_env().folder(folder)


def agent_dir(name: str, workspace: Workspace | str | os.PathLike[str] | None = None) -> Path:
    """The folder that names agent ``name`` in a workspace (default: the environment's)."""
    return as_workspace(workspace).agent(name).folder


def memory_path(name: str, workspace: Workspace | str | os.PathLike[str] | None = None) -> Path:
    """The path of agent ``name``'s ``MEMORY.md`` in a workspace (default: the environment's):
    what ``Conversation(memory_md_path=...)`` takes."""
    return as_workspace(workspace).memory_path(name)


def workspace_dir() -> Path:
    """The workspace folder the environment names now (``$WORKSPACE_DIR``, else
    ``./agent_workspace``): changing the variable in a running notebook takes effect."""
    return Workspace.from_env().root
