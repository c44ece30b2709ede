"""The nbmemory persona in JupyterLab with Jupyter AI 3.2, in a real Chromium: a fact given in
one chat answered in another after the server restarted, hostile model output shown as text,
and Jupyter AI's usage gauge showing the figure the widget and the panel show."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from browser import WAIT_MS, counting_server, jupyter_lab, lab_args, open_lab, require, screenshot
from nbmemory import Agent
from nbmemory.read_model import ReadModel

pytestmark = pytest.mark.browser

PERSONA_ID = "jupyter-ai-personas::nbmemory::NbMemoryPersona"


def persona_args(tmp_path: Path) -> tuple[str, ...]:
    """nbmemory's extensions, and the persona picked for every chat."""
    return lab_args(tmp_path, f"--PersonaManager.default_persona_id={PERSONA_ID}")


def open_chat(page, root: Path, name: str):
    """Open a new chat file in Lab; its input box."""
    (root / name).write_text(json.dumps({"messages": [], "users": {}, "metadata": {}}))
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", name)
    box = page.locator('.jp-chat-input-container textarea:not([aria-hidden="true"])').last
    box.wait_for()
    return box


def ask(page, box, text: str, replies_before: int):
    """Send ``text`` from the chat input; the persona's reply, once it is complete."""
    from playwright.sync_api import expect

    box.fill(text)
    box.press("Enter")
    replies = page.locator(".jp-chat-message").filter(has=page.get_by_text("nbmemory", exact=True))
    expect(replies).to_have_count(replies_before + 1, timeout=WAIT_MS)
    page.wait_for_function(
        "() => !document.querySelector('.jp-chat-writers')"
        " || !document.querySelector('.jp-chat-writers').textContent.includes('nbmemory')"
    )
    return replies.last.locator(".jp-chat-rendered-message")


def test_the_persona_remembers_across_chats_and_restarts_and_shows_text(
    tmp_path: Path, workspace: Path
) -> None:
    require("jupyterlab", "playwright", "jupyter_ai_persona_manager")
    from playwright.sync_api import expect

    root = tmp_path / "lab"
    root.mkdir()
    with counting_server() as tracker:
        args = persona_args(tmp_path)
        with jupyter_lab(root, extra_args=args) as server, open_lab(server) as page:
            box = open_chat(page, root, "monday.chat")
            ask(page, box, "Our warehouse project is code-named BLUEFIN-7.", 0)

        # Meanwhile a notebook's %%agent chat is told something hostile.
        pixel = f"{tracker.url}/pixel.png"
        hostile = f'The logo: <img src="{pixel}" onerror="window.__pwned=1"> ![logo]({pixel})'
        Agent(agent_name="chat", persistent_memory=True).run(hostile)

        (tmp_path / "again").mkdir()
        args = persona_args(tmp_path / "again")
        with jupyter_lab(root, extra_args=args) as server, open_lab(server) as page:
            box = open_chat(page, root, "friday.chat")
            answer = ask(page, box, "What is the warehouse project code-named?", 0)
            expect(answer).to_contain_text("BLUEFIN-7")

            logo = ask(page, box, "What is the logo?", 1)
            expect(logo).to_contain_text(f'<img src="{pixel}"')  # as the memory holds it
            expect(logo).to_contain_text(f"![logo]({pixel})")
            assert logo.locator("img").count() == 0
            assert page.evaluate("() => window.__pwned") is None

            usage = ReadModel().agent("chat").to_json()
            chip = page.locator(".jp-jai-usage-chip")
            percent = math.floor(usage["fraction"] * 100 + 0.5)  # as the chip rounds
            expect(chip).to_have_attribute("aria-label", f"Context {percent}% used")
            chip.click()
            figure = page.locator(".jp-jai-usage-section").first
            shown = f"{usage['tokens']:,} of {usage['context_length']:,} tokens"
            expect(figure).to_have_attribute("title", shown)
            assert usage["words"]["usage"].startswith(shown)  # the widget's and the panel's words
            page.keyboard.press("Escape")

            # /compact through the chat input and Jupyter AI's router: the panel's figures.
            compacted = ask(page, box, "/compact", 2)
            done = ReadModel().compactions("chat")
            assert len(done) == 1
            expect(compacted).to_contain_text(f"Compacted chat: {done[0].figures}")
            after = ReadModel().agent("chat").to_json()
            expect(chip).to_have_attribute(
                "title", re.compile(rf"\({math.floor(after['fraction'] * 100 + 0.5)}%\)")
            )
            screenshot(page, "persona-chat.png")
    assert tracker.hits == []
