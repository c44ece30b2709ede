"""nbmemory's persona for Jupyter AI: the chat's answers come from an nbmemory agent.

Jupyter AI finds :class:`NbMemoryPersona` through the entry point group
``jupyter_ai.personas`` and makes one per chat. Every chat talks to the same workspace agent
(``c.NbMemoryPersona.agent_name``, default ``chat``), kept where the nbmemory server extension
keeps its agents (``$WORKSPACE_DIR`` and ``$NBMEMORY_STORE``, which it exports), so what one
chat said is remembered in the next, after a restart, and in a notebook: ``%memory chat`` shows
it and ``%%agent chat`` continues it. The agent has its recall and pinned notes, compresses as
every agent does, and ``/compact`` compacts it on demand.

Answers stream into the chat as Markdown whose raw HTML, links and images show as text
(:func:`nbmemory.jupyter.render.chat_markdown`): the chat renders Markdown with HTML on. After
each answer the persona reports the agent's next-request tokens of its window, read through the
read model, to the usage gauge of Jupyter AI's chat input: the widget's and the panel's figure.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyter_ai_persona_manager import BasePersona, PersonaDefaults
from jupyter_ai_persona_manager.awareness_models import CommandOption
from jupyter_ai_persona_manager.awareness_models import Usage as ChatUsage
from jupyterlab_chat.models import Message, NewMessage
from traitlets import TraitError, Unicode, validate

from nbmemory.agent.agent import Agent
from nbmemory.errors import AgentNotFoundError, InvalidAgentNameError, NbmemoryError
from nbmemory.jupyter.render import chat_markdown
from nbmemory.store import Workspace
from nbmemory.store.folders import validate_agent_name
from nbmemory.views.answers import Usage
from nbmemory.views.read_model import ReadModel
from nbmemory.wording import review_head

AVATAR = Path(__file__).with_name("static") / "persona.svg"
COMPACT = "/compact"
COMMANDS = [
    CommandOption(
        name=COMPACT,
        description="Compact the agent's memory now: a summary replaces it, the transcript "
        "goes to its archive",
    )
]
STOPPED = "*Stopped: this unfinished answer was not saved.*"
"""Added under what had streamed when the chat's stop button ended an answer (as an
interrupted ``%%agent`` cell says)."""
NO_TEXT = "(The model answered with no text.)"
"""Shown for an empty answer, which the chat would show as an empty message."""
UPDATE_EVERY = 0.1
"""Seconds between two updates of a streaming answer (each one rewrites the chat file)."""


class NbMemoryPersona(BasePersona):
    """A Jupyter AI persona whose memory is an nbmemory workspace agent (see the module)."""

    agent_name = Unicode(
        "chat",
        help="""The workspace agent every chat with this persona talks to: its memory is
        agents/NAME/MEMORY.md of the nbmemory server extension's workspace, so %memory NAME
        shows what the chat said and %%agent NAME continues it.""",
    ).tag(config=True)

    model = Unicode(
        "",
        help="""The agent's model (any litellm model name). Empty: $NBMEMORY_MODEL, else
        nbmemory's offline model, which needs no key.""",
    ).tag(config=True)

    api_base = Unicode(
        "", help="An OpenAI-compatible server for the model (a LiteLLM proxy, Ollama, vLLM)."
    ).tag(config=True)

    @validate("agent_name")
    def _check_name(self, proposal: dict[str, Any]) -> str:
        try:
            return validate_agent_name(proposal["value"])
        except InvalidAgentNameError as exc:
            raise TraitError(f"NbMemoryPersona.agent_name: {exc}") from None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.workspace = Workspace.from_env()
        """The server extension's workspace, which it exported before any chat opened."""
        self.reader = ReadModel(self.workspace)
        self._agent: Agent | None = None
        self._seen: str | None = None
        self._stop = threading.Event()

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(
            name="nbmemory",
            description=(
                f"Answers with persistent memory: the nbmemory agent {self.agent_name!r}, "
                "shared by every chat and by notebooks (%memory, %%agent)."
            ),
            avatar_path=str(AVATAR),
            system_prompt="",
        )

    async def prepare(self) -> None:
        """Advertise ``/compact`` and show the agent's usage before the first message."""
        self.report_slash_commands(COMMANDS)
        await self.report_agent_usage()

    async def process_message(self, message: Message) -> None:
        """Answer ``message`` with the agent, or run ``/compact``."""
        command, _, rest = message.body.strip().partition(" ")
        try:
            if command == COMPACT:
                await self.compact(rest.strip())
            else:
                waiting = self._waiting()
                await self.answer(message.body)
                self._tell_new_proposals(waiting)
        except NbmemoryError as exc:
            self.send_message(chat_markdown(f"nbmemory: {exc}"))
        await self.report_agent_usage()

    def _waiting(self) -> set[int]:
        """The numbers of the agent's note edits that wait for a person's review."""
        try:
            return {change.n for change in self.reader.waiting_notes(self.agent_name)}
        except NbmemoryError:  # no memory yet: nothing waits
            return set()

    def _tell_new_proposals(self, before: set[int]) -> None:
        """Say in the chat which note edits this answer proposed and how a person accepts
        them: the model's edits wait for review, and the chat is where the person is."""
        new = [c for c in self.reader.waiting_notes(self.agent_name) if c.n not in before]
        name = self.agent_name
        lines = [
            f"- {change.describe()}: accept it with `%memory {name} --accept {change.n}` in a "
            f"notebook, `nbmemory notes {name} --accept {change.n}`, or the Agent Memory panel"
            for change in new
        ]
        if lines:
            said = f"{review_head(len(new))}\n\n" + "\n".join(lines)
            self.send_message(chat_markdown(said))

    # ------------------------------------------------------------------------------------------
    # The agent

    def agent(self) -> Agent:
        """The workspace agent, built again when its memory changed since this persona last
        wrote it (another chat, a notebook, the panel), so each answer starts from all of it."""
        version = self.reader.version(self.agent_name)
        if self._agent is None or version != self._seen:
            if self._agent is not None:
                self._agent.short_memory.close()
            self._agent = Agent(
                agent_name=self.agent_name,
                model_name=self.model or None,
                api_base=self.api_base or None,
                persistent_memory=True,
                workspace=self.workspace,
            )
        return self._agent

    def _done(self) -> None:
        """Remember the memory's version as this persona left it."""
        self._seen = self.reader.version(self.agent_name)

    async def answer(self, task: str) -> str:
        """Run ``task`` in a worker thread, streaming the answer into the chat as it comes."""
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue[str | None] = asyncio.Queue()
        self._stop = stop = threading.Event()

        def run() -> str:
            agent = self.agent()
            try:
                return agent.run(task, streaming_callback=_on_loop(loop, pieces.put_nowait, stop))
            finally:
                self._done()
                loop.call_soon_threadsafe(pieces.put_nowait, None)

        running = asyncio.ensure_future(asyncio.to_thread(run))
        await self._stream(pieces, running)
        return await running

    async def _stream(
        self, pieces: asyncio.Queue[str | None], running: asyncio.Future[str]
    ) -> None:
        """Show the answer as it grows (the whole text, escaped, at most every
        :data:`UPDATE_EVERY` seconds), then as the agent kept it."""
        stream_id: str | None = None
        text, shown_at = "", 0.0
        self.set_status()
        try:
            while (piece := await pieces.get()) is not None:
                text += piece
                if stream_id is None:
                    stream_id = self.chat.add_message(NewMessage(body="", sender=self.id))
                if time.monotonic() - shown_at >= UPDATE_EVERY:
                    self._show(stream_id, text)
                    shown_at = time.monotonic()
            try:
                answer = await running
            except _Stopped:
                stopped = f"{text}\n\n{STOPPED}" if text else STOPPED
                if stream_id is None:
                    self.send_message(chat_markdown(stopped))
                else:
                    self._show(stream_id, stopped)
                return
            except Exception:
                if stream_id is not None:
                    self._show(stream_id, text)
                raise
            shown = answer if answer.strip() else NO_TEXT
            if stream_id is None:
                self.send_message(chat_markdown(shown))
            else:
                self._show(stream_id, shown)
        finally:
            self.clear_status()

    def _show(self, stream_id: str, text: str) -> None:
        """Replace the streamed message's body. No mention in it calls another persona: the
        text is the model's, not the user's."""
        self.chat.update_message(
            Message(id=stream_id, body=chat_markdown(text), time=time.time(), sender=self.id),
            append=False,
            trigger_actions=[],
        )

    async def cancel_response(self) -> None:
        """The chat's stop button: the answer streaming now ends at its next piece, and is
        not saved (the task is: memory holds what was asked)."""
        self._stop.set()

    async def compact(self, extra: str) -> None:
        """``/compact``: the model's summary replaces the memory; the figures as every view
        words them."""
        if extra:
            self.send_message(
                chat_markdown(f"{COMPACT} takes nothing after it (it compacts {self.agent_name}).")
            )
            return
        if not await asyncio.to_thread(self.reader.exists, self.agent_name):
            raise AgentNotFoundError(f"{self.agent_name} has no memory to compact yet")

        def compact() -> str:
            try:
                compaction = self.agent().compact()
            finally:
                self._done()
            done = self.reader.compactions(self.agent_name)
            figures = done[-1].figures if compaction.archive and done else "nothing archived"
            report = f"Compacted {self.agent_name}: {figures}"
            if compaction.missing:
                left = compaction.missing
                shown = ", ".join(left[:12]) + (", …" if len(left) > 12 else "")
                report += f"\n\nLeft out of the summary (still in the archive): {shown}"
            return report

        self.set_status("is compacting...")
        try:
            report = await asyncio.to_thread(compact)
        finally:
            self.clear_status()
        self.send_message(chat_markdown(report))

    # ------------------------------------------------------------------------------------------
    # Usage

    def usage(self) -> Usage | None:
        """The agent's next request against its window, as every view reads it (``None``
        before the agent has a memory, or when it cannot be read: the gauge keeps what it
        showed, and the log says why)."""
        try:
            return self.reader.usage(self.agent_name)
        except AgentNotFoundError:
            return None
        except NbmemoryError as exc:
            self.log.warning("nbmemory: no usage for %s: %s", self.agent_name, exc)
            return None

    async def report_agent_usage(self) -> None:
        """Give Jupyter AI's usage gauge the agent's figure (tokens of its window)."""
        usage = await asyncio.to_thread(self.usage)
        if usage is not None:
            self.report_usage(
                ChatUsage(context_tokens=usage.tokens, context_size=usage.context_length)
            )

    async def shutdown(self) -> None:
        await super().shutdown()
        if self._agent is not None:
            self._agent.short_memory.close()


class _Stopped(BaseException):
    """Raised in the worker thread by the first piece streamed after the stop button: like
    ``KeyboardInterrupt``, it passes every handler of an error and ends the run."""


def _on_loop(
    loop: asyncio.AbstractEventLoop, put: Callable[[str], None], stop: threading.Event
) -> Callable[[str], None]:
    """A streaming callback for a worker thread that hands each piece to ``loop``, until
    ``stop`` is set."""

    def callback(piece: str) -> None:
        if stop.is_set():
            raise _Stopped
        loop.call_soon_threadsafe(put, piece)

    return callback
