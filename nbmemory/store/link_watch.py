"""Noticing cheaply that a file kept open lost its name: deleted, or replaced by a rename.

``MemoryFile`` keeps ``MEMORY.md`` open between appends and must never append to a file that
is no longer the one at its path. Asking the file before every append (``os.fstat``'s link
count) costs more than the write itself on Linux: the stat, and then a write that must store a
new change time, because the stat read the old one (multigrain timestamps). Instead one inotify
instance per process watches the link count of the files kept open. A deletion or a rename over
the file queues an event before the call that made it returns, so a caller that finds no event
since it last asked the file (one ``poll``) knows that answer still holds. Without inotify (not
Linux, or its limits reached) there is no watch, and the caller asks the file every time.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from typing import Any

_IN_ATTRIB = 0x4
"""Metadata changed: the link count among them (a deletion, or a rename over the file)."""


class LinkWatch:
    """One inotify instance watching the link counts of the files a process keeps open."""

    def __init__(self, libc: Any, fd: int) -> None:
        self._libc = libc
        self._fd: int | None = fd
        self._poll = select.epoll()  # its poll(0) costs less than select.poll's
        self._poll.register(fd, select.EPOLLIN)
        self._lock = threading.Lock()
        self._generation = 0
        self._watchers: dict[int, int] = {}
        """How many watch() calls hold each watch; it is removed when none does."""

    def watch(self, fd: int) -> int | None:
        """Watch the file open as ``fd`` (not its path: the file now at it could be another),
        returning the watch to hand to :meth:`unwatch`, or ``None`` if it cannot be watched."""
        if self._fd is None:
            return None
        path = f"/proc/self/fd/{fd}".encode()
        with self._lock:
            wd = self._libc.inotify_add_watch(self._fd, path, _IN_ATTRIB)
            if wd < 0:
                return None
            # The same file watched twice is one watch: counted, so that it stays while held.
            self._watchers[wd] = self._watchers.get(wd, 0) + 1
            return int(wd)

    def unwatch(self, wd: int) -> None:
        """Let go of a watch that :meth:`watch` returned."""
        if self._fd is None:
            return
        with self._lock:
            left = self._watchers.pop(wd, 1) - 1
            if left:
                self._watchers[wd] = left
            else:  # fails harmlessly if the file is gone (its watch went with it)
                self._libc.inotify_rm_watch(self._fd, wd)

    def changes(self) -> int:
        """A number that is another whenever a watched file's link count may have changed
        since :meth:`settled_changes` gave the one it is compared with."""
        # No event waiting: the number is read without the lock. A drain counts before it
        # reads, so an event it took is counted by the time the queue is seen empty.
        if self._fd is not None and not self._poll.poll(0):
            return self._generation
        return self.settled_changes()

    def settled_changes(self) -> int:
        """:meth:`changes`, read once no other thread is between counting events and taking
        them: the number to keep, read before asking the file. (Read while another thread
        had counted, it could miss an event that thread takes after the file was asked.)"""
        with self._lock:
            if self._fd is None:  # no queue (a forked child's copy): every read is another
                self._generation += 1
            elif self._poll.poll(0):
                self._generation += 1  # first: an interrupt below leaves the events unread
                with contextlib.suppress(BlockingIOError):  # read only to empty the queue:
                    os.read(self._fd, 1 << 16)  # any event means "ask the file"
            return self._generation

    def forget(self) -> None:
        """In a forked child: let go of the parent's queue (see :func:`_forget_in_child`)."""
        self._lock = threading.Lock()  # a thread of the parent may have held it
        self._watchers = {}
        fd, self._fd = self._fd, None
        try:
            if fd is not None:
                os.close(fd)
        finally:
            self._poll.close()


_watch: LinkWatch | None = None
_unavailable = False
_making = threading.Lock()


def link_watch() -> LinkWatch | None:
    """The process's :class:`LinkWatch`, made on first use; ``None`` where inotify is not
    available."""
    global _watch, _unavailable
    if _watch is None and not _unavailable:
        with _making:  # one per process, whichever thread comes first
            if _watch is None and not _unavailable:
                _watch = _new_watch()
                _unavailable = _watch is None
    return _watch


def _new_watch() -> LinkWatch | None:
    if sys.platform != "linux":
        return None
    try:
        import ctypes  # here: only a process that appends to a memory loads it

        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, AttributeError):  # no C library to load, or one without inotify
        return None
    if fd < 0:  # the limit of inotify instances reached
        return None
    return LinkWatch(libc, fd)


def _forget_in_child() -> None:
    """After a fork the child shares the parent's queue of events: whichever process read an
    event, the other would miss it. The child's files are asked every time until reopened, and
    the files it opens then are watched by a queue of its own."""
    global _watch
    if _watch is not None:
        _watch.forget()
        _watch = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
