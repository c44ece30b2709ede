"""``POST /agents/NAME/compact``: a compaction through the API, previewed first or not.

A preview changes nothing: it answers the model's summary (or a person's edit of it, measured
the same way) and the tokens before and after, and keeps the plan under an id
(:class:`PreviewPlans`) for the request that measures an edit or carries it out.
"""

from __future__ import annotations

import secrets

import tornado.web
from jupyter_server.auth.decorator import authorized

from nbmemory.agent.agent import Agent
from nbmemory.agent.compressor import CompactionPlan
from nbmemory.errors import CompactionError, ModelError
from nbmemory.jupyter.server.base_handler import NbMemoryHandler
from nbmemory.jupyter.server.params import refuse_oversized
from nbmemory.memory.compactions import Compaction
from nbmemory.views.report import preview_fields

MAX_KEEP = 100
"""The most terms a compaction request may ask to keep."""
MAX_TERM = 200


class CompactHandler(NbMemoryHandler):
    """Compact an agent's memory: preview the model's summary, then write it, edited or not.

    ``{"preview": true, "keep": [...]}`` answers the summary the model would write, the next
    request's tokens before and after and the terms it would drop, changing nothing, with a
    ``"plan"`` id; with ``"summary"``, a person's edit kept: the answer is for that summary (the
    model's new one is ``"drafted"``); ``{"preview": true, "plan": id, "summary": "..."}``
    measures an edit of that preview without asking the model (the answer has a new id);
    ``{"summary": "...", "plan": id}`` writes that summary (the model's, as
    shown, or as the person edited it; ``409`` if the memory changed since the preview);
    ``{"summary": "..."}`` alone writes a summary written by hand; ``{}`` or ``{"keep": [...]}``
    the model's summary without a preview. A model that fails answers ``502``; nothing to
    compact, ``409``."""

    def previews(self) -> PreviewPlans:
        return self.settings["nbmemory_previews"]

    def request_json(self) -> tuple[bool, str | None, list[str], str | None]:
        """(preview, summary, keep, plan) of the request, each checked (400 for a bad one)."""
        body = self.json_body()
        preview, summary = body.get("preview", False), body.get("summary")
        keep, plan = body.get("keep", []), body.get("plan")
        if not isinstance(preview, bool):
            raise tornado.web.HTTPError(400, '"preview" must be true or false')
        if summary is not None and (not isinstance(summary, str) or not summary.strip()):
            raise tornado.web.HTTPError(400, "summary must be a non-empty string")
        if summary is not None:
            refuse_oversized(summary, "summary")
        if not isinstance(keep, list) or not all(
            isinstance(term, str) and term.strip() and len(term) <= MAX_TERM for term in keep
        ):
            raise tornado.web.HTTPError(
                400, f'"keep" must be a list of terms (non-empty strings of {MAX_TERM} or fewer)'
            )
        if len(keep) > MAX_KEEP:
            raise tornado.web.HTTPError(400, f'"keep" holds at most {MAX_KEEP} terms')
        if plan is not None and not isinstance(plan, str):
            raise tornado.web.HTTPError(400, '"plan" must be the id a preview answered')
        if preview and plan is not None and (summary is None or keep):
            raise tornado.web.HTTPError(400, 'a preview of a "plan" takes a "summary" alone')
        if not preview and summary is not None and keep:
            raise tornado.web.HTTPError(400, '"keep" goes with the model summary, not a given one')
        return preview, summary, keep, plan

    @tornado.web.authenticated
    @authorized("write")
    async def post(self, name: str) -> None:
        preview, summary, keep, plan_id = self.request_json()
        before = await self.in_thread(self.model.usage, name)  # 404 before anything is built
        place = self.model.workspace
        previews = self.previews()
        shown = None
        if plan_id is not None:  # measuring an edit leaves the preview for a later edit
            shown = previews.get(plan_id, name) if preview else previews.take(plan_id, name)
            if shown is None:
                raise tornado.web.HTTPError(409, "that preview is no longer known: preview again")

        def compact() -> CompactionPlan | Compaction:
            agent = Agent.from_memory(name, place, record_settings=False)
            if preview:
                return agent.compact_preview(keep, summary=summary, plan=shown)
            plan = shown if summary is not None else (shown or agent.compact_preview(keep))
            return agent.compact(summary, plan=plan)

        try:
            done = await self.in_thread(compact)
        except CompactionError as exc:
            failed = isinstance(exc.__cause__, ModelError)
            raise tornado.web.HTTPError(502 if failed else 409, str(exc)) from None
        if isinstance(done, CompactionPlan):
            self.reply(
                {"name": name, "plan": previews.add(done, name), **preview_fields(done, keep)}
            )
            return
        archive = done.archive
        after = await self.in_thread(self.model.usage, name)
        records = await self.in_thread(self.model.compactions, name) if archive else []
        self.reply(
            {
                "name": name,
                "archive": archive.name if archive else None,
                "tokens_before": before.tokens,
                "tokens_after": after.tokens,
                "figures": records[-1].figures if records else "",
                "missing": done.missing,
            }
        )


class PreviewPlans:
    """The compactions previewed through the API and not yet carried out, the latest ``size``
    of them, by an id no one guesses (a client signed in with the token alone is a new user at
    every request, so the id, not the user, says whose preview it is), each for its agent."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._plans: dict[str, tuple[str, CompactionPlan]] = {}

    def add(self, plan: CompactionPlan, name: str) -> str:
        key = secrets.token_urlsafe(16)
        self._plans[key] = (name, plan)
        while len(self._plans) > self.size:
            del self._plans[next(iter(self._plans))]
        return key

    def get(self, key: str, name: str) -> CompactionPlan | None:
        """The plan ``key`` of agent ``name``; ``None`` if unknown."""
        found = self._plans.get(key)
        return found[1] if found is not None and found[0] == name else None

    def take(self, key: str, name: str) -> CompactionPlan | None:
        """The plan ``key`` of agent ``name``, forgotten; ``None`` if unknown."""
        plan = self.get(key, name)
        if plan is not None:
            del self._plans[key]
        return plan
