"""An agent's archives: what each compaction kept of the memory it replaced, one
``archive/history_<stamp>[_<n>].md`` per compaction, named, ordered and listed here.
"""

from __future__ import annotations

import datetime
import os
import re
from pathlib import Path

from nbmemory.store.folders import ARCHIVE_DIR, MEMORY_FILE, as_path, open_reader

_ARCHIVE_NAME = re.compile(r"history_(?P<stamp>.+?)(?:_(?P<n>\d+))?")
_ARCHIVE_STAMP = "%Y-%m-%d_%H-%M-%S"


def archive_name(moment: datetime.datetime, n: int = 1) -> str:
    """The ``n``-th archive name for a compaction at ``moment``: ``history_<stamp>[_<n>].md``."""
    stamp = moment.strftime(_ARCHIVE_STAMP)
    return f"history_{stamp}.md" if n == 1 else f"history_{stamp}_{n}.md"


def archive_sort_key(path: Path) -> tuple[str, int]:
    """Order archives oldest first, ``history_<stamp>_<n>.md`` after ``history_<stamp>.md``."""
    found = _ARCHIVE_NAME.fullmatch(path.stem)
    if found is None:
        return (path.stem, 0)
    return (found["stamp"], int(found["n"] or 1))


def archive_time(path: Path) -> str:
    """When an archive was written, from its name (ISO, to the second; "" for another name)."""
    found = _ARCHIVE_NAME.fullmatch(path.stem)
    try:
        moment = datetime.datetime.strptime(found["stamp"], _ARCHIVE_STAMP) if found else None
    except ValueError:
        return ""
    return moment.isoformat() if moment else ""


def archive_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The archives in an agent folder, oldest first: regular files only, and not the archive
    of a compaction that did not finish (see :func:`unfinished_archive`). Nothing is created."""
    found, unfinished = _archives(folder)
    return found[:-1] if unfinished else found


def unfinished_archive(folder: str | os.PathLike[str]) -> Path | None:
    """The newest archive, if a compaction wrote it and stopped before replacing MEMORY.md.

    Such an archive holds the first bytes of MEMORY.md as it still is: every message in it is
    also in MEMORY.md, so showing it would show them twice.
    """
    found, unfinished = _archives(folder)
    return found[-1] if unfinished else None


def _archives(folder: str | os.PathLike[str]) -> tuple[list[Path], bool]:
    """Every archive file, oldest first, and whether the newest is an unfinished one."""
    folder = as_path(folder)
    where = folder / ARCHIVE_DIR
    if os.path.islink(where):
        return [], False  # not ours: it could lead outside the workspace
    try:
        entries = [Path(e.path) for e in os.scandir(where) if e.is_file(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return [], False
    found = sorted(
        (p for p in entries if p.name.startswith("history_") and p.suffix == ".md"),
        key=archive_sort_key,
    )
    return found, bool(found) and _starts_with(folder / MEMORY_FILE, found[-1])


def _starts_with(path: Path, prefix: Path, chunk: int = 1 << 16) -> bool:
    """Whether the regular file ``path`` begins with every byte of the regular file ``prefix``."""
    try:
        with open_reader(path) as whole, open_reader(prefix) as start:
            if os.fstat(start.fileno()).st_size > os.fstat(whole.fileno()).st_size:
                return False
            while piece := start.read(chunk):
                if whole.read(len(piece)) != piece:
                    return False
            return True
    except OSError:
        return False
