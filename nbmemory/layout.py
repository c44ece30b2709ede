"""The spec's folder layout as the interchange format between stores.

``export_layout`` writes ``agents/<name>/MEMORY.md``, ``archive/…`` and the other documents of
every agent of the store in use (a database or files) under a folder; ``import_layout`` loads
such a folder, whether nbmemory or swarms wrote it, into the database store. Both copy bytes as
they are, so export, import and export again give the same files.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from nbmemory import store
from nbmemory.errors import (
    AgentNotFoundError,
    InvalidAgentNameError,
    MemoryWarning,
    StoreConfigError,
)
from nbmemory.memory_file import LOCK_FILE
from nbmemory.workspace import (
    FILE_MODE,
    MEMORY_FILE,
    agent_dir,
    agents_root,
    make_private_dir,
    read_regular,
    validate_agent_name,
)


def export_layout(
    target: str | os.PathLike[str],
    workspace: str | os.PathLike[str] | None = None,
    names: list[str] | None = None,
) -> list[str]:
    """Write the documents of agents ``names`` (default: all) under ``target/agents/``;
    returns the agents written.

    Refuses (``FileExistsError``, nothing written) if one of their folders exists already, and
    (``AgentNotFoundError``) if one of ``names`` is not in the store.
    """
    known = store.agents(workspace)
    unknown = [name for name in names or () if name not in known]
    if unknown:
        raise AgentNotFoundError(f"no agent named {unknown[0]!r} in {store.where(workspace)}")
    names = known if names is None else names
    root = Path(target) / "agents"
    taken = [name for name in names if os.path.lexists(root / name)]
    if taken:
        raise FileExistsError(
            f"{root} already has {', '.join(taken)}: nothing was exported (choose an empty folder)"
        )
    for name in names:
        folder = agent_dir(name, workspace)
        for doc, data in _documents(folder).items():
            path = root / name / doc
            make_private_dir(path.parent)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
            with open(fd, "wb") as file:
                file.write(data)
    return names


def _documents(folder: Path) -> dict[str, bytes]:
    """An agent's documents by their path in its folder (``MEMORY.md``, ``archive/…``)."""
    found = store.locate_folder(folder)
    if found is not None:
        db, name = found
        docs = {doc: db.read(name, doc) for doc in db.documents(name)}
        memory = db.memory(name)
        if memory is not None:
            docs[MEMORY_FILE] = memory
        return {doc: data for doc, data in sorted(docs.items()) if data is not None}
    return _files(folder)


def _files(folder: Path) -> dict[str, bytes]:
    """The regular files of an agent folder, but for its lock and temporary files."""
    docs = {}
    for dirpath, dirnames, filenames in os.walk(folder):  # links to folders are not entered
        dirnames.sort()
        for filename in sorted(filenames):
            path = Path(dirpath) / filename
            if filename == LOCK_FILE or filename.endswith(".tmp"):
                continue
            if path.is_file() and not path.is_symlink():
                docs[path.relative_to(folder).as_posix()] = read_regular(path)
    return docs


def import_layout(source: str | os.PathLike[str]) -> list[str]:
    """Load every agent folder of ``source/agents/`` into the database store, in one
    transaction; returns the agents loaded. Refuses, loading nothing, if the store is files or
    if the database already has one of them."""
    db = store.database()
    if db is None:
        raise StoreConfigError(
            "import loads a folder into a database: set $NBMEMORY_STORE or pass --store URL"
        )
    root = agents_root(source)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no agents folder to import")
    agents = {}
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            validate_agent_name(entry.name)
        except InvalidAgentNameError as exc:
            warnings.warn(f"{entry.path}: not imported ({exc})", MemoryWarning, stacklevel=2)
            continue
        agents[entry.name] = _files(Path(entry.path))
    db.load_agents(agents)
    return list(agents)
