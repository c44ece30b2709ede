"""The only code that changes an agent's ``MEMORY.md`` on disk: create, append, read, compact.

Every change happens under the agent folder's lock (see ``nbmemory.store.folder_lock``).
Compaction writes and fsyncs the archive before it replaces ``MEMORY.md`` (through a temporary
file and ``os.replace``), so a crash at any point leaves the old memory or the new one, plus the
archive.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from nbmemory.errors import MemoryWarning, MemoryWriteError
from nbmemory.store.archives import archive_files, archive_name, unfinished_archive
from nbmemory.store.atomic import fsync_dir, write_all, write_atomic
from nbmemory.store.folder_lock import FolderLock
from nbmemory.store.folders import (
    ARCHIVE_DIR,
    DIR_MODE,
    QUARANTINE_DIR,
    make_private_dir,
    open_child,
    open_into,
    open_reader,
    open_regular,
)
from nbmemory.store.link_watch import LinkWatch, link_watch
from nbmemory.store.memory_format import (
    BLOCK_END,
    LOG_HEADING,
    SEPARATOR,
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


class MemoryFile:
    """One agent's ``MEMORY.md``: create, append, read, compact, list archives.

    Safe to share between threads, processes and kernels: every write holds the folder lock,
    an append that races a compaction lands in the archive or in the new file, never nowhere,
    and an append that fails leaves the file as it was. Files are opened through the folder's
    descriptor and never through a link; a link, FIFO, device or folder in place of a file is
    refused with ``UnsafeFileError`` before anything is written.
    """

    def __init__(self, path: str | os.PathLike[str], conversation_name: str) -> None:
        self.path = Path(path)
        self.folder = self.path.parent
        self.archive_dir = self.folder / ARCHIVE_DIR
        self.conversation_name = conversation_name
        self._lock = FolderLock(self.folder)
        self._fd: int | None = None
        self._expected_size = -1
        self._watched: tuple[LinkWatch, int] | None = None
        """The watch on ``_fd``'s link count, when there is one (``nbmemory.store.link_watch``)."""
        self._checked: int | None = None
        """``LinkWatch.settled_changes()`` when ``_fd`` was last found still linked."""
        self.appends = 0
        """Blocks this object wrote: see :meth:`holds`."""

    def __repr__(self) -> str:
        return f"MemoryFile({str(self.path)!r})"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the agent folder's lock while reading or changing its files (the folder now at
        the path: one deleted or replaced since is locked afresh)."""
        depth = self._lock.depth()
        try:
            with self._lock:
                self._lock.renew()
                yield
        except BaseException:
            self._lock.settle(depth)
            raise

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def close(self) -> None:
        """Release the file descriptors this object keeps open."""
        with self._lock.thread_lock:
            self._drop_fd()
            self._lock.close()

    def _drop_fd(self) -> None:
        # Forgotten before it is closed: an interrupt in between leaks a descriptor, where the
        # other order would leave a closed number that the next open could reuse for another file.
        fd, self._fd, self._expected_size = self._fd, None, -1
        watched, self._watched, self._checked = self._watched, None, None
        if fd is not None:
            os.close(fd)
        if watched is not None:  # after the close: an interrupt between only leaves a watch
            watched[0].unwatch(watched[1])

    def _name(self, name: str) -> str:
        """``name`` as the ``os`` calls given ``dir_fd=self._lock.fd`` want it."""
        return name if self._lock.fd is not None else str(self.folder / name)

    def _open_file(self, name: str, flags: int, shown: Path, into: list[int]) -> int:
        """Open a regular file of the folder, refusing anything else, into ``into`` (see
        ``open_into``); call under the lock."""
        return open_regular(self._name(name), flags, into=into, dir_fd=self._lock.fd, shown=shown)

    def _open_memory(self, flags: int) -> None:
        """Open MEMORY.md as ``_fd``, kept open (``FileNotFoundError`` if it is not there)."""
        opened: list[int] = []
        try:
            self._open_file(self.path.name, flags, self.path, opened)
        except BaseException:
            for held in opened:
                os.close(held)
            raise
        (self._fd,) = opened

    def _open(self) -> None:
        """Open MEMORY.md for appending (creating it with its header); call under the lock.

        Keeps the file open between appends, watched (see ``nbmemory.store.link_watch``) so that an
        append knows when to check that it is still the one at the path, and puts aside the
        debris of a crash when it opens the file.
        """
        if self._fd is not None:
            return
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT
        while self._fd is None:
            self._lock.renew()
            self._quarantine_debris()
            try:
                self._open_memory(flags)
            except FileNotFoundError:
                if self._lock.current():
                    raise
        watch = link_watch()
        wd = watch.watch(self._fd) if watch is not None else None
        if watch is not None and wd is not None:
            self._watched = (watch, wd)
        if os.fstat(self._fd).st_size == 0:
            header = format_header(self.conversation_name).encode()
            write_all(self._fd, header)
            self._expected_size = len(header)

    def ensure(self) -> None:
        """Create the folder and a MEMORY.md with its header if they do not exist yet."""
        with self.locked():
            self._open()

    def append(self, block: str | bytes) -> None:
        """Append one formatted block (see :func:`format_block`; or its UTF-8, see
        :func:`block_bytes`), all or nothing.

        If the write fails (``MemoryWriteError``, or an interrupt), the file is cut back to
        what it was. If the file or its folder was deleted (or the file replaced) since the last
        append, the block is written into the one now at the path, under that folder's lock.
        Text a crashed writer left unfinished is put aside (see :meth:`_put_aside_torn_tail`);
        any other text not ending in a line break is ended with one, so it stays apart (and
        reported) rather than merged.
        """
        data = block_data(block)
        lock = self._lock
        depth = lock.depth()
        try:
            lock.hold()  # not ``with``: settle() lets go on any exception, and this is quicker
            fd = self._fd
            watched = self._watched
            if fd is None or watched is None or watched[0].changes() != self._checked:
                fd = self._linked_fd()
            size = os.lseek(fd, 0, os.SEEK_END)
            if size != self._expected_size:  # another writer, or a crash, came between
                size = self._put_aside_torn_tail(size)
                data = self._joint(size) + data
            end = size + len(data)
            try:
                written = os.write(fd, data)
                if written != len(data):  # a short write: the disk is filling up, or a signal
                    write_all(fd, memoryview(data)[written:])
            except BaseException as exc:
                # The first call here cuts the file back: an interrupt that comes as a call
                # returns comes after it. Not contextlib.suppress: its call would be one more.
                try:  # noqa: SIM105
                    os.ftruncate(fd, size)
                except OSError:
                    pass
                if isinstance(exc, OSError):
                    raise self._not_added(exc) from exc
                raise
            self.appends += 1  # no call between the write and this: see holds()
            self._expected_size = end
            lock.let_go()
        except BaseException:
            lock.settle(depth)
            raise

    def _linked_fd(self) -> int:
        """MEMORY.md's descriptor, opened if it is not, after asking the file whether it is
        still linked: if it was deleted or replaced (by a compaction in another process), the
        file now at the path is opened instead. Call under the lock.

        Nothing of ours replaces or changes the file while the lock is held; a deletion by
        anything else after this check can only remove the block along with the file, as it
        could once the append returns.
        """
        while True:
            if self._fd is None:
                self._open()
            assert self._fd is not None
            watched = self._watched
            changes = watched[0].settled_changes() if watched is not None else None
            if os.fstat(self._fd).st_nlink:
                self._checked = changes
                return self._fd
            self._drop_fd()

    def _not_added(self, exc: OSError) -> MemoryWriteError:
        """The error of a write that failed with ``exc`` and was cut back."""
        return MemoryWriteError(
            exc.errno,
            f"{self.path}: the message was not added ({exc.strerror or exc}); "
            "the file is as it was",
        )

    def holds(self, block: str | bytes, appends: int) -> bool:
        """Whether ``block`` is in the file after an :meth:`append` that raised (an interrupt
        can come once it is written), ``appends`` being :attr:`appends` before it: a write
        that is not cut back counts, at once."""
        return self.appends != appends

    def _joint(self, size: int) -> bytes:
        """What goes before the next block: the header in an empty file (one that an interrupt
        left before its header was written), else what puts the heading at the start of a line
        after a blank one."""
        assert self._fd is not None
        if size == 0:
            return format_header(self.conversation_name).encode()
        tail = os.pread(self._fd, 2, max(0, size - 2))
        if tail == b"\n\n":
            return b""
        return b"\n" if tail.endswith(b"\n") else b"\n\n"

    def _put_aside_torn_tail(self, size: int) -> int:
        """Move a block that a writer left cut short at the end of MEMORY.md (it was killed while
        appending: the block was never acknowledged) to ``quarantine/``, and cut the file back to
        the end of its last whole block; returns the new size. Call under the lock.

        Only a last block that begins with a heading (or a part of one) and has no closing
        ``---`` is moved:
        other stray text (a hand edit) stays where it is, reported by the parser. The copy is on
        disk before the file is cut, so a crash in between leaves it in both places.
        """
        assert self._fd is not None
        if size == 0 or os.pread(self._fd, len(BLOCK_END), max(0, size - len(BLOCK_END))) in _ENDS:
            return size  # the usual case: another writer's whole block, or the header alone
        start = _last_block_start(self._fd, size)
        if start is None:
            return size
        torn = os.pread(self._fd, size - start, start)
        block = torn.lstrip(b"\n")
        if (
            not block
            or not block.startswith(b"###"[: len(block)])
            or SEPARATOR.search("\n" + block.decode("utf-8", "replace"))
        ):
            return size  # not a block cut short
        target = _free_name(self.folder / QUARANTINE_DIR / "MEMORY.cut-short.md")
        with contextlib.suppress(FileExistsError):
            os.mkdir(target.parent, DIR_MODE)
        write_atomic(target, torn)
        os.ftruncate(self._fd, start)
        os.fsync(self._fd)
        warnings.warn(
            f"{self.path}: its last message was cut short (a writer stopped while adding it, "
            f"so it was never acknowledged): moved to {target}",
            MemoryWarning,
            stacklevel=3,
        )
        return start

    def read_bytes(self) -> bytes:
        """The whole file as it is now, read under the lock (empty if it does not exist)."""
        with self.locked():
            return self._read(self.path.name, self.path)

    def _read(self, name: str, shown: Path) -> bytes:
        try:
            file = self._reader(name, shown)
        except FileNotFoundError:
            return b""
        with file:
            return file.read()

    def _reader(self, name: str, shown: Path) -> BinaryIO:
        """A regular file of the folder open to read (see ``open_reader``); call under the
        lock."""
        return open_reader(self._name(name), dir_fd=self._lock.fd, shown=shown)

    def read_whole(self) -> tuple[bytes, Whole | None]:
        """The whole file as :meth:`read_bytes` reads it, and :func:`read_whole` of it.

        What was found whole is noted on the file (an extended attribute, where the system has
        them): the next check reads only what was appended since. The note is only a cache,
        used while the bytes it names are unchanged; any other change is checked whole.
        """
        with contextlib.ExitStack() as stack:
            with self.locked():
                try:
                    file = stack.enter_context(self._reader(self.path.name, self.path))
                except FileNotFoundError:
                    return b"", None
                data = file.read()
            note = _read_note(file.fileno())
            whole = read_whole(data, note)
            if whole is not None and whole.note != note:
                _write_note(file.fileno(), whole.note)
        return data, whole

    def read(self) -> ParsedMemory:
        """The file parsed into messages (see :func:`parse`)."""
        return parse(self.read_bytes())

    def messages(self) -> list[dict[str, Any]]:
        """The file's messages, read under the lock, warning (``MemoryWarning``) about damage."""
        return warned_messages(self.read(), self.path)

    def archives(self) -> list[Path]:
        """Archive files of this agent, oldest first."""
        return archive_files(self.folder)

    def _quarantine_debris(self) -> None:
        """Move aside what a crash left, under the lock, with one warning for each.

        Temporary files of writers that are gone and the archive of a compaction that did not
        finish go to ``quarantine/``: kept, never deleted, but out of search and the views.
        """
        debris = [
            (p, "a temporary file left by an interrupted write")
            for folder in (self.folder, self.archive_dir)
            for p in _stale_temporary_files(folder)
        ]
        unfinished = unfinished_archive(self.folder)
        if unfinished is not None:
            debris.append((unfinished, "an archive of a compaction that did not finish"))
        for path, what in debris:
            target = _free_name(self.folder / QUARANTINE_DIR / path.name.lstrip("."))
            try:
                os.mkdir(target.parent, DIR_MODE)
            except FileExistsError:
                pass
            except FileNotFoundError:
                return  # the folder is gone, and its debris with it
            os.rename(path, target)
            warnings.warn(
                f"{path}: {what}, moved to {target} (its messages are all in {self.path.name})"
                if path == unfinished
                else f"{path}: {what}, moved to {target}",
                MemoryWarning,
                stacklevel=2,
            )

    def _write_archive(self, data: bytes) -> Path:
        """Write ``data`` to a new archive under a name no other archive has, and fsync it."""
        into: list[int] = []
        try:
            if self._lock.fd is None:
                folder = None
                make_private_dir(self.archive_dir)
            else:
                folder = open_child(
                    self._lock.fd, ARCHIVE_DIR, self.archive_dir, create=True, into=into
                )
            moment = datetime.datetime.now()
            n = 1
            while True:
                name = archive_name(moment, n)
                where = name if folder is not None else str(self.archive_dir / name)
                written: list[int] = []
                try:
                    try:
                        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
                        fd = open_into(written, where, flags, dir_fd=folder)
                        write_all(fd, data)
                        os.fsync(fd)
                    finally:
                        made = written != []  # no call: no point for an interrupt
                        for held in written:
                            os.close(held)
                except FileExistsError:
                    n += 1
                    continue
                except BaseException:
                    if made:
                        os.unlink(where, dir_fd=folder)
                    raise
                if folder is None:
                    fsync_dir(self.archive_dir)
                else:
                    os.fsync(folder)
                return self.archive_dir / name
        finally:
            for held in into:
                os.close(held)

    def compact(self, blocks: str) -> Path | None:
        """Archive the current file, then replace it with a new header followed by ``blocks``.

        Returns the archive written, or ``None`` when the file held no messages to keep. If it
        fails, the archive it wrote is removed and MEMORY.md is as it was.
        """
        new = encoded(format_header(self.conversation_name) + blocks, "summary")
        with self.locked():
            self._quarantine_debris()
            self._cut_torn_tail()
            old = self._read(self.path.name, self.path)
            try:
                archive = self._write_archive(old) if has_messages(old) else None
                write_atomic(self._name(self.path.name), new, dir_fd=self._lock.fd)
            except BaseException:
                # Until the new file takes MEMORY.md's place, what this compaction wrote of its
                # archive (all, a part, or an empty file that an interrupt left as it was
                # made) begins MEMORY.md: removed here, so that nobody is warned of it later.
                # After, the archive holds the only copy of the old messages, and stays.
                begun = unfinished_archive(self.folder)
                if begun is not None:
                    begun.unlink(missing_ok=True)
                    fsync_dir(self.archive_dir)
                raise
            self._drop_fd()
            return archive

    def _cut_torn_tail(self) -> None:
        """Before a compaction: put aside a block cut short at the end of MEMORY.md (see
        :meth:`_put_aside_torn_tail`), so that it is not archived as text."""
        self._drop_fd()
        try:
            self._open_memory(os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            return
        self._put_aside_torn_tail(os.fstat(self._fd).st_size)


_ENDS = (BLOCK_END.encode(), f"{LOG_HEADING}\n\n".encode()[-len(BLOCK_END) :])
"""How MEMORY.md ends after a whole block, or after its header alone (the last bytes)."""


def _last_block_start(fd: int, size: int, chunk: int = 1 << 20) -> int | None:
    """Where the text after the last whole block (or after the header) starts in the file
    open as ``fd``, or ``None`` if neither is found."""
    ends = (BLOCK_END.encode(), f"\n{LOG_HEADING}\n\n".encode())
    end = size
    while end > 0:
        begin = max(0, end - chunk)
        data = os.pread(fd, end - begin + 32, begin)  # 32: a mark across the boundary
        found = max(data.rfind(mark) + len(mark) if mark in data else -1 for mark in ends)
        if found >= 0:
            return begin + found
        end = begin
    return None


_TEMPORARY = re.compile(r"\..+\.(?P<pid>\d+)\.[0-9a-f]+\.tmp")


WHOLE_NOTE = "user.nbmemory.whole"
"""The extended attribute that keeps :attr:`Whole.note` on ``MEMORY.md``: it goes with the
file's inode, so a memory replaced (compacted, restored) starts without one."""


def _read_note(fd: int) -> bytes | None:
    if not hasattr(os, "getxattr"):  # Linux only
        return None
    try:
        return os.getxattr(fd, WHOLE_NOTE)
    except OSError:  # none yet, or a file system without extended attributes
        return None


def _write_note(fd: int, note: bytes) -> None:
    if hasattr(os, "setxattr"):
        with contextlib.suppress(OSError):  # a cache: without it the next check reads all
            os.setxattr(fd, WHOLE_NOTE, note)


def _stale_temporary_files(folder: Path) -> list[Path]:
    """Temporary files (see ``atomic.temporary_name``) whose writing process is gone."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    stale = []
    for name in names:
        found = _TEMPORARY.fullmatch(name)
        pid = int(found["pid"]) if found else None
        if pid is not None and (pid == os.getpid() or not process_alive(pid)):
            stale.append(folder / name)
    return stale


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs, whoever owns it (this process included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by someone else
        return True
    return True


def _free_name(path: Path) -> Path:
    """``path``, or ``path`` with a number added if that name is taken."""
    n = 1
    candidate = path
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.stem}_{n}{path.suffix}")
    return candidate
