"""Reports of what the read model returns, as plain text (a terminal) and as safe Markdown.

The CLI and the magics print these. Message text is data: plain text in a terminal, and inside
code fences in Markdown, so nothing in a message is ever read as Markdown or HTML.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from nbmemory.agent.compressor import CompactionPlan
from nbmemory.memory.note_history import Change, pending
from nbmemory.views.answers import AgentInfo, ArchiveInfo, CompactionInfo, Item, Usage
from nbmemory.wording import (
    LABELS,
    byte_size,
    counted,
    dropped_words,
    message_number,
    number,
    percent,
    preview_words,
    reveal,
    review_words,
)

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|<>&~]|:(?=//))")


def visible(text: str) -> str:
    """``text`` for a terminal: control, zero-width and bidirectional characters shown as
    ``⟨U+001B⟩`` (``wording.reveal``), never sent: they could move the cursor, hide text,
    retitle the window or reorder what a reader sees."""
    return reveal(text)


def fenced(text: str) -> str:
    """``text`` in a code fence longer than any run of backticks inside it, its invisible
    characters revealed (a fence shows a right-to-left override applied, not escaped)."""
    text = reveal(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def markdown_escape(text: str) -> str:
    """``text`` as literal Markdown inside a line: what could start a tag, a link (``:`` of a
    bare URL included) or emphasis is escaped (not what acts only at the start of a line)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text).replace("\n", " ")


def usage_line(name: str, usage: Usage) -> str:
    """Every figure of ``usage`` in the words every view uses, as ``--tokens`` and
    ``nbmemory tokens`` say."""
    words = usage.to_json()["words"]
    sentences = [words["compacts_next"], words["stuck"], words["over_window"]]
    settings = f" ({words['settings']})" if words["settings"] else ""
    return " ".join(
        [
            f"{name}: {words['usage']}, {words['threshold']}, model {usage.model}, counted with "
            f"{usage.encoding}{settings}.",
            *filter(None, sentences),
        ]
    )


def parts_line(usage: Usage) -> str:
    """What the next request carries, part by part (the parts add up to ``usage.tokens``)."""
    return " + ".join(f"{name} {tokens:,}" for name, tokens in usage.parts if tokens)


def counts_line(messages: int, archives: list[ArchiveInfo]) -> str:
    """Where an agent's messages are: ``3 messages in MEMORY.md, 9 in 1 archive``, or ``…, no
    archives yet`` before its first compaction."""
    archived = sum(archive.messages for archive in archives)
    where = f"{number(archived)} in {counted(len(archives), 'archive')}"
    return (
        f"{counted(messages, 'message')} in MEMORY.md, {where if archives else 'no archives yet'}"
    )


def usage_report(info: AgentInfo, archives: list[ArchiveInfo]) -> str:
    """An agent's next request in three lines: its figures (:func:`usage_line`), its parts, and
    where its messages are; what ``nbmemory tokens`` prints and MCP's ``memory_usage`` answers."""
    return "\n".join(
        [
            usage_line(info.name, info.usage),
            parts_line(info.usage),
            counts_line(info.messages, archives),
        ]
    )


def compacted_line(
    name: str, archive: str | None, compactions: list[CompactionInfo], what: str = "Compacted"
) -> str:
    """What a compaction that wrote ``archive`` (a file name) did, by its figures among the
    agent's ``compactions``: what ``nbmemory compact`` and ``%compact`` print and MCP's
    ``compact`` answers (``what`` says who compacted: "Compacted", "Compacted on the way")."""
    done = next((c for c in compactions if c.archive == archive), None)
    if archive is None or done is None:
        return f"{what} {name}: nothing archived"
    return f"{what} {name}: {done.figures}; raw transcript archived to {archive}"


def note_history_report(name: str, changes: list[Change], command: str) -> str:
    """The record of an agent's notes as the views show it: the model's edits waiting for
    review first (with ``command``'s ``--accept N`` and ``--reject N``), then every other
    change, newest first, one a line (under a heading when edits wait above them)."""
    waiting = pending(changes)
    waits = {change.n for change in waiting}
    settled = [change.describe() for change in reversed(changes) if change.n not in waits]
    review = review_words([(change.n, change.describe()) for change in waiting], command)
    if review and settled:
        settled.insert(0, "History of the notes, newest first:")
    said = "\n\n".join(filter(None, [review, "\n".join(settled)]))
    return said or f"{name}: no changes to the notes yet"


def restored_words(n: int, before: list[str], after: list[str]) -> str:
    """What restoring version ``n`` of the notes did, in the words the views' confirmation
    uses: the notes it unpinned (pinned since) and those it brought back."""
    lines = [f"Restored the notes as they were after #{n}."]
    unpinned = [note for note in before if note not in after]
    brought = [note for note in after if note not in before]
    if unpinned:
        lines += [f"Unpinned {counted(len(unpinned), 'note')} pinned since:"]
        lines += [f"- {note}" for note in unpinned]
    if brought:
        lines += [f"Brought back {counted(len(brought), 'note')}:"]
        lines += [f"- {note}" for note in brought]
    if not unpinned and not brought:
        lines.append("Only the notes' order of then is back.")
    return "\n".join(lines)


def preview_report(name: str, plan: CompactionPlan, then: str) -> str:
    """A compaction shown before it is made: the next request's tokens before and after, the
    summary that would replace the memory, the terms it would still drop, and ``then``, how to
    carry it out."""
    dropped = ", ".join(plan.missing[:24]) + (", …" if len(plan.missing) > 24 else "")
    figures = preview_words(plan.tokens_before, plan.tokens_after, len(plan.missing))
    return "\n".join(
        [
            f"Preview of compacting {name} (nothing changed yet): {figures}",
            "Summary it would write:",
            plan.summary,
            f"It would still drop (the archive keeps them): {dropped or 'nothing'}",
            then,
        ]
    )


def preview_fields(plan: CompactionPlan, keep: Sequence[str]) -> dict[str, Any]:
    """A compaction shown for a person to confirm, as the panel's API answers it and the
    widget's ``compaction_preview`` trait holds it: the summary it writes (``edited``: a
    person's, not the model's ``drafted`` one), the next request's tokens before and after,
    the terms it drops (``missing``), the terms asked to be kept and the figures in words."""
    return {
        "summary": plan.summary,
        "drafted": plan.drafted,
        "edited": plan.edited,
        "tokens_before": plan.tokens_before,
        "tokens_after": plan.tokens_after,
        "missing": plan.missing,
        "keep": list(keep),
        "words": preview_words(plan.tokens_before, plan.tokens_after, len(plan.missing)),
    }


class TextBlock:
    """A short result: shown as preformatted text everywhere."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return visible(self.text)

    def _repr_markdown_(self) -> str:
        return fenced(self.text)


class MessageList:
    """Messages with their role, time and (optionally) the file they were found in."""

    def __init__(self, title: str, items: Iterable[Item], *, sources: bool = False) -> None:
        self.title = title
        self.items = list(items)
        self.sources = sources

    def _head(self, item: Item) -> str:
        parts = [message_number(item.index), item.role]
        parts += [item.timestamp] if item.timestamp else []
        if self.sources:
            parts.append(item.source)
        if item.cell_label:
            parts.append(item.cell_label)
        if item.folded:
            parts.append(f"first {len(item.text):,} of {item.length:,} characters")
        return " · ".join(parts)

    def __repr__(self) -> str:
        parts = [self.title, *(f"--- {self._head(i)}\n{i.readable}" for i in self.items)]
        return visible("\n\n".join(parts))

    def _repr_markdown_(self) -> str:
        parts = [f"**{markdown_escape(self.title)}**"]
        parts += [f"*{markdown_escape(self._head(i))}*\n\n{fenced(i.readable)}" for i in self.items]
        return "\n\n".join(parts)


class AgentTable:
    """One row per agent of the workspace, with the same figures every view shows."""

    HEADERS = (
        "agent",
        "messages",
        "tokens",
        "window",
        "threshold",
        "archives",
        "last activity",
        "recall index",
    )

    def __init__(self, rows: list[AgentInfo]) -> None:
        self.rows = rows

    def _cells(self) -> list[tuple[str, ...]]:
        return [
            (
                row.name,
                f"{row.messages:,}",
                f"{row.usage.tokens:,}",
                f"{row.usage.context_length:,}" + ("" if row.usage.recorded else "*"),
                "off" if row.usage.threshold is None else percent(row.usage.threshold),
                str(row.archives),
                row.last_activity or "-",
                byte_size(row.index_bytes),
            )
            for row in self.rows
        ]

    def _notes(self) -> list[str]:
        """What the table's figures need said: default settings, agents that cannot compact."""
        recorded = all(row.usage.recorded for row in self.rows)
        notes = [] if recorded else [f"* {LABELS['default settings']}"]
        stuck = [row for row in self.rows if row.usage.stuck]
        notes += [f"{row.name}: {row.usage.to_json()['words']['stuck']}" for row in stuck]
        return notes

    def __repr__(self) -> str:
        if not self.rows:
            return "No agents in this workspace yet."
        table = [self.HEADERS, *self._cells()]
        widths = [max(len(row[i]) for row in table) for i in range(len(self.HEADERS))]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in table
        ]
        return "\n".join([*lines, *self._notes()])

    def _repr_markdown_(self) -> str:
        if not self.rows:
            return "*No agents in this workspace yet.*"
        lines = ["| " + " | ".join(self.HEADERS) + " |", "|" + "---|" * len(self.HEADERS)]
        for cells in self._cells():
            lines.append("| " + " | ".join(markdown_escape(c) for c in cells) + " |")
        notes = "".join(f"\n\n{markdown_escape(note)}" for note in self._notes())
        return "\n".join(lines) + notes


class Audit:
    """An agent's compactions, oldest first and numbered from 1, as the views word them: when,
    both figures, what each archived, its summary and the terms it dropped."""

    SUMMARY_CHARS = 300

    def __init__(self, name: str, compactions: list[CompactionInfo]) -> None:
        self.name = name
        self.compactions = compactions

    def _title(self) -> str:
        if not self.compactions:
            return f"{self.name}: {LABELS['no compactions']}"
        return f"{self.name}: {counted(len(self.compactions), 'compaction')}"

    def _parts(self, compaction: CompactionInfo) -> tuple[str, str, str]:
        """Heading, summary and dropped terms of one compaction, as plain text."""
        kept = compaction.kept_messages
        heading = (
            f"{compaction.time or '?'} · {compaction.figures} · "
            f"{counted(compaction.messages, 'message')} archived to {compaction.archive}"
            + (f", then {counted(kept, 'message')} kept word for word" if kept else "")
        )
        summary = " ".join(compaction.summary.split())
        if len(summary) > self.SUMMARY_CHARS:
            summary = summary[: self.SUMMARY_CHARS] + "…"
        dropped = dropped_words(compaction.dropped_total)
        if compaction.dropped:
            dropped += ": " + ", ".join(compaction.dropped)
        more = compaction.dropped_total - len(compaction.dropped)
        if compaction.dropped and more > 0:
            dropped += f" and {number(more)} more"
        if not compaction.recorded:
            dropped += f" ({LABELS['no record']})"
        return heading, summary or "(none found)", dropped

    def __repr__(self) -> str:
        lines = [self._title()]
        for n, compaction in enumerate(self.compactions, 1):
            heading, summary, dropped = self._parts(compaction)
            lines += [f"{n}. {heading}", f"   summary: {summary}", f"   {dropped}"]
        return visible("\n".join(lines))

    def _repr_markdown_(self) -> str:
        parts = [f"**{markdown_escape(self._title())}**"]
        for n, compaction in enumerate(self.compactions, 1):
            heading, summary, dropped = self._parts(compaction)
            parts.append(
                f"{n}. *{markdown_escape(heading)}*\n\n"
                f"{fenced(summary)}\n\n{markdown_escape(dropped)}"
            )
        return "\n\n".join(parts)
