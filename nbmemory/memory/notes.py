"""Pinned notes: a short Markdown file per agent that every request carries word for word.

Compaction summarizes MEMORY.md; it never touches ``NOTES.md``. What must outlive every
summary (a name, a budget, a standing instruction) is pinned here by the model (its
``edit_notes`` tool) or by a person (``%memory NAME --pin``, the CLI, or an editor). Changes are
made under the agent folder's lock and written atomically. Notes have a token budget: an edit
that would go over it is refused, never cut.

The file is a heading and one bullet per note, and holds every note word for word (but the
blanks around it)::

    # Pinned notes

    - Budget: 40k EUR.
    - A note of two paragraphs:

      the second one, indented.
    - Written with a line separator⟨U+2028⟩here, and ⟨U+27E8⟩U+2028⟩ typed as it is.

The file's lines end as any editor ends them (``\n``, ``\r\n`` or ``\r``). A line feed in a
note starts a line indented by two spaces; every other character some reader takes for a line
break (:data:`ESCAPED`, which ``str.splitlines`` splits on) is written as ``⟨U+2028⟩``, as the
views reveal invisible characters, and so is a ``⟨`` that would read as such an escape. Lines a
person wrote outside a bullet are notes of their own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from nbmemory.errors import (
    InvalidNoteError,
    NoteChangedError,
    NoteNotFoundError,
    NotesFullError,
)
from nbmemory.memory import note_history
from nbmemory.memory.note_history import Author, Change
from nbmemory.memory.token_counts import KeptCounts
from nbmemory.store.docs import AgentDocs
from nbmemory.store.workspace import docs_at
from nbmemory.tokens import TokenCounter

NOTES_FILE = "NOTES.md"
HEADING = "# Pinned notes"
DEFAULT_BUDGET = 500
"""Tokens the notes may take in every request."""
TOOL_NAME = "edit_notes"
PROMPT_LINE = (
    f"Your pinned notes come with every request and survive every compaction: keep lasting "
    f"facts and instructions there with {TOOL_NAME}."
)
MARKER = "[Pinned notes — NOTES.md]"

ESCAPED = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
"""The line breaks a note keeps by escaping them in the file: all of ``str.splitlines``'s but the
line feed."""
_CODES = "|".join(f"{ord(c):04X}" for c in ESCAPED + "⟨")
_ESCAPE = re.compile(rf"[{ESCAPED}]|⟨(?=U\+(?:{_CODES})⟩)")
_UNESCAPE = re.compile(rf"⟨U\+({_CODES})⟩")
_LINE_END = re.compile(r"\r\n|\r|\n")


def escape(note: str) -> str:
    """``note`` as the file writes it: :data:`ESCAPED` characters (and a ``⟨`` that would read
    as an escape) shown as ``⟨U+2028⟩``; line feeds stay."""
    return _ESCAPE.sub(lambda m: f"⟨U+{ord(m[0][0]):04X}⟩", note)


def unescape(text: str) -> str:
    """The inverse of :func:`escape`."""
    return _UNESCAPE.sub(lambda m: chr(int(m[1], 16)), text)


def parse(text: str) -> list[str]:
    """The notes of a notes file: bullets, with their indented continuation lines (and the
    empty lines between them); any other line a person wrote is a note of its own."""
    notes: list[str] = []
    continuing = False
    empty = 0  # empty lines inside a bullet, kept if an indented line follows
    for line in _LINE_END.split(text):
        if continuing and line.startswith("  "):
            notes[-1] += "\n" * (empty + 1) + unescape(line[2:])
            empty = 0
        elif continuing and not line.strip():
            empty += 1
        elif line.strip() == HEADING or not line.strip():
            continuing = False
        elif line.startswith("- "):
            notes.append(unescape(line[2:]))
            continuing, empty = True, 0
        else:
            notes.append(unescape(line.strip()))
            continuing = False
    return notes


def _written(note: str, first: str, indent: str) -> str:
    """``note`` escaped, its first line after ``first`` and the others indented by ``indent``."""
    head, *rest = escape(note.strip()).split("\n")
    return "\n".join([first + head, *(indent + line if line else "" for line in rest)])


def render(notes: list[str]) -> str:
    """The notes file for ``notes`` (empty when there are none)."""
    if not notes:
        return ""
    bullets = "".join(_written(note, "- ", "  ") + "\n" for note in notes)
    return f"{HEADING}\n\n{bullets}"


def listing(notes: list[str]) -> str:
    """``notes`` numbered from 1 as every view numbers them, each written as the file writes it,
    its other lines indented under its text: what the model and people are shown."""
    return "\n".join(
        _written(note, f"{n}. ", " " * len(f"{n}. ")) for n, note in enumerate(notes, 1)
    )


def _number(match: str) -> int | None:
    """The note number ``match`` is, if it is one: plain digits (``int`` takes other scripts'
    digits, and refuses ``'²'``, which ``str.isdigit`` accepts)."""
    digits = match.strip()
    return int(digits) if re.fullmatch(r"[0-9]{1,9}", digits) else None


def _checked(note: str) -> str:
    """``note`` without the blanks around it, or ``InvalidNoteError`` if it cannot be pinned."""
    text = note.strip()
    if not text:
        raise InvalidNoteError("a note must not be empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidNoteError(
            f"a note must be text: it holds {exc.object[exc.start : exc.end]!r}, a lone surrogate"
        ) from None
    return text


class Notes:
    """The pinned notes of an agent: its documents (``Workspace.agent(name)``), or its folder
    in the environment's workspace."""

    def __init__(
        self,
        folder: AgentDocs | str | os.PathLike[str],
        budget: int = DEFAULT_BUDGET,
        model: str = "gpt-4o",
    ) -> None:
        self.docs = docs_at(folder)
        self.path = self.docs.path(NOTES_FILE)
        self.budget = budget
        self._counter = TokenCounter(model)
        self._counted: tuple[tuple[int, int], int] | None = None

    def __repr__(self) -> str:
        return f"Notes({str(self.path)!r})"

    def text(self) -> str:
        """The file as it is (empty if there is none): what every request carries."""
        try:
            return self.docs.read(NOTES_FILE).decode("utf-8", "replace")
        except (FileNotFoundError, NotADirectoryError):
            return ""

    def items(self) -> list[str]:
        return parse(self.text())

    def tokens(self, kept: KeptCounts | None = None) -> int:
        """Tokens the notes add to a request (counted again only when the file changed; taken
        from ``kept`` when it holds them, in this counter's encoding)."""
        stamp = self.docs.stamp(NOTES_FILE)
        if stamp is None:
            return 0
        if self._counted is None or self._counted[0] != stamp:
            text = self.request_text(self.text())
            same = kept is not None and kept.counter.encoding_name == self._counter.encoding_name
            count = kept.tokens if same else self._counter.count
            self._counted = (stamp, count(text) if text else 0)
        return self._counted[1]

    @staticmethod
    def request_text(text: str) -> str:
        """What notes ``text`` add to a request, as counted (nothing for blank notes)."""
        return f"System: {MARKER}\n{text}\n\n" if text.strip() else ""

    def message_tokens(self, text: str) -> int:
        request = self.request_text(text)
        return self._counter.count(request) if request else 0

    def _check_budget(self, notes: list[str]) -> str:
        """The file for ``notes``, or ``NotesFullError`` if it would go over the budget."""
        text = render(notes)
        used = self.message_tokens(text)
        if used > self.budget:
            raise NotesFullError(
                f"the notes would take {used:,} tokens, over their budget of "
                f"{self.budget:,}: remove or shorten a note first"
            )
        return text

    def _write(self, notes: list[str]) -> None:
        """Make ``notes`` the file (under the lock), or ``NotesFullError`` if over budget."""
        text = self._check_budget(notes)
        if text:
            self.docs.write(NOTES_FILE, text)
        else:
            self.docs.remove(NOTES_FILE)

    def _change(
        self,
        edit: Callable[[list[str]], list[str]],
        by: Author | None,
        kind: str | None = None,
        ref: int | None = None,
        approval: str | None = None,
    ) -> list[str]:
        """Apply ``edit`` under the lock, write the notes, and record the change."""
        with self.docs.locked():
            before = self.items()
            notes = edit(before)
            self._write(notes)
            self._record(before, notes, by, kind, ref, approval)
        return notes

    def _record(
        self,
        before: list[str],
        after: list[str],
        by: Author | None,
        kind: str | None = None,
        ref: int | None = None,
        approval: str | None = None,
    ) -> Change:
        added, removed = _difference(after, before), _difference(before, after)
        if kind is None:
            kind = note_history.REPLACE if added and removed else note_history.PIN
            kind = note_history.UNPIN if removed and not added else kind
        change = Change(
            0,
            kind,
            by or Author(),
            tuple(after),
            added=added or None,
            removed=removed or None,
            ref=ref,
            approval=approval,
        )
        return note_history.record(self.docs, before, change)

    def find(self, match: str, notes: list[str] | None = None) -> int:
        """The index of the note ``match`` names: its number (1 first), its text, or a piece of
        text found in exactly one note (of ``notes``, default: the notes now)."""
        notes = self.items() if notes is None else notes
        number = _number(match)
        if number is not None and 1 <= number <= len(notes):
            return number - 1
        shown = [(note.strip(), escape(note.strip())) for note in notes]
        exact = [i for i, forms in enumerate(shown) if match.strip() in forms]
        found = exact or [
            i for i, forms in enumerate(shown) if any(match.lower() in f.lower() for f in forms)
        ]
        if len(found) != 1:
            what = "no note matches" if not found else f"{len(found)} notes match"
            raise NoteNotFoundError(f"{what} {match!r} in {self.path}")
        return found[0]

    def add(self, note: str, by: Author | None = None) -> list[str]:
        """Pin ``note``; returns the notes. ``by`` says who, for the record (default: a
        person, from Python)."""
        text = _checked(note)
        return self._change(lambda notes: [*notes, text], by)

    def remove(
        self, match: str, expected: str | None = None, by: Author | None = None
    ) -> list[str]:
        """Unpin the note ``match`` names (see :meth:`find`); returns the notes left.

        ``expected`` is the note a person saw at that number: if the note there now is another
        one (the notes changed since), nothing is unpinned (``NoteChangedError``).
        """

        def edit(notes: list[str]) -> list[str]:
            number = _number(match)
            if expected is not None and number is not None and not 1 <= number <= len(notes):
                index = -1
            else:
                index = self.find(match, notes)
            if expected is not None and (index < 0 or notes[index] != expected):
                raise NoteChangedError(
                    f"note {match} of {self.path} is no longer the one shown: nothing was "
                    "unpinned; look at the notes again and retry"
                )
            return notes[:index] + notes[index + 1 :]

        return self._change(edit, by)

    def replace(self, match: str, note: str, by: Author | None = None) -> list[str]:
        """Put ``note`` in place of the note ``match`` names; returns the notes."""
        return self._change(self._editing(note, match), by)

    def _editing(self, add: str, remove: str) -> Callable[[list[str]], list[str]]:
        """The change the notes tool asks for: pin ``add``, unpin the note ``remove`` names,
        or put one in place of the other."""
        text = _checked(add) if add.strip() or not remove.strip() else ""

        def edit(notes: list[str]) -> list[str]:
            if not remove.strip():
                return [*notes, text]
            index = self.find(remove, notes)
            return [*notes[:index], *([text] if text else []), *notes[index + 1 :]]

        return edit

    def edit(
        self,
        add: str = "",
        remove: str = "",
        by: Author | None = None,
        approval: str | None = None,
    ) -> list[str]:
        """What the notes tool and the MCP tool ask: pin ``add``, unpin the note ``remove``
        names, or put one in place of the other when both are given; returns the notes.
        ``approval`` is the setting under which an edit not made by a person is applied
        unreviewed (``"auto"``), for the record."""
        return self._change(self._editing(add, remove), by, approval=approval)

    # ------------------------------------------------------------------------------------------
    # The record, and edits that wait for review

    def history(self) -> list[Change]:
        """Every recorded change, oldest first, and a last "outside" entry if the file was
        changed since the record's last one (nothing is written)."""
        return note_history.with_outside(note_history.read(self.docs), self.items())

    def pending(self) -> list[Change]:
        """The model's edits waiting for review, oldest first."""
        return note_history.pending(note_history.read(self.docs))

    def approval(self) -> str | None:
        """How a person asked the model's edits to be taken (``note_history.APPROVALS``), or
        ``None`` for the default."""
        return note_history.approval(note_history.read(self.docs))

    def set_approval(self, value: str, by: Author | None = None) -> None:
        """Record how the model's edits are taken from now on: one of
        ``note_history.APPROVALS``, or ``"default"``; every agent on this memory follows it
        unless its own ``notes_approval`` says otherwise."""
        if value not in (*note_history.APPROVALS, note_history.DEFAULT):
            choices = ", ".join(map(repr, (*note_history.APPROVALS, note_history.DEFAULT)))
            raise ValueError(f"approval must be one of {choices}, not {value!r}")
        with self.docs.locked():
            before = self.items()
            entry = Change(0, note_history.APPROVAL, by or Author(), tuple(before), approval=value)
            note_history.record(self.docs, before, entry)

    def propose(self, add: str = "", remove: str = "", by: Author | None = None) -> Change:
        """Record the edit :meth:`edit` would make as a proposal, changing nothing: refused
        now, as the edit would be, if it cannot be made (no such note, over budget). Returns
        the proposal as read back from the record, which :meth:`accept` applies:
        ``NoteNotFoundError`` if it cannot be, so no one is told of a proposal that is not
        there."""
        edit = self._editing(add, remove)
        with self.docs.locked():
            before = self.items()
            after = edit(before)
            self._check_budget(after)
            proposal = Change(
                0,
                note_history.PROPOSE,
                by or Author("model", "edit_notes"),
                tuple(before),
                added=_difference(after, before) or None,
                removed=_difference(before, after) or None,
            )
            return self._proposal(note_history.record(self.docs, before, proposal).n)

    def _proposal(self, n: int) -> Change:
        for change in note_history.pending(note_history.read(self.docs)):
            if change.n == n:
                return change
        raise NoteNotFoundError(f"{self.path}: no pending proposal #{n}")

    def accept(self, n: int, by: Author | None = None) -> list[str]:
        """Apply proposal ``n`` to the notes as they are now; returns the notes.
        ``NoteChangedError`` if the note it would unpin is no longer there."""

        def edit(notes: list[str]) -> list[str]:
            proposal = self._proposal(n)
            if proposal.removed is None:
                return [*notes, proposal.added or ""]
            if proposal.removed not in notes:
                raise NoteChangedError(
                    f"proposal #{n} would unpin a note that is no longer pinned: nothing "
                    "changed; reject it"
                )
            index = notes.index(proposal.removed)
            added = [proposal.added] if proposal.added else []
            return [*notes[:index], *added, *notes[index + 1 :]]

        return self._change(edit, by, note_history.ACCEPT, ref=n)

    def reject(self, n: int, by: Author | None = None) -> list[str]:
        """Drop proposal ``n``, changing nothing but the record; returns the notes."""

        def edit(notes: list[str]) -> list[str]:
            self._proposal(n)
            return notes

        return self._change(edit, by, note_history.REJECT, ref=n)

    def restore(self, n: int, by: Author | None = None) -> list[str]:
        """Make the notes what they were after change ``n`` of :meth:`history`, a version of
        them (``NoteNotFoundError`` for a proposal, a rejection or an approval setting, which
        left the notes as they were: the views offer no Restore beside those)."""

        def edit(notes: list[str]) -> list[str]:
            for change in note_history.read(self.docs):
                if change.n != n:
                    continue
                if change.change not in note_history.VERSIONS:
                    raise NoteNotFoundError(
                        f"change #{n} ({change.change}) made no version of the notes: "
                        "nothing to restore"
                    )
                return list(change.notes)
            raise NoteNotFoundError(f"{self.path}: no recorded change #{n}")

        return self._change(edit, by, note_history.RESTORE, ref=n)


def _difference(notes: list[str], others: list[str]) -> str:
    """The notes of ``notes`` that ``others`` lacks (counting repeats), one per line."""
    left = list(others)
    extra = []
    for note in notes:
        if note in left:
            left.remove(note)
        else:
            extra.append(note)
    return "\n".join(extra)


_SAVED = "Notes saved"
_EMPTY = "Notes are now empty."


def tool_answer(notes: list[str]) -> str:
    """What the notes tool tells the model after a change: the notes, numbered as every view
    numbers them; read back by :func:`saved_notes`."""
    if not notes:
        return _EMPTY
    return f"{_SAVED} ({len(notes)}):\n{listing(notes)}"


def saved_notes(answer: str) -> list[str] | None:
    """The notes a :func:`tool_answer` lists, or ``None`` if the answer says nothing changed."""
    if answer == _EMPTY:
        return []
    head, _, listed = answer.partition("\n")
    found = re.fullmatch(rf"{_SAVED} \((\d+)\):", head)
    if found is None:
        return None
    notes: list[str] = []
    for line in listed.split("\n"):
        numbered = re.match(rf"{len(notes) + 1}\. ", line)
        if numbered and len(notes) < int(found[1]):
            notes.append(line[numbered.end() :])
        elif notes:
            notes[-1] += "\n" + line[len(f"{len(notes)}. ") :]
    return [unescape(note) for note in notes]


def notes_tool(
    notes: Callable[[], Notes | None],
    approval: Callable[[], str] = lambda: "auto",
    author: Callable[[], Author] = lambda: Author("model", TOOL_NAME),
) -> Callable[..., str]:
    """The tool through which a model edits the notes ``notes()`` returns; ``approval()`` says
    how its edit is taken now (``note_history.APPROVALS``) and ``author()`` who makes it."""

    def edit_notes(add: str = "", remove: str = "") -> str:
        """Change your pinned notes, which every request carries and no compaction removes.

        Pin lasting facts and instructions (names, numbers, decisions, preferences). To
        correct a note, remove it and add the corrected one in the same call.

        Args:
            add: A note to pin.
            remove: The note to unpin: its number, or words found in it alone.
        """
        target = notes()
        if target is None:
            return "This agent keeps no memory on disk, so it has no pinned notes."
        if not add.strip() and not remove.strip():
            return "Nothing to do: give a note to add, one to remove, or both."
        how = approval()
        if how == "off":
            return "Notes unchanged: only a person may edit this agent's pinned notes."
        try:
            if how == "ask":
                proposal = target.propose(add, remove, by=author())
                return review_answer(proposal.n, target.items())
            current = target.edit(add, remove, by=author(), approval=how)
        except (NotesFullError, NoteNotFoundError, InvalidNoteError) as exc:
            return f"Notes unchanged: {exc}"
        return tool_answer(current)

    edit_notes.__name__ = TOOL_NAME
    return edit_notes


def review_answer(n: int, notes: list[str]) -> str:
    """What the notes tool tells the model when its edit waits for a person's review."""
    now = f"They are:\n{listing(notes)}" if notes else "There are none."
    return (
        f"Your edit awaits a person's review (proposal #{n}); your notes stay as they are "
        f"until it is accepted. {now}"
    )
