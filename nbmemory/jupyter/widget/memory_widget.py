"""``MemoryWidget``: a live view of one agent's memory (anywidget; traits are the whole contract).

What it shows, and how it follows the agent, is :class:`.following.FollowingWidget`'s; its
traits are :mod:`.traits`. This module adds what a person does through it, and how it shows
where no widget front end runs.

It shows the agent's pinned notes (``NOTES.md``, see :mod:`nbmemory.memory.notes`) and lets a
person pin and unpin them: the browser sends ``{"command": "pin", "note": ...}`` or ``{"command":
"unpin", "number": n, "note": <the text it showed>}``, handled here through
:class:`nbmemory.memory.notes.Notes` (which locks the agent's folder and writes atomically);
refusals (over the budget, an empty note, notes changed meanwhile) go to ``status`` and change
nothing. ``{"command": "review", "action": ..., "n": n}`` accepts or rejects the model's proposed
note edit ``n``, or restores the notes as they were after change ``n`` (the browser asks the
person to confirm a restore first); ``{"command": "approval", "value": ...}`` sets how the
model's edits are taken.

Its Compact button asks first: ``{"command": "preview", "keep": [...]}`` puts the model's summary,
the tokens before and after and the terms it would drop in ``compaction_preview``, changing
nothing (with ``"summary"``, a person's edit kept: the preview is of that summary);
``{"command": "measure", "summary": ...}`` measures a person's edit of the summary shown
without asking the model; ``{"command": "compact", "summary": ...}`` writes the summary shown
(or as the person edited it), ``{"command": "cancel"}`` drops the preview. What the browser
asks to read (a term in an archive, a folded message whole) :class:`.following.FollowingWidget`
answers.

Message and note text is untrusted: the browser renders it with marked (vendored in
``static/``) with raw HTML escaped, no images loaded and only http(s)/mailto links live, or
verbatim with "Exact text"; the summary shown outside a widget front end (:mod:`.summary`)
escapes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nbmemory.agent.agent import Agent
from nbmemory.agent.compressor import CompactionPlan
from nbmemory.errors import (
    AgentNotFoundError,
    CompactionError,
    NbmemoryError,
    NoteChangedError,
)
from nbmemory.jupyter.widget import state
from nbmemory.jupyter.widget.following import FollowingWidget
from nbmemory.jupyter.widget.summary import (
    Summary,
    as_html,
    as_markdown,
    as_plain_text,
    summary_of,
)
from nbmemory.memory.note_history import person
from nbmemory.memory.notes import Notes
from nbmemory.views.report import preview_fields


def _sentence(exc: BaseException) -> str:
    """An error's message as a sentence for the status line."""
    text = str(exc).strip().strip("'\"")
    return text if text.endswith((".", "!", "?")) else text + "."


class MemoryWidget(FollowingWidget):
    """A live view of one agent's memory, named or given as an ``Agent`` or ``Conversation``.

    ``MemoryWidget("Writer")`` follows agent ``Writer`` of ``workspace`` (default
    ``$WORKSPACE_DIR``, fixed when the widget is made), even before it exists; ``agent=`` adds
    that agent's hooks (streamed answers, immediate updates) and compresses with it.
    """

    _plan: CompactionPlan | None = None
    """The compaction previewed, which the Compact button then writes; ``None``: none shown."""

    def __repr__(self) -> str:
        if not self.exists and not self.in_ram:
            return f"MemoryWidget({self.name!r}: no agent yet)"
        figures = self.info
        return (
            f"MemoryWidget({self.name!r}: {figures.get('messages', 0)} messages, "
            f"{figures.get('tokens', 0)}/{figures.get('context_length', 0)} tokens)"
        )

    # ------------------------------------------------------------------------------------------
    # Pinned notes

    def _writable_notes(self) -> Notes | None:
        """The notes a person may change now, or ``None`` with the reason in ``status``."""
        if self._ram is not None:
            self.status = (
                "Pinned notes need persistent memory: this Conversation is kept in RAM only."
            )
            return None
        try:
            settings, _ = self._reader.settings(self.name)
        except AgentNotFoundError:
            self.status = f"No agent named {self.name!r} yet: there are no notes to change."
            return None
        return self._notes_file(settings.model)

    def pin(self, note: str) -> bool:
        """Pin ``note`` (what the Pin button does); says the outcome in ``status``."""
        with self._lock:
            notes = self._writable_notes()
            if notes is None:
                return False
            try:
                pinned = notes.add(note, by=person("widget"))
            except (NbmemoryError, OSError) as exc:
                self.status = f"Not pinned: {_sentence(exc)}"
                return False
            self._refresh()
            self.status = f"Pinned as note {len(pinned)}."
            return True

    def unpin(self, match: str | int, shown: str | None = None) -> bool:
        """Unpin the note ``match`` names (its number from 1, or words found in it alone).

        ``shown`` is the text the person saw at that number: if the notes changed since, and
        that number now holds another note, nothing is unpinned. Says the outcome in ``status``.
        """
        with self._lock:
            notes = self._writable_notes()
            if notes is None:
                return False
            try:
                notes.remove(str(match), expected=shown, by=person("widget"))
            except NoteChangedError:
                self._refresh()
                self.status = (
                    "Not unpinned: the notes changed since they were shown; look again and retry."
                )
                return False
            except (NbmemoryError, OSError, ValueError) as exc:
                self.status = f"Not unpinned: {_sentence(exc)}"
                return False
            self._refresh()
            self.status = f"Unpinned note {match}."
            return True

    def review(self, action: str, n: int) -> bool:
        """Accept or reject the model's proposal ``n``, or restore the notes as they were after
        change ``n`` (the Accept, Reject and Restore buttons); says the outcome in ``status``."""
        done = {"accept": "Accepted proposal", "reject": "Rejected proposal"}
        with self._lock:
            notes = self._writable_notes()
            if notes is None or action not in (*done, "restore"):
                return False
            try:
                getattr(notes, action)(n, by=person("widget"))
            except (NbmemoryError, OSError, ValueError) as exc:
                self._refresh()
                self.status = f"Not done: {_sentence(exc)}"
                return False
            self._refresh()
            self.status = (
                f"{done[action]} #{n}."
                if action in done
                else f"Restored the notes as they were after change #{n}."
            )
            return True

    def set_approval(self, value: str) -> bool:
        """Set how the model's edits of the notes are taken (the setting under the notes):
        ``"auto"``, ``"ask"``, ``"off"`` or ``"default"``; says the outcome in ``status``."""
        with self._lock:
            notes = self._writable_notes()
            if notes is None:
                return False
            try:
                notes.set_approval(value, by=person("widget"))
            except (NbmemoryError, OSError, ValueError) as exc:
                self.status = f"Not set: {_sentence(exc)}"
                return False
            self._refresh()
            self.status = f"The model's note edits are now “{value}”."
            return True

    # ------------------------------------------------------------------------------------------
    # What the browser asks for

    def _command(self, widget: Any, content: dict[str, Any], buffers: list[Any]) -> None:
        """A command of the browser's buttons: preview, compact, cancel, pin, unpin, review."""
        command = content.get("command")
        if command == "preview":
            keep, summary = content.get("keep"), content.get("summary")
            terms = keep if isinstance(keep, list) else []
            self.preview_compaction(
                [t for t in terms if isinstance(t, str) and t.strip()],
                summary if isinstance(summary, str) and summary.strip() else None,
            )
        elif command == "measure":
            summary = content.get("summary")
            if isinstance(summary, str) and summary.strip():
                self.measure_summary(summary)
        elif command == "compact":  # only what a person confirmed: a preview is shown first
            summary = content.get("summary")
            if self._plan is None:
                self.status = "Not compacted: press Compact to see a preview first."
            else:
                self.compact(summary if isinstance(summary, str) else None)
        elif command == "cancel":
            self._plan, self.compaction_preview = None, {}
            self.status = "Not compacted: cancelled."
        elif command == "pin":
            ok = self.pin(str(content.get("note") or ""))
            self.send({"command": "pin", "ok": ok})
        elif command == "unpin":
            shown = content.get("note")
            ok = self.unpin(
                str(content.get("number", "")), str(shown) if shown is not None else None
            )
            self.send({"command": "unpin", "ok": ok})
        elif command == "approval":
            ok = self.set_approval(str(content.get("value")))
            self.send({"command": "approval", "ok": ok})
        elif command == "review":
            try:
                n = int(content.get("n"))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                n = 0
            ok = self.review(str(content.get("action")), n)
            self.send({"command": "review", "ok": ok})
        else:  # what the browser reads: FollowingWidget answers
            super()._command(widget, content, buffers)

    def _compactor(self) -> Agent:
        """The given agent, or one built on the memory with the model it recorded."""
        if self.agent is not None:
            return self.agent
        return Agent.from_memory(self.name, self._reader.workspace)

    def _cannot_compact(self) -> str:
        """Why this widget cannot compact its memory; empty if it can."""
        if self._ram is not None and self.agent is None:
            return "Not compacted: a Conversation alone has no summarizer; give an Agent."
        if not self._exists_now():
            return f"Nothing to compact: there is no agent named {self.name!r} yet."
        return ""

    def preview_compaction(
        self, keep: Sequence[str] = (), summary: str | None = None
    ) -> CompactionPlan | None:
        """What the Compact button shows before anything changes: the model's summary (``keep``:
        terms it must keep word for word), the tokens before and after and the terms it would
        drop, in ``compaction_preview``; :meth:`compact` then writes it. ``summary``, a
        person's edit, is kept: the preview is then of it (the model's is ``drafted``)."""
        self._plan, self.compaction_preview = None, {}
        self.status = self._cannot_compact()
        if self.status:
            return None
        self.status = "Asking the model for a summary…"
        try:
            plan = self._compactor().compact_preview(keep, summary=summary)
        except (NbmemoryError, OSError) as exc:  # shown in the widget, not lost in a log
            self.status = f"No preview: {_sentence(exc)}"
            return None
        self._plan = plan
        self.compaction_preview = preview_fields(plan, keep)
        kept = " Your edit is kept; the model's new summary waits beside it." if plan.edited else ""
        self.status = f"Preview: nothing has changed yet.{kept}"
        return plan

    def measure_summary(self, summary: str) -> CompactionPlan | None:
        """The preview shown, measured again for ``summary`` (a person's edit of it, or the
        model's summary again): the terms it would drop and the tokens after, without asking
        the model."""
        if self._plan is None:
            return None
        try:
            plan = self._compactor().compact_preview(summary=summary, plan=self._plan)
        except (NbmemoryError, OSError) as exc:
            self.status = f"No preview: {_sentence(exc)}"
            return None
        self._plan = plan
        self.compaction_preview = preview_fields(plan, self.compaction_preview.get("keep", []))
        return plan

    def compact(self, summary: str | None = None) -> None:
        """Compact with the preview shown (its summary, or ``summary``: the person's edit of it);
        with none shown, with ``summary`` or else the model's summary at once. Says the outcome
        in ``status``."""
        self.status = self._cannot_compact()
        if self.status:
            return
        if summary is not None and not summary.strip():
            self.status = "Not compacted: the summary is empty."
            return
        plan, self._plan, self.compaction_preview = self._plan, None, {}
        self.status = "Compacting…"
        try:
            agent = self._compactor()
            if plan is None and summary is None:
                agent.check_ready()
            agent.compact(summary, plan=plan)
        except CompactionError as exc:
            self._refresh()
            said = _sentence(exc)
            self.status = said[:1].upper() + said[1:]
            return
        except (NbmemoryError, OSError) as exc:  # shown in the widget, not lost in a log
            self.status = f"Compaction failed: {exc}"
            return
        self._refresh()
        self.status = state.compacted_status(self.archives, self.compactions)

    def _exists_now(self) -> bool:
        if self._ram is not None:
            return True
        return self._reader.exists(self.name)

    # ------------------------------------------------------------------------------------------
    # Outside a widget front end

    def _summary(self) -> Summary:
        """The summary's plain-text pieces, once the figures are in."""
        if self.counting:  # a summary is read once, as it is: wait for the figures
            self.refresh()
        return summary_of(self)

    def _repr_markdown_(self) -> str:
        pieces = self._summary()
        return as_markdown(self.name, self.exists, pieces)

    def _static_html(self) -> str:
        """The summary as HTML, every piece of text escaped: what a notebook shows when no
        kernel backs this widget (see :meth:`_ipython_display_`)."""
        return as_html(self._summary(), self.model_ref)

    def _static_bundle(self) -> dict[str, str]:
        """The static summary as a display bundle (HTML, and plain text for terminals)."""
        plain = as_plain_text(self._summary())
        return {"text/html": self._static_html(), "text/plain": plain}

    def _static_metadata(self) -> dict[str, Any]:
        """The static summary's output metadata: what it summarizes (the agent, in its
        workspace, or none for a memory kept in RAM) and the view beside it, which the server
        reads when the notebook is saved (:mod:`nbmemory.jupyter.server.saved_widgets`)."""
        workspace = "" if self._ram is not None else self.workspace
        return {"nbmemory": {"agent": self.name, "workspace": workspace, "view": self.model_ref}}

    def _view_bundle(self) -> dict[str, Any]:
        """The widget's own output: its view, and a one-line text for what cannot show it."""
        bundle = super()._repr_mimebundle_()
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        return {**(data or {}), "text/plain": repr(self)}

    def _ipython_display_(self, **kwargs: Any) -> None:
        """Show the widget as two outputs: a static summary, then the live view.

        A notebook saved with its outputs and opened again without the kernel that made the
        widget (or with no kernel at all) has no widget model to render: JupyterLab and
        Notebook 7 would show "Error displaying widget: model not found" or "Loading
        widget...", whatever else the bundle holds, because the widget renderer outranks
        every other. So the summary is an output of its own, with a style rule that hides it
        while the view beside it renders (and hides that output while it cannot), and the
        view hides the summary from its script too, for front ends without that rule. When
        the notebook is saved through nbmemory's server extension, the summary is written
        again from the memory as it is then, and a view whose widget state the notebook does
        not keep is saved closed (:mod:`nbmemory.jupyter.server.saved_widgets`).
        """
        from IPython.display import display

        display(self._static_bundle(), metadata=self._static_metadata(), raw=True)
        display(self._view_bundle(), raw=True)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = {**(data or {}), "text/markdown": self._repr_markdown_(), "text/plain": repr(self)}
        return data, metadata
