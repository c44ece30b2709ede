"""``ContextCompressor``: summarize an agent's history before it overflows the context window.

The check is constant-time (the conversation keeps a running token total). A summary replaces
the history through ``Conversation.compact``, which archives the raw transcript first, so nothing
said is lost. When the summarizer fails, nothing is compacted, one warning says why, and the
compressor waits until the history has grown before it tries again.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nbmemory.agent.request_parts import next_request_parts
from nbmemory.errors import CompactionError, MemoryWarning, ModelError
from nbmemory.memory import provenance
from nbmemory.memory.compactions import Compaction, write_record
from nbmemory.memory.preload import SUMMARY_MARKER, block_tokens, preloaded_messages
from nbmemory.memory.provenance import Provenance
from nbmemory.memory.run_settings import (
    DEFAULT_THRESHOLD,
    SMALLEST_SUMMARY_TOKENS,
    compaction_floor,
)
from nbmemory.memory.search import content_text
from nbmemory.models.llm import completion
from nbmemory.recall import RECALL_TOOLS
from nbmemory.terms import missing_terms
from nbmemory.tokens import TokenCounter, context_window
from nbmemory.wording import stuck_words

COMPRESSION_SYSTEM_PROMPT = (
    "You compress the working memory of an AI agent. Keep every fact, number, name, decision, "
    "preference and open question; drop greetings and repetition. Write plain sentences."
)
"""What the summarizer is told (followed by the agent's pinned notes when it has some)."""
_NOTES = (
    "The agent's pinned notes below stay in every request, word for word, apart from the "
    "summary: do not repeat what they say."
)
COMPRESSION_USER_TEMPLATE = (
    "Summarize the conversation below so that the agent can continue from the summary.\n\n{history}"
)
"""The request that carries a transcript (or part of one) to the summarizer."""
_MERGE_TEMPLATE = (
    "Summarize these partial summaries of one conversation into one summary.\n\n{history}"
)
DEFAULT_SUMMARY_TOKENS = 4000
REGROW_SHARE = 0.25
"""After a compaction that failed or left the request above the threshold, the next waits
until the request has grown by this share of the window: a real amount, not one message."""
_KEEP_SHARE = 0.25  # of the window, at most, for the exchanges kept word for word


@dataclass(frozen=True)
class CompactionPlan:
    """A compaction worked out and not made (:meth:`ContextCompressor.preview`): the summary
    that would replace the history, the next request's tokens before and (reckoned) after, the
    terms the summary and the notes would not hold (the archive still would), and the messages
    carried over word for word.

    ``drafted`` is the model's summary; ``summary`` differs from it once a person edited it
    (:meth:`ContextCompressor.with_summary`), and is then written as the person left it, with
    no summary marker. The transcript the summary replaces and the speakers it names are kept,
    so that any summary is measured against them the same way."""

    summary: str
    tokens_before: int
    tokens_after: int | None
    missing: list[str]
    kept: list[dict[str, Any]] = field(default_factory=list, repr=False)
    current: list[dict[str, Any]] = field(default_factory=list, repr=False)
    history_length: int = field(default=0, repr=False)
    fingerprint: str = field(default="", repr=False)
    drafted: str = field(default="", repr=False)
    transcript: str = field(default="", repr=False)
    speakers: tuple[str, ...] = field(default=(), repr=False)
    summarized: int = field(default=0, repr=False)
    """How many messages the summary replaces."""

    @property
    def edited(self) -> bool:
        """Whether the summary is not the model's as it wrote it (a person's, or given)."""
        return self.summary.strip() != self.drafted.strip()

    @property
    def written(self) -> str:
        """What the memory holds afterwards: the model's summary marked as one, or a person's
        as they left it."""
        return self.summary if self.edited else f"{SUMMARY_MARKER}\n{self.summary}"

    def fresh(self, agent: Any) -> bool:
        """Whether ``agent``'s memory is as it was when this plan was worked out (an agent
        built on a memory holds it as one preloaded message: its length alone says little)."""
        history = agent.short_memory.conversation_history
        return self.history_length == len(history) and self.fingerprint in ("", _digest(history))

    def check(self, agent: Any) -> None:
        """``CompactionError`` if ``agent``'s memory changed since this plan was worked out."""
        if not self.fresh(agent):
            raise CompactionError(
                "the memory changed since the preview: nothing was compacted; preview again"
            )


def _digest(history: list[dict[str, Any]]) -> str:
    """A fingerprint of a history's roles and contents."""
    text = json.dumps([[m.get("role"), m.get("content")] for m in history], default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ContextCompressor:
    """Compacts an agent's memory once it fills ``threshold`` of the agent's context window.

    ``summarizer_model`` defaults to the agent's own model (and its endpoint and key). In a
    compaction during a run, the last ``keep_exchanges`` exchanges (a user message and what
    followed it; 0 for none) are carried over word for word after the summary, as long as they
    fit a quarter of the window. What each compaction did, and the names, numbers, dates and
    identifiers the summary left out (they stay in the archive), is in ``last_compaction`` and
    beside the archive. ``summarizer_max_tokens`` bounds the summary; left unset, it is 4000
    and at most a tenth of the agent's window. With ``keep_dropped`` (the default) the summary
    ends with the identifiers, numbers and dates it dropped, word for word, as many as fit that
    bound again, most specific first: facts a summarizer tends to lose stay in every request.

    The model is called through this module's ``completion`` (litellm's, with nbmemory's key
    check and errors), so tests written for swarms can patch
    ``swarms.agents.context_compressor.completion`` here too. Like swarms' compressor, it works
    on any agent-like object with ``short_memory`` (an nbmemory ``Conversation``),
    ``context_length`` and ``model_name``; nbmemory's ``Agent`` adds what it knows (its next
    request's tokens, pinned notes, endpoint, retries).
    """

    def __init__(
        self,
        threshold: float = DEFAULT_THRESHOLD,
        summarizer_model: str | None = None,
        summarizer_temperature: float | None = None,
        summarizer_max_tokens: int | None = None,
        keep_exchanges: int = 1,
        keep_dropped: bool = True,
    ) -> None:
        self._max_tokens_given = summarizer_max_tokens is not None
        if summarizer_max_tokens is None:
            summarizer_max_tokens = DEFAULT_SUMMARY_TOKENS
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], not {threshold}")
        if summarizer_max_tokens <= 0:
            raise ValueError("summarizer_max_tokens must be positive")
        if keep_exchanges < 0:
            raise ValueError("keep_exchanges must be 0 or more")
        self.threshold = threshold
        self.summarizer_model = summarizer_model
        self.summarizer_temperature = summarizer_temperature
        self.summarizer_max_tokens = summarizer_max_tokens
        self.keep_exchanges = keep_exchanges
        self.keep_dropped = keep_dropped
        """Whether a summary carries, within its budget, the identifiers, numbers and dates it
        dropped, each with the words said before it (:func:`kept_facts`)."""
        self.last_compaction: Compaction | None = None
        """What the last compaction did (also written beside its archive)."""
        self.stuck: tuple[str, int] | None = None
        """The largest fixed part of the agent's request while no compaction can get it below
        the threshold (``run_settings.compaction_floor``): it then does not compact."""
        self._wait_until: int | None = None

    def __repr__(self) -> str:
        return (
            f"ContextCompressor(threshold={self.threshold}, "
            f"summarizer_model={self.summarizer_model!r})"
        )

    def tokens_used(self, agent: Any) -> int:
        """What the agent's next request costs (``Agent.next_request_tokens``): the figure the
        views show against this threshold. For another agent-like object, its history's tokens."""
        next_request = getattr(agent, "next_request_tokens", None)
        if callable(next_request):
            return next_request()
        return agent.short_memory.count_history_tokens()

    def usage_ratio(self, agent: Any) -> float:
        """:meth:`tokens_used` as a fraction of the agent's context window (0 without one)."""
        window = getattr(agent, "context_length", None)
        return self.tokens_used(agent) / window if window else 0.0

    def should_compress(self, agent: Any) -> bool:
        """Whether :meth:`usage_ratio` is at or past the threshold (constant time below it).

        Not while the fixed parts of the request and the smallest summary already reach the
        threshold: a compaction would change nothing, so the person is told once (a
        ``MemoryWarning`` naming the part that fills the window and what to change) and
        :attr:`stuck` says so. After a compaction that failed or left the request above the
        threshold, it waits until the request has grown by :data:`REGROW_SHARE` of the window.
        """
        if self.usage_ratio(agent) < self.threshold:
            return False
        if self._stuck(agent):
            return False
        return self._wait_until is None or self.tokens_used(agent) >= self._wait_until

    def _stuck(self, agent: Any) -> bool:
        """Whether no compaction can get ``agent`` below the threshold; warns when it becomes so."""
        parts = next_request_parts(agent) if _counts_parts(agent) else None
        window = getattr(agent, "context_length", 0)
        floor = compaction_floor(parts, window, self.threshold) if parts else None
        if floor is not None and floor != self.stuck:
            name = getattr(agent, "agent_name", "agent")
            warnings.warn(f"{name}: {stuck_words(*floor, window)}", MemoryWarning, stacklevel=4)
        self.stuck = floor
        return floor is not None

    def compress(
        self,
        agent: Any,
        *,
        during_run: bool = False,
        keep: Sequence[str] = (),
        plan: CompactionPlan | None = None,
    ) -> str | None:
        """Summarize the history and compact the memory; returns the summary, or ``None``.

        Between runs (the default) everything is summarized, so the memory holds the static
        context and the summary alone, as the spec says. ``during_run`` (how an agent calls it)
        carries the turn in progress (the latest task and what followed it) and the last
        ``keep_exchanges`` exchanges over word for word, so the model still sees its task.
        ``keep`` names terms a person wants kept (see :meth:`preview`); ``plan``, a preview a
        person approved, is carried out as it was shown (``CompactionError`` if the memory
        changed since).
        """
        if plan is None:
            plan = self._plan(agent, during_run=during_run, keep=keep)
            if isinstance(plan, str):
                return self._give_up(agent, plan)
        else:
            plan.check(agent)
        memory = agent.short_memory
        if _unchanged(memory, plan):
            return self._give_up(
                agent, "the memory holds only its summary, and it would be written again"
            )
        again = [*plan.kept, *plan.current]
        origins = _origins(memory, again)
        archive = memory.compact(plan.written, record=False)
        running = memory.provenance
        try:
            for message, origin in zip(again, origins, strict=True):
                memory.provenance = origin
                memory.add(message["role"], message["content"], timestamp=message.get("timestamp"))
        finally:
            memory.provenance = running
        self._wait_until = None
        self.last_compaction = Compaction(
            archive=archive,
            tokens_before=plan.tokens_before,
            tokens_after=self.tokens_used(agent),
            kept_messages=len(plan.kept),
            missing=plan.missing,
        )
        if archive is not None:
            write_record(memory.docs, archive, self.last_compaction)
        if self.usage_ratio(agent) >= self.threshold:
            self._give_up(agent, "it is still above the threshold after compaction")
        return plan.summary

    def preview(self, agent: Any, keep: Sequence[str] = ()) -> CompactionPlan:
        """What compacting ``agent`` now would do, changing nothing: the summary (written by
        the model, with the terms of ``keep`` and, within its budget, the identifiers, numbers
        and dates the summary dropped, kept word for word), the next request's tokens before and
        after, and the terms it would still drop. ``CompactionError`` says why there is none.
        Carry it out with ``compress(agent, plan=...)``."""
        name = getattr(agent, "agent_name", "agent")
        try:
            plan = self._plan(agent, during_run=False, keep=keep, raising=True)
        except ModelError as exc:  # kept as the cause: a view tells a failing model apart
            raise CompactionError(f"{name}: the summarizer failed: {exc}") from exc
        if isinstance(plan, str):
            raise CompactionError(f"{name}: {plan}")
        return plan

    def with_summary(self, agent: Any, plan: CompactionPlan, summary: str) -> CompactionPlan:
        """``plan`` writing ``summary`` instead (a person's edit of the model's, or one written
        by hand), measured as the model's is: the next request's tokens after, and the terms of
        the transcript that neither ``summary`` nor the pinned notes hold. No model is called.
        Every summary a compaction writes is measured here, so what a preview says it drops is
        what the compaction drops."""
        notes = agent.notes.text() if getattr(agent, "notes", None) is not None else ""
        measured = replace(plan, summary=summary)
        return replace(
            measured,
            tokens_after=_tokens_after(
                agent, plan.tokens_before, measured.written, [*plan.kept, *plan.current]
            ),
            missing=missing_terms(
                plan.transcript, f"{summary}\n{notes}", ignore=list(plan.speakers)
            ),
        )

    def given(self, agent: Any, summary: str) -> CompactionPlan:
        """The compaction of all of ``agent``'s history into ``summary``, written by hand (no
        model is called), measured as a preview is (:meth:`with_summary`)."""
        return self.with_summary(agent, self._unwritten(agent, during_run=False), summary)

    def _unwritten(self, agent: Any, *, during_run: bool) -> CompactionPlan:
        """The compaction to make now before any summary is written: what it summarizes, what
        it carries over and the tokens before."""
        memory = agent.short_memory
        static = getattr(memory, "static_messages", None)
        history = memory.conversation_history[len(static()) if static else 0 :]
        user = getattr(agent, "user_name", "User")
        turn = _turn_start(history, user) if during_run else len(history)
        earlier = [m for message in history[:turn] for m in _expanded(message)]
        current = history[turn:]
        kept = self._kept(agent, earlier) if during_run else []
        before = self.tokens_used(agent)
        if kept and self._room(agent, before, [*kept, *current]) < self._summary_tokens(agent):
            kept = []  # carrying them would leave the next turns no room: summarize them too
        summarized = earlier[: len(earlier) - len(kept)]
        lines = [line for message in summarized for line in _lines(message)]
        speakers = [getattr(agent, "agent_name", ""), user, *(m["role"] for m in summarized)]
        return CompactionPlan(
            summary="",
            tokens_before=before,
            tokens_after=None,
            missing=[],
            kept=kept,
            current=current,
            history_length=len(memory.conversation_history),
            fingerprint=_digest(memory.conversation_history),
            transcript="\n".join(lines),
            speakers=tuple(dict.fromkeys(speakers)),
            summarized=len(summarized),
        )

    def _plan(
        self, agent: Any, *, during_run: bool, keep: Sequence[str], raising: bool = False
    ) -> CompactionPlan | str:
        """The compaction to make now with the model's summary, or why there is none
        (``raising``: the model's error raised, not said)."""
        plan = self._unwritten(agent, during_run=during_run)
        if not plan.summarized:
            return "only the turn in progress is left to compress"
        room = self._room(agent, plan.tokens_before, [*plan.kept, *plan.current])
        budget = max(SMALLEST_SUMMARY_TOKENS, min(self._summary_tokens(agent), room))
        try:
            summary = self._summarize(agent, plan.transcript, budget).strip()
        except ModelError as exc:
            if raising:
                raise
            return f"the summarizer failed: {exc}"
        if not summary:
            return "the summarizer returned no text"
        if self.keep_dropped or keep:
            dropped = self.with_summary(agent, plan, summary).missing if self.keep_dropped else []
            counter = TokenCounter(agent.model_name)
            facts = max(0, min(self._summary_tokens(agent), room - counter.count(summary)))
            facts = self._summary_tokens(agent) if keep else facts  # a person's terms come first
            listed = kept_facts(plan.transcript, keep, dropped, facts, counter)
            summary = f"{summary}\n\n{listed}" if listed else summary
        return self.with_summary(agent, replace(plan, drafted=summary), summary)

    def _room(self, agent: Any, before: int, carried: list[dict[str, Any]]) -> int:
        """The tokens a summary may take for a compaction that carries ``carried`` to leave
        :data:`REGROW_SHARE` of the window below the threshold, room for the next turns (the
        summarizer's budget when the memory cannot count it)."""
        at = _tokens_after(agent, before, f"{SUMMARY_MARKER}\n", carried)
        if at is None:
            return self._summary_tokens(agent)
        window = agent.context_length
        return int(self.threshold * window - REGROW_SHARE * window) - at

    def maybe_compress(self, agent: Any) -> str | None:
        """Compress if :meth:`should_compress`; returns the summary, or ``None``.

        As in swarms, a failure is a warning, never an exception: compaction is all or nothing,
        so the memory is then as it was.
        """
        if not self.should_compress(agent):
            return None
        try:
            return self.compress(agent)
        except Exception as exc:
            warnings.warn(f"context compression failed: {exc!r}; memory is unchanged", stacklevel=2)
            return None

    def _kept(self, agent: Any, earlier: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The last ``keep_exchanges`` exchanges of ``earlier`` that fit a quarter of the
        window, carried over word for word; at least one message is left to summarize."""
        if not self.keep_exchanges:
            return []
        user = getattr(agent, "user_name", "User")
        starts = [i for i, m in enumerate(earlier) if m["role"] == user and i > 0]
        counter = TokenCounter(agent.model_name)
        budget = agent.context_length * _KEEP_SHARE
        chosen = len(earlier)
        for start in reversed(starts[-self.keep_exchanges :]):
            size = sum(block_tokens(counter, m) for m in earlier[start:])
            if size > budget:
                break
            chosen = start
        return earlier[chosen:]

    def _give_up(self, agent: Any, reason: str) -> None:
        """Warn once and wait for the request to grow by :data:`REGROW_SHARE` of the window
        before the next attempt."""
        growth = math.ceil(REGROW_SHARE * getattr(agent, "context_length", 0))
        self._wait_until = self.tokens_used(agent) + growth
        warnings.warn(
            f"{getattr(agent, 'agent_name', 'agent')}: context compression skipped ({reason}); "
            f"memory is left as it is and compression waits until the request has grown by "
            f"{growth:,} tokens",
            stacklevel=3,
        )

    # ------------------------------------------------------------------------------------------

    def _model(self, agent: Any) -> tuple[str, dict[str, Any]]:
        own = getattr(agent, "model_name", None)
        if not (self.summarizer_model or own):
            raise ValueError("No summarizer_model set, and the agent has no model_name to use")
        if self.summarizer_model and self.summarizer_model != own:
            return self.summarizer_model, {}
        endpoint = {key: getattr(agent, key, None) for key in ("api_base", "api_key")}
        return own, endpoint

    def _window(self, agent: Any, model: str) -> int:
        return agent.context_length if model == agent.model_name else context_window(model)

    def _summary_tokens(self, agent: Any) -> int:
        """The summary's length: ``summarizer_max_tokens`` as given; by default at most a tenth
        of the window.

        A tenth leaves room for a transcript that fills the threshold, so that it goes to the
        summarizer in one request instead of chunks.
        """
        if self._max_tokens_given:
            return self.summarizer_max_tokens
        return min(self.summarizer_max_tokens, max(64, agent.context_length // 10))

    def _ask(self, agent: Any, template: str, text: str, budget: int) -> str:
        model, endpoint = self._model(agent)
        response = completion(
            model=model,
            messages=[
                {"role": "system", "content": _instructions(agent)},
                {"role": "user", "content": template.format(history=text)},
            ],
            temperature=self.summarizer_temperature,
            max_tokens=budget,
            timeout=getattr(agent, "timeout", 600),
            max_retries=getattr(agent, "max_retries", 2),
            **endpoint,
        )
        return response.choices[0].message.content or ""

    def _summarize(self, agent: Any, history: str, budget: int | None = None) -> str:
        """Summarize the transcript ``history`` in at most ``budget`` tokens (default: the
        summary's length, :meth:`_summary_tokens`), in chunks of lines that fit the
        summarizer's window, never truncating."""
        model, _ = self._model(agent)
        counter = TokenCounter(model)
        budget = budget or self._summary_tokens(agent)
        size = max(self._window(agent, model) - self._summary_tokens(agent) - 200, 200)
        summaries = [
            self._ask(agent, COMPRESSION_USER_TEMPLATE, chunk, budget)
            for chunk in _chunks(history.split("\n"), counter, size)
        ]
        while len(summaries) > 1:
            merged = _chunks(summaries, counter, size)
            if len(merged) >= len(summaries):  # each summary fills a window: keep them all
                return "\n\n".join(summaries)
            summaries = [self._ask(agent, _MERGE_TEMPLATE, chunk, budget) for chunk in merged]
        return summaries[0]


def _counts_parts(agent: Any) -> bool:
    """Whether ``agent`` can count the parts of its next request (``next_request_parts``):
    nbmemory's ``Agent`` can, not every agent-like object."""
    return callable(getattr(agent, "run_settings", None))


def _origins(memory: Any, messages: list[dict[str, Any]]) -> list[Provenance | None]:
    """Where each message a compaction keeps came from, as a copy (see
    ``nbmemory.memory.provenance``): added again after the summary, it keeps its cell."""
    docs = memory.docs
    lineage = provenance.lineage(docs) if docs is not None else provenance.EMPTY
    found = [lineage.provenance_of(message) for message in messages]
    return [replace(origin, copied=True) if origin else None for origin in found]


def _unchanged(memory: Any, plan: CompactionPlan) -> bool:
    """Whether carrying out ``plan`` would leave ``memory`` as it is: it holds only a summary,
    and the plan writes the same one (its archive would be a copy of the memory)."""
    static = getattr(memory, "static_messages", None)
    history = memory.conversation_history[len(static()) if static else 0 :]
    return (
        not plan.kept
        and not plan.current
        and len(history) == 1
        and content_text(history[0]["content"]).strip() == plan.written.strip()
    )


def _tokens_after(
    agent: Any, before: int, written: str, carried: list[dict[str, Any]]
) -> int | None:
    """The next request's tokens once the memory holds ``written`` (the summary as stored) and
    ``carried``: ``before`` with the memory's part replaced (``None`` for a conversation that
    cannot count it)."""
    memory = agent.short_memory
    counting = getattr(memory, "memory_tokens", None)
    if counting is None:
        return None
    now = memory.context_tokens() - memory.static_tokens()
    after = counting([{"role": "System", "content": written}, *carried])
    return before - now + after


KEPT_HEADING = "Kept word for word:"
"""Opens the list of terms a summary carries as they were said (see :func:`kept_facts`)."""
_LEAD_WORDS = 4


def kept_facts(
    transcript: str,
    chosen: Sequence[str],
    dropped: Sequence[str],
    budget: int,
    counter: TokenCounter,
) -> str:
    """``KEPT_HEADING`` and, one per line, as many as fit ``budget`` tokens, terms of
    ``transcript`` each with the few words said before its last mention ("heron vault is
    BA1234"): the ``chosen`` ones
    (a person's) first, then the ``dropped`` ones, most specific first (codes and dates, then
    numbers and acronyms, then names), the latest mentioned first among equals. Empty when none
    is in the transcript."""
    picked = list(dict.fromkeys(t for t in chosen if t.strip()))
    rest = sorted(
        (t for t in dict.fromkeys(dropped) if t not in picked),
        key=lambda t: (-_specificity(t), -transcript.rfind(t)),
    )
    spans: list[tuple[int, int]] = []  # in the transcript; ones that overlap are merged
    used = counter.count(KEPT_HEADING)
    for term in [*picked, *rest]:
        at = transcript.rfind(term)
        if at < 0 or any(start <= at and at + len(term) <= end for start, end in spans):
            continue
        line_start = transcript.rfind("\n", 0, at) + 1
        label = transcript.find(": ", line_start, at)  # "Role: " opens each transcript line
        line_start = label + 2 if label >= 0 else line_start
        lead = re.findall(r"\S+\s*$|\S+\s+", transcript[max(line_start, at - 80) : at])
        span = (at - len("".join(lead[-_LEAD_WORDS:])), at + len(term))
        joined = [old for old in spans if old[0] <= span[1] and span[0] <= old[1]]
        merged = (min([span[0], *(o[0] for o in joined)]), max([span[1], *(o[1] for o in joined)]))
        cost = counter.count(f"\n- {transcript[merged[0] : merged[1]]}") - sum(
            counter.count(f"\n- {transcript[o[0] : o[1]]}") for o in joined
        )
        if used + cost > budget:
            break
        spans = [old for old in spans if old not in joined] + [merged]
        used += cost
    listed = [f"\n- {transcript[start:end]}" for start, end in spans]
    return f"{KEPT_HEADING}{''.join(listed)}" if listed else ""


def _specificity(term: str) -> int:
    """How much a term pins down: a code or a date 3, a number or an acronym 2, a name 1, a
    short number 0."""
    digits = sum(c.isdigit() for c in term)
    if (digits and any(c.isalpha() for c in term)) or re.match(r"\d{4}-\d\d-\d\d", term):
        return 3
    if digits:
        return 2 if digits >= 3 else 0
    return 2 if sum(c.isupper() for c in term) > 1 else 1


def _instructions(agent: Any) -> str:
    """What the summarizer is told: what to keep, and what the pinned notes already hold."""
    notes = getattr(agent, "notes", None)
    pinned = notes.text().strip() if notes is not None else ""
    return (
        f"{COMPRESSION_SYSTEM_PROMPT}\n\n{_NOTES}\n\n{pinned}"
        if pinned
        else COMPRESSION_SYSTEM_PROMPT
    )


def _expanded(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The preloaded memory as the messages it holds; any other message as it is."""
    if message["role"] == "System" and isinstance(message["content"], str):
        remembered = preloaded_messages(message["content"])
        if remembered is not None:
            return [{"timestamp": "", **m} for m in remembered]
    return [message]


def _lines(message: dict[str, Any]) -> list[str]:
    """A message as a plain ``Role: text`` transcript line, never file markup.

    An earlier summary is marked as such, not nested; requests to call tools and what recall
    returned are left out (the results of other tools stay: they are what the tools said).
    """
    content = message["content"]
    if isinstance(content, dict):
        if content.get("tool_calls") or content.get("name") in RECALL_TOOLS:
            return []
        if isinstance(content.get("content"), str):
            content = content["content"]
    text = content_text(content)
    if text.startswith(SUMMARY_MARKER):
        return [f"Earlier summary: {text.removeprefix(SUMMARY_MARKER).strip()}"]
    return [f"{message['role']}: {text}"] if text.strip() else []


def _turn_start(history: list[dict[str, Any]], user: str) -> int:
    """Where the turn in progress starts: the last message from the user."""
    for i in range(len(history) - 1, -1, -1):
        if history[i]["role"] == user:
            return i
    return len(history)


def _chunks(lines: list[str], counter: TokenCounter, budget: int) -> list[str]:
    """Group lines into texts of at most ``budget`` tokens; a longer line is cut into pieces."""
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for line in lines:
        size = counter.count(line)
        pieces = [line] if size <= budget else _split(line, counter, budget)
        for piece in pieces:
            size = counter.count(piece)
            if current and used + size > budget:
                chunks.append("\n".join(current))
                current, used = [], 0
            current.append(piece)
            used += size
    if current:
        chunks.append("\n".join(current))
    return chunks


def _split(text: str, counter: TokenCounter, budget: int) -> list[str]:
    """Cut a text too long for one request into pieces of about ``budget`` tokens, between words."""
    chars = max(1, len(text) * budget // max(counter.count(text), 1) * 9 // 10)
    pieces, current = [], ""
    for word in re.findall(r"\S+\s*|\s+", text):
        if current and len(current) + len(word) > chars:
            pieces.append(current)
            current = ""
        current += word
    return [*pieces, current] if current else pieces
