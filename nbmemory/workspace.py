"""Where agents live on disk: the workspace folder, one folder per agent name, and name rules."""

from __future__ import annotations

import errno
import os
import unicodedata
from pathlib import Path

from nbmemory.errors import InvalidAgentNameError, UnsafeFileError

DEFAULT_WORKSPACE = "agent_workspace"
MEMORY_FILE = "MEMORY.md"
ARCHIVE_DIR = "archive"
QUARANTINE_DIR = "quarantine"
"""Where what a crash left behind is put aside: kept, but out of search and the views."""
MAX_NAME_BYTES = 255
DIR_MODE = 0o700
FILE_MODE = 0o600


def workspace_dir() -> Path:
    """The workspace root: ``$WORKSPACE_DIR`` as it is now, else ``./agent_workspace``.

    Read on every call, so changing the variable in a running notebook takes effect.
    """
    return Path(os.environ.get("WORKSPACE_DIR") or DEFAULT_WORKSPACE)


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
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise InvalidAgentNameError(f"agent name must be at most {MAX_NAME_BYTES} bytes in UTF-8")
    return name


def agents_root(workspace: str | os.PathLike[str] | None = None) -> Path:
    """The folder that holds one sub-folder per agent."""
    return Path(workspace) / "agents" if workspace is not None else workspace_dir() / "agents"


def agent_dir(name: str, workspace: str | os.PathLike[str] | None = None) -> Path:
    """The folder of agent ``name`` (validated; nothing is created)."""
    return agents_root(workspace) / validate_agent_name(name)


def memory_path(name: str, workspace: str | os.PathLike[str] | None = None) -> Path:
    """The ``MEMORY.md`` of agent ``name`` (validated; nothing is created)."""
    return agent_dir(name, workspace) / MEMORY_FILE


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_REFUSED = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)


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


def _open_child(parent: int, name: str, shown: Path, create: bool) -> int:
    """A descriptor of folder ``name`` in the folder open as ``parent``, never through a link."""
    flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=parent)
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
        return _open_child(parent, name, shown, create=False)
    fd = os.open(name, flags, dir_fd=parent)
    os.fchmod(fd, DIR_MODE)
    return fd


def open_folder(folder: str | os.PathLike[str], *, create: bool = True) -> int:
    """A descriptor of an agent folder, to read and write its files by name (``dir_fd``).

    Neither the folder nor, in a workspace, the ``agents`` folder above it is opened through a
    link: one planted there could lead outside the workspace (``UnsafeFileError``). With
    ``create``, missing folders are made with mode 0700.
    """
    folder = Path(os.path.abspath(folder))
    guarded = folder.parts[-2:] if folder.parent.name == "agents" else folder.parts[-1:]
    base = folder.parents[len(guarded) - 1]
    if create:
        make_private_dir(base)
    fd = os.open(base, os.O_RDONLY | _DIRECTORY)
    shown = base
    try:
        for name in guarded:
            shown = shown / name
            child = _open_child(fd, name, shown, create)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def list_agents(workspace: str | os.PathLike[str] | None = None) -> list[str]:
    """Names of the agents that have a memory in the workspace, sorted."""
    root = agents_root(workspace)
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return []
    names = []
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            validate_agent_name(entry.name)
        except InvalidAgentNameError:
            continue
        folder = Path(entry.path)
        if (folder / MEMORY_FILE).exists() or (folder / ARCHIVE_DIR).is_dir():
            names.append(entry.name)
    return sorted(names)
