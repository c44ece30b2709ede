"""Where each message came from: the notebook, cell and run of the kernel that wrote it.

Kept beside the memory in ``PROVENANCE.jsonl``, one JSON line per message, so ``MEMORY.md``
reads exactly as before to swarms and to people. A line is keyed by a hash of the message's
block (role, timestamp, content as MEMORY.md holds them): a compaction archives MEMORY.md byte
for byte and keeps blocks word for word, so an archived message still finds its line. Lines
are only appended, under the agent's lock, with the message they describe (see
``Conversation.add``). A damaged line is skipped with a ``MemoryWarning``; without the file,
no message knows its cell, and the memory is the same. Only the file's last ``READ_BYTES`` are
read, those of the newest messages, so that a file of years costs no more than that.

A cell run again supersedes its earlier runs: for one notebook and cell id, the run last
recorded (kernel session and execution count) is current, and the messages of the others
are :attr:`Cell.superseded_by` it. Messages a compaction keeps word for word are added again
after its summary, with a new time: their lines are copies (``copied``), which keep their cell
but never make its run current.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
import zlib
from dataclasses import dataclass
from typing import Any

from nbmemory.errors import MemoryWarning
from nbmemory.memory.token_counts import digest
from nbmemory.store.docs import AgentDocs
from nbmemory.store.folders import open_reader
from nbmemory.store.memory_format import format_block
from nbmemory.wording import counted

PROVENANCE_FILE = "PROVENANCE.jsonl"
SERVER_ROOT_ENV = "NBMEMORY_SERVER_ROOT"
"""The Jupyter server's root folder, which the nbmemory server extension exports to its kernels
so that they record notebooks by their paths under it (see :func:`notebook_path`)."""


@dataclass(frozen=True)
class Provenance:
    """What the kernel knew of the cell that wrote a message: the notebook's path (as the
    Jupyter server names it, relative to its root), the cell's id, its execution count and the
    kernel's session (which a restart changes). Any of them may be unknown (``None``)."""

    notebook: str | None = None
    cell_id: str | None = None
    execution_count: int | None = None
    session: str | None = None
    copied: bool = False
    """The message is one a compaction kept word for word and added again after its summary:
    it tells where the message came from, not that its cell ran again."""

    @property
    def known(self) -> bool:
        """Whether it says anything at all."""
        return any(v is not None for v in self.to_json().values())

    @property
    def cell(self) -> tuple[str, str] | None:
        """``(notebook, cell id)``: what runs of one cell share; ``None`` if either is unknown."""
        if self.notebook is None or self.cell_id is None:
            return None
        return self.notebook, self.cell_id

    @property
    def run(self) -> tuple[str | None, int | None]:
        """What tells two runs of a cell apart: the kernel session and the execution count."""
        return self.session, self.execution_count

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v not in (None, False)}

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> Provenance:
        """A recorded entry read back; ``ValueError`` or ``TypeError`` if it is not one."""
        count = entry.get("execution_count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise TypeError(f"execution_count must be an integer, not {count!r}")
        texts = {k: entry.get(k) for k in ("notebook", "cell_id", "session")}
        for name, value in texts.items():
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a string, not {value!r}")
        return cls(execution_count=count, copied=entry.get("copied") is True, **texts)


def notebook_path(session_name: str | None, server_root: str | None) -> str | None:
    """The notebook a kernel runs for, as the Jupyter server names it: ``session_name`` (the
    server's ``$JPY_SESSION_NAME``, an absolute path in JupyterLab's kernels) relative to
    ``server_root`` when it lies under it, so a record still names the notebook after the
    server's folder moves; else as given (``None`` if empty)."""
    if not session_name:
        return None
    if server_root and os.path.isabs(session_name):
        root = os.path.abspath(server_root)
        path = os.path.abspath(session_name)
        if os.path.commonpath([root, path]) == root and path != root:
            return os.path.relpath(path, root).replace(os.sep, "/")
    return session_name


def key_of(role: str, content: Any, timestamp: str) -> str:
    """The key of a message: the hash of its block as MEMORY.md (or an archive) holds it."""
    return digest(format_block(role, content, timestamp))


def message_key(message: dict[str, Any]) -> str:
    """:func:`key_of` for a message read from a memory file."""
    return key_of(str(message.get("role", "")), message["content"], message.get("timestamp", ""))


def append(docs: AgentDocs, block: str, provenance: Provenance) -> None:
    """Record that the message MEMORY.md holds as ``block`` came from ``provenance`` (call
    under the agent's lock, right after the block is appended)."""
    line = json.dumps({"key": digest(block), **provenance.to_json()}, ensure_ascii=False)
    docs.append(PROVENANCE_FILE, f"{line}\n".encode())


@dataclass(frozen=True)
class Cell:
    """A message's provenance as views show it: the cell that wrote it and, if that cell was
    run again later, the execution count of the run that supersedes it."""

    provenance: Provenance
    superseded_by: int | None = None
    superseded: bool = False
    """Whether a later run of the cell supersedes it (``superseded_by`` may still be ``None``
    if that run's execution count is unknown)."""


class Lineage:
    """The recorded provenance of an agent's messages, and which runs are current."""

    def __init__(
        self,
        entries: dict[str, Provenance],
        latest: dict[tuple[str, str], Provenance],
        damaged: int = 0,
    ):
        self.entries = entries
        self.latest = latest
        """The last recorded run of each ``(notebook, cell id)``."""
        self.damaged = damaged
        """How many lines could not be read."""

    def __len__(self) -> int:
        return len(self.entries)

    def provenance_of(self, message: dict[str, Any]) -> Provenance | None:
        """What was recorded for ``message`` (as a memory file holds it), if anything."""
        return self.entries.get(message_key(message)) if self.entries else None

    def of(self, message: dict[str, Any]) -> Cell | None:
        """Where ``message`` (as read from a memory file) came from, or ``None`` if unknown."""
        return self.of_key(message_key(message)) if self.entries else None

    def of_key(self, key: str) -> Cell | None:
        """:meth:`of` the message whose key (:func:`message_key`) is ``key``."""
        found = self.entries.get(key)
        if found is None:
            return None
        cell = found.cell
        latest = self.latest.get(cell) if cell is not None else None
        if latest is None or latest.run == found.run:
            return Cell(found)
        return Cell(found, latest.execution_count, superseded=True)


EMPTY = Lineage({}, {})


READ_BYTES = 16 * 2**20
"""The most of ``PROVENANCE.jsonl`` read: its last lines, those of the newest messages (about
100,000 of them). A file grown past it costs no more to read, in time or memory; the messages
of the lines before show no cell."""
_CHECKED = 2**16
"""Bytes before the end of the lines read that are read again to check them: when they are
unchanged, only the lines appended since are parsed."""


@dataclass(frozen=True)
class _Read:
    """A reading of an agent's records: the lineage of its whole lines, up to byte ``upto``,
    with a check of the last bytes before it (so that lines appended since are parsed alone),
    and the lineage with the unfinished last line, if any, as views get it."""

    stamp: Any
    upto: int
    check: int
    whole_lines: Lineage
    lineage: Lineage


_cache: dict[tuple[Any, ...], _Read] = {}
_cache_lock = threading.Lock()
_CACHED = 64


def lineage(docs: AgentDocs) -> Lineage:
    """The provenance recorded for agent ``docs``; read again only when the file changed, and
    then only the lines appended since, when the lines read before are unchanged.

    Lines that cannot be read are skipped, with one ``MemoryWarning`` per reading of the file
    (the memory is never affected); a missing file is :data:`EMPTY`.
    """
    try:
        stamp = docs.stamp(PROVENANCE_FILE)
    except OSError:
        stamp = None
    if stamp is None:
        return EMPTY
    where = (type(docs), str(docs.path(PROVENANCE_FILE)), getattr(docs, "db", None))
    with _cache_lock:
        cached = _cache.get(where)
    if cached is not None and cached.stamp == stamp:
        return cached.lineage
    checked = max(0, cached.upto - _CHECKED) if cached is not None else None
    try:
        at, data = _read_from(docs, checked)
        view = memoryview(data)
        start, base, reused = 0, EMPTY, False
        if cached is not None and at == checked:
            if zlib.crc32(view[: cached.upto - at]) == cached.check:
                start, base, reused = cached.upto - at, cached.whole_lines, True
            elif at > 0:  # changed before the lines appended: read the last lines again
                at, data = _read_from(docs, None)
                view = memoryview(data)
    except (FileNotFoundError, NotADirectoryError):
        return EMPTY
    except OSError as exc:
        warnings.warn(f"{docs.path(PROVENANCE_FILE)}: not read ({exc})", MemoryWarning, 2)
        return EMPTY
    if at > 0 and not reused:  # the last lines' window begins in a line: from the next one
        start = data.find(b"\n") + 1 or len(data)
    upto = data.rfind(b"\n") + 1
    whole_lines = _read_lines(view[start:upto], base)
    found = _read_lines(view[upto:], whole_lines)
    _warn_damaged(found, str(docs.path(PROVENANCE_FILE)))
    check = zlib.crc32(view[max(0, upto - _CHECKED) : upto])
    with _cache_lock:
        if len(_cache) >= _CACHED:
            _cache.clear()
        _cache[where] = _Read(stamp, at + upto, check, whole_lines, found)
    return found


def _read_from(docs: AgentDocs, start: int | None) -> tuple[int, bytes]:
    """``(where, data)``: the records from byte ``start`` on, or (``None``, or ``start`` is
    before them) from where the last :data:`READ_BYTES` begin, less one byte, which tells
    whether they begin with a whole line."""
    if docs.is_database:  # a row is read whole
        data = docs.read(PROVENANCE_FILE)
        at = _window(len(data), start)
        return at, data[at:]
    with open_reader(docs.path(PROVENANCE_FILE)) as file:
        size = os.fstat(file.fileno()).st_size
        at = _window(size, start)
        file.seek(at)
        return at, file.read(size - at)


def _window(size: int, start: int | None) -> int:
    first = max(0, size - READ_BYTES - 1)
    return start if start is not None and first <= start <= size else first


def parse(data: bytes, shown: str = PROVENANCE_FILE) -> Lineage:
    """The lineage a ``PROVENANCE.jsonl`` holds; unreadable lines are skipped with a warning
    naming ``shown`` and how many there were."""
    found = _read_lines(memoryview(data), EMPTY)
    _warn_damaged(found, shown)
    return found


def _read_lines(data: memoryview, base: Lineage) -> Lineage:
    """``base`` with the records of the lines in ``data`` added (later lines win)."""
    if not data:
        return base
    entries: dict[str, Provenance] = dict(base.entries)
    latest: dict[tuple[str, str], Provenance] = dict(base.latest)
    bad = base.damaged
    for line in bytes(data).decode("utf-8", "replace").split("\n"):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            key = entry["key"]
            if not isinstance(key, str):
                raise TypeError("key")
            provenance = Provenance.from_json(entry)
        except (ValueError, KeyError, TypeError, AttributeError):
            bad += 1
            continue
        entries[key] = provenance
        if provenance.cell is not None and not provenance.copied:
            latest[provenance.cell] = provenance
    return Lineage(entries, latest, bad)


def _warn_damaged(found: Lineage, shown: str) -> None:
    if found.damaged:
        warnings.warn(
            f"{shown}: {counted(found.damaged, 'damaged line')} skipped; "
            "those messages show no cell",
            MemoryWarning,
            stacklevel=3,
        )
