"""nbmemory's persona in Jupyter AI's chat, driven as Jupyter AI drives it: a real chat model
(jupyterlab_chat's ``WsChatModel``, the chat file on disk), Jupyter AI's ``PersonaManager``
finding the persona through its entry point, and messages routed to it by their metadata."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import mistune
import pytest
from IPython import get_ipython
from IPython.testing.globalipapp import start_ipython
from jupyter_ai_persona_manager.persona_manager import PersonaManager
from jupyterlab_chat.models import Message
from jupyterlab_chat.websocket_model import WsChatModel

from nbmemory import Agent
from nbmemory.jupyter.persona import COMPACT, NO_TEXT, STOPPED, NbMemoryPersona
from nbmemory.jupyter.widget import MemoryWidget
from nbmemory.memory.note_history import pending
from nbmemory.views.read_model import ReadModel
from test_render import Tags

PERSONA_ID = "jupyter-ai-personas::nbmemory::NbMemoryPersona"
HOSTILE = '<img src=x onerror="window.__pwned=1"> ![t](http://127.0.0.1:9/t.png)'


class Chat:
    """One chat file with Jupyter AI's personas in it, as the server sets it up."""

    def __init__(self, root: Path, path: str, config: dict | None = None) -> None:
        from traitlets.config import Config

        self.model = WsChatModel(path, root)
        self.model.load_from_file()
        self.manager = PersonaManager(
            chat=self.model,
            root_dir=str(root),
            event_loop=asyncio.get_running_loop(),
            config=Config(config or {}),
        )
        self.persona = self.manager.personas[PERSONA_ID]

    async def say(self, text: str) -> str:
        """Send ``text`` to the persona as the chat input does; the persona's reply."""
        before = self.send(text)
        await until(lambda: not self.persona.processing and len(self.model.get_messages()) > before)
        return self.model.get_messages()[-1].body

    def send(self, text: str) -> int:
        """Send ``text`` without waiting for the reply; how many messages the chat had."""
        before = len(self.model.get_messages())
        message = Message(
            body=text,
            id=str(uuid.uuid4()),
            time=time.time(),
            sender="someone",
            metadata={PersonaManager.TO_PERSONA_METADATA_KEY: PERSONA_ID},
        )
        self.manager.on_chat_message(self.model.get_id(), message)
        return before

    async def close(self) -> None:
        await self.manager.shutdown_personas()


async def until(condition: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the persona did not answer"
        await asyncio.sleep(0.02)


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    root = tmp_path / "lab"
    root.mkdir()
    return root


def test_jupyter_ai_finds_the_persona_by_its_entry_point(lab):
    async def main() -> None:
        chat = Chat(lab, "a.chat")
        assert isinstance(chat.persona, NbMemoryPersona)
        assert chat.persona.as_user().name == "nbmemory"
        assert Path(chat.persona.defaults.avatar_path).is_file()
        await chat.close()

    asyncio.run(main())


def test_a_fact_from_an_earlier_chat_is_answered_after_a_restart(lab, workspace):
    async def first() -> None:
        chat = Chat(lab, "monday.chat")
        await chat.say("Our warehouse project is code-named BLUEFIN-7.")
        await chat.close()

    async def later() -> str:
        chat = Chat(lab, "friday.chat")  # a new chat, a new persona and agent: a restart
        answer = await chat.say("What is the warehouse project code-named?")
        await chat.close()
        return answer

    asyncio.run(first())
    assert "BLUEFIN-7" in asyncio.run(later())
    said = ReadModel().messages("chat", newest_first=False).items
    assert said[0].text == "Our warehouse project is code-named BLUEFIN-7."  # %memory chat


def test_a_note_the_model_proposes_is_said_in_the_chat_with_how_to_accept_it(lab, workspace):
    async def main() -> str:
        chat = Chat(lab, "notes.chat")
        said = await chat.say("Remember: the vault code rotates on <b>Mondays</b>.")
        await chat.close()
        return said

    said = asyncio.run(main())
    assert said.startswith("1 note edit waits for your review (not pinned yet):")
    assert "`%memory chat --accept 1`" in said and "`nbmemory notes chat --accept 1`" in said
    assert "&lt;b>Mondays&lt;/b>" in said, "the model's text stays text"
    assert ReadModel().notes("chat") == []
    assert [c.n for c in pending(ReadModel().note_history("chat"))] == [1]


def test_the_chats_agent_is_the_notebooks_agent(lab, workspace, monkeypatch):
    monkeypatch.delenv("NBMEMORY_MODEL", raising=False)
    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "nbmemory")

    async def main() -> str:
        chat = Chat(lab, "a.chat")
        await chat.say("The budget is 40000 EUR.")
        ip.run_cell_magic("agent", "chat", "The deadline is 2026-03-01.")  # a notebook cell
        answer = await chat.say("When is the deadline?")  # the same persona, told since
        await chat.close()
        return answer

    try:
        assert "2026-03-01" in asyncio.run(main())
        shown = repr(ip.run_line_magic("memory", "chat"))  # %memory chat
        continued = ip.run_cell_magic("agent", "chat", "What is the budget?")
    finally:
        ip.run_line_magic("unload_ext", "nbmemory")
    assert "The budget is 40000 EUR." in shown and "When is the deadline?" in shown
    assert "40000 EUR" in continued  # %%agent chat continues the chat
    page = ReadModel().messages("chat", newest_first=False)
    assert [item.text for item in page.items][:1] == ["The budget is 40000 EUR."]


def test_each_answer_starts_from_all_of_the_memory(lab, openai_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    config = {"NbMemoryPersona": {"model": "openai/fake-model", "api_base": openai_server.url}}

    async def main() -> None:
        chat = Chat(lab, "a.chat", config)
        await chat.say("The budget is 40000 EUR.")
        Agent(agent_name="chat", persistent_memory=True).run("The deadline is 2026-03-01.")
        await chat.say("When is the deadline?")  # the same persona: its agent is built again
        await chat.close()

    asyncio.run(main())
    sent = json.dumps(openai_server.requests[-1]["messages"])
    assert "The deadline is 2026-03-01." in sent and "The budget is 40000 EUR." in sent


def test_the_gauge_gets_the_widgets_figure(lab, workspace):
    async def main() -> Chat:
        chat = Chat(lab, "a.chat")
        assert chat.persona.get_usage().context_tokens is None  # no agent yet: nothing to show
        await chat.say("The budget is 40000 EUR.")
        await chat.close()
        return chat

    usage = asyncio.run(main()).persona.get_usage()
    widget = MemoryWidget("chat")
    try:
        widget.refresh()  # what its polling thread does
        assert usage.context_tokens == widget.info["tokens"] == ReadModel().usage("chat").tokens
        assert usage.context_size == widget.info["context_length"]
        shown = f"{usage.context_tokens:,} of {usage.context_size:,} tokens"
        assert widget.info["words"]["usage"].startswith(shown)
    finally:
        widget.close()


def test_compact_replaces_the_memory_with_a_summary_and_says_so(lab, workspace):
    async def main() -> tuple[str, str, int | None]:
        chat = Chat(lab, "a.chat")
        for fact in ("The budget is 40000 EUR.", "The vendor is Acme.", "Launch is in May."):
            await chat.say(fact)
        before = chat.persona.get_usage().context_tokens
        reply = await chat.say(COMPACT)
        refused = await chat.say(f"{COMPACT} now please")
        await chat.close()
        return reply, refused, before

    reply, refused, before = asyncio.run(main())
    compaction = ReadModel().compactions("chat")[-1]
    assert reply.startswith("Compacted chat: memory ")
    assert compaction.figures in reply  # "memory 669 → 166 tokens · next request ..."
    assert compaction.request_before == before
    assert "takes nothing after it" in refused and len(ReadModel().compactions("chat")) == 1


def test_compact_before_any_memory_is_a_one_line_message(lab):
    async def main() -> str:
        chat = Chat(lab, "a.chat")
        reply = await chat.say(COMPACT)
        await chat.close()
        return reply

    assert asyncio.run(main()) == "nbmemory: chat has no memory to compact yet"
    assert not ReadModel().exists("chat")


def test_hostile_model_output_reaches_the_chat_as_text(lab, openai_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    openai_server.reply(f"Here: {HOSTILE} and `<b>code</b>`")
    config = {
        "NbMemoryPersona": {
            "model": "openai/fake-model",
            "api_base": openai_server.url,
        }
    }

    async def main() -> str:
        chat = Chat(lab, "a.chat", config)
        answer = await chat.say("Say something")
        await chat.close()
        return answer

    body = asyncio.run(main())
    html = mistune.html(body)  # a renderer with raw HTML on, as the chat's
    assert {tag for tag, _ in Tags(html).found} <= {"p", "code"}
    assert "&lt;img src=x onerror=" in html and "<code>&lt;b&gt;code&lt;/b&gt;</code>" in html
    said = ReadModel().messages("chat", newest_first=False).items[-1].text
    assert said == f"Here: {HOSTILE} and `<b>code</b>`"  # the memory keeps the model's text


def test_an_empty_answer_is_said_in_the_chat_not_posted_empty(lab, openai_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    openai_server.reply("")
    config = {"NbMemoryPersona": {"model": "openai/fake-model", "api_base": openai_server.url}}

    async def main() -> str:
        chat = Chat(lab, "a.chat", config)
        answer = await chat.say("Say nothing")
        await chat.close()
        return answer

    assert asyncio.run(main()) == NO_TEXT


def test_the_stop_button_ends_the_answer_and_none_of_it_is_saved(lab, openai_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    openai_server.reply("A long answer nobody waited for.", delay=3)
    config = {"NbMemoryPersona": {"model": "openai/fake-model", "api_base": openai_server.url}}

    async def main() -> str:
        chat = Chat(lab, "a.chat", config)
        before = chat.send("Tell me everything")
        await until(lambda: chat.persona.processing)
        await chat.persona.cancel_response()  # what the chat's stop button calls
        await until(lambda: not chat.persona.processing and len(chat.model.get_messages()) > before)
        reply = chat.model.get_messages()[-1].body
        await chat.close()
        return reply

    assert asyncio.run(main()) == STOPPED
    said = [item.text for item in ReadModel().messages("chat", newest_first=False).items]
    assert said == ["Tell me everything"]  # the task is kept, the unfinished answer is not


def test_a_model_without_its_key_is_one_line_in_the_chat(lab, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    async def main() -> str:
        chat = Chat(lab, "a.chat", {"NbMemoryPersona": {"model": "gpt-4o"}})
        reply = await chat.say("Hello")
        await chat.close()
        return reply

    reply = asyncio.run(main())
    assert reply.startswith("nbmemory: ") and "OPENAI_API_KEY" in reply and "\n" not in reply


def test_the_agent_name_is_a_setting_and_a_bad_one_is_refused(lab):
    async def main() -> None:
        chat = Chat(lab, "a.chat", {"NbMemoryPersona": {"agent_name": "Analyst"}})
        await chat.say("The budget is 40000 EUR.")
        await chat.close()
        with pytest.raises(Exception, match="must not contain"):
            NbMemoryPersona(parent=chat.manager, chat=chat.model, agent_name="../x")

    asyncio.run(main())
    assert ReadModel().names() == ["Analyst"]
