"""The record of every change to an agent's pinned notes: who made it, through what, and why.

Pinned notes ride in every request and outlive every compaction, so a note a fetched page
talked the model into pinning would steer the agent for good. Each change is kept as one line
of ``NOTES.history.jsonl`` beside ``NOTES.md``: when, by whom (a person and the view they
used, or the model, in which run and after which tools' results), what was pinned or unpinned,
and the notes as they were after it, so any earlier state can be restored. A model's edit
that waits for a person's review is a *proposal*: recorded, not applied, until accepted.

The record is written under the agent's lock, after ``NOTES.md``: if nbmemory stops in
between, or a person edits the file by hand, the notes no longer match the last entry, and
the next change records that ("changed outside nbmemory") before its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from nbmemory.memory_file import now_iso
from nbmemory.store import AgentDocs

HISTORY_FILE = "NOTES.history.jsonl"
APPROVALS = ("auto", "ask", "off")
"""How a model's edits are taken: applied at once, proposed for review, or refused."""
DEFAULT = "default"
"""No approval set: ask while the model's context holds another tool's result, else apply."""

PIN, UNPIN, REPLACE, RESTORE = "pin", "unpin", "replace", "restore"
PROPOSE, ACCEPT, REJECT, OUTSIDE, APPROVAL = "propose", "accept", "reject", "outside", "approval"


@dataclass(frozen=True)
class Author:
    """Who changes the notes: ``who`` is ``"person"``, ``"model"`` or ``"unknown"``; ``via``
    the way in (``"cli"``, ``"magic"``, ``"widget"``, ``"panel"``, ``"mcp"``, ``"python"``,
    ``"edit_notes"``); for a model, ``run`` names its run and ``after`` the tools (other than
    the memory tools) whose results its context held."""

    who: str = "person"
    via: str = "python"
    user: str | None = None
    run: str | None = None
    after: tuple[str, ...] = ()

    def describe(self) -> str:
        """``person (cli)``, ``model in run "…" after fetch_page``: as every view says it."""
        said = f"{self.who}{f' {self.user}' if self.user else ''} ({self.via})"
        if self.run:
            said += f" in run {_quoted(self.run)}"
        if self.after:
            said += f" after results of {', '.join(self.after)}"
        return said


@dataclass(frozen=True)
class Change:
    """One entry of the record: ``notes`` are the notes after it (unchanged by a proposal or a
    rejection); ``ref`` is the entry an acceptance, rejection or restore refers to."""

    n: int
    change: str
    author: Author
    notes: tuple[str, ...]
    at: str = field(default_factory=now_iso)
    added: str | None = None
    removed: str | None = None
    ref: int | None = None
    approval: str | None = None
    """For an ``"approval"`` entry: what a person set (one of :data:`APPROVALS`, or
    :data:`DEFAULT`)."""

    def to_json(self) -> dict[str, Any]:
        author = {k: v for k, v in vars(self.author).items() if v not in (None, ())}
        entry = {k: v for k, v in vars(self).items() if k != "author" and v is not None}
        author["after"] = list(self.author.after)
        return {**entry, "author": author, "notes": list(self.notes)}

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> Change:
        author = dict(entry["author"])
        author["after"] = tuple(str(tool) for tool in author.get("after", ()))
        return cls(
            n=int(entry["n"]),
            change=str(entry["change"]),
            author=Author(**author),
            notes=tuple(str(note) for note in entry["notes"]),
            at=str(entry["at"]),
            added=entry.get("added"),
            removed=entry.get("removed"),
            ref=entry.get("ref"),
            approval=entry.get("approval"),
        )

    def describe(self) -> str:
        """One line: number, time, what changed, and by whom."""
        what = {
            PIN: f"pinned {_quoted(self.added)}",
            UNPIN: f"unpinned {_quoted(self.removed)}",
            REPLACE: f"replaced {_quoted(self.removed)} with {_quoted(self.added)}",
            RESTORE: f"restored the notes as they were after #{self.ref}",
            PROPOSE: f"proposed {_proposal(self)}",
            ACCEPT: f"accepted proposal #{self.ref}",
            REJECT: f"rejected proposal #{self.ref}",
            OUTSIDE: "the notes were changed outside nbmemory (an editor, or an unfinished write)",
            APPROVAL: f"set the model's note edits to “{self.approval}”",
        }.get(self.change, self.change)
        return f"#{self.n} {self.at} {what} — by {self.author.describe()}"


def _quoted(note: str | None) -> str:
    """A note in quotes on one line: its line breaks shown as ``⏎``."""
    return f"“{' ⏎ '.join((note or '').splitlines())}”"


def _proposal(change: Change) -> str:
    if change.added and change.removed:
        return f"to replace {_quoted(change.removed)} with {_quoted(change.added)}"
    if change.removed:
        return f"to unpin {_quoted(change.removed)}"
    return f"to pin {_quoted(change.added)}"


def read(docs: AgentDocs) -> list[Change]:
    """The recorded changes, oldest first; a line that cannot be read is left out."""
    try:
        data = docs.read(HISTORY_FILE).decode("utf-8", "replace")
    except (FileNotFoundError, NotADirectoryError):
        return []
    changes = []
    for line in data.splitlines():
        try:
            changes.append(Change.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            continue
    return changes


def with_outside(changes: list[Change], notes: list[str]) -> list[Change]:
    """``changes``, and an "outside" entry if the notes are not those the record last left
    (nothing is written: for views, which never write)."""
    last = changes[-1].notes if changes else ()
    if tuple(notes) == last:
        return changes
    n = changes[-1].n + 1 if changes else 1
    return [*changes, Change(n, OUTSIDE, Author("unknown", "file"), tuple(notes))]


def record(docs: AgentDocs, notes_before: list[str], change: Change) -> Change:
    """Add ``change`` to the record (under the agent's lock, which the caller holds), after an
    "outside" entry if the notes before it are not those the record last left; returns it
    numbered. Its lines are appended: the record is never rewritten, so a change costs the
    same however long the record has grown."""
    recorded = read(docs)
    changes = with_outside(recorded, notes_before)
    n = changes[-1].n + 1 if changes else 1
    numbered = replace(change, n=n)
    new = [*changes[len(recorded) :], numbered]
    lines = "".join(json.dumps(c.to_json(), ensure_ascii=False) + "\n" for c in new)
    docs.append(HISTORY_FILE, lines.encode(), durable=True)
    return numbered


def approval(changes: list[Change]) -> str | None:
    """The approval a person last set for the model's edits (``None``: never set, or reset
    to :data:`DEFAULT`)."""
    for change in reversed(changes):
        if change.change == APPROVAL:
            return change.approval if change.approval in APPROVALS else None
    return None


def pending(changes: list[Change]) -> list[Change]:
    """Proposals no one has accepted or rejected yet, oldest first."""
    settled = {c.ref for c in changes if c.change in (ACCEPT, REJECT)}
    return [c for c in changes if c.change == PROPOSE and c.n not in settled]
