"""The spec's folder layout as the interchange format between stores.

``export_layout`` writes ``agents/<name>/MEMORY.md``, ``archive/…`` and the other documents of
every agent of a workspace (on a database or on files) under a folder; ``import_layout`` loads
such a folder, whether nbmemory or swarms wrote it, into a workspace's database. Both copy bytes as
they are, so export, import and export again give the same files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import warnings
from collections.abc import Iterator
from pathlib import Path

from nbmemory.errors import (
    AgentNotFoundError,
    ExportIncompleteError,
    InvalidAgentNameError,
    InvalidDocumentNameError,
    MemoryWarning,
    NbmemoryError,
    StoreConfigError,
)
from nbmemory.store.atomic import write_all
from nbmemory.store.docs import DatabaseDocs, FileDocs
from nbmemory.store.folder_lock import LOCK_FILE
from nbmemory.store.folders import (
    COUNTS_FILE,
    EMBEDDINGS_DIR,
    MEMORY_FILE,
    RECALL_INDEX_DIR,
    agents_root,
    close_from,
    make_private_dir,
    open_child,
    open_into,
    open_reader,
    open_regular,
    read_regular,
    validate_agent_name,
    validate_document_name,
)
from nbmemory.store.workspace import Workspace

INDEXES = (EMBEDDINGS_DIR, RECALL_INDEX_DIR)
"""Folders of indexes recall rebuilds: never exported or imported."""

MAX_DOCUMENT_BYTES = 64 * 2**20
"""The largest file ``import_layout`` loads by default: a memory compacts long before this,
and a database row of a gigabyte is refused by PostgreSQL."""
PIECE_BYTES = 8 * 2**20
"""How much of a file an import holds at once while loading ``MEMORY.md``."""
_PARTIAL = ".partial-export"
"""The folder an agent is written to before it is renamed into place, so ``agents/`` only ever
holds whole agents."""


def export_layout(
    target: str | os.PathLike[str],
    workspace: Workspace,
    names: list[str] | None = None,
) -> list[str]:
    """Write the documents of a workspace's agents ``names`` (default: all) under
    ``target/agents/``; returns the agents the folder now holds.

    Every write stays under ``target/agents/``: a stored agent or document name that could lead
    elsewhere is skipped with a ``MemoryWarning`` naming it, and no link is followed. Each
    agent appears whole or not at all, and an agent folder already there with the same files
    counts as done, so running an interrupted export again finishes it. Refuses
    (``FileExistsError``, nothing written) if an agent's folder holds other files, and
    (``AgentNotFoundError``) if one of ``names`` is not in the store.
    """
    known = workspace.agents()
    for name in names or ():
        validate_agent_name(name)
    unknown = [name for name in names or () if name not in known]
    if unknown:
        raise AgentNotFoundError(f"no agent named {unknown[0]!r} in {workspace.where()}")
    chosen = [name for name in (known if names is None else names) if _valid_name(name)]
    root = Path(target) / "agents"
    make_private_dir(Path(target))
    into: list[int] = []
    try:
        top = open_into(into, target, os.O_RDONLY | os.O_DIRECTORY)
        agents_fd = open_child(top, "agents", root, create=True, into=into)
        close_from(into, top)
        taken = [name for name in chosen if _present(agents_fd, name, root)]
        differ = [n for n in taken if _files(root / n) != _documents(workspace.agent(n))]
        if differ:
            raise FileExistsError(
                f"{root} already has {', '.join(differ)} with other files: nothing was "
                "exported (choose an empty folder)"
            )
        done = list(taken)
        for name in chosen:
            if name in taken:
                continue
            try:
                _write_agent(agents_fd, name, _documents(workspace.agent(name)), root)
            except (OSError, NbmemoryError) as exc:
                listed = ", ".join(done) or "none"
                raise ExportIncompleteError(
                    f"export stopped at {name}: {exc}. Complete in {root}: {listed}; run the "
                    "same export again to finish it"
                ) from exc
            done.append(name)
    finally:
        for held in into:
            os.close(held)
    return chosen


def _valid_name(name: str) -> bool:
    """Whether a stored agent name can name a folder; warns about one that cannot."""
    try:
        validate_agent_name(name)
    except InvalidAgentNameError as exc:
        warnings.warn(f"agent {name!r} not exported: {exc}", MemoryWarning, stacklevel=3)
        return False
    return True


def _present(agents_fd: int, name: str, root: Path) -> bool:
    """Whether ``agents/<name>`` exists (as a real folder: a link there is refused)."""
    into: list[int] = []
    try:
        open_child(agents_fd, name, root / name, create=False, into=into)
    except FileNotFoundError:
        return False
    finally:
        for held in into:
            os.close(held)
    return True


def _write_agent(agents_fd: int, name: str, docs: dict[str, bytes], root: Path) -> None:
    """Write one agent's documents in a partial folder, then rename it to ``name``."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(_PARTIAL, dir_fd=agents_fd)  # left by an export that was interrupted
    into: list[int] = []
    try:
        folder = open_child(agents_fd, _PARTIAL, root / _PARTIAL, create=True, into=into)
        for doc, data in docs.items():
            *parents, filename = doc.split("/")
            opened: list[int] = []  # the folder the document goes in, if not ``folder``
            try:
                fd = folder
                for part in parents:
                    child = open_child(fd, part, root / name / part, create=True, into=opened)
                    if fd != folder:
                        close_from(opened, fd)
                    fd = child
                written: list[int] = []
                try:
                    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
                    shown = root / name / doc
                    write_all(
                        open_regular(filename, flags, into=written, dir_fd=fd, shown=shown), data
                    )
                finally:
                    for held in written:
                        os.close(held)
            finally:
                for held in opened:
                    os.close(held)
    finally:
        for held in into:
            os.close(held)
    os.rename(_PARTIAL, name, src_dir_fd=agents_fd, dst_dir_fd=agents_fd)


def _documents(agent: FileDocs | DatabaseDocs) -> dict[str, bytes]:
    """An agent's documents by their path in its folder (``MEMORY.md``, ``archive/…``), but
    for its kept token counts; a stored name that could lead outside the folder is left out,
    with a warning."""
    if not isinstance(agent, DatabaseDocs):
        return _files(agent.folder)
    db, name = agent.db, agent.name
    docs = {
        doc: db.read(name, doc)
        for doc in db.documents(name)
        if doc != COUNTS_FILE and _valid_document(name, doc)
    }
    memory = db.memory(name)
    if memory is not None:
        docs[MEMORY_FILE] = memory
    return {doc: data for doc, data in sorted(docs.items()) if data is not None}


def _valid_document(name: str, doc: str) -> bool:
    try:
        validate_document_name(doc)
    except InvalidDocumentNameError as exc:
        warnings.warn(f"{doc!r} of {name!r} skipped: {exc}", MemoryWarning, stacklevel=4)
        return False
    return True


def _files(folder: Path) -> dict[str, bytes]:
    """The regular files of an agent folder, but for its lock, its kept token counts (a cache
    of this store) and temporary files."""
    return {doc: read_regular(path) for doc, (path, _) in _paths(folder).items()}


def _paths(folder: Path) -> dict[str, tuple[Path, int]]:
    """The path and size of each of :func:`_files`, by document name."""
    docs = {}
    for dirpath, dirnames, filenames in os.walk(folder):  # links to folders are not entered
        dirnames[:] = sorted(d for d in dirnames if d not in INDEXES)  # rebuilt, not exported
        for filename in sorted(filenames):
            path = Path(dirpath) / filename
            if filename in (LOCK_FILE, COUNTS_FILE) or filename.endswith(".tmp"):
                continue
            doc = path.relative_to(folder).as_posix()
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and _valid_document(folder.name, doc):
                docs[doc] = (path, st.st_size)
    return docs


def _pieces(path: Path) -> Iterator[bytes]:
    """A file's bytes a piece at a time (one empty piece for an empty file), opened as
    :func:`read_regular` opens it."""
    with open_reader(path) as file:
        piece = file.read(PIECE_BYTES)
        yield piece
        while piece:
            piece = file.read(PIECE_BYTES)
            if piece:
                yield piece


def import_layout(
    source: str | os.PathLike[str],
    workspace: Workspace,
    *,
    max_bytes: int = MAX_DOCUMENT_BYTES,
) -> list[str]:
    """Load every agent folder of ``source/agents/`` into the workspace's database, in one
    transaction; returns the agents loaded. Refuses, loading nothing, if the store is files or
    if the database already has one of them.

    Files are streamed, never held all at once: ``MEMORY.md`` goes in by pieces, any other
    document whole. An agent with a document over ``max_bytes`` is skipped, with a
    ``MemoryWarning`` naming it, its document and the limit, and the others are loaded."""
    db = workspace.database
    if db is None:
        raise StoreConfigError(
            "import loads a folder into a database: set $NBMEMORY_STORE or pass --store-file FILE"
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
            warnings.warn(f"{entry.path!r}: not imported ({exc})", MemoryWarning, stacklevel=2)
            continue
        docs = _paths(Path(entry.path))
        big = [(doc, size) for doc, (_, size) in docs.items() if size > max_bytes]
        if big:
            doc, size = big[0]
            warnings.warn(
                f"agent {entry.name!r} not imported: its {doc!r} is {size:,} bytes, over the "
                f"limit of {max_bytes:,} (nbmemory import --max-document-mb raises it)",
                MemoryWarning,
                stacklevel=2,
            )
            continue
        agents[entry.name] = docs
    db.load_agents(
        list(agents),
        (
            (name, doc, _pieces(path))
            for name, docs in agents.items()
            for doc, (path, _) in docs.items()
        ),
    )
    return list(agents)
