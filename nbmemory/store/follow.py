"""A memory or archive file's messages, followed by reading only what changed since last time.

Readers (the read model, recall) ask for a file's messages often and the file mostly grows by
appends. A file is known by its identity (device, inode), size and mtime: unchanged, it costs
a ``stat``; grown by whole blocks, only the new bytes are parsed; replaced (a compaction), cut
short or rewritten in place, it is read again. Nothing is created, changed or locked.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbmemory.store import memory_format
from nbmemory.store.docs import AgentDocs, DatabaseDocs
from nbmemory.store.folders import MEMORY_FILE, as_path, open_reader
from nbmemory.store.memory_format import BLOCK_END

if TYPE_CHECKING:
    from nbmemory.store.postgresql import PgStore

_TAIL = 64  # bytes compared before reading an append, to notice a file rewritten in place


@dataclass
class FollowedFile:
    """A file's messages as last read, with what readers computed from them.

    ``per_message`` holds lists of values for the first messages (token counts, say): they stay
    valid when the file grows, so they are carried over and only extended. ``grown`` holds
    what readers build from the messages and extend themselves (an index): it is shared, not
    copied, by every reading of the file while the file only grows, so it must hold what was
    derived from a prefix of the messages, and only ever be extended (under its own lock).
    ``cache`` holds anything else derived from the messages, and starts empty whenever the file
    changed.
    """

    identity: tuple[int, int]
    size: int
    mtime_ns: int
    messages: list[dict[str, Any]]
    problems: list[str]
    end: int | None
    """Where the last whole block ends, when the file ends there (appends are read from it)."""
    tail: bytes
    header: str = ""
    """The file's header as it is on disk."""
    per_message: dict[str, list[Any]] = field(default_factory=dict)
    grown: dict[str, Any] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held while a reader extends ``per_message`` or fills ``grown`` or ``cache``."""


EMPTY = FollowedFile((0, 0), 0, 0, [], [], 0, b"")
"""What a missing file reads as."""

_followed: dict[str, FollowedFile] = {}
_lock = threading.Lock()


def _stat(path: Path) -> os.stat_result | None:
    """The file's own status (a link is not followed), or ``None`` if it is missing."""
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _refused(path: Path) -> FollowedFile:
    """What a link, folder, FIFO or device in place of a memory file reads as: nothing, and
    why (it is never opened: a FIFO would hang, a link could lead outside the workspace)."""
    problem = f"{path.name} is not a regular file (a link, a folder, a FIFO or a device): not read"
    return FollowedFile((0, 0), 0, 0, [], [problem], None, b"")


def _open(path: Path, st: os.stat_result) -> Any:
    """The file opened without following a link, if it is still the one ``st`` describes."""
    handle = open_reader(path)
    now = os.fstat(handle.fileno())
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(now.st_mode):
        handle.close()
        raise FileNotFoundError(path)
    return handle


def _clean_end(data: bytes, parsed: memory_format.ParsedMemory) -> int | None:
    if parsed.problems:
        return None
    if data.endswith(BLOCK_END.encode()) or (not parsed.messages and data.endswith(b"\n\n")):
        return len(data)
    return None


def _read_whole(path: Path, st: os.stat_result) -> FollowedFile:
    with _open(path, st) as handle:
        data = handle.read()
    return _parsed(data, (st.st_dev, st.st_ino), st.st_mtime_ns)


def _read_appended(path: Path, old: FollowedFile, st: os.stat_result) -> FollowedFile | None:
    """``old`` and what was appended after it, or ``None`` if the file changed otherwise."""
    assert old.end is not None
    start = old.end - len(old.tail)
    with _open(path, st) as handle:
        handle.seek(start)
        data = handle.read()
    if not data.startswith(old.tail):
        return None
    return _extended(old, data[len(old.tail) :], st.st_mtime_ns)


def _follow_database(path: Path, docs: DatabaseDocs) -> FollowedFile | None:
    """A document of the database store, followed the same way: ``MEMORY.md`` by its stamp
    (an append reads only the new blocks), an archive by its version."""
    db, name, doc = docs.db, docs.name, docs.doc(path)
    key = _key(db, path)
    with _lock:
        old = _followed.get(key)
    if doc != MEMORY_FILE:
        stamp = db.document_stamp(name, doc)
        if stamp is None:
            return None
        if old is not None and (old.identity, old.size) == ((-1, stamp[0]), stamp[1]):
            return old
        data = db.read(name, doc)
        if data is None:
            return None
        new = _parsed(data, (-1, stamp[0]), 0)
    else:
        new = _memory_reading(db, name, old, *db.memory_since(name, _stamp(old)))
        if new is None:
            return None
    with _lock:
        _followed[key] = new
    return new


def _key(db: PgStore, path: Path) -> str:
    return f"{db.url}\n{path}"  # never a file's entry: one path can name a file and a row


def _stamp(old: FollowedFile | None) -> tuple[int, int] | None:
    """The database stamp a reading of ``MEMORY.md`` was made at."""
    return (old.identity[1], old.mtime_ns) if old is not None else None


def _memory_reading(
    db: PgStore,
    name: str,
    old: FollowedFile | None,
    stamp: tuple[int, int] | None,
    appended: bool,
    data: bytes | None,
) -> FollowedFile | None:
    """A database ``MEMORY.md`` read from what ``PgStore.memory_since`` answered for ``old``:
    ``old`` itself, extended, or read again whole."""
    if stamp is None or (data is None and not appended):
        return None
    if old is not None and appended and stamp == _stamp(old):
        return old
    if old is not None and appended and old.end == old.size:
        return _extended(old, data or b"", stamp[1])
    whole = data if not appended else db.memory(name)
    return None if whole is None else _parsed(whole, (-2, stamp[0]), stamp[1])


LARGE = 16 * 2**20
"""A memory file this big that was not followed yet is tallied by listings (:func:`tally`),
not read whole."""
PIECE = 2**20
"""Bytes read at a time by :func:`tally`."""


class Tallied(Sequence[dict[str, Any]]):
    """The messages of a tallied file as a listing uses them: how many, and the last one."""

    def __init__(self, count: int, last: dict[str, Any] | None) -> None:
        self.count, self.last = count, last

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return Tallied(len(range(self.count)[index]), None)
        if range(self.count)[index] != self.count - 1 or self.last is None:
            raise IndexError("a tally keeps only its last message")
        return self.last


_tallied: dict[tuple[str, str], FollowedFile] = {}


def current(path: Path, st: os.stat_result) -> bool:
    """Whether :func:`follow` holds a reading of ``path`` that ``st`` says is still the file."""
    with _lock:
        old = _followed.get(str(path))
    return old is not None and (old.identity, old.size, old.mtime_ns) == (
        (st.st_dev, st.st_ino),
        st.st_size,
        st.st_mtime_ns,
    )


def followed(docs: DatabaseDocs) -> bool:
    """Whether :func:`follow` holds a reading of agent ``docs``'s ``MEMORY.md`` on a database
    that is current, or that the rows appended since extend (same epoch, a clean end)."""
    with _lock:
        old = _followed.get(_key(docs.db, docs.path(MEMORY_FILE)))
    if old is None:
        return False
    stamp = docs.db.stamp(docs.name)
    return stamp == _stamp(old) or (
        stamp is not None and stamp[0] == old.identity[1] and old.end == old.size
    )


def tally(
    path: Path, key: str, count: Callable[[list[dict[str, Any]]], list[int]]
) -> FollowedFile | None:
    """The memory file at ``path`` as a listing shows it, found piece by piece
    (``memory_format.parse_pieces``) in memory that a piece bounds, not the file: its
    ``messages`` are :class:`Tallied` (how many, and the last), its ``per_message[key]`` the
    counts ``count`` gives for each piece's messages. Kept, per ``key``, for the next
    listing while the file is unchanged; ``None`` when the file is missing, not a regular
    file, or has a problem (then :func:`follow` reads it whole and tells which)."""
    st = _stat(path)
    if st is None or not stat.S_ISREG(st.st_mode):
        return None
    identity = (st.st_dev, st.st_ino)
    with _lock:
        old = _tallied.get((str(path), key))
    if old is not None and (old.identity, old.size, old.mtime_ns) == (
        identity,
        st.st_size,
        st.st_mtime_ns,
    ):
        return old
    if old is None or old.identity != identity or old.end != old.size or old.size > st.st_size:
        old = None  # replaced, cut short or rewritten: tallied again from the start
    start = 0 if old is None else old.size - len(old.tail)
    try:
        with _open(path, st) as handle:
            handle.seek(start)
            if old is not None and handle.read(len(old.tail)) != old.tail:
                with _lock:  # rewritten in place
                    _tallied.pop((str(path), key), None)
                return tally(path, key, count)
            new = _tallied_from(handle.read, old, key, count, identity, st.st_mtime_ns)
    except FileNotFoundError:
        return None
    if new is not None:
        with _lock:
            _tallied[(str(path), key)] = new
    return new


def tally_database(
    docs: DatabaseDocs,
    key: str,
    count: Callable[[list[dict[str, Any]]], list[int]],
    *,
    ready: Callable[[], object] = lambda: None,
) -> FollowedFile | None:
    """:func:`tally` of an agent's ``MEMORY.md`` on a database, streamed in slices
    (``PgStore.memory_slices``) into the same pieces: the figures a whole reading gives, in
    memory that a piece bounds. Kept per ``key`` while the agent's stamp is unchanged, and
    extended by the rows appended since; ``None`` when there is no memory or it has a
    problem (then it is read whole, and its problems told). ``ready`` is called before the
    memory is streamed, to read what ``count`` needs from the database: the stream holds a
    connection, and one that waited for another could wait for ever."""
    db, entry = docs.db, (_key(docs.db, docs.path(MEMORY_FILE)), key)
    with _lock:
        old = _tallied.get(entry)
    if old is not None and _stamp(old) == db.stamp(docs.name):
        return old
    if old is not None and old.end != old.size:
        old = None  # ends in a torn block: tallied again from the start
    ready()
    with db.memory_slices(docs.name, _stamp(old)) as (stamp, appended, slices):
        if stamp is None:
            return None
        if not appended:
            old = None  # compacted or replaced since: the slices are the whole memory
        new = _tallied_from(_reader(slices), old, key, count, (-2, stamp[0]), stamp[1])
    if new is not None and new.size > 0:
        with _lock:
            _tallied[entry] = new
        return new
    return None


def _reader(slices: Iterator[bytes]) -> Callable[[int], bytes]:
    """A reader of ``slices`` joined, as a file's ``read``: up to ``size`` bytes a call, none
    at the end."""
    rest = memoryview(b"")

    def read(size: int) -> bytes:
        nonlocal rest
        parts: list[memoryview] = []
        wanted = size
        while wanted > 0:
            if not rest:
                rest = memoryview(next(slices, b""))
                if not rest:
                    break
            parts.append(rest[:wanted])
            wanted -= len(parts[-1])
            rest = rest[len(parts[-1]) :]
        return b"".join(parts)

    return read


def _tallied_from(
    read: Callable[[int], bytes],
    old: FollowedFile | None,
    key: str,
    count: Callable[[list[dict[str, Any]]], list[int]],
    identity: tuple[int, int],
    mtime_ns: int,
) -> FollowedFile | None:
    """The tally ``old`` (``None``: none yet) extended by what ``read`` gives until it gives
    nothing, a piece at a time; ``None`` if a piece has a problem."""
    counts: list[int] = [] if old is None else old.per_message[key].copy()
    total, last = (0, None) if old is None else (len(old.messages), old.messages.last)
    header, tail = ("", b"") if old is None else (old.header, old.tail)
    size = 0 if old is None else old.size

    def piece(wanted: int) -> bytes:
        nonlocal tail, size
        data = read(wanted)
        tail = (tail + data)[-_TAIL:] if data else tail
        size += len(data)
        return data

    for parsed in memory_format.parse_pieces(piece, PIECE, header=old is None):
        if parsed.problems:
            return None
        header = parsed.header or header
        counts.extend(count(parsed.messages))
        total += len(parsed.messages)
        if parsed.messages:
            last = parsed.messages[-1]
    return FollowedFile(
        identity=identity,
        size=size,
        mtime_ns=mtime_ns,
        messages=Tallied(total, last and {"timestamp": last.get("timestamp")}),  # type: ignore[arg-type]
        problems=[],
        end=size if tail.endswith(BLOCK_END.encode()) else None,
        tail=tail,
        header=header,
        per_message={key: counts},
    )


def follow_memories(agents: Sequence[AgentDocs]) -> list[FollowedFile | None]:
    """The ``MEMORY.md`` of each of ``agents`` as :func:`follow` reads it. On a database, the
    memories that changed since they were last read come from one query, not one per agent:
    a listing of thousands of agents (inside ``Workspace.snapshot``, the unchanged ones cost
    no query either)."""
    fresh: dict[str, FollowedFile | None] = {}
    on_database = [docs for docs in agents if isinstance(docs, DatabaseDocs)]
    if on_database:
        db = on_database[0].db  # a workspace's agents are in one database
        paths = {docs.name: docs.path(MEMORY_FILE) for docs in on_database}
        with _lock:
            olds = {name: _followed.get(_key(db, path)) for name, path in paths.items()}
        known = {name: _stamp(old) for name, old in olds.items()}
        for name, stamp, appended, data in db.memories_since(known):
            new = fresh[name] = _memory_reading(db, name, olds[name], stamp, appended, data)
            if new is not None:
                with _lock:
                    _followed[_key(db, paths[name])] = new
    return [
        fresh[docs.name] if docs.is_database and docs.name in fresh else follow(path, docs)
        for docs, path in ((docs, docs.path(MEMORY_FILE)) for docs in agents)
    ]


def _parsed(data: bytes, identity: tuple[int, int], mtime_ns: int) -> FollowedFile:
    parsed = memory_format.parse(data)
    return FollowedFile(
        identity=identity,
        size=len(data),
        mtime_ns=mtime_ns,
        messages=parsed.messages,
        problems=parsed.problems,
        end=_clean_end(data, parsed),
        tail=data[-_TAIL:],
        header=parsed.header,
    )


def _extended(old: FollowedFile, new: bytes, mtime_ns: int) -> FollowedFile:
    """``old`` followed by the blocks ``new`` (appended after its clean end)."""
    assert old.end is not None
    parsed = memory_format.parse(new, header=False)
    end = _clean_end(new, parsed)
    with old.lock:
        carried = {key: values.copy() for key, values in old.per_message.items()}
    return FollowedFile(
        identity=old.identity,
        size=old.end + len(new),
        mtime_ns=mtime_ns,
        messages=old.messages + parsed.messages,
        problems=old.problems + parsed.problems,
        end=None if end is None else old.end + end,
        tail=(old.tail + new)[-_TAIL:],
        header=old.header,
        per_message=carried,
        grown=old.grown,
    )


def follow(path: str | os.PathLike[str], docs: AgentDocs | None = None) -> FollowedFile | None:
    """The messages of the file at ``path`` (or of that document of ``docs``, an agent's
    documents) as they are now, read as little as possible; ``None`` if absent."""
    path = as_path(path)
    if docs is not None and docs.is_database:
        return _follow_database(path, docs)
    st = _stat(path)
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode):
        return _refused(path)
    key = str(path)
    with _lock:
        old = _followed.get(key)
    new = None
    try:
        if old is not None and old.identity == (st.st_dev, st.st_ino):
            if old.size == st.st_size and old.mtime_ns == st.st_mtime_ns:
                return old
            if st.st_size > old.size and old.end == old.size:
                new = _read_appended(path, old, st)
        if new is None:
            new = _read_whole(path, st)
    except FileNotFoundError:  # replaced or removed since the stat: read it as it is now
        return follow(path)
    with _lock:
        _followed[key] = new
    return new
