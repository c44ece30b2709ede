"""Where recall's indexes are kept beside an agent's memory, and when one is trusted.

An archive never changes once written, so its index is made once, by the first recall that
reads it, and every later process reads it instead of parsing the archive again. ``MEMORY.md``
grows: the index of its messages is kept too, and a new process reads it and indexes only the
messages appended since (``file_index.memory_index``); it is kept anew when the memory has
doubled or was compacted. On files they are ``agents/<name>/.recall-index/<archive name>.idx`` and
``MEMORY.md.idx``; on PostgreSQL rows of ``nbmemory_recall_index``.

An index is trusted only for what it was made of: an archive file's size, inode, mtime and
ctime (which no one can set back), else (a copy, a restore) the BLAKE2b digest of its bytes;
an archive row's version and size; the digest of the first bytes of ``MEMORY.md`` it covers
(on a database, computed by the server), and the memory's inode (its compaction count on a
database). A stale or unreadable
index is rebuilt without a word; a damaged one, or one tampered with (every place and count
read from it is checked before it is used), is rebuilt with a ``MemoryWarning``; one that
cannot be written (a read-only folder or role) is used from RAM. The index of an archive that
is gone is removed when recall next looks at the archives. On files ``.recall-index`` is never
opened through a link. Nothing here changes ``MEMORY.md`` or an archive.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from nbmemory.errors import MemoryWarning, StoreError
from nbmemory.recall.stored_index import MAGIC, Built, Damaged, StoredIndex, encode, head_size
from nbmemory.store.atomic import write_atomic
from nbmemory.store.docs import AgentDocs
from nbmemory.store.folders import (
    ARCHIVE_DIR,
    MEMORY_FILE,
    RECALL_INDEX_DIR,
    open_index_folder,
    open_reader,
)
from nbmemory.store.follow import follow

_HASH_CHUNK = 2**20


class _InParts:
    """Reads parts of an index kept in a database, each when asked for."""

    in_parts = True

    def __init__(self, db: Any, agent: str, name: str) -> None:
        self.db, self.agent, self.name = db, agent, name

    def __call__(self, start: int, length: int) -> bytes:
        return self.db.recall_index_part(self.agent, self.name, start, length)


# ----------------------------------------------------------------------------------------------
# Where indexes are kept


def index_name(archive: Path) -> str:
    """The name of an archive's index (a file in ``.recall-index/``, a row on a database)."""
    return f"{archive.name}.idx"


def _file_source(path: Path, st: os.stat_result, digest: str | None = None) -> dict[str, Any]:
    return {
        "name": path.name,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
        **({"digest": digest} if digest is not None else {}),
    }


def _digest(data: bytes) -> str:
    """The BLAKE2b digest of ``data``, as :func:`file_digest` gives a file's."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_digest(path: Path) -> str:
    """The BLAKE2b digest of a file's bytes."""
    digest = hashlib.blake2b(digest_size=16)
    with open_reader(path) as file:
        while chunk := file.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


_kept: dict[str, tuple[Any, StoredIndex]] = {}
"""Indexes read in this process, by archive, with what they were checked against."""
_kept_lock = threading.Lock()


def archive_indexes(
    docs: AgentDocs,
    archives: list[Path],
    build: Callable[[Path], Built | None],
    speaker_words: Callable[[str], frozenset[str]],
) -> list[StoredIndex | None]:
    """:func:`archive_index` of each of ``archives``; on a database, their stamps and their
    kept indexes are read in one query each, not one per archive."""
    _prune(docs, archives)
    if not docs.is_database or not archives:
        return [archive_index(docs, a, lambda a=a: build(a), speaker_words) for a in archives]
    db, name = docs.db, docs.name  # type: ignore[attr-defined]
    stamps = db.document_stamps(name, [docs.doc(archive) for archive in archives])
    missing = []
    for archive in archives:
        with _kept_lock:
            kept = _kept.get(f"{docs!r}\n{archive}")
        if kept is None or kept[0] != stamps.get(docs.doc(archive)):
            missing.append(index_name(archive))
    heads = db.recall_index_heads(name, missing) if missing else {}
    return [
        archive_index(
            docs,
            archive,
            lambda archive=archive: build(archive),
            speaker_words,
            stamps.get(docs.doc(archive)) or (),
            heads.get(index_name(archive)),
        )
        for archive in archives
    ]


_seen: dict[str, frozenset[str]] = {}
"""The names of the indexes of each agent's archives when last looked at in this process: the
indexes kept are looked through again only when the archives change."""


def _prune(docs: AgentDocs, archives: list[Path]) -> None:
    """Remove the kept indexes of archives that are gone (deleted by a person): an index holds
    its archive's text, which goes with it."""
    wanted = frozenset(index_name(archive) for archive in archives)
    with _kept_lock:
        if _seen.get(repr(docs)) == wanted:
            return
        _seen[repr(docs)] = wanted
    try:
        if docs.is_database:
            kept = docs.db.recall_index_names(docs.name)  # type: ignore[attr-defined]
        elif docs.missing(RECALL_INDEX_DIR):
            return
        else:
            with _folder(docs, create=False) as folder:
                kept = os.listdir(folder)
        for name in kept:
            if not name.endswith(".md.idx") or name == MEMORY_INDEX or name in wanted:
                continue
            if docs.stamp(f"{ARCHIVE_DIR}/{name.removesuffix('.idx')}") is None:
                discard(docs, name)
    except (OSError, StoreError):
        pass


def archive_index(
    docs: AgentDocs,
    archive: Path,
    build: Callable[[], Built | None],
    speaker_words: Callable[[str], frozenset[str]],
    stamp: tuple[int, ...] | None = None,
    head: bytes | None = None,
) -> StoredIndex | None:
    """The index of one of agent ``docs``'s archives: kept in this process, else read from
    beside the memory, else made by ``build()`` (``None``: the archive is gone) and kept. On a
    database, ``stamp`` is the archive's if it was read already (``()``: it is gone), ``head``
    the start of its kept index."""
    if docs.is_database:
        stamp = docs.stamp(archive) if stamp is None else stamp or None
        if stamp is None:
            return None
        source: dict[str, Any] = {"name": archive.name, "version": stamp[0], "size": stamp[1]}
        check: Any = tuple(stamp)
    else:
        try:
            st = os.lstat(archive)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        check = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    key = f"{docs!r}\n{archive}"
    with _kept_lock:
        kept = _kept.get(key)
    if kept is not None and kept[0] == check:
        return kept[1]
    if not docs.is_database:
        source = _file_source(archive, st)
    found = _read(docs, archive, source, speaker_words, head)
    if found is None:
        built = build()
        if built is None:
            return None
        if not docs.is_database:
            source["digest"] = file_digest(archive)
        data = encode(built, source)
        found = StoredIndex(data, speaker_words)
        _store(docs, index_name(archive), data, found.head_bytes)
    with _kept_lock:
        _kept[key] = (check, found)
    return found


def _trusted(docs: AgentDocs, archive: Path, kept: dict[str, Any], now: dict[str, Any]) -> bool:
    """Whether an index made for ``kept`` is one of the archive as it is now (``now``)."""
    if docs.is_database:
        return kept == now
    if kept.get("name") != now["name"] or kept.get("size") != now["size"]:
        return False
    if all(kept.get(field) == now[field] for field in ("mtime_ns", "ctime_ns", "inode")):
        return True
    try:  # copied or restored: the same bytes?
        return kept.get("digest") == file_digest(archive)
    except OSError:
        return False


def _read(
    docs: AgentDocs,
    archive: Path,
    source: dict[str, Any],
    speaker_words: Callable[[str], frozenset[str]],
    head: bytes | None = None,
) -> StoredIndex | None:
    """The kept index of ``archive``, if there is one that can be trusted."""
    found = _load(docs, index_name(archive), speaker_words, head)
    return found if found is not None and _trusted(docs, archive, found.source, source) else None


def _load(
    docs: AgentDocs,
    name: str,
    speaker_words: Callable[[str], frozenset[str]],
    head: bytes | None = None,
) -> StoredIndex | None:
    """The index kept under ``name``, if it is one (whatever it was made of); on a database,
    ``head`` is the start of it if it was read already."""
    try:
        if docs.is_database:
            db, agent = docs.db, docs.name  # type: ignore[attr-defined]
            data = head if head is not None else db.recall_index(agent, name)
            if data is None:
                return None
            if not data.startswith(MAGIC):  # an index of another version: made anew
                return None
            return StoredIndex(data, speaker_words, _InParts(db, agent, name), name)
        # The postings now, the texts when a passage needs them; no file kept open: a
        # process may follow thousands of archives.
        with _folder(docs, create=False) as folder, _open(docs, folder, name) as file:
            data = file.read(_FIRST_READ)
            if not data.startswith(MAGIC):
                return None
            head = head_size(data)
            if head > os.fstat(file.fileno()).st_size:
                raise Damaged("its header names more bytes than it holds")
            if head > len(data):
                data += file.read(head - len(data))
        return StoredIndex(
            data[:head], speaker_words, lambda start, size: _pread(docs, name, start, size), name
        )
    except Damaged as exc:
        warn_damaged(docs, name, exc)
        return None
    except (OSError, StoreError):
        return None


_Read = TypeVar("_Read")


def read_trusted(docs: AgentDocs, read: Callable[[], _Read]) -> _Read:
    """``read()``, and once more if it finds one of agent ``docs``'s kept indexes damaged as
    it reads it (``Damaged``: a part checked only when first read): that index is warned
    about, discarded and made again from its file, so no reader answers from damaged bytes."""
    try:
        return read()
    except Damaged as exc:
        warn_damaged(docs, exc.name, exc)
        discard(docs, exc.name)
        followed = follow(docs.path(MEMORY_FILE), docs)
        if followed is not None:
            with followed.lock:
                followed.grown.pop("recall", None)
        return read()


def warn_damaged(docs: AgentDocs, name: str, exc: Damaged) -> None:
    """Say that the index kept as ``name`` was found damaged (or tampered with), and is made
    again from the messages: once per index, as the one made is kept in its place."""
    warnings.warn(
        f"{docs.path(f'{RECALL_INDEX_DIR}/{name}')}: a damaged recall index ({exc}); "
        "made again from the messages",
        MemoryWarning,
        stacklevel=2,
    )


@contextlib.contextmanager
def _folder(docs: AgentDocs, *, create: bool) -> Iterator[int]:
    """The agent's ``.recall-index`` folder, open, never through a link (``UnsafeFileError``)."""
    into: list[int] = []
    try:
        yield open_index_folder(docs.folder, RECALL_INDEX_DIR, into=into, create=create)
    finally:
        for held in into:
            os.close(held)


def _open(docs: AgentDocs, folder: int, name: str) -> BinaryIO:
    """The index file ``name`` in ``folder``, open to read, if it is a regular file."""
    return open_reader(name, dir_fd=folder, shown=docs.path(f"{RECALL_INDEX_DIR}/{name}"))


_FIRST_READ = 2**20
"""Bytes of an index file read at once: a header, and the postings of a small archive."""


def _pread(docs: AgentDocs, name: str, start: int, size: int) -> bytes:
    """Bytes of index file ``name`` from ``start``, as many as there are up to ``size``."""
    with _folder(docs, create=False) as folder, _open(docs, folder, name) as file:
        file.seek(start)
        return file.read(size if size < 2**40 else -1)


def discard(docs: AgentDocs, name: str) -> None:
    """Forget the indexes of agent ``docs`` read in this process and remove the one kept as
    ``name``, found damaged during a query: the next query rebuilds it."""
    with _kept_lock:
        for key in [key for key in _kept if key.startswith(f"{docs!r}\n")]:
            del _kept[key]
    try:
        if docs.is_database:
            docs.db.remove_recall_index(docs.name, name)  # type: ignore[attr-defined]
        else:
            with _folder(docs, create=False) as folder:
                os.unlink(name, dir_fd=folder)
    except (OSError, StoreError):
        pass


def _store(docs: AgentDocs, name: str, data: bytes, head: int) -> None:
    """Keep an index under ``name`` (a failure only costs the next process a rebuild)."""
    try:
        if docs.is_database:
            docs.db.put_recall_index(docs.name, name, data, head)  # type: ignore[attr-defined]
        else:
            with _folder(docs, create=True) as folder:
                write_atomic(name, data, durable=False, dir_fd=folder)
    except (OSError, StoreError):
        pass


MEMORY_INDEX = "MEMORY.md.idx"
"""The name of the index kept of ``MEMORY.md``'s first messages."""


def _memory_digest(docs: AgentDocs, size: int) -> str | None:
    """The digest of the first ``size`` bytes of ``MEMORY.md`` (``None`` if it is shorter):
    on a database, its SHA-256 computed by the server, the memory not read again."""
    if docs.is_database:
        return docs.db.memory_digest(docs.name, size)  # type: ignore[attr-defined]
    with open_reader(docs.path(MEMORY_FILE)) as file:
        data = file.read(size)
    return _digest(data) if len(data) == size else None


def kept_memory(
    docs: AgentDocs,
    identity: tuple[int, int],
    messages: int,
    speaker_words: Callable[[str], frozenset[str]],
) -> StoredIndex | None:
    """The index kept of ``MEMORY.md``'s first messages, if it was made of the memory as it is
    now (``identity``: its inode, or its compaction count on a database; ``messages``: how
    many it holds now): the same memory, whose first bytes have the digest it was made of."""
    found = _load(docs, MEMORY_INDEX, speaker_words)
    if found is None:
        return None
    source = found.source
    try:
        if source.get("name") != MEMORY_FILE or source.get("identity") != list(identity):
            return None
        if found.count > messages:
            return None
        digest = _memory_digest(docs, int(source["bytes"]))
    except (OSError, StoreError, KeyError, TypeError, ValueError):
        return None
    return found if digest is not None and digest == source.get("digest") else None


def keep_memory(docs: AgentDocs, built: Built, identity: tuple[int, int], size: int) -> None:
    """Keep the index of ``MEMORY.md``'s messages ``built`` from its first ``size`` bytes."""
    try:
        digest = _memory_digest(docs, size)
    except (OSError, StoreError):
        return
    if digest is None:
        return
    source = {"name": MEMORY_FILE, "identity": list(identity), "bytes": size, "digest": digest}
    encoded = encode(built, source)
    _store(docs, MEMORY_INDEX, encoded, StoredIndex(encoded, lambda role: frozenset()).head_bytes)


def index_size(docs: AgentDocs) -> int:
    """Bytes of the indexes kept of an agent's archives, for the views (only sizes are read;
    the vectors of ``embeddings`` are not counted)."""
    if docs.is_database:
        return docs.db.recall_index_size(docs.name)  # type: ignore[attr-defined]
    total = 0
    if docs.missing(RECALL_INDEX_DIR):
        return 0
    try:
        with _folder(docs, create=False) as folder, os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    except OSError:  # missing, or a link: no index of this agent's
        pass
    return total
