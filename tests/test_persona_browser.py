"""The nbmemory persona in JupyterLab with Jupyter AI 3.2, in a real Chromium: a fact given in
one chat answered in another after the server restarted, hostile model output shown as text
(also after a fence that ends with its list item or block quote), and Jupyter AI's usage gauge
showing the figure the widget and the panel show."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from browser import WAIT_MS, counting_server, jupyter_lab, lab_args, open_lab, require, screenshot
from nbmemory import Agent
from nbmemory.views.read_model import ReadModel
from test_render import LIST_FENCES, MARKED_READS_OTHERWISE

pytestmark = pytest.mark.browser

PERSONA_ID = "jupyter-ai-personas::nbmemory::NbMemoryPersona"


def persona_args(tmp_path: Path, *extra: str) -> tuple[str, ...]:
    """nbmemory's extensions, and the persona picked for every chat."""
    return lab_args(tmp_path, f"--PersonaManager.default_persona_id={PERSONA_ID}", *extra)


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
        hostile += " It is in invoice\u202efdp.exe."
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
            expect(logo).to_contain_text("invoice⟨U+202E⟩fdp.exe")  # never reordered
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


def test_html_after_a_fence_that_its_list_item_or_quote_ends_stays_text(
    tmp_path: Path, openai_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model answers with fences in list items and block quotes, each followed by an image and
    a link to a beacon on the next line, outside the fence; then with code that marked (the
    chat's renderer) reads otherwise than CommonMark. The chat shows them all as text."""
    require("jupyterlab", "playwright", "jupyter_ai_persona_manager")
    from playwright.sync_api import expect

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    root = tmp_path / "lab"
    root.mkdir()
    with counting_server() as beacon:
        numbers = itertools.count()
        payloads = []
        for texts in (LIST_FENCES.values(), MARKED_READS_OTHERWISE.values()):
            shown = [
                f'<img src="{beacon.url}/beacon?{n}"> <a href="{beacon.url}/link?{n}">open {n}</a>'
                for n in itertools.islice(numbers, len(texts))
            ]
            written = (text.format(payload=p) for text, p in zip(texts, shown, strict=True))
            openai_server.reply("\n".join(written))
            payloads.append(shown)
        model = ("--NbMemoryPersona.model=openai/fake-model", "--NbMemoryPersona.api_base=")
        args = persona_args(tmp_path, model[0], model[1] + openai_server.url)
        with jupyter_lab(root, extra_args=args) as server, open_lab(server) as page:
            box = open_chat(page, root, "lists.chat")
            for replies_before, shown in enumerate(payloads):
                answer = ask(page, box, "Show me the steps.", replies_before)
                for payload in shown:
                    expect(answer).to_contain_text(payload)
                screenshot(answer, f"persona-list-fences-{replies_before + 1}.png")
            assert page.locator(f'img[src^="{beacon.url}"]').count() == 0
            # The chat links a bare web address, which then shows where it leads; no other link.
            links = page.locator(f'a[href^="{beacon.url}"]').all()
            assert all(unquote(a.get_attribute("href") or "") == a.inner_text() for a in links)
    assert beacon.hits == []
