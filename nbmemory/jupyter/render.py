"""How the magics' results look: Markdown in a notebook, plain text in a terminal, stable reprs.

Message content is data: it is shown inside code fences (or as plain text), never as HTML.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from nbmemory.overview import AgentOverview
from nbmemory.search import content_text


def fenced(text: str) -> str:
    """``text`` in a code fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


class TextBlock:
    """A short result: shown as preformatted text everywhere."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return fenced(self.text)


class Answer(str):
    """An agent's answer: a ``str`` that shows as Markdown (plain text in a terminal).

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

        display({"text/markdown": str(self), "text/plain": str(self)}, raw=True)


class MessageList:
    """Messages with their role, time and (optionally) where they were found."""

    def __init__(self, title: str, items: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        self.title = title
        self.items = list(items)

    def _lines(self, source: str, message: Mapping[str, Any]) -> tuple[str, str]:
        where = f" · {source}" if source else ""
        stamp = f" · {message['timestamp']}" if message.get("timestamp") else ""
        return f"{message['role']}{stamp}{where}", content_text(message.get("content"))

    def __repr__(self) -> str:
        parts = [self.title]
        for source, message in self.items:
            head, body = self._lines(source, message)
            parts.append(f"--- {head}\n{body}")
        return "\n\n".join(parts)

    def _repr_markdown_(self) -> str:
        parts = [f"**{self.title}**"]
        for source, message in self.items:
            head, body = self._lines(source, message)
            parts.append(f"*{head}*\n\n{fenced(body)}")
        return "\n\n".join(parts)


class AgentTable:
    """One row per agent of the workspace."""

    HEADERS = ("agent", "messages", "tokens", "context window", "archives", "last activity")

    def __init__(
        self,
        rows: list[AgentOverview],
        windows: Mapping[str, int],
        tokens: Mapping[str, int] | None = None,
    ) -> None:
        """``windows`` and ``tokens`` hold the figures of agents loaded in this kernel."""
        self.rows = rows
        self.windows = windows
        self.tokens = tokens or {}

    def _cells(self) -> list[tuple[str, ...]]:
        return [
            (
                row.name,
                f"{row.messages:,}",
                f"{self.tokens.get(row.name, row.tokens):,}",
                f"{self.windows[row.name]:,}" if row.name in self.windows else "-",
                str(row.archives),
                row.last_activity or "-",
            )
            for row in self.rows
        ]

    def __repr__(self) -> str:
        if not self.rows:
            return "No agents in this workspace yet."
        table = [self.HEADERS, *self._cells()]
        widths = [max(len(row[i]) for row in table) for i in range(len(self.HEADERS))]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in table
        ]
        return "\n".join(line.rstrip() for line in lines)

    def _repr_markdown_(self) -> str:
        if not self.rows:
            return "*No agents in this workspace yet.*"
        escape = str.maketrans({"|": "\\|", "*": "\\*", "_": "\\_", "`": "\\`", "<": "&lt;"})
        lines = ["| " + " | ".join(self.HEADERS) + " |", "|" + "---|" * len(self.HEADERS)]
        for cells in self._cells():
            lines.append("| " + " | ".join(c.translate(escape) for c in cells) + " |")
        return "\n".join(lines)
