"""The MEMORY.md format: a header, then one block per message, and how a file is read back.

A memory file is a small header followed by one block per message::

    ### User — 2026-04-20T18:35:04

    Which warehouse is cheapest?

    ---

Content lines that would read as a block heading or a ``---`` separator are written with one
extra leading backslash, and a string that looks like a fenced JSON block gets one too, so any
content reloads exactly. Non-string content is written as a fenced JSON block. A file that was
found whole once (:class:`Whole`) is checked again by its length and checksum alone.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nbmemory.errors import InvalidTextError, MemoryWarning

LOG_HEADING = "## Interaction Log"
BLOCK_END = "\n\n---\n\n"
_BLOCK_TAIL = BLOCK_END[:-1]
_BLOCK_END_BYTES = BLOCK_END.encode()

# Line patterns start with a literal "\n" (texts are searched with one prepended), which lets
# the regex engine skip ahead; "^" with MULTILINE tries every position and is ten times slower.
_END_OF_LINE = r"[ \t]*(?=\n|\Z)"
_HEADING = re.compile(rf"\n### ([^\n]+) — (\S+){_END_OF_LINE}")
SEPARATOR = re.compile(rf"\n---{_END_OF_LINE}")
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
    sep = SEPARATOR.search("\n" + body)
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


def warned_messages(parsed: ParsedMemory, path: Path) -> list[dict[str, Any]]:
    """Warn (``MemoryWarning``) about each problem found in ``path``; returns its messages."""
    for problem in parsed.problems:
        warnings.warn(f"{path}: {problem}", MemoryWarning, stacklevel=3)
    return parsed.messages


def read_messages(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The messages of a memory or archive file, warning (``MemoryWarning``) about any damage."""
    return warned_messages(parse(Path(path).read_bytes()), Path(path))


# ----------------------------------------------------------------------------------------------
# Text to UTF-8


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
