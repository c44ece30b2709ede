"""Where agents' documents are kept: files in the workspace (the default), or a PostgreSQL
database named by one setting, the URL in ``$NBMEMORY_STORE``.

Callers keep using paths. With a database, a path ``<anything>/agents/<name>/<document>`` (the
layout of the spec: ``MEMORY.md``, ``NOTES.md``, ``settings.json``, ``archive/<file>``) names
that document of agent ``<name>`` in the database, so the same API, views and tools work on
either store; any other path is a file. ``%config NbMemoryMagics.store``, the server's
``NbMemoryServer.store`` and the CLI's ``--store`` all set the variable through :func:`use`, so
processes started from them (kernels, subprocesses) read the same store.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nbmemory import memory_file
from nbmemory.atomic import write_atomic
from nbmemory.errors import MemoryWarning
from nbmemory.memory_file import (
    MemoryFile,
    ParsedMemory,
    archive_sort_key,
    format_header,
    has_messages,
    parse,
)
from nbmemory.pg_store import PgStore
from nbmemory.workspace import (
    ARCHIVE_DIR,
    MEMORY_FILE,
    QUARANTINE_DIR,
    agents_root,
    list_agents,
    read_regular,
)

ENV = "NBMEMORY_STORE"
_SUBFOLDERS = (ARCHIVE_DIR, QUARANTINE_DIR)
_stores: dict[str, PgStore] = {}


def check(url: str) -> str:
    """``url`` stripped, if it is empty (files) or a usable database URL; else
    ``StoreConfigError`` saying how to write one. Nothing is connected to."""
    url = url.strip()
    if url:
        _store_for(url)
    return url


def use(url: str | None) -> None:
    """Make ``url`` (a PostgreSQL URL) the store of this process and its children; ``None`` or
    ``""`` goes back to files. A URL that is not a database's raises ``StoreConfigError``."""
    if url:
        _store_for(url)
        os.environ[ENV] = url
    else:
        os.environ.pop(ENV, None)


def database() -> PgStore | None:
    """The database store in use, or ``None`` when memories are files."""
    url = os.environ.get(ENV, "").strip()
    return _store_for(url) if url else None


def _store_for(url: str) -> PgStore:
    store = _stores.get(url)
    if store is None:
        store = _stores[url] = PgStore(url)
    return store


def describe() -> str:
    """What the store is, for people: the database URL without its password, or ``files``."""
    db = database()
    return db.shown if db is not None else "files"


def locate(path: str | os.PathLike[str]) -> tuple[PgStore, str, str] | None:
    """``(database, agent, document)`` for an agent's document kept in the database, else
    ``None`` (memories are files, or the path is not in an agent folder)."""
    db = database()
    if db is None:
        return None
    parts = Path(path).parts
    if len(parts) >= 3 and parts[-3] == "agents":
        return db, parts[-2], parts[-1]
    if len(parts) >= 4 and parts[-4] == "agents" and parts[-2] in _SUBFOLDERS:
        return db, parts[-3], f"{parts[-2]}/{parts[-1]}"
    return None


def locate_folder(folder: str | os.PathLike[str]) -> tuple[PgStore, str] | None:
    """``(database, agent)`` for an agent folder kept in the database, else ``None``."""
    db = database()
    parts = Path(folder).parts
    if db is None or len(parts) < 2 or parts[-2] != "agents":
        return None
    return db, parts[-1]


# ----------------------------------------------------------------------------------------------
# Documents


def read(path: str | os.PathLike[str]) -> bytes:
    """A document's bytes; ``FileNotFoundError`` if it does not exist."""
    found = locate(path)
    if found is None:
        return read_regular(path)
    db, name, doc = found
    data = db.memory(name) if doc == MEMORY_FILE else db.read(name, doc)
    if data is None:
        raise FileNotFoundError(path)
    return data


def write(path: str | os.PathLike[str], data: bytes | str, *, durable: bool = True) -> Path:
    """Replace a whole document atomically (never ``MEMORY.md``: see :func:`open_memory`)."""
    found = locate(path)
    if found is None:
        return write_atomic(path, data, durable=durable)
    db, name, doc = found
    db.write(name, doc, data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)


def remove(path: str | os.PathLike[str]) -> None:
    """Delete a document if it exists."""
    found = locate(path)
    if found is None:
        Path(path).unlink(missing_ok=True)
    else:
        db, name, doc = found
        db.remove(name, doc)


def stamp(path: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """A value that changes whenever the document does; ``None`` if it does not exist."""
    found = locate(path)
    if found is None:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)
    db, name, doc = found
    return db.stamp(name) if doc == MEMORY_FILE else db.document_stamp(name, doc)


def folder_stamp(folder: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """For a database agent, a value that changes with any of its documents; else ``None``."""
    found = locate_folder(folder)
    return found[0].stamp(found[1]) if found is not None else None


@contextlib.contextmanager
def locked(folder: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the agent's lock for a read-modify-write of its documents."""
    found = locate_folder(folder)
    if found is None:
        with memory_file.folder_lock(Path(folder)):
            yield
    else:
        with found[0].locked(found[1]):
            yield


def archives(folder: str | os.PathLike[str]) -> list[Path]:
    """The archives of an agent folder, oldest first."""
    found = locate_folder(folder)
    if found is None:
        return memory_file.archive_files(folder)
    db, name = found
    paths = [
        Path(folder) / doc
        for doc in db.documents(name, ARCHIVE_DIR)
        if doc.count("/") == 1 and doc.startswith("archive/history_") and doc.endswith(".md")
    ]
    return sorted(paths, key=archive_sort_key)


def agents(workspace: str | os.PathLike[str] | None = None) -> list[str]:
    """Names of the agents that have a memory, sorted."""
    db = database()
    return list_agents(workspace) if db is None else db.agents()


def messages(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """A memory or archive document's messages, warning (``MemoryWarning``) about damage."""
    return memory_file.report(parse(read(path)), Path(path))


def identity(path: str | os.PathLike[str]) -> int | None:
    """What a compaction changes about ``MEMORY.md``: its inode (a compaction replaces the
    file), or the database's compaction count; ``None`` if it does not exist."""
    found = stamp(path)
    return found[0] if found is not None else None


def exists(path: str | os.PathLike[str]) -> bool:
    """Whether the document exists, in the store that keeps it."""
    return stamp(path) is not None


def where(workspace: str | os.PathLike[str] | None = None) -> str:
    """Where the workspace's agents are, for people: a folder or a database."""
    return describe() if database() is not None else str(agents_root(workspace))


# ----------------------------------------------------------------------------------------------
# MEMORY.md


class DatabaseMemory:
    """An agent's ``MEMORY.md`` kept in the database, with :class:`MemoryFile`'s methods.

    ``path`` stays the path the caller gave (``<workspace>/agents/<name>/MEMORY.md``): it names
    the agent, and archives are named by paths beside it.
    """

    def __init__(self, path: str | os.PathLike[str], conversation_name: str) -> None:
        found = locate(path)
        assert found is not None and found[2] == MEMORY_FILE
        self.db, self.agent, _ = found
        self.path = Path(path)
        self.folder = self.path.parent
        self.archive_dir = self.folder / ARCHIVE_DIR
        self.conversation_name = conversation_name

    def __repr__(self) -> str:
        return f"DatabaseMemory({self.db.shown!r}, {self.agent!r})"

    def locked(self) -> contextlib.AbstractContextManager[None]:
        return self.db.locked(self.agent)

    def close(self) -> None:
        """Nothing to release: connections belong to the store's pool."""

    def _header(self) -> bytes:
        return format_header(self.conversation_name).encode("utf-8")

    def ensure(self) -> None:
        self.db.ensure(self.agent, self._header())

    def append(self, block: str) -> None:
        self.db.append(self.agent, self._header(), memory_file.encoded(block, "message"))

    def read_bytes(self) -> bytes:
        return self.db.memory(self.agent) or b""

    def read(self) -> ParsedMemory:
        return parse(self.read_bytes())

    def messages(self) -> list[dict[str, Any]]:
        return memory_file.report(self.read(), self.path)

    def archives(self) -> list[Path]:
        return archives(self.folder)

    def compact(self, blocks: str) -> Path | None:
        new = memory_file.encoded(format_header(self.conversation_name) + blocks, "summary")
        archive = self.db.compact(self.agent, new, keep=has_messages)
        return self.folder / archive if archive is not None else None


def open_memory(path: str | os.PathLike[str], conversation_name: str) -> Any:
    """The ``MEMORY.md`` at ``path``: a :class:`MemoryFile`, or a :class:`DatabaseMemory` when
    the store is a database and the path is in an agent folder."""
    found = locate(path)
    if found is not None and found[2] == MEMORY_FILE:
        return DatabaseMemory(path, conversation_name)
    if database() is not None:
        warnings.warn(
            f"{path} is not in an agent folder (<workspace>/agents/<name>/MEMORY.md): it is "
            "kept as a file, not in the database",
            MemoryWarning,
            stacklevel=3,
        )
    return MemoryFile(path, conversation_name)
