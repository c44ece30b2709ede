"""The lock of an agent folder: every change to an agent's files holds it, across threads,
processes and kernels. It is taken on the folder itself (``flock``), or on a ``.lock`` file where
``flock`` is missing (Windows, through ``filelock``).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nbmemory.store.folders import make_private_dir, open_folder, open_into

try:
    import fcntl
except ImportError:  # Windows: filelock takes over.
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".lock"
"""The file locked on Windows; elsewhere the agent folder itself is locked."""
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


if hasattr(threading.RLock(), "_recursion_count"):  # CPython 3.11 and later
    _new_rlock = threading.RLock

    def _depth_of(lock: Any) -> Callable[[], int]:
        """How many times the calling thread holds the RLock ``lock`` (0: not at all), as a
        function of no argument."""
        return lock._recursion_count  # type: ignore[no-any-return]

else:  # Python 3.10: the Python RLock, whose count can be read
    _new_rlock = threading._PyRLock  # type: ignore[attr-defined]

    def _depth_of(lock: Any) -> Callable[[], int]:
        """How many times the calling thread holds the RLock ``lock`` (0: not at all), as a
        function of no argument."""
        return lambda: int(lock._count) if lock._owner == threading.get_ident() else 0


class FolderLock:
    """An exclusive lock on one agent folder, shared by threads and processes.

    The lock is taken on the folder itself (``flock`` on a descriptor of it), so deleting a
    file cannot break it. A holder calls :meth:`renew` to make sure the folder it locked is
    still the one at the path, and locks the new one if the folder was deleted or replaced.
    Re-entrant within a thread; creates the folder when first taken. While held, ``fd`` is the
    folder's descriptor (``None`` on Windows, where ``filelock`` on a ``.lock`` file takes over).
    """

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self.fd: int | None = None
        self._parent: int | None = None
        self._identity = (0, 0)
        self._fallback: Any = None
        self.thread_lock = _new_rlock()
        """Held as deep as the lock is: its count is the one truth about nesting."""
        self.depth = _depth_of(self.thread_lock)
        """How many times the calling thread holds the lock now (0: it does not hold it)."""

    # Every append takes and lets go of the lock: when the folder's descriptor is open (the
    # usual case) the flock is called here, not through _acquire and _release.

    def hold(self) -> None:
        """Take the lock (``with`` does it too): see :meth:`settle` for a caller that does not
        use ``with``."""
        self.thread_lock.acquire()
        if self.depth() == 1:
            try:
                if self.fd is None:
                    self._acquire()
                else:
                    fcntl.flock(self.fd, fcntl.LOCK_EX)
            except BaseException:  # an interrupt may come after flock() took the lock
                try:
                    with contextlib.suppress(OSError):
                        self._release()
                finally:
                    self.thread_lock.release()
                raise

    def let_go(self, *exc_info: object) -> None:
        """Let go of the lock taken by :meth:`hold`."""
        if self.depth() == 1:
            try:
                if self.fd is None:
                    self._release()
                else:
                    fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                self.thread_lock.release()
        else:
            self.thread_lock.release()

    __enter__ = hold
    __exit__ = let_go

    def settle(self, depth: int) -> None:
        """After an exception: let go of what the calling thread holds beyond ``depth``.

        An interrupt can come where no ``finally`` of ours can see it: at the very start of
        :meth:`let_go` (before its first line), or as :meth:`hold`'s ``acquire`` returns. A
        caller that noted :meth:`depth` before its ``with`` (or its ``hold``) calls this when
        the block raised, so that neither this process's threads nor other processes wait for
        the lock for ever.
        """
        while self.depth() > depth:
            self.let_go()
        if depth == 0 and self.fd is not None and self.thread_lock.acquire(blocking=False):
            try:  # no thread holds it: nor may the folder's flock be held
                with contextlib.suppress(OSError):
                    fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                self.thread_lock.release()

    def _acquire(self) -> None:
        if fcntl is None:
            if self._fallback is None:
                import filelock

                make_private_dir(self._folder)
                self._fallback = filelock.FileLock(self._folder / LOCK_FILE)
            self._fallback.acquire()
            return
        if self.fd is None:
            opened: list[int] = []
            try:
                open_folder(self._folder, into=opened)
                open_into(opened, self._folder.parent, os.O_RDONLY | _DIRECTORY)
                held = os.fstat(opened[0])
            except BaseException:
                for held in opened:
                    os.close(held)
                raise
            self.fd, self._parent = opened
            self._identity = (held.st_dev, held.st_ino)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def current(self) -> bool:
        """Whether the folder locked is still the one at its path: not deleted, not replaced."""
        if self.fd is None or self._parent is None:
            return fcntl is None
        try:
            now = os.stat(self._folder.name, dir_fd=self._parent, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return (now.st_dev, now.st_ino) == self._identity

    def renew(self) -> bool:
        """While held: whether the folder is still current; if not, lock the one now there."""
        if self.current():
            return True
        while not self.current():
            self.close()
            self._acquire()
        return False

    def _release(self) -> None:
        if fcntl is None:
            if self._fallback is not None:
                self._fallback.release()
        elif self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    def close(self) -> None:
        fd, parent, self.fd, self._parent = self.fd, self._parent, None, None  # see _drop_fd
        try:
            if fd is not None:
                os.close(fd)  # the folder's: also lets go of the flock
        finally:  # not a loop: an interrupt after the first close would leave the second open
            if parent is not None:
                os.close(parent)


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold the lock of an agent folder, the one ``MemoryFile`` writes under (creates the
    folder), for a change to another of its files."""
    lock = FolderLock(Path(folder))
    try:
        with lock:
            lock.renew()
            yield
    finally:
        lock.close()  # closing the folder's descriptor lets go of its flock in any case
