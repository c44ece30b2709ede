"""Where agents live on disk: the workspace folder, one folder per agent name, and name rules."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from nbmemory.errors import InvalidAgentNameError

DEFAULT_WORKSPACE = "agent_workspace"
MEMORY_FILE = "MEMORY.md"
ARCHIVE_DIR = "archive"
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


def make_private_dir(path: Path) -> Path:
    """Create ``path`` and its missing parents with mode 0700; an existing folder is left as is."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    return path


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
