"""Pinned notes: a short Markdown file per agent that every request carries word for word.

Compaction summarizes MEMORY.md; it never touches ``NOTES.md``. What must outlive every
summary (a name, a budget, a standing instruction) is pinned here by the model (its
``edit_notes`` tool) or by a person (``%memory NAME --pin``, the CLI, or an editor). The file is
a heading and one bullet per note; changes are made under the agent folder's lock and written
atomically. Notes have a token budget: an edit that would go over it is refused, never cut.
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
from nbmemory.store import AgentDocs, docs_at
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


def parse(text: str) -> list[str]:
    """The notes of a notes file: bullets, with their indented continuation lines; any other
    line a person wrote is a note of its own."""
    notes: list[str] = []
    continuing = False
    for line in text.splitlines():
        if line.strip() == HEADING or not line.strip():
            continuing = False
        elif line.startswith("- "):
            notes.append(line[2:])
            continuing = True
        elif continuing and line.startswith("  "):
            notes[-1] += "\n" + line[2:]
        else:
            notes.append(line.strip())
            continuing = False
    return notes


def render(notes: list[str]) -> str:
    """The notes file for ``notes`` (empty when there are none)."""
    if not notes:
        return ""
    bullets = "".join("- " + note.strip().replace("\n", "\n  ") + "\n" for note in notes)
    return f"{HEADING}\n\n{bullets}"


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

    def tokens(self) -> int:
        """Tokens the notes add to a request (counted again only when the file changed)."""
        stamp = self.docs.stamp(NOTES_FILE)
        if stamp is None:
            return 0
        if self._counted is None or self._counted[0] != stamp:
            self._counted = (stamp, self.message_tokens(self.text()))
        return self._counted[1]

    def message_tokens(self, text: str) -> int:
        return self._counter.count(f"System: {MARKER}\n{text}\n\n") if text.strip() else 0

    def _change(self, edit: Callable[[list[str]], list[str]]) -> list[str]:
        with self.docs.locked():
            notes = edit(self.items())
            text = render(notes)
            used = self.message_tokens(text)
            if used > self.budget:
                raise NotesFullError(
                    f"the notes would take {used:,} tokens, over their budget of "
                    f"{self.budget:,}: remove or shorten a note first"
                )
            if text:
                self.docs.write(NOTES_FILE, text)
            else:
                self.docs.remove(NOTES_FILE)
        return notes

    def find(self, match: str, notes: list[str] | None = None) -> int:
        """The index of the note ``match`` names: its number (1 first), its text, or a piece of
        text found in exactly one note (of ``notes``, default: the notes now)."""
        notes = self.items() if notes is None else notes
        if match.strip().isdigit() and 1 <= int(match) <= len(notes):
            return int(match) - 1
        exact = [i for i, note in enumerate(notes) if note.strip() == match.strip()]
        found = exact or [i for i, note in enumerate(notes) if match.lower() in note.lower()]
        if len(found) != 1:
            what = "no note" if not found else f"{len(found)} notes"
            raise NoteNotFoundError(f"{what} of {self.path} match {match!r}")
        return found[0]

    def add(self, note: str) -> list[str]:
        """Pin ``note``; returns the notes."""
        if not note.strip():
            raise InvalidNoteError("a note must not be empty")
        return self._change(lambda notes: [*notes, note.strip()])

    def remove(self, match: str, expected: str | None = None) -> list[str]:
        """Unpin the note ``match`` names (see :meth:`find`); returns the notes left.

        ``expected`` is the note a person saw at that number: if the note there now is another
        one (the notes changed since), nothing is unpinned (``NoteChangedError``).
        """

        def edit(notes: list[str]) -> list[str]:
            number = match.strip()
            if expected is not None and number.isdigit() and not 1 <= int(number) <= len(notes):
                index = -1
            else:
                index = self.find(match, notes)
            if expected is not None and (index < 0 or notes[index] != expected):
                raise NoteChangedError(
                    f"note {match} of {self.path} is no longer the one shown: nothing was "
                    "unpinned; look at the notes again and retry"
                )
            return notes[:index] + notes[index + 1 :]

        return self._change(edit)

    def replace(self, match: str, note: str) -> list[str]:
        """Put ``note`` in place of the note ``match`` names; returns the notes."""
        if not note.strip():
            raise InvalidNoteError("a note must not be empty")

        def edit(notes: list[str]) -> list[str]:
            index = self.find(match, notes)
            return [*notes[:index], note.strip(), *notes[index + 1 :]]

        return self._change(edit)


_SAVED = "Notes saved"
_EMPTY = "Notes are now empty."


def tool_answer(notes: list[str]) -> str:
    """What the notes tool tells the model after a change: the notes, numbered as every view
    numbers them; read back by :func:`saved_notes`."""
    if not notes:
        return _EMPTY
    listed = "\n".join(f"{n}. {note}" for n, note in enumerate(notes, 1))
    return f"{_SAVED} ({len(notes)}):\n{listed}"


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
            notes[-1] += "\n" + line
    return notes


def notes_tool(notes: Callable[[], Notes | None]) -> Callable[..., str]:
    """The tool through which a model edits the notes ``notes()`` returns."""

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
        try:
            if remove.strip() and add.strip():
                current = target.replace(remove, add)
            elif remove.strip():
                current = target.remove(remove)
            else:
                current = target.add(add)
        except (NotesFullError, NoteNotFoundError) as exc:
            return f"Notes unchanged: {exc}"
        return tool_answer(current)

    edit_notes.__name__ = TOOL_NAME
    return edit_notes
