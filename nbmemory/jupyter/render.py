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
from typing import Any

import mistune
from mistune.renderers.html import HTMLRenderer

from nbmemory.report import visible

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
