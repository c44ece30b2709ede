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

Each line is JSON in ASCII (``\u2028``, not the character), and lines are split at line feeds
only: no character of a note can split an entry or hide one, whatever program reads the file.
A line that cannot be read as an entry is left out with a ``MemoryWarning`` naming it.
"""

from __future__ import annotations

import getpass
import json
import re
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

from nbmemory.errors import MemoryWarning
from nbmemory.store.docs import AgentDocs
from nbmemory.store.memory_format import now_iso

HISTORY_FILE = "NOTES.history.jsonl"
APPROVALS = ("auto", "ask", "off")
"""How a model's edits are taken: applied at once, proposed for review, or refused."""
DEFAULT = "default"
"""No approval set: every edit not made by a person in a view (the model's, an MCP client's)
is proposed for review."""

PIN, UNPIN, REPLACE, RESTORE = "pin", "unpin", "replace", "restore"
PROPOSE, ACCEPT, REJECT, OUTSIDE, APPROVAL = "propose", "accept", "reject", "outside", "approval"
VERSIONS = (PIN, UNPIN, REPLACE, RESTORE, ACCEPT, OUTSIDE)
"""The changes that made a version of the notes: what a person may restore. A proposal, a
rejection or an approval setting left the notes as they were."""

_ANONYMOUS_ID = re.compile(r"[0-9a-f]{32}")
"""jupyter_server's username for an anonymous user: a random UUID's 32 hex digits."""


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
        """``person ada (cli)``, ``model in run "…" after fetch_page``: as every view says it.
        The random id an earlier panel recorded for an anonymous Jupyter user names no one,
        so it is left out."""
        user = None if self.user and _ANONYMOUS_ID.fullmatch(self.user) else self.user
        said = f"{self.who}{f' {user}' if user else ''} ({self.via})"
        if self.run:
            said += f" in run {_quoted(self.run)}"
        if self.after:
            said += f" after results of {', '.join(self.after)}"
        return said


def person(via: str, user: str | None = None) -> Author:
    """A person changing the notes through ``via``, named as the view knows them (``user``:
    the panel's signed-in Jupyter user) or else by their login on this machine (the CLI, the
    magics and the widget run as the person), so every view shows who it was by name."""
    if user is None:
        try:
            user = getpass.getuser()
        except (OSError, KeyError):
            user = None
    return Author("person", via, user=user)


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
    :data:`DEFAULT`); for an edit the model or an MCP client made: the setting under which it
    was applied without review."""

    def to_json(self) -> dict[str, Any]:
        author = {k: v for k, v in vars(self.author).items() if v not in (None, ())}
        entry = {k: v for k, v in vars(self).items() if k != "author" and v is not None}
        author["after"] = list(self.author.after)
        return {**entry, "author": author, "notes": list(self.notes)}

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> Change:
        """The change an entry of the record holds; ``ValueError`` if it is not one (a field
        of the wrong type, a proposal of nothing), so no view shows what cannot be acted on."""
        author = dict(entry["author"])
        for key in ("who", "via", "user", "run"):
            _of_type(author, key, str, key in ("who", "via"))
        author["after"] = tuple(_texts(author.get("after", [])))
        change = cls(
            n=_of_type(entry, "n", int, True),
            change=_of_type(entry, "change", str, True),
            author=Author(**author),
            notes=tuple(_texts(entry["notes"])),
            at=_of_type(entry, "at", str, True),
            added=_of_type(entry, "added", str),
            removed=_of_type(entry, "removed", str),
            ref=_of_type(entry, "ref", int),
            approval=_of_type(entry, "approval", str),
        )
        if change.change == PROPOSE and not (change.added or change.removed):
            raise ValueError("a proposal of no change")
        return change

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
        unreviewed = ""
        if self.approval and self.change in (PIN, UNPIN, REPLACE):
            unreviewed = f", applied without review (“{self.approval}”)"
        return f"#{self.n} {self.at} {what} — by {self.author.describe()}{unreviewed}"


def _of_type(entry: dict[str, Any], key: str, kind: type, required: bool = False) -> Any:
    """``entry[key]`` if it is a ``kind`` (``None`` if absent and not ``required``)."""
    value = entry.get(key)
    if (value is None and not required) or (
        isinstance(value, kind) and not isinstance(value, bool)
    ):
        return value
    raise ValueError(f"{key!r} is not a {kind.__name__}")


def _texts(values: Any) -> list[str]:
    """``values`` if it is a list of texts (the notes, the tools a model's context held)."""
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError("not a list of texts")
    return values


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
    """The recorded changes, oldest first. Lines are split at line feeds alone (a record an
    earlier nbmemory wrote with a raw U+2028 in a note reads whole); a line that cannot be
    read is left out with one ``MemoryWarning`` naming every such line."""
    try:
        data = docs.read(HISTORY_FILE).decode("utf-8", "replace")
    except (FileNotFoundError, NotADirectoryError):
        return []
    changes, unreadable = [], []
    for number, line in enumerate(data.split("\n"), 1):
        if not line.strip():
            continue
        try:
            changes.append(Change.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            unreadable.append(number)
    if unreadable:
        warnings.warn(_unreadable(docs, unreadable), MemoryWarning, stacklevel=2)
    return changes


def _unreadable(docs: AgentDocs, numbers: list[int]) -> str:
    """What a view says of the record's lines ``numbers`` (the first few named)."""
    named = ", ".join(map(str, numbers[:5]))
    if len(numbers) > 5:
        named += f" and {len(numbers) - 5} more"
    said = "line {} could not be read: the change it records is left out"
    if len(numbers) > 1:
        said = "lines {} could not be read: the changes they record are left out"
    return f"{docs.path(HISTORY_FILE)}: {said.format(named)}"


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
    lines = "".join(json.dumps(c.to_json()) + "\n" for c in new)
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
