"""The memory inspector in the "Agent Memory" sidebar, in real JupyterLab and Chromium: the
context X-ray, the compaction timeline, the commands, the settings, keyboard use and themes.

Every figure is compared with the read model's (the engine's) own, and memory content is
hostile wherever it is shown: it must stay text."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from browser import WAIT_MS, jupyter_lab, lab_args, open_lab, require, screenshot
from nbmemory import Conversation
from nbmemory.notes import Notes
from nbmemory.read_model import PARTS, ReadModel
from nbmemory.run_settings import RunSettings, write_settings
from nbmemory.workspace import memory_path

pytestmark = pytest.mark.browser

PANEL_TAB = '.jp-SideBar [data-id="nbmemory-panel"]'
HOSTILE = '<img src=x onerror="window.__pwned=1"> **bold** <script>window.__pwned=2</script>'
APPEND = (
    "import sys\n"
    "from nbmemory import Conversation\n"
    "from nbmemory.workspace import memory_path\n"
    "convo = Conversation(name=sys.argv[1], memory_md_path=memory_path(sys.argv[1]))\n"
    "for i in range(int(sys.argv[2])):\n"
    "    convo.add('User', f'filler {i}: ' + 'word ' * 40)\n"
)


def persistent(name: str) -> Conversation:
    return Conversation(name=name, memory_md_path=memory_path(name))


def shown_number(text: str) -> int:
    """A number as the panel shows it (``12,345`` in the browser's locale) as an int."""
    return int(re.sub(r"[^\d]", "", text))


def open_panel(page):
    page.locator(PANEL_TAB).click()
    panel = page.get_by_test_id("nbmemory-panel")
    panel.get_by_test_id("nbmemory-agent").first.wait_for()
    return panel


def select(panel, name: str):
    panel.get_by_test_id("nbmemory-agent").filter(has_text=name).first.click()


def no_payload_ran(page, panel) -> None:
    assert page.evaluate("() => typeof window.__pwned") == "undefined"
    for tag in ("img", "script"):
        assert panel.locator(f".jp-nbmemory-body {tag}").count() == 0, tag


def test_the_xray_shows_what_the_next_request_carries_with_the_engines_figures(
    tmp_path: Path, workspace: Path
) -> None:
    require("jupyterlab", "playwright")
    from playwright.sync_api import expect

    convo = persistent("Scout")
    for i in range(4):
        convo.add("User" if i % 2 else "Scout", f"earlier {i} about the budget")
    inode = os.stat(memory_path("Scout")).st_ino
    convo.add("User", HOSTILE)  # added by "this session": the live process below preloaded 4
    write_settings(
        memory_path("Scout").parent,
        RunSettings(
            "gpt-4o",
            3000,
            0.75,
            "o200k_base",
            static_tokens=320,
            overhead_tokens=900,
            rules_tokens=40,
            tool_tokens=150,
            session=(os.getpid(), inode, 4),
        ),
    )
    Notes(memory_path("Scout").parent).add("The budget is 40k EUR.")
    usage = ReadModel(workspace).usage("Scout")
    parts = dict(usage.parts)
    assert all(parts[name] > 0 for name in PARTS), parts  # every part is drawn
    assert not usage.compacts_next
    root = tmp_path / "lab"
    root.mkdir()

    with (
        jupyter_lab(
            root, extra_args=lab_args(tmp_path, "--NbMemoryServer.poll_interval=0.5")
        ) as server,
        open_lab(server) as page,
    ):
        panel = open_panel(page)
        select(panel, "Scout")
        xray = panel.get_by_test_id("nbmemory-xray")
        expect(xray).to_have_attribute("data-tokens", str(usage.tokens))
        legend = xray.get_by_test_id("nbmemory-xray-part")
        expect(legend).to_have_count(len(PARTS))

        # The legend: each part's tokens as the engine counts them; they add up to its figure.
        shown = {
            row.get_attribute("data-part"): shown_number(
                row.get_by_test_id("nbmemory-xray-tokens").inner_text()
            )
            for row in legend.all()
        }
        assert list(shown) == list(PARTS)
        assert shown == parts
        assert sum(shown.values()) == usage.tokens
        total = xray.get_by_test_id("nbmemory-xray-total")
        assert shown_number(total.locator(".jp-nbmemory-xray-tokens").inner_text()) == usage.tokens

        # The gauge: one segment per part, as wide as its share of the window.
        segments = xray.get_by_test_id("nbmemory-xray-segment")
        expect(segments).to_have_count(len(PARTS))
        track = xray.locator(".jp-nbmemory-xray-track").bounding_box()
        widths = {}
        for segment in segments.all():
            name = segment.get_attribute("data-part")
            assert int(segment.get_attribute("data-tokens")) == parts[name]
            widths[name] = segment.bounding_box()["width"]
        for name, width in widths.items():
            assert width == pytest.approx(track["width"] * parts[name] / 3000, abs=1.5), name
        threshold = xray.get_by_test_id("nbmemory-xray-threshold")
        assert threshold.evaluate("m => m.style.left") == "75%"
        expect(xray.get_by_test_id("nbmemory-xray-summary")).to_contain_text(
            "compacts at 75% (2,250 tokens)"
        )
        expect(xray.get_by_test_id("nbmemory-xray-compacts")).to_be_hidden()

        # Tokens per message, on demand: the engine's count for each message shown.
        panel.get_by_label("Tokens per message").check()
        counted = ReadModel(workspace).message_tokens("Scout")
        cards = panel.get_by_test_id("nbmemory-message")
        expect(cards).to_have_count(5)
        for card in cards.all():
            index = int(card.get_attribute("data-index"))
            slot = card.get_by_test_id("nbmemory-message-tokens")
            expect(slot).to_have_attribute("data-tokens", str(counted.tokens[index]))
        assert counted.total == parts["earlier sessions"] + parts["this session"]
        no_payload_ran(page, panel)

        # Another process fills the memory past the threshold: "the next call will compact".
        subprocess.run([sys.executable, "-c", APPEND, "Scout", "40"], check=True, timeout=60)
        usage = ReadModel(workspace).usage("Scout")
        assert usage.compacts_next
        expect(xray).to_have_attribute("data-tokens", str(usage.tokens), timeout=WAIT_MS)
        warning = xray.get_by_test_id("nbmemory-xray-compacts")
        expect(warning).to_be_visible()
        expect(warning).to_contain_text("The next call will compact")
        expect(xray).to_have_class(re.compile("jp-mod-compacts"))
        shown = [
            shown_number(row.get_by_test_id("nbmemory-xray-tokens").inner_text())
            for row in legend.all()
        ]
        assert shown == [tokens for _, tokens in usage.parts]
        assert sum(shown) == usage.tokens
        screenshot(panel, "xray.png")
        no_payload_ran(page, panel)
