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
from typing import Any

import mistune
from mistune.renderers.html import HTMLRenderer

from nbmemory.report import visible

_FENCE_OPEN = re.compile(r"^ {0,3}(?P<run>`{3,}(?=[^`]*$)|~{3,})")
_PUNCTUATION = frozenset(string.punctuation)
_RUN = re.compile(r"`+")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
"""A line and its end, as Markdown renderers split lines (a lone ``\\r`` ends one too)."""
_PLAIN = {"&": "&amp;", "<": "&lt;", "`": "\\`", "[": "\\["}
"""What a Markdown renderer with raw HTML on could read as a tag, an entity, a code span, or a
link or image, each written so that it shows as itself."""
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
    """Untrusted Markdown as HTML that cannot run anything or fetch anything."""
    return f'<div class="nbmemory-markdown">{_markdown()(text)}</div>'


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

    Each code region is one that a CommonMark renderer finds whatever it makes of the rest: a
    fence opens only where it would open one and closes at any line that might close it, and
    every backtick outside the code spans chosen here is escaped, so no renderer pairs them
    otherwise. Where it is unsure, it escapes: the text then shows an ``&lt;`` in code, never
    a tag."""
    out: list[str] = []
    fence: str | None = None
    for line in _LINE.findall(text):
        if fence is not None:
            out.append(line)
            if line.lstrip(" \t>").startswith(fence):
                fence = None
            continue
        opened = _FENCE_OPEN.match(line.rstrip("\r\n"))
        if opened:
            fence = opened["run"]
            out.append(line)
            continue
        out.append(_inline(line))
    return "".join(out)


def _inline(line: str) -> str:
    """One line outside a fenced block: its code spans as they are, the rest escaped."""
    out: list[str] = []
    at = 0
    while at < len(line):
        ch = line[at]
        if ch == "\\" and at + 1 < len(line) and line[at + 1] in _PUNCTUATION:
            out.append(line[at : at + 2])  # an escape already: it shows as itself
            at += 2
            continue
        if ch == "`":
            opener = _RUN.match(line, at)
            assert opener is not None
            closer = _closer(line, opener.end(), len(opener[0]))
            if closer is not None and "|" not in line[opener.end() : closer]:
                end = closer + len(opener[0])
                out.append(line[at:end])
                at = end
                continue
            out.append(_PLAIN["`"] * len(opener[0]))
            at = opener.end()
            continue
        out.append(_PLAIN.get(ch, ch))
        at += 1
    return "".join(out)


def _closer(line: str, start: int, length: int) -> int | None:
    """Where the first run of exactly ``length`` backticks after ``start`` begins, if any."""
    for run in _RUN.finditer(line, start):
        if len(run[0]) == length:
            return run.start()
    return None
