"""Writing a whole file atomically: readers see the old file or the new one, never a part."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from nbmemory.store.folders import open_into


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new file in ``folder`` durable (a no-op on Windows)."""
    if sys.platform == "win32":
        return
    into: list[int] = []
    try:
        os.fsync(open_into(into, folder, os.O_RDONLY))
    finally:
        for held in into:
            os.close(held)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may write less)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def temporary_name(path: Path) -> Path:
    """A fresh hidden name beside ``path`` for the new content of ``path``."""
    return path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes | str,
    *,
    durable: bool = True,
    dir_fd: int | None = None,
) -> Path:
    """Replace ``path`` with ``data`` (created ``0600``) through a temporary file and a rename.

    With ``durable`` the data and the rename are fsynced before this returns, so a crash leaves
    the old file or the new one. Text is written as UTF-8. With ``dir_fd``, ``path`` is a name
    in the folder open as ``dir_fd``. Returns the path written.
    """
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp = temporary_name(target)
    into: list[int] = []
    try:  # opened inside: an interrupt as the file is made still removes it
        try:
            fd = open_into(into, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, dir_fd=dir_fd)
            write_all(fd, payload)
            if durable:
                os.fsync(fd)
        finally:
            for held in into:
                os.close(held)
        os.replace(tmp, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException as exc:
        if not isinstance(exc, FileExistsError):  # else the name is another's
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
        raise
    if durable:
        if dir_fd is not None:
            os.fsync(dir_fd)
        else:
            fsync_dir(target.parent)
    return target
