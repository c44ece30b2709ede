"""Messages as views show them: one :class:`Item` each, and pages of them.

The read model pages an agent's files with these; the widget and the magics page a memory kept
in RAM only with the same code, so a message reads the same wherever it is kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from nbmemory.memory.provenance import EMPTY as NO_LINEAGE
from nbmemory.memory.provenance import Lineage
from nbmemory.views.answers import Item, Page
from nbmemory.views.tool_calls import tool_message


def stored_text(content: Any) -> str:
    """Message content as MEMORY.md holds it, what "Exact text" shows and Copy copies: text as
    it is; structured content (a tool call, a tool's result) as its indented JSON."""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, indent=2)


def item_of(
    index: int,
    message: dict[str, Any],
    source: str,
    fold: int | None,
    lineage: Lineage = NO_LINEAGE,
) -> Item:
    """Message ``index`` of ``source`` as views show it: its text folded to ``fold`` characters
    (``None``: whole), with its notebook cell if ``lineage`` knows it."""
    content = message.get("content")
    text = stored_text(content)
    shown = text if fold is None or len(text) <= fold else text[:fold]
    tool = tool_message(content)
    if tool is not None and len(shown) < len(text):
        tool = tool.cut(len(shown))
    return Item(
        index,
        str(message.get("role", "")),
        str(message.get("timestamp", "")),
        shown,
        len(text),
        source,
        lineage.of(message),
        tool,
    )


def to_items(
    messages: Iterable[tuple[int, dict[str, Any]]], source: str, fold: int | None = None
) -> list[Item]:
    """Items of (index, message) pairs kept elsewhere, such as a memory held in RAM only."""
    return [item_of(index, message, source, fold) for index, message in messages]


def has_role(message: dict[str, Any], role: str | None) -> bool:
    """Whether ``message`` is by ``role`` (any case); every message is when ``role`` is None."""
    return role is None or str(message.get("role", "")).casefold() == role.casefold()


def page_of(
    messages: Sequence[dict[str, Any]],
    source: str,
    offset: int,
    limit: int,
    newest_first: bool,
    fold: int | None,
    *,
    role: str | None = None,
    lineage: Lineage = NO_LINEAGE,
) -> Page:
    """A page of ``messages`` kept elsewhere (or of a file's), as views show it; with ``role``,
    of that role's messages only (``total`` counts those; indexes stay the file's); each item
    with its cell, if ``lineage`` knows it."""
    indexes: Sequence[int] = range(len(messages))
    if role is not None:
        indexes = [i for i in indexes if has_role(messages[i], role)]
    total = len(indexes)
    offset = max(0, offset)
    if newest_first:
        chosen = range(total - 1 - offset, max(total - 1 - offset - limit, -1), -1)
    else:
        chosen = range(offset, min(total, offset + limit))
    items = [item_of(indexes[j], messages[indexes[j]], source, fold, lineage) for j in chosen]
    return Page(total, offset, newest_first, items)
