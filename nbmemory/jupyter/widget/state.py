"""The widget's payloads: what the read model returns, turned into the JSON of the traits.

Functions of their arguments, with no widget and no traits: the figures shown before the tokens
are counted, pages of messages (with their tokens on demand), search in a memory kept in RAM,
the compactions without their summaries and the latest changes to the pinned notes (the
compaction preview is ``nbmemory.views.report.preview_fields``). :mod:`.following` and
:mod:`.memory_widget` put them in the traits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbmemory.errors import AgentNotFoundError, ArchiveNotFoundError
from nbmemory.memory.conversation import Conversation
from nbmemory.memory.run_settings import RunSettings
from nbmemory.store import folders
from nbmemory.views.answers import ArchiveInfo, CompactionInfo, Item
from nbmemory.views.pages import has_role, to_items
from nbmemory.views.read_model import ReadModel
from nbmemory.wording import FOLD_CHARS

MEMORY_SOURCE = folders.MEMORY_FILE
RAM_SOURCE = "memory (RAM)"


def clamped_page(page: int, total: int, size: int) -> int:
    """``page`` brought within the pages that ``total`` items make, ``size`` to a page."""
    return min(max(0, page), max(0, (total - 1) // size))


def first_figures(
    name: str, settings: RunSettings, recorded: bool, messages: int
) -> dict[str, Any]:
    """The ``info`` shown before the tokens are counted: what the settings and the first page
    tell, under the names of ``AgentInfo.to_json()``."""
    return {
        "name": name,
        "model": settings.model,
        "context_length": settings.context_length,
        "threshold": settings.threshold,
        "recorded": recorded,
        "messages": messages,
    }


def absent_status(name: str, root: Path) -> str:
    """The status line of a view whose agent is not written yet."""
    return f"No agent named {name!r} in {root} yet; this view fills in when it is first written."


def item_payloads(items: list[Item], reader: ReadModel | None, name: str) -> list[dict[str, Any]]:
    """Items as the browser gets them; given ``reader``, each with its tokens (``"tokens"``,
    ``ReadModel.message_tokens``) where the files still hold it."""
    found = [item.to_json(sparse=True) for item in items]
    if reader is None:
        return found
    by_source: dict[str, list[dict[str, Any]]] = {}
    for item in found:
        by_source.setdefault(item["source"], []).append(item)
    for source, group in by_source.items():
        archive = None if source == MEMORY_SOURCE else source
        try:
            counts = reader.message_tokens(
                name, [item["index"] for item in group], archive=archive
            ).tokens
        except (AgentNotFoundError, ArchiveNotFoundError, IndexError):
            continue  # the file changed since the page was read: the next refresh counts
        for item in group:
            item["tokens"] = counts[item["index"]]
    return found


def ram_search(
    conversation: Conversation, query: str, role: str | None, offset: int, size: int
) -> tuple[int, list[Item]]:
    """How many messages of a memory kept in RAM hold ``query`` (of ``role``, if given), and
    the page of them from ``offset``."""
    found = [h for h in conversation.search_memory(query) if has_role(h.message, role)]
    chosen = ((hit.index, hit.message) for hit in found[offset : offset + size])
    return len(found), to_items(chosen, RAM_SOURCE, FOLD_CHARS)


def compactions_key(archives: list[ArchiveInfo], notes: list[str]) -> tuple[Any, ...]:
    """What the compactions are read again for: an archive or the notes changed (what a summary
    dropped is reckoned against the notes when no record was kept)."""
    return tuple((a.name, a.size) for a in archives), tuple(notes)


def compaction_rows(found: list[CompactionInfo]) -> list[dict[str, Any]]:
    """The compactions as the ``compactions`` trait lists them: without their summaries."""
    return [{k: v for k, v in info.to_json().items() if k != "summary"} for info in found]


def compacted_status(archives: list[dict[str, Any]], compactions: list[dict[str, Any]]) -> str:
    """The status line after a compaction: its figures, and the archive that holds the
    transcript (the last of ``archives`` and of ``compactions``, as the traits hold them)."""
    where = f"; the transcript is in archive/{archives[-1]['name']}" if archives else ""
    figures = compactions[-1]["figures"] if compactions else ""
    return f"Compacted: {figures}{where}."
