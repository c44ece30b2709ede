"""Model text as notebook output: Markdown rendered to HTML here, with every raw tag escaped.

A notebook trusts the outputs of cells its user ran, so HTML inside a ``text/markdown`` output
would run (an ``<img onerror=...>`` in an answer is a script with the user's Jupyter token).
Answers, tool results and memory are written by others, so they are rendered here, once, by
mistune with raw HTML escaped, images shown as links (nothing is fetched), and only http(s)
and mailto links live. The HTML is the same in JupyterLab, Notebook and an nbconvert export.
"""

from __future__ import annotations

import functools
import html
import re
import string
from dataclasses import dataclass
from typing import Any

import mistune
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mistune.renderers.html import HTMLRenderer

from nbmemory.views.report import visible
from nbmemory.wording import show_bidi

_PUNCTUATION = frozenset(string.punctuation)
_RUN = re.compile(r"`+")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
"""A line and its end, as Markdown renderers split lines (a lone ``\\r`` ends one too)."""
_PLAIN = {"&": "&amp;", "<": "&lt;", "`": "\\`", "[": "\\["}
"""What a Markdown renderer with raw HTML on could read as a tag, an entity, a code span, or a
link or image, each written so that it shows as itself."""
_WEB_ADDRESS = re.compile(r"https?://|ftp://|www\.", re.IGNORECASE)
"""Where a bare web address starts. The chat's renderer (marked, with GitHub's extensions)
links it up to the next space or ``<``, a code span's opening backtick included."""
_LIVE_LINK = re.compile(r"(?:https?:|mailto:)", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x20\x7f]+")


def _live(url: str) -> bool:
    return bool(_LIVE_LINK.match(_CONTROL.sub("", html.unescape(url))))


class _SafeRenderer(HTMLRenderer):
    """mistune's HTML renderer with raw HTML escaped and no fetches or script links."""

    def __init__(self) -> None:
        super().__init__(escape=True)

    def link(self, text: str, url: str, title: str | None = None) -> str:
        if not _live(url):
            return text
        attrs = {"href": url, "title": title, "rel": "noopener noreferrer nofollow"}
        return f"<a{self.render_attrs({**attrs, 'target': '_blank'})}>{text}</a>"

    def image(self, text: str, url: str, title: str | None = None) -> str:
        label = f"image: {text}" if text else "image"
        return self.link(html.escape(label, quote=False), url, title)


@functools.cache
def _markdown() -> mistune.Markdown:
    return mistune.create_markdown(
        renderer=_SafeRenderer(), plugins=["table", "strikethrough", "url"]
    )


def markdown_html(text: str) -> str:
    """Untrusted Markdown as HTML that cannot run anything, fetch anything or reorder text
    (bidirectional controls shown as ``⟨U+202E⟩``)."""
    return f'<div class="nbmemory-markdown">{_markdown()(show_bidi(text))}</div>'


def safe_bundle(markdown: str, plain: str | None = None) -> dict[str, str]:
    """A display bundle for untrusted Markdown: safe HTML, and the text itself for terminals."""
    return {
        "text/html": markdown_html(markdown),
        "text/plain": visible(markdown if plain is None else plain),
    }


class Answer(str):
    """An agent's answer: a ``str`` that shows as rendered Markdown (plain text in a terminal).

    ``shown`` marks an answer the ``%%agent`` magic has already drawn while it streamed: its
    first display (as the cell's result) is skipped, later ones (``_``) draw it.
    """

    def __new__(cls, text: str, *, shown: bool = False) -> Answer:
        answer = super().__new__(cls, text)
        answer._skip_display = shown
        return answer

    def _ipython_display_(self) -> None:
        if self._skip_display:
            self._skip_display = False
            return
        from IPython.display import display

        display(safe_bundle(str(self)), raw=True)

    def _repr_html_(self) -> Any:
        return markdown_html(str(self))


def chat_markdown(text: str) -> str:
    """Untrusted Markdown for a renderer that lets raw HTML through (Jupyter AI's chat): the same
    Markdown with every ``<`` and ``&`` written so that it shows as itself, links and images
    shown as their text (a bare web address is still linked), and fenced code blocks and
    one-line code spans left as they are, since a renderer escapes code itself.

    The fences are those a CommonMark parser finds (markdown-it-py): one ends where its list
    item or block quote ends, whatever the nesting. Only those that marked (the chat's renderer,
    which departs from CommonMark) finds too are kept (:func:`_sure`), and what is kept must
    still be code when the Markdown written here is parsed again; what is not is escaped too,
    and after a few tries everything is. Where it is unsure, it escapes: the text then shows an
    ``&lt;`` in code, never a tag. Bidirectional controls are shown as ``⟨U+202E⟩``, never
    applied."""
    text = show_bidi(text)
    lines = _LINE.findall(text)
    found = _code_blocks(_parse(text) or [])
    fenced = {number for block in found if block.markup for number in block.lines}
    if any(_TABBED.match(line) for number, line in enumerate(lines) if number not in fenced):
        found = []  # marked and CommonMark nest such a document differently
    blocks = [block for block in found if _sure(block, lines)]
    spans = True
    for _ in range(_TRIES):
        written, expected = _written(lines, blocks, spans)
        parsed = _parse(written)
        if parsed is None:
            break
        opening = {block.first for block in _code_blocks(parsed) if block.markup}
        code = {line for block in _code_blocks(parsed) for line in block.content}
        kept = [b for b in blocks if b.first in opening and b.content <= code]
        spans_kept = spans and _span_contents(parsed) == expected
        if kept == blocks and spans_kept == spans:
            return written
        blocks, spans = kept, spans_kept
    return _written(lines, [], False)[0]


def _sure(block: _Block, lines: list[str]) -> bool:
    """Whether marked takes ``block`` for code as CommonMark does: a fence (marked reads an
    indented block after a list item or quote as part of it) with no line inside that marked
    would take for its end, and, in a list item or quote, no tab in the indentation or markers
    of its lines (marked counts tabs otherwise)."""
    inside = sorted(block.lines)[1:-1]
    if not block.markup or any(lines[n].lstrip(" \t>").startswith(block.markup) for n in inside):
        return False
    return block.top or not any(_TABBED.match(lines[number]) for number in block.lines)


_TABBED = re.compile(r"[ >*+\-.)0-9]*\t")
"""A line whose indentation, or list and quote markers, hold a tab."""

_TRIES = 3
"""How many times a writing may lose a block or its code spans before everything is escaped."""


@functools.cache
def _commonmark() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True})


def _parse(text: str) -> list[Token] | None:
    """``text``'s CommonMark tokens, or ``None`` if the parser failed on it (markdown-it-py 4.3
    was seen to index past the end of a text once): then nothing is kept as code."""
    try:
        return _commonmark().parse(text)
    except Exception:
        return None


@dataclass(frozen=True)
class _Block:
    """A code block by its lines (0-based): a fence's opening line and the rest, or the lines
    of an indented block (``markup`` empty)."""

    lines: frozenset[int]
    first: int
    markup: str
    top: bool
    """Not in a list item or block quote."""

    @property
    def content(self) -> frozenset[int]:
        """Its lines but a fence's opening one."""
        return self.lines - {self.first} if self.markup else self.lines


def _code_blocks(tokens: list[Token]) -> list[_Block]:
    return [
        _Block(frozenset(range(*token.map)), token.map[0], token.markup, token.level == 0)
        for token in tokens
        if token.type in ("fence", "code_block") and token.map
    ]


def _span_contents(tokens: list[Token]) -> list[str]:
    return [
        child.content
        for token in tokens
        if token.type == "inline"
        for child in token.children or ()
        if child.type == "code_inline"
    ]


def _written(lines: list[str], blocks: list[_Block], spans: bool) -> tuple[str, list[str]]:
    """The text with ``blocks`` kept and everything else escaped (its code spans kept if
    ``spans``), and the contents of the code spans kept, as a parser reads them."""
    code = {line for block in blocks for line in block.lines}
    fences = {block.first: block.markup for block in blocks if block.markup}
    out: list[str] = []
    kept: list[str] = []
    for number, line in enumerate(lines):
        if number in fences:
            out.append(_fence_opening(line, fences[number]))
        elif number in code:
            out.append(line)
        else:
            out.append(_inline(line, kept if spans else None))
    return "".join(out), kept


def _fence_opening(line: str, markup: str) -> str:
    """A fence's opening line with its info string escaped, which reads the same (escapes and
    entities count in an info string) and is text in a renderer that takes the line for text."""
    body = line.rstrip("\r\n")
    at = body.index(markup) + len(markup)
    return body[:at] + _inline(body[at:], None) + line[len(body) :]


def _inline(line: str, spans: list[str] | None) -> str:
    """One line outside a code block, escaped; with ``spans``, its code spans are kept as they
    are and their contents added to ``spans``."""
    out: list[str] = []
    at = 0
    in_address = False  # a web address that GitHub's Markdown would link runs up to here
    while at < len(line):
        ch = line[at]
        if ch.isspace():
            in_address = False
        elif _WEB_ADDRESS.match(line, at):
            in_address = True
        if ch == "\\" and at + 1 < len(line) and line[at + 1] in _PUNCTUATION:
            # an escape already, which shows as itself; but marked takes a backslash after a
            # web address into the address, so the next character is written as text
            escaped = line[at + 1]
            out.append(_PLAIN[escaped] if escaped in "<&" else line[at : at + 2])
            at += 2
            continue
        if ch == "`":
            opener = _RUN.match(line, at)
            assert opener is not None
            if spans is not None and not in_address and not line.endswith("~", 0, at):
                closer = _closer(line, opener.end(), len(opener[0]))
                if closer is not None and "|" not in line[opener.end() : closer]:
                    end = closer + len(opener[0])
                    out.append(line[at:end])
                    spans.append(_span_content(line[opener.end() : closer]))
                    at = end
                    continue
            out.append(_PLAIN["`"] * len(opener[0]))
            at = opener.end()
            continue
        if line.startswith("~~~", at):  # three tildes might open a fence
            out.append("\\~")
            at += 1
            while at < len(line) and line[at] == "~":
                out.append("~")
                at += 1
            continue
        out.append(_PLAIN.get(ch, ch))
        at += 1
    return "".join(out)


def _span_content(between: str) -> str:
    """A code span's content as CommonMark reads it: one space off each end when both have one
    and it is not all spaces."""
    if between.startswith(" ") and between.endswith(" ") and between.strip(" "):
        return between[1:-1]
    return between


def _closer(line: str, start: int, length: int) -> int | None:
    """Where the first run of exactly ``length`` backticks after ``start`` begins, if any."""
    for run in _RUN.finditer(line, start):
        if len(run[0]) == length:
            return run.start()
    return None
