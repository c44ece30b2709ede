"""The MEMORY.md format, and the only code that changes an agent's files on disk.

A memory file is a small header followed by one block per message::

    ### User — 2026-04-20T18:35:04

    Which warehouse is cheapest?

    ---

Content lines that would read as a block heading or a ``---`` separator are written with one
extra leading backslash, and a string that looks like a fenced JSON block gets one too, so any
content reloads exactly. Non-string content is written as a fenced JSON block.

Every change happens under one cross-process lock per agent folder. Compaction writes and
fsyncs the archive before it replaces ``MEMORY.md`` (through a temporary file and
``os.replace``), so a crash at any point leaves the old memory or the new one, plus the archive.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from nbmemory.atomic import fsync_dir, write_all, write_atomic
from nbmemory.errors import InvalidTextError, MemoryWarning, MemoryWriteError
from nbmemory.link_watch import LinkWatch, link_watch

try:
    import fcntl
except ImportError:  # Windows: filelock takes over.
    fcntl = None  # type: ignore[assignment]


from nbmemory.workspace import (
    ARCHIVE_DIR,
    DIR_MODE,
    MEMORY_FILE,
    QUARANTINE_DIR,
    as_path,
    make_private_dir,
    open_child,
    open_folder,
    open_into,
    open_reader,
    open_regular,
)

LOCK_FILE = ".lock"
"""The file locked on Windows; elsewhere the agent folder itself is locked."""
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
LOG_HEADING = "## Interaction Log"
BLOCK_END = "\n\n---\n\n"
_BLOCK_TAIL = BLOCK_END[:-1]
_BLOCK_END_BYTES = BLOCK_END.encode()

# Line patterns start with a literal "\n" (texts are searched with one prepended), which lets
# the regex engine skip ahead; "^" with MULTILINE tries every position and is ten times slower.
_END_OF_LINE = r"[ \t]*(?=\n|\Z)"
_HEADING = re.compile(rf"\n### ([^\n]+) — (\S+){_END_OF_LINE}")
_SEPARATOR = re.compile(rf"\n---{_END_OF_LINE}")
_LOG_HEADING = re.compile(rf"\n## Interaction Log{_END_OF_LINE}")
_HEADER_FIELD = re.compile(r"^\*\*(?P<key>Conversation|Created):\*\* ?(?P<value>.*)$", re.MULTILINE)
# Lines the parser would take for structure, with or without leading backslashes.
_STRUCTURAL = rf"\\*(?:### [^\n]* — |---{_END_OF_LINE})"
_ESCAPE = re.compile(rf"\n(?={_STRUCTURAL})")
_STRUCTURAL_LINE = re.compile(_STRUCTURAL)
_UNESCAPE = re.compile(rf"\n\\(?={_STRUCTURAL})")
_FENCED_JSON = re.compile(r"\\*```json\n.*\n```", re.DOTALL)
_JSON_OPEN = "```json\n"
_JSON_CLOSE = "\n```"
_MARK_STARTS = ("#", "-", "\\")
"""What a line that reads as a heading or a separator, escaped or not, starts with."""


_clock: tuple[int, str] = (0, "")


def now_iso() -> str:
    """The local time, to the second, as block headings show it."""
    global _clock
    second = int(time.time())
    if second != _clock[0]:  # formatting costs more than the rest of an append
        _clock = (second, datetime.datetime.fromtimestamp(second).isoformat())
    return _clock[1]


# ----------------------------------------------------------------------------------------------
# Format


def format_header(conversation_name: str, created: str | None = None) -> str:
    """The header a new MEMORY.md starts with."""
    return (
        f"# Agent Memory\n\n**Conversation:** {conversation_name}\n"
        f"**Created:** {created or now_iso()}\n\n---\n\n{LOG_HEADING}\n\n"
    )


def encode_content(content: Any) -> str:
    """Message content as block text: strings escaped where needed, anything else as JSON."""
    if isinstance(content, str):
        if "\n" not in content and content[:1] not in _MARK_STARTS:
            return content  # one line, not a heading or a separator (a fence spans lines)
        text = "\\" + content if _FENCED_JSON.fullmatch(content) else content
        # "-" and "#" are found by memchr, the regex skips from line break to line break: a
        # long text costs a fraction of what searching it for "---" and "### " would.
        if ("-" in text or "#" in text) and (_STRUCTURAL_LINE.match(text) or _ESCAPE.search(text)):
            text = _ESCAPE.sub("\n\\\\", "\n" + text)[1:]
        return text
    return _JSON_OPEN + json.dumps(content, indent=2, ensure_ascii=False) + _JSON_CLOSE


def decode_content(text: str) -> Any:
    """The inverse of :func:`encode_content`."""
    if "\\" in text:
        text = _UNESCAPE.sub("\n", "\n" + text)[1:]
    if text.startswith(_JSON_OPEN) and _FENCED_JSON.fullmatch(text):
        return json.loads(text[len(_JSON_OPEN) : -len(_JSON_CLOSE)])
    if text.startswith("\\") and _FENCED_JSON.fullmatch(text):
        return text[1:]
    return text


def format_block(role: str, content: Any, timestamp: str) -> str:
    """One message as a MEMORY.md block, separator included."""
    return f"### {role} — {timestamp}\n\n{encode_content(content)}{BLOCK_END}"


def block_bytes(role: str, content: Any, timestamp: str) -> bytes:
    """:func:`format_block` as UTF-8 (``InvalidTextError`` for text that has none), made in
    pieces: the heading's dash makes the whole block wide text, that encoding would narrow
    again, where most content is ASCII and encodes as a copy."""
    global _heading
    try:
        heading = _heading  # one read: another thread may replace it
        if heading[0] != timestamp or heading[1] != role:  # most blocks share the last's
            heading = _heading = (timestamp, role, f"### {role} — {timestamp}\n\n".encode())
        return heading[2] + encode_content(content).encode() + _BLOCK_END_BYTES
    except UnicodeEncodeError as exc:
        raise _invalid(exc, "message") from None


_heading: tuple[str, str, bytes] = ("", "", b"")


# ----------------------------------------------------------------------------------------------
# Parsing


@dataclass
class ParsedMemory:
    """What a memory file holds: its header fields, its messages, and any damage found."""

    conversation: str | None = None
    created: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    log: str = ""
    """The text after the header: the message blocks as they are on disk."""
    header: str = ""
    """The header as it is on disk (empty when it is missing)."""


def _slow_block(raw: str) -> tuple[str, str, bool]:
    """Split a block body that is not in the canonical shape: (content, trailing text, closed)."""
    body = raw[1:] if raw.startswith("\n") else raw
    if body.startswith("\n"):
        body = body[1:]
    sep = _SEPARATOR.search("\n" + body)
    if sep is None:
        return re.sub(r"\n+-{0,2}\Z", "", body), "", False
    content = body[: sep.start()]
    content = content[:-2] if content.endswith("\n\n") else content.removesuffix("\n")
    return content, body[sep.end() - 1 :], True


def parse(data: bytes | str, *, header: bool = True) -> ParsedMemory:
    """Read a memory file's text into messages, keeping every readable part.

    Damage (invalid UTF-8, a torn last block, a missing header, stray text) is described in
    ``problems``; readable text outside any block is kept as a message of role ``"unparsed"``.
    ``header=False`` reads blocks alone, such as what was appended after a known point.
    """
    result = ParsedMemory()
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = data.decode("utf-8", "replace")
            result.problems.append(
                f"invalid UTF-8 from byte {exc.start}; unreadable bytes are shown as U+FFFD"
            )
    else:
        text = data
    # [text before the first heading, label, timestamp, block body, label, timestamp, ...]
    text = text.removeprefix("\ufeff")
    if text.startswith("# Agent Memory\r\n"):  # line ends turned to CRLF (git's autocrlf)
        text = text.replace("\r\n", "\n")
    # Headings are matched with the newline before them; only the first line has none.
    padded = "\n" + text if text.startswith("### ") else text
    parts = _HEADING.split(padded)

    def line_of_block(k: int) -> int:
        return 1 + parts[0].count("\n") + sum(1 + parts[j].count("\n") for j in range(3, k, 3))

    def keep_stray(stray: str, line: int) -> None:
        if stray.strip():
            result.problems.append(f"text outside any message near line {line}")
            result.messages.append({"role": "unparsed", "content": stray.strip("\n")})

    head = "\n" + parts[0]
    log = _LOG_HEADING.search(head) if header else None
    if not header:
        keep_stray(parts[0], 1)
        result.log = text
    elif log is not None:
        for found in _HEADER_FIELD.finditer(head, 0, log.start()):
            setattr(result, found["key"].lower(), found["value"].strip())
        keep_stray(head[log.end() :], head.count("\n", 0, log.end()))
        blocks_start = log.end() - 1
        while padded[blocks_start : blocks_start + 1] == "\n":  # one copy of the log, not two
            blocks_start += 1
        result.log = padded[blocks_start:]
        result.header = padded[:blocks_start]
    elif text.strip():
        result.problems.append("the header is missing")
        keep_stray(parts[0], 1)
        result.log = text

    last = len(parts) - 1
    if last > 0 and parts[last].endswith(BLOCK_END):
        # Blocks end "\n\n---\n" here: the newline after that starts the next heading's match.
        parts[last] = parts[last][:-1]
    append = result.messages.append
    tail = len(_BLOCK_TAIL)
    for k in range(3, len(parts), 3):
        raw = parts[k]
        body = raw[2:-tail]
        if raw[:2] == "\n\n" and raw.endswith(_BLOCK_TAIL) and "\n---" not in body:
            stray = ""
        else:
            body, stray, closed = _slow_block(raw)
            if not closed:
                # A block cut short (a crash mid-write) was never acknowledged: not a message.
                where = "last message" if k == last else "message"
                result.problems.append(
                    f"the {where} at line {line_of_block(k)} has no closing '---' "
                    "(cut short); it is kept as unparsed text"
                )
                heading = f"### {parts[k - 2]} — {parts[k - 1]}\n\n"
                append({"role": "unparsed", "content": heading + body, "timestamp": parts[k - 1]})
                continue
        content = body
        if "\\" in body or body[:1] == "`":
            try:
                content = decode_content(body)
            except json.JSONDecodeError:
                result.problems.append(f"bad JSON in the message at line {line_of_block(k)}")
        append({"role": parts[k - 2], "content": content, "timestamp": parts[k - 1]})
        if stray:
            keep_stray(stray, line_of_block(k + 3) - stray.count("\n"))
    return result


# What could end or start a message, in UTF-8, as findall gives it: b"-" for the end of a block
# followed by a heading in the strict shape (a timestamp of printable ASCII), b"" for any other
# heading the parser would read (bytes' \S takes in more than text's: it can only find more)
# and for any other separator.
_STRICT = rb"(?=[^\n]+? \xe2\x80\x94 [!-~]+[ \t]*(?:\n|\Z))"
_LOOSE = rb"(?=[^\n]+? \xe2\x80\x94 \S+[ \t]*(?:\n|\Z))"
_MARKS = re.compile(
    rb"\n(?:\n--(-)\n\n### " + _STRICT + rb"|### " + _LOOSE + rb"|---[ \t]*(?=\n|\Z))"
)
_FIRST_HEADING = re.compile(rb"\n### " + _STRICT)
_END = BLOCK_END.encode()
_FENCE = f"\n{_JSON_OPEN}".encode()


@dataclass(frozen=True)
class Whole:
    """A memory file that :func:`parse` reads without a problem, one message per block."""

    header: str
    messages: int
    note: bytes
    """What was found whole: the file's size, the CRC-32 of its bytes and its messages. Kept
    with the file (see :meth:`MemoryFile.read_whole`), it spares the next check all but what
    was appended since; bytes that changed in any other way are checked again."""


def read_whole(data: bytes, note: bytes | None = None) -> Whole | None:
    """Whether ``data``, a memory file, is one that :func:`parse` reads without a problem,
    found in a few passes over the bytes without building a message; ``None`` when it cannot
    tell so (damage, hand edits, no message yet): parse those.

    ``note`` is the :attr:`Whole.note` of an earlier check of the same file: when its start
    still has the bytes noted, only what follows them is checked.
    """
    first = data.find(b"\n### ")
    if (
        first < 0
        or not data.startswith(b"# ")
        or data.startswith(b"# Agent Memory\r\n")
        or not data.endswith(_END)
    ):
        return None
    noted = _noted(data, note) if note else None
    if noted is not None:
        # The last separator noted ends a block; what follows it are blocks appended since.
        size, known, crc = noted
        start = size - len(_END)
    elif _FIRST_HEADING.match(data, first):
        size, known, crc = 0, 1, 0
        start = first
    else:
        return None
    # Every heading after the first follows the end of a block and every separator ends one:
    # each block is a heading, content and separator. Marks before ``start`` are the same as
    # they were when the start was checked: none of them reaches past its last separator.
    marks = _MARKS.findall(data, start)
    blocks = marks.count(b"-")
    if len(marks) - blocks != (1 if noted is not None else 2):
        return None
    try:
        header = data[: first + 1].decode("utf-8")
        fence = data.find(_FENCE, start) if data.find(b"`", start) >= 0 else -1
        while fence >= 0:  # content that parse() decodes as JSON must be JSON
            end = data.find(_END, fence)
            # Only a fence that starts a block's content (a heading, a blank line, the fence)
            # can open JSON; one further down is a line of text.
            if data[fence - 1] == 0x0A and data.startswith(
                b"\n### ", data.rfind(b"\n", 0, fence - 1)
            ):
                decode_content(data[fence + 1 : end].decode("utf-8"))
            fence = data.find(_FENCE, end)
        str(data[size:] if size else data, "utf-8")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    head = parse(header)
    if head.problems or head.messages or not head.header:
        return None
    messages = known + blocks
    crc = zlib.crc32(memoryview(data)[size:], crc)
    return Whole(head.header, messages, b"%s %d %d %d" % (_NOTE, len(data), crc, messages))


_NOTE = b"whole-1"


def _noted(data: bytes, note: bytes) -> tuple[int, int, int] | None:
    """The size, messages and CRC-32 that ``note`` gives the start of ``data``, if that start
    still has the bytes noted."""
    try:
        form, size, crc, messages = note.split(b" ")
        size, crc, messages = int(size), int(crc), int(messages)
    except ValueError:
        return None
    if form != _NOTE or not len(_END) < size <= len(data) or messages < 1:
        return None
    if zlib.crc32(memoryview(data)[:size]) != crc or data[size - len(_END) : size] != _END:
        return None
    return size, messages, crc


_CUT = re.compile(rb"\n\n---\n\n(?=### [^\n]+? \xe2\x80\x94 [!-~]+[ \t]*\n)")
"""The end of a block that a whole heading line in the strict shape follows."""


def parse_pieces(
    reader: Callable[[int], bytes], piece: int, *, header: bool = True
) -> Iterator[ParsedMemory]:
    """:func:`parse` of what ``reader(piece)`` gives until it gives nothing, a piece at a time:
    each piece is cut after the last block that a heading in the strict shape follows, so
    the pieces' messages are the whole file's and only a piece (and the message that spans
    it) is in memory at once. When no piece has a problem, they are what ``parse`` of the
    whole finds; a piece with one is read on its own, so its problems can differ from the
    whole's (a reader that must report them parses the whole). ``header``: as ``parse``'s,
    for the first piece."""
    buffer = b""
    while True:
        # an end of block not taken yet can only be one whose heading line was not whole
        start = max(0, buffer.rfind(b"\n") - len(_END))
        data = reader(piece)
        buffer = buffer + data if buffer else data
        if not data:
            if buffer or header:
                yield parse(buffer, header=header)
            return
        cut = -1
        for found in _CUT.finditer(buffer, start):
            cut = found.end()
        if cut > 0:
            yield parse(buffer[:cut], header=header)
            header, buffer = False, buffer[cut:]


def has_messages(data: bytes) -> bool:
    """Whether a memory file holds anything beyond its header."""
    text = "\n" + data.decode("utf-8", "replace")
    log = _LOG_HEADING.search(text)
    return bool(text[log.end() if log else 0 :].strip())


def report(parsed: ParsedMemory, path: Path) -> list[dict[str, Any]]:
    """Warn (``MemoryWarning``) about each problem found in ``path``; returns its messages."""
    for problem in parsed.problems:
        warnings.warn(f"{path}: {problem}", MemoryWarning, stacklevel=3)
    return parsed.messages


def read_messages(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The messages of a memory or archive file, warning (``MemoryWarning``) about any damage."""
    return report(parse(Path(path).read_bytes()), Path(path))


# ----------------------------------------------------------------------------------------------
# Locking


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


class _FolderLock:
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
    lock = _FolderLock(Path(folder))
    try:
        with lock:
            lock.renew()
            yield
    finally:
        lock.close()  # closing the folder's descriptor lets go of its flock in any case


# ----------------------------------------------------------------------------------------------
# The file


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
        self._lock = _FolderLock(self.folder)
        self._fd: int | None = None
        self._expected_size = -1
        self._watched: tuple[LinkWatch, int] | None = None
        """The watch on ``_fd``'s link count, when there is one (see ``nbmemory.link_watch``)."""
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

        Keeps the file open between appends, watched (see ``nbmemory.link_watch``) so that an
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
            or _SEPARATOR.search("\n" + block.decode("utf-8", "replace"))
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
        return report(self.read(), self.path)

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


def encoded(text: str, what: str) -> bytes:
    """``text`` as UTF-8, or ``InvalidTextError`` before anything is written."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _invalid(exc, what) from None


def block_data(block: str | bytes) -> bytes:
    """A block's UTF-8, given as text (:func:`format_block`) or already encoded
    (:func:`block_bytes`): ``InvalidTextError`` before anything is written."""
    return block if isinstance(block, bytes) else encoded(block, "message")


def _invalid(exc: UnicodeEncodeError, what: str) -> InvalidTextError:
    return InvalidTextError(
        f"the {what} is not valid text (it holds {exc.object[exc.start : exc.end]!r}, a lone "
        "surrogate): nothing was written"
    )


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
        if found and not _alive(int(found["pid"])):
            stale.append(folder / name)
    return stale


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
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
