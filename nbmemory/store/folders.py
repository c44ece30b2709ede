"""Where agents live on disk: one folder per agent name in a workspace, name rules, safe opens."""

from __future__ import annotations

import collections
import errno
import functools
import os
import stat
import unicodedata
import warnings
from pathlib import Path
from typing import BinaryIO

from nbmemory.errors import (
    InvalidAgentNameError,
    InvalidDocumentNameError,
    MemoryWarning,
    UnsafeFileError,
)

DEFAULT_WORKSPACE = "agent_workspace"
MEMORY_FILE = "MEMORY.md"
ARCHIVE_DIR = "archive"
QUARANTINE_DIR = "quarantine"
COUNTS_FILE = ".token-counts.json"
"""Token counts of the memory, kept by writers so readers need not count it (see
``nbmemory.memory.token_counts``): a cache, never exported or imported."""
"""Where what a crash left behind is put aside: kept, but out of search and the views."""
EMBEDDINGS_DIR = ".embeddings"
"""Where recall keeps the vectors of an agent's messages (one file per embedding model): an
index, rebuilt from the memory when missing, never exported or imported."""
RECALL_INDEX_DIR = ".recall-index"
"""Where recall keeps the index of each archive (see ``nbmemory.recall.kept_indexes``): rebuilt when
missing, stale or damaged, never exported or imported."""
MAX_NAME_BYTES = 255
DIR_MODE = 0o700
FILE_MODE = 0o600


def validate_agent_name(name: object) -> str:
    """Return ``name`` if it can name an agent folder, else raise ``InvalidAgentNameError``.

    A name must stay one folder inside the workspace: no separators, no ``..``, no
    control characters, not empty, at most 255 bytes in UTF-8.
    """
    if not isinstance(name, str):
        raise InvalidAgentNameError(f"agent name must be a string, not {type(name).__name__}")
    if not name or not name.strip():
        raise InvalidAgentNameError("agent name must not be empty")
    if "/" in name or "\\" in name:
        raise InvalidAgentNameError(f"agent name {name!r} must not contain '/' or '\\'")
    if ".." in name or name == ".":
        raise InvalidAgentNameError(f"agent name {name!r} must not be '.' or contain '..'")
    if any(unicodedata.category(ch) == "Cc" for ch in name):
        raise InvalidAgentNameError(f"agent name {name!r} must not contain control characters")
    if os.path.isabs(name) or os.path.splitdrive(name)[0]:
        raise InvalidAgentNameError(f"agent name {name!r} must not be an absolute path")
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidAgentNameError(
            f"agent name {name!r} is not valid text: it holds a lone surrogate"
        ) from None
    if len(encoded) > MAX_NAME_BYTES:
        raise InvalidAgentNameError(f"agent name must be at most {MAX_NAME_BYTES} bytes in UTF-8")
    return name


def validate_document_name(doc: object) -> str:
    """Return ``doc`` if it names a file inside an agent folder (``NOTES.md``,
    ``archive/history_….md``), else raise ``InvalidDocumentNameError``.

    Names come from stores and folders someone else may have written: each ``/``-separated part
    must be a plain file or folder name, so joining the name to a folder never leaves it.
    """
    if not isinstance(doc, str) or not doc:
        raise InvalidDocumentNameError(f"document name {doc!r} must be a non-empty string")
    for part in doc.split("/"):
        if part in ("", ".", "..") or "\\" in part:
            raise InvalidDocumentNameError(
                f"document name {doc!r} must be relative, without '..', '.', '\\' or empty parts"
            )
        if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in part):
            raise InvalidDocumentNameError(
                f"document name {doc!r} must not contain control characters"
            )
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise InvalidDocumentNameError(
                f"document name {doc!r} has a part over {MAX_NAME_BYTES} bytes"
            )
    return doc


def as_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a ``Path``, made only if it is not one: a listing of thousands of agents
    passes the same paths down several calls, and making one costs more than using it."""
    return path if isinstance(path, Path) else Path(path)


@functools.lru_cache(maxsize=64)  # asked once per agent by listings of thousands
def agents_root(workspace: str | os.PathLike[str]) -> Path:
    """The folder of a workspace that holds one sub-folder per agent."""
    return Path(workspace) / "agents"


def agent_folder(name: str, workspace: str | os.PathLike[str]) -> Path:
    """The folder of agent ``name`` in a workspace (validated; nothing is created)."""
    return agents_root(workspace) / validate_agent_name(name)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_REFUSED = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)


def folder_entries(folder: str | os.PathLike[str]) -> frozenset[str]:
    """The names in agent folder ``folder`` (none if it is missing; ``UnsafeFileError`` if it
    is a link or not a folder): one listing tells a reader of thousands of agents which
    documents of each exist, where a stat or an open for each missing one costs more."""
    into: list[int] = []
    try:
        fd = open_into(into, folder, os.O_RDONLY | _DIRECTORY | _NOFOLLOW)
        with os.scandir(fd) as entries:
            return frozenset(entry.name for entry in entries)
    except FileNotFoundError:
        return frozenset()
    except OSError as exc:
        if exc.errno in _REFUSED:
            raise UnsafeFileError(
                f"{folder} is a link or not a folder; nbmemory does not follow links there"
            ) from None
        raise
    finally:
        for held in into:
            os.close(held)


def make_private_dir(path: Path) -> Path:
    """Create ``path`` and its missing parents, each with mode 0700 whatever the umask; a
    folder that exists is left as it is."""
    missing, above = [], path
    while not os.path.lexists(above) and above != above.parent:
        missing.append(above)
        above = above.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(folder, DIR_MODE)
    return path


# A KeyboardInterrupt can come at every point where Python may run a signal handler: as a
# function starts and after each call returns. So a descriptor is never left in a variable
# between os.open() and the ``try`` that closes it: it goes into a list its caller holds
# (``into``), by C code that runs no handler between the system call and the list, and the
# holder closes what the list holds in an ``except`` or ``finally`` (with os.close() itself:
# a function of ours would be one more point, before it closed anything), or hands it on. A
# list that a ``finally`` closes holds one descriptor when all goes well: a loop closing two
# has a point between them.


def open_into(
    into: list[int],
    path: str | os.PathLike[str],
    flags: int,
    mode: int = FILE_MODE,
    *,
    dir_fd: int | None = None,
) -> int:
    """``os.open``, its descriptor appended to ``into`` before an interrupt can come."""
    into.extend(map(functools.partial(os.open, dir_fd=dir_fd), (path,), (flags,), (mode,)))
    return into[-1]


def close_from(into: list[int], fd: int) -> None:
    """Close ``fd`` and take it out of ``into``: both or neither, whatever interrupts."""
    collections.deque(map(os.close, map(into.pop, (into.index(fd),))), maxlen=0)


def open_child(parent: int, name: str, shown: Path, create: bool, *, into: list[int]) -> int:
    """A descriptor of folder ``name`` in the folder open as ``parent``, never through a link;
    kept in ``into``, whose holder closes it."""
    flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW
    try:
        return open_into(into, name, flags, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        if exc.errno in _REFUSED:
            raise UnsafeFileError(
                f"{shown} is a link or not a folder; nbmemory does not follow links there"
            ) from None
        raise
    try:
        os.mkdir(name, DIR_MODE, dir_fd=parent)
    except FileExistsError:
        return open_child(parent, name, shown, create=False, into=into)
    fd = open_into(into, name, flags, dir_fd=parent)
    os.fchmod(fd, DIR_MODE)
    return fd


def open_folder(folder: str | os.PathLike[str], *, into: list[int], create: bool = True) -> int:
    """A descriptor of an agent folder, to read and write its files by name (``dir_fd``),
    kept in ``into``, whose holder closes it.

    Neither the folder nor, in a workspace, the ``agents`` folder above it is opened through a
    link: one planted there could lead outside the workspace (``UnsafeFileError``). With
    ``create``, missing folders are made with mode 0700.
    """
    folder = Path(os.path.abspath(folder))
    guarded = folder.parts[-2:] if folder.parent.name == "agents" else folder.parts[-1:]
    base = folder.parents[len(guarded) - 1]
    if create:
        make_private_dir(base)
    opened: list[int] = []
    try:
        fd = open_into(opened, base, os.O_RDONLY | _DIRECTORY)
        shown = base
        for name in guarded:
            shown = shown / name
            child = open_child(fd, name, shown, create, into=opened)
            close_from(opened, fd)
            fd = child
            _warn_if_shared(fd, shown)
    except BaseException:
        for held in opened:
            os.close(held)
        raise
    into.extend(opened)  # one descriptor, handed on in C
    return fd


def open_index_folder(
    folder: str | os.PathLike[str], name: str, *, into: list[int], create: bool
) -> int:
    """A descriptor of folder ``name`` of agent folder ``folder``, where an index is kept
    (``.recall-index``, ``.embeddings``), kept in ``into``, whose holder closes every
    descriptor it holds. Neither it nor the folders above it are opened through a link
    (``UnsafeFileError``): one planted there would have nbmemory read and write where it leads.
    With ``create``, a missing ``name`` is made with mode 0700; a missing agent folder is
    ``FileNotFoundError``."""
    agent = open_folder(folder, into=into, create=False)
    return open_child(agent, name, as_path(folder) / name, create, into=into)


def check_folder(folder: str | os.PathLike[str]) -> Path:
    """``folder`` if neither it nor, in a workspace, ``agents`` above it is a link or a file.

    For code that reaches an agent's files by path: a link planted there could lead outside
    the workspace (``UnsafeFileError``). A folder that does not exist yet is fine.
    """
    folder = as_path(folder)
    parent = folder.parent
    for path in (parent, folder) if parent.name == "agents" else (folder,):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            break
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafeFileError(
                f"{path} is a link or not a folder; nbmemory does not follow links there"
            )
    return folder


def open_regular(
    path: str | os.PathLike[str],
    flags: int = os.O_RDONLY,
    *,
    into: list[int],
    dir_fd: int | None = None,
    shown: str | os.PathLike[str] | None = None,
) -> int:
    """A descriptor of a regular file (created ``0600`` with ``O_CREAT``), opened without
    following a link and without waiting on a FIFO; kept in ``into``, whose holder closes it.

    A link, folder, FIFO or device is refused with ``UnsafeFileError``, named as ``shown``,
    before anything is read or written; ``FileNotFoundError`` if there is nothing there.
    """
    try:
        fd = open_into(into, path, flags | _NOFOLLOW | _NONBLOCK, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (*_REFUSED, errno.EISDIR, errno.ENXIO):
            raise _not_regular(shown or path) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        close_from(into, fd)
        raise _not_regular(shown or path)
    return fd


def open_reader(
    path: str | os.PathLike[str],
    *,
    dir_fd: int | None = None,
    shown: str | os.PathLike[str] | None = None,
) -> BinaryIO:
    """A regular file opened to read as :func:`open_regular` opens it, as a file object: it
    owns the descriptor, so one that an interrupt drops is closed with it."""
    into: list[int] = []
    try:
        open_regular(path, into=into, dir_fd=dir_fd, shown=shown)
        return file_of(into, "rb")
    finally:
        for held in into:
            os.close(held)


def open_file(
    path: str | os.PathLike[str], flags: int, mode: str, *, buffering: int = -1
) -> BinaryIO:
    """``os.open(path, flags)`` (created ``0600``) as a file object of ``mode``, which owns
    the descriptor as soon as it is made."""
    into: list[int] = []
    try:
        open_into(into, path, flags)
        return file_of(into, mode, buffering)
    finally:
        for held in into:
            os.close(held)


def file_of(into: list[int], mode: str, buffering: int = -1) -> BinaryIO:
    """The one descriptor of ``into`` as a file object, which then owns it alone: no call
    comes between the two, so no interrupt."""
    (file,) = map(functools.partial(open, mode=mode, buffering=buffering), into)
    into.clear()
    return file


def _not_regular(shown: str | os.PathLike[str]) -> UnsafeFileError:
    return UnsafeFileError(
        f"{shown} is not a regular file (a link, a folder, a FIFO or a device); "
        "nbmemory neither reads nor writes through it: move it away and try again"
    )


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file, read as :func:`open_regular` opens it."""
    with open_reader(path) as file:
        return file.read()


_warned: set[tuple[int, int]] = set()


def _warn_if_shared(fd: int, path: Path) -> None:
    """Warn once if others may write in a folder: they could plant links or FIFOs there."""
    st = os.fstat(fd)
    if (
        st.st_mode & 0o022
        and not st.st_mode & stat.S_ISVTX
        and (st.st_dev, st.st_ino) not in _warned
    ):
        _warned.add((st.st_dev, st.st_ino))
        warnings.warn(
            f"{path} can be written by other users (mode {stat.S_IMODE(st.st_mode):o}): they "
            f"could plant links or FIFOs in it; 'chmod 700 {path}' makes it private",
            MemoryWarning,
            stacklevel=4,
        )


def holds_memory(folder: str | os.PathLike[str]) -> bool:
    """Whether an agent folder holds a memory or archives: what makes it an agent's."""
    return os.path.exists(os.path.join(folder, MEMORY_FILE)) or os.path.isdir(
        os.path.join(folder, ARCHIVE_DIR)
    )


def agent_folders(workspace: str | os.PathLike[str]) -> list[str]:
    """Names of the folders of a workspace on files that hold a memory, sorted, as they are:
    like a database's rows, a name may be one :func:`validate_agent_name` refuses (a folder
    someone else made), which callers skip."""
    root = agents_root(workspace)
    check_folder(root)
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return []
    found = [e.name for e in entries if e.is_dir(follow_symlinks=False) and holds_memory(e.path)]
    return sorted(found)
