"""One agent's documents (``MEMORY.md``, ``NOTES.md``, ``settings.json``, ``archive/<file>``),
by name, in whichever store keeps them: files in the agent's folder (:class:`FileDocs`) or rows
of a PostgreSQL database (:class:`DatabaseDocs`, and :class:`DatabaseMemory` for its
``MEMORY.md``). The same API, views and tools work on either.
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nbmemory.errors import MessageTooLargeError
from nbmemory.store.archives import archive_files, archive_sort_key
from nbmemory.store.atomic import fsync_dir, write_all, write_atomic
from nbmemory.store.folder_lock import folder_lock
from nbmemory.store.folders import (
    ARCHIVE_DIR,
    MEMORY_FILE,
    as_path,
    check_folder,
    folder_entries,
    make_private_dir,
    open_regular,
    read_regular,
)
from nbmemory.store.memory_file import MemoryFile
from nbmemory.store.memory_format import (
    ParsedMemory,
    Whole,
    block_data,
    encoded,
    format_header,
    has_messages,
    parse,
    read_whole,
    warned_messages,
)

if TYPE_CHECKING:  # imported when a database is first used: files need none of it
    from nbmemory.store.postgresql import PgStore

MAX_MESSAGE_BYTES = 2**20
"""The most UTF-8 bytes a message sent from outside may hold (an MCP client's ``remember``, a
summary or note sent to the server): more than any model's context window takes, so no one
meets it by accident, and a client cannot make every later recall and count of the memory
work through megabytes."""


def check_size(text: str, what: str) -> None:
    """``MessageTooLargeError`` if ``text`` is over :data:`MAX_MESSAGE_BYTES` of UTF-8."""
    if len(text) * 4 <= MAX_MESSAGE_BYTES:  # no character takes more than 4 bytes
        return
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_MESSAGE_BYTES:
        raise MessageTooLargeError(
            f"the {what} is {size:,} bytes of UTF-8, over the {MAX_MESSAGE_BYTES:,} a message "
            "may hold: nothing was written (split it, or keep it as a file)"
        )


class AgentDocs(Protocol):
    """One agent's documents, in whichever store keeps them.

    ``folder`` is the path that names the agent (``<workspace>/agents/<name>``): on files it is
    the folder itself; on a database it names the agent in messages, and archives are named by
    paths beside it. A document is named by its path in the folder (``archive/history_….md``)
    or by a path below ``folder``.
    """

    name: str
    folder: Path
    is_database: bool

    def doc(self, doc: str | os.PathLike[str]) -> str: ...
    def path(self, doc: str | os.PathLike[str]) -> Path: ...
    def exists(self, doc: str | os.PathLike[str]) -> bool: ...
    def missing(self, doc: str | os.PathLike[str]) -> bool: ...
    def unlisted(self) -> AgentDocs: ...
    def identity(self, doc: str | os.PathLike[str] = MEMORY_FILE) -> int | None: ...
    def messages(self, doc: str | os.PathLike[str]) -> list[dict[str, Any]]: ...
    def read(self, doc: str | os.PathLike[str]) -> bytes: ...
    def write(
        self, doc: str | os.PathLike[str], data: bytes | str, *, durable: bool = True
    ) -> Path: ...
    def append(
        self, doc: str | os.PathLike[str], data: bytes, *, durable: bool = False
    ) -> None: ...
    def remove(self, doc: str | os.PathLike[str]) -> None: ...
    def stamp(self, doc: str | os.PathLike[str]) -> tuple[int, ...] | None: ...
    def folder_stamp(self) -> tuple[int, ...] | None: ...
    def locked(self) -> contextlib.AbstractContextManager[None]: ...
    def archives(self) -> list[Path]: ...
    def open_memory(self, conversation_name: str, doc: str = MEMORY_FILE) -> Any: ...


@functools.lru_cache(maxsize=2**15)
def _child(folder: Path, name: str) -> Path:
    """``folder / name``, made once: a listing of thousands of agents names each document of
    each several times, and joining paths is most of what that costs."""
    return folder / name


class BaseDocs:
    """What both stores' handles share: naming documents, and reading them as messages."""

    name: str
    folder: Path

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.folder)!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), self.folder))

    def doc(self, doc: str | os.PathLike[str]) -> str:
        """A document's name in the folder, from its name or its path."""
        if isinstance(doc, str) and "/" not in doc:  # a name (the path of a file would be a name
            return doc  # too only in a folder "."): no Path made, as listings ask thousands
        path = Path(doc)
        if path.is_relative_to(self.folder):
            return path.relative_to(self.folder).as_posix()
        if isinstance(doc, str) and not path.is_absolute():
            return doc
        raise ValueError(f"{doc} is not in {self.folder}")

    def path(self, doc: str | os.PathLike[str]) -> Path:
        """The path that names a document, for people and for keys."""
        if isinstance(doc, str) and "/" not in doc:
            return _child(self.folder, doc)
        return self.folder / self.doc(doc)

    def exists(self, doc: str | os.PathLike[str]) -> bool:
        return self.stamp(doc) is not None  # type: ignore[attr-defined]

    def missing(self, doc: str | os.PathLike[str]) -> bool:
        """Whether ``doc`` is known to be missing without asking the store (see
        :meth:`FileDocs.listed`); ``False`` means: look."""
        return False

    def unlisted(self) -> BaseDocs:
        """A handle that looks at the store every time, for keeping beyond one pass."""
        return self

    def identity(self, doc: str | os.PathLike[str] = MEMORY_FILE) -> int | None:
        """What a compaction changes about ``MEMORY.md``: its inode (a compaction replaces the
        file), or the database's compaction count; ``None`` if it does not exist."""
        found = self.stamp(doc)  # type: ignore[attr-defined]
        return found[0] if found is not None else None

    def messages(self, doc: str | os.PathLike[str]) -> list[dict[str, Any]]:
        """A memory or archive document's messages, warning (``MemoryWarning``) about damage."""
        return warned_messages(parse(self.read(doc)), self.path(doc))


class FileDocs(BaseDocs):
    """An agent's documents as files in ``folder``."""

    is_database = False

    def __init__(
        self, folder: str | os.PathLike[str], entries: frozenset[str] | None = None
    ) -> None:
        self.folder = as_path(folder)
        self.name = self.folder.name
        self._entries = entries

    @classmethod
    def listed(cls, folder: str | os.PathLike[str]) -> FileDocs:
        """The documents of ``folder`` as one listing of it finds them (``folder_entries``):
        a document missing then reads as missing without a call to the system, which a
        listing of thousands of agents, most without notes, settings or archives, spares.
        For one pass of reading; a handle made by ``FileDocs(folder)`` looks every time."""
        return cls(folder, folder_entries(folder))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.folder == self.folder  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.folder))

    def missing(self, doc: str | os.PathLike[str]) -> bool:
        if self._entries is None:
            return False
        return self.doc(doc).split("/", 1)[0] not in self._entries

    def unlisted(self) -> FileDocs:
        return self if self._entries is None else FileDocs(self.folder)

    def read(self, doc: str | os.PathLike[str]) -> bytes:
        if self.missing(doc):
            raise FileNotFoundError(self.path(doc))
        return read_regular(self.path(doc))

    def write(
        self, doc: str | os.PathLike[str], data: bytes | str, *, durable: bool = True
    ) -> Path:
        """Replace a whole document atomically (never ``MEMORY.md``: see :meth:`open_memory`)."""
        path = self.path(doc)
        check_folder(self.folder)
        make_private_dir(path.parent)
        return write_atomic(path, data, durable=durable)

    def append(self, doc: str | os.PathLike[str], data: bytes, *, durable: bool = False) -> None:
        """Add ``data`` at the end of a document of lines (created if absent), on a line of its
        own even if a crash left the last one unfinished; call under :meth:`locked`.
        ``durable``: on disk (fsync) before this returns, for a record that must outlive a
        crash of the machine."""
        path = self.path(doc)
        check_folder(self.folder)
        make_private_dir(path.parent)
        into: list[int] = []
        try:
            fd = open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, into=into)
            size = os.fstat(fd).st_size
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
            write_all(fd, b"\n" + data if torn else data)
            if durable:
                os.fsync(fd)
        finally:
            for held in into:
                os.close(held)
        if durable and size == 0:
            fsync_dir(path.parent)

    def remove(self, doc: str | os.PathLike[str]) -> None:
        self.path(doc).unlink(missing_ok=True)

    def stamp(self, doc: str | os.PathLike[str]) -> tuple[int, ...] | None:
        if self.missing(doc):
            return None
        try:
            st = os.stat(self.path(doc))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def folder_stamp(self) -> None:
        """Files have no stamp for a whole folder: each document has its own."""
        return None

    def locked(self) -> contextlib.AbstractContextManager[None]:
        return folder_lock(self.folder)

    def archives(self) -> list[Path]:
        if self.missing(ARCHIVE_DIR):
            return []
        return archive_files(self.folder)

    def open_memory(self, conversation_name: str, doc: str = MEMORY_FILE) -> MemoryFile:
        return MemoryFile(self.path(doc), conversation_name)


class DatabaseDocs(BaseDocs):
    """An agent's documents as rows of a PostgreSQL database."""

    is_database = True

    def __init__(self, db: PgStore, name: str, folder: str | os.PathLike[str]) -> None:
        self.db = db
        self.name = name
        self.folder = as_path(folder)

    def __repr__(self) -> str:
        return f"DatabaseDocs({self.db.shown!r}, {self.name!r})"

    def read(self, doc: str | os.PathLike[str]) -> bytes:
        name = self.doc(doc)
        data = self.db.memory(self.name) if name == MEMORY_FILE else self.db.read(self.name, name)
        if data is None:
            raise FileNotFoundError(self.path(name))
        return data

    def write(
        self, doc: str | os.PathLike[str], data: bytes | str, *, durable: bool = True
    ) -> Path:
        self.db.write(self.name, self.doc(doc), data.encode() if isinstance(data, str) else data)
        return self.path(doc)

    def append(self, doc: str | os.PathLike[str], data: bytes, *, durable: bool = False) -> None:
        """Add ``data`` at the end of a document (created if absent); a database write is
        durable when it commits, whatever ``durable`` says."""
        self.db.append_document(self.name, self.doc(doc), data)

    def remove(self, doc: str | os.PathLike[str]) -> None:
        self.db.remove(self.name, self.doc(doc))

    def stamp(self, doc: str | os.PathLike[str]) -> tuple[int, ...] | None:
        name = self.doc(doc)
        if name == MEMORY_FILE:
            return self.db.stamp(self.name)
        return self.db.document_stamp(self.name, name)

    def folder_stamp(self) -> tuple[int, ...] | None:
        """A value that changes with any of the agent's documents."""
        return self.db.stamp(self.name)

    def locked(self) -> contextlib.AbstractContextManager[None]:
        return self.db.locked(self.name)

    def archives(self) -> list[Path]:
        paths = [
            self.folder / doc
            for doc in self.db.documents(self.name, ARCHIVE_DIR)
            if doc.count("/") == 1 and doc.startswith("archive/history_") and doc.endswith(".md")
        ]
        return sorted(paths, key=archive_sort_key)

    def documents(self) -> list[str]:
        """Names of every document but ``MEMORY.md``, sorted."""
        return self.db.documents(self.name)

    def open_memory(self, conversation_name: str, doc: str = MEMORY_FILE) -> DatabaseMemory:
        return DatabaseMemory(self, conversation_name)


# ----------------------------------------------------------------------------------------------
# The workspace


# ----------------------------------------------------------------------------------------------
# MEMORY.md in a database


class DatabaseMemory:
    """An agent's ``MEMORY.md`` kept in the database, with :class:`MemoryFile`'s methods.

    ``path`` is ``<workspace>/agents/<name>/MEMORY.md``: it names the agent, and archives are
    named by paths beside it.
    """

    def __init__(self, docs: DatabaseDocs, conversation_name: str) -> None:
        self.docs = docs
        self.db, self.agent = docs.db, docs.name
        self.folder = docs.folder
        self.path = docs.folder / MEMORY_FILE
        self.archive_dir = self.folder / ARCHIVE_DIR
        self.conversation_name = conversation_name
        self._header_bytes = format_header(conversation_name).encode("utf-8")

    def __repr__(self) -> str:
        return f"DatabaseMemory({self.db.shown!r}, {self.agent!r})"

    def locked(self) -> contextlib.AbstractContextManager[None]:
        return self.db.locked(self.agent)

    def close(self) -> None:
        """Nothing to release: connections belong to the store's pool."""

    def ensure(self) -> None:
        self.db.ensure(self.agent, self._header_bytes)

    def append(self, block: str | bytes) -> None:
        self.db.append(self.agent, self._header_bytes, block_data(block))

    @property
    def appends(self) -> int:
        """What :meth:`holds` compares with: the row this thread last appended."""
        return self.db.appended(self.agent)

    def holds(self, block: str | bytes, appends: int) -> bool:
        """Whether ``block`` was committed by an :meth:`append` that an interrupt cut short,
        ``appends`` being :attr:`appends` before it: at once if the append had its row back,
        else the database alone can say (the interrupt may have come while it committed)."""
        if self.db.appended(self.agent) != appends:
            return True
        return self.db.ends_with(self.agent, block_data(block), after=appends)

    def read_bytes(self) -> bytes:
        return self.db.memory(self.agent) or b""

    def read_whole(self) -> tuple[bytes, Whole | None]:
        """The memory, and :func:`read_whole` of it (checked whole each time)."""
        data = self.read_bytes()
        return data, read_whole(data)

    def read(self) -> ParsedMemory:
        return parse(self.read_bytes())

    def messages(self) -> list[dict[str, Any]]:
        return warned_messages(self.read(), self.path)

    def archives(self) -> list[Path]:
        return self.docs.archives()

    def compact(self, blocks: str) -> Path | None:
        new = encoded(format_header(self.conversation_name) + blocks, "summary")
        archive = self.db.compact(self.agent, new, keep=has_messages)
        return self.folder / archive if archive is not None else None


def memory_docs(memory: Any) -> FileDocs | DatabaseDocs:
    """The agent documents beside an open ``MEMORY.md`` (its archives, notes, records)."""
    return memory.docs if isinstance(memory, DatabaseMemory) else FileDocs(memory.path.parent)
