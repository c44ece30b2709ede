"""``/agents/NAME/notes``: an agent's pinned notes, pinned and unpinned from the panel, and the
review of what the model proposed (accept, reject, restore, and how the agent must ask).

Every change is recorded with who made it (``note_history``): here, the signed-in person.
"""

from __future__ import annotations

import functools
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized

from nbmemory.errors import NoteChangedError
from nbmemory.jupyter.server.base_handler import NbMemoryHandler
from nbmemory.jupyter.server.params import refuse_oversized
from nbmemory.memory import note_history
from nbmemory.memory.note_history import Author, person
from nbmemory.memory.notes import Notes


class NotesHandler(NbMemoryHandler):
    """An agent's pinned notes (``NOTES.md``): read them, pin one, unpin one."""

    def notes_file(self, name: str) -> Notes:
        """The agent's notes, counted for the model it recorded (AgentNotFoundError if none)."""
        settings, _ = self.model.settings(name)
        return Notes(self.model.workspace.agent(name), model=settings.model)

    def notes_json(self, name: str) -> dict[str, Any]:
        return self.model.pinned(name).to_json()

    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        if await self.not_modified(name):
            return
        self.reply(await self.in_thread(self.notes_json, name))

    @tornado.web.authenticated
    @authorized("write")
    async def post(self, name: str) -> None:
        body = self.json_body()
        asked = [
            key for key in ("pin", "unpin", "approval", *_REVIEWS) if body.get(key) is not None
        ]
        if len(asked) != 1:
            raise tornado.web.HTTPError(
                400, 'give one of "pin", "unpin", "approval", "accept", "reject" or "restore"'
            )
        by = person("panel", _shown_name(self.current_user))
        if asked[0] == "approval":
            value = body["approval"]
            if value not in (*note_history.APPROVALS, note_history.DEFAULT):
                raise tornado.web.HTTPError(
                    400, '"approval" is one of "auto", "ask", "off" or "default"'
                )
            change = functools.partial(self.approve, name, value, by)
        elif asked[0] in _REVIEWS:
            n = body[asked[0]]
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise tornado.web.HTTPError(400, f'"{asked[0]}" takes a change number from 1')
            change = functools.partial(self.review, name, asked[0], n, by)
        else:
            change = functools.partial(self.edit, name, *self.pin_or_unpin(body), by)
        try:
            data = await self.in_thread(change)
        except NoteChangedError as exc:
            raise tornado.web.HTTPError(409, str(exc)) from None
        self.reply(data)

    @staticmethod
    def pin_or_unpin(body: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
        """The note to pin, or the one to unpin and the text shown for it; 400 if malformed."""
        pin, unpin, shown = body.get("pin"), body.get("unpin"), body.get("note")
        if isinstance(unpin, int) and not isinstance(unpin, bool):
            if unpin < 1:
                raise tornado.web.HTTPError(400, f'"unpin" numbers notes from 1, not {unpin}')
            unpin = str(unpin)
        if not isinstance(pin if pin is not None else unpin, str):
            raise tornado.web.HTTPError(400, '"pin" and "unpin" take a string')
        if shown is not None and (unpin is None or not isinstance(shown, str)):
            raise tornado.web.HTTPError(400, '"note" goes with "unpin", as a string')
        if unpin is not None and not unpin.strip():
            raise tornado.web.HTTPError(400, '"unpin" needs a note number or words')
        if pin is not None:
            refuse_oversized(pin, "note")
        return pin, unpin, shown

    def edit(
        self, name: str, pin: str | None, unpin: str | None, shown: str | None, by: Author
    ) -> dict[str, Any]:
        notes = self.notes_file(name)
        if pin is not None:
            notes.add(pin, by=by)
        else:
            notes.remove(unpin or "", expected=shown, by=by)
        return self.notes_json(name)

    def approve(self, name: str, value: str, by: Author) -> dict[str, Any]:
        self.notes_file(name).set_approval(value, by=by)
        return self.notes_json(name)

    def review(self, name: str, action: str, n: int, by: Author) -> dict[str, Any]:
        """Accept or reject proposal ``n``, or restore the notes after change ``n``."""
        getattr(self.notes_file(name), action)(n, by=by)
        return self.notes_json(name)


_REVIEWS = ("accept", "reject", "restore")


def _shown_name(user: Any) -> str:
    """The person as Jupyter shows them (``Anonymous Io``), not the random id a token's user
    gets for a username."""
    return getattr(user, "display_name", "") or getattr(user, "name", "") or user.username
