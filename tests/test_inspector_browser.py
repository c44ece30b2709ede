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


def test_the_timeline_shows_what_each_compaction_forgot(
    tmp_path: Path, workspace: Path, openai_server
) -> None:
    require("jupyterlab", "playwright")
    from playwright.sync_api import expect

    from nbmemory import ContextCompressor

    convo = persistent("Auditor")
    for i in range(22):
        convo.add("User" if i % 2 else "Auditor", f"filler {i}: nothing to keep here")
    convo.add("User", "Ticket ACME-42 blocks the release. " + HOSTILE)  # index 22: page 2
    convo.add("User", "The launch is on 2027-03-14 and the budget is 40k EUR.")
    convo.compact("Launch on 2027-03-14, budget 40k EUR.")  # by hand: ACME-42 left out
    convo.add("User", "Order PO-7781 ships from Rotterdam.")
    agent = type("Plain", (), {})()
    agent.short_memory, agent.context_length = convo, 4000
    agent.model_name, agent.agent_name = "openai/test-model", "Auditor"
    agent.api_base, agent.api_key, agent.max_retries = openai_server.url, "test-key", 0
    openai_server.reply("An order ships from Rotterdam. " + HOSTILE)
    ContextCompressor().compress(agent)
    first, second = ReadModel(workspace).compactions("Auditor")
    assert "ACME-42" in first.dropped and not first.recorded
    assert second.recorded and "PO-7781" in second.dropped
    root = tmp_path / "lab"
    root.mkdir()

    with (
        jupyter_lab(root, extra_args=lab_args(tmp_path)) as server,
        open_lab(server) as page,
    ):
        panel = open_panel(page)
        select(panel, "Auditor")
        timeline = panel.get_by_test_id("nbmemory-compaction")
        expect(timeline).to_have_count(2)
        for row, info in zip(timeline.all(), (first, second), strict=True):
            assert row.get_attribute("data-archive") == info.archive
            figures = row.get_by_test_id("nbmemory-compaction-figures").inner_text()
            before, after = page.evaluate(
                "([b, a]) => [b.toLocaleString(), a.toLocaleString()]",
                [info.tokens_before, info.tokens_after],
            )
            assert f"{before} → {after} tokens" in figures
            assert f"{info.messages} messages archived" in figures
            assert f"{len(info.dropped)} term" in figures
            expect(row).to_contain_text(info.time.replace("T", " "))

        # Open the first: the summary beside the transcript it replaced, ACME-42 dropped.
        timeline.first.get_by_role("button", name="What did compaction 1 forget?").click()
        view = page.get_by_test_id("nbmemory-compaction-view")
        expect(view).to_be_visible()
        expect(view.get_by_test_id("nbmemory-summary")).to_contain_text(
            "Launch on 2027-03-14, budget 40k EUR."
        )
        terms = view.get_by_test_id("nbmemory-dropped-term")
        expect(terms).to_have_count(len(first.dropped))
        assert [t.get_attribute("data-term") for t in terms.all()] == first.dropped
        transcript = view.get_by_test_id("nbmemory-transcript-message")
        expect(transcript).to_have_count(20)
        expect(transcript.first).to_contain_text("filler 0")
        summary_box = view.get_by_test_id("nbmemory-summary").bounding_box()
        transcript_box = view.get_by_test_id("nbmemory-transcript").bounding_box()
        assert summary_box["x"] + summary_box["width"] <= transcript_box["x"]  # side by side

        # "Find" goes to the page that holds the term; the term is marked there, as text.
        view.get_by_role("button", name="Find “ACME-42” in the transcript").click()
        holder = view.locator('[data-testid="nbmemory-transcript-message"][data-index="22"]')
        expect(holder).to_be_visible()
        expect(holder).to_be_focused()
        marks = holder.locator('mark.jp-nbmemory-dropped-mark[data-term="ACME-42"]')
        expect(marks).to_have_count(1)
        expect(marks).to_have_text("ACME-42")
        expect(holder).to_contain_text('<img src="x" onerror="window.__pwned=1" />')
        assert view.locator(".jp-nbmemory-messages img, .jp-nbmemory-messages script").count() == 0
        view.get_by_label("Exact text").check()
        exact = holder.get_by_test_id("nbmemory-exact-text")
        expect(exact).to_contain_text(HOSTILE)
        expect(exact.locator('mark[data-term="ACME-42"]')).to_have_count(1)
        screenshot(page, "compaction-view.png")

        # The second, recorded by the compressor: its summary is hostile and stays text.
        timeline.nth(1).get_by_role("button", name="What did compaction 2 forget?").click()
        second_view = page.get_by_test_id("nbmemory-compaction-view").filter(
            has_text="compaction 2 of 2"
        )
        expect(second_view).to_be_visible()
        expect(second_view).to_contain_text("as the compressor recorded them")
        expect(second_view.get_by_test_id("nbmemory-summary")).to_contain_text("onerror=")
        transcript = second_view.get_by_test_id("nbmemory-transcript-message")
        expect(transcript.locator('mark[data-term="PO-7781"]')).to_have_count(1)
        assert page.locator(".jp-nbmemory-view img, .jp-nbmemory-view script").count() == 0
        assert page.evaluate("() => typeof window.__pwned") == "undefined"
