"""The memory inspector in the "Agent Memory" sidebar, in real JupyterLab and Chromium: the
context X-ray, the compaction timeline, the commands, the settings, keyboard use and themes;
and the panel in Jupyter Notebook 7.

Every figure is compared with the read model's (the engine's) own, and memory content is
hostile wherever it is shown: it must stay text."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from browser import (
    WAIT_MS,
    jupyter_lab,
    lab_args,
    open_lab,
    open_notebook,
    require,
    screenshot,
    write_notebook,
)
from nbmemory import Conversation, Workspace
from nbmemory.memory.notes import Notes
from nbmemory.memory.provenance import Provenance
from nbmemory.memory.run_settings import RunSettings, write_settings
from nbmemory.store import memory_path
from nbmemory.views.read_model import ReadModel
from nbmemory.wording import PARTS, search_words
from support import agent_docs

pytestmark = pytest.mark.browser

PANEL_TAB = '.jp-SideBar [data-id="nbmemory-panel"]'
HOSTILE = '<img src=x onerror="window.__pwned=1"> **bold** <script>window.__pwned=2</script>'
APPEND = (
    "import sys\n"
    "from nbmemory import Conversation\n"
    "from nbmemory.store import memory_path\n"
    "convo = Conversation(name=sys.argv[1], memory_md_path=memory_path(sys.argv[1]))\n"
    "for i in range(int(sys.argv[2])):\n"
    "    convo.add('User', f'filler {i}: ' + 'word ' * 40)\n"
)


def persistent(name: str) -> Conversation:
    return Conversation(name=name, memory_md_path=memory_path(name))


def shown_number(text: str) -> int:
    """A number as the panel shows it (``12,345`` in the browser's locale) as an int."""
    return int(re.sub(r"[^\d]", "", text))


def cannot_open_why() -> str:
    """Why JupyterLab cannot open a memory or archive of this test's workspace, kept outside
    the server's root folder, or in a database."""
    found = Workspace.from_env()
    if found.database is not None:
        return f"is kept in the database {found.describe()}"
    return "outside the Jupyter server's root folder"


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
    inode = agent_docs("Scout").identity()
    convo.add("User", HOSTILE)  # added by "this session": the live process below preloaded 4
    write_settings(
        agent_docs("Scout"),
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

        # Another process fills the memory past the threshold: "the next call compacts first".
        subprocess.run([sys.executable, "-c", APPEND, "Scout", "40"], check=True, timeout=60)
        usage = ReadModel(workspace).usage("Scout")
        assert usage.compacts_next
        expect(xray).to_have_attribute("data-tokens", str(usage.tokens), timeout=WAIT_MS)
        warning = xray.get_by_test_id("nbmemory-xray-compacts")
        expect(warning).to_be_visible()
        expect(warning).to_contain_text("The next call compacts first")
        expect(xray.get_by_test_id("nbmemory-xray-gauge")).to_have_class(re.compile("compacts"))
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
    convo.add("Auditor", "Still open: **ACME**-42.")  # reads ACME-42, split by the bold
    convo.provenance = Provenance("reports/plan.ipynb", "cell-9", 5, "kernel-1")
    convo.add("User", "The launch is on 2027-03-14 and the budget is 40k EUR.")
    convo.provenance = None
    convo.compact("Launch on 2027-03-14, budget 40k EUR.")  # by hand, recorded: ACME-42 left out
    convo.add("User", "Order PO-7781 ships from Rotterdam.")
    agent = type("Plain", (), {})()
    agent.short_memory, agent.context_length = convo, 4000
    agent.model_name, agent.agent_name = "openai/test-model", "Auditor"
    agent.api_base, agent.api_key, agent.max_retries = openai_server.url, "test-key", 0
    openai_server.reply("An order ships from Rotterdam. " + HOSTILE)
    ContextCompressor(keep_dropped=False).compress(agent)  # the model's summary alone
    first, second = ReadModel(workspace).compactions("Auditor")
    assert "ACME-42" in first.dropped and first.recorded
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
            assert info.figures in figures  # memory and next request, labelled, as %compact says
            assert f"{info.messages} messages archived" in figures
            assert f"{info.dropped_total} term" in figures
            expect(row).to_contain_text(info.time)

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
        expect(holder).to_contain_text('<img src=x onerror="window.__pwned=1">')  # as stored
        assert view.locator(".jp-nbmemory-messages img, .jp-nbmemory-messages script").count() == 0
        # Split by Markdown formatting, as the page shows it: a mark on each side of the bold,
        # one occurrence.
        split = view.locator('[data-testid="nbmemory-transcript-message"][data-index="23"]')
        expect(split).to_contain_text("Still open: ACME-42.")
        pieces = split.locator('mark.jp-nbmemory-dropped-mark[data-term="ACME-42"]')
        expect(pieces).to_have_count(2)
        assert pieces.all_inner_texts() == ["ACME", "-42"]
        expect(split.locator("strong > mark")).to_have_text("ACME")
        expect(split).to_have_attribute("data-dropped", "1")
        # An archived message keeps the cell that wrote it; that notebook is not on the server.
        launch = view.locator('[data-testid="nbmemory-transcript-message"][data-index="24"]')
        cell = launch.get_by_test_id("nbmemory-cell-link")
        expect(cell).to_have_text("cell [5] of plan.ipynb")
        expect(view.get_by_test_id("nbmemory-cell-link")).to_have_count(1)
        cell.click()
        expect(launch.get_by_test_id("nbmemory-cell-problem")).to_contain_text(
            "reports/plan.ipynb is not among the server's files"
        )
        view.get_by_label("Exact text").check()
        exact = holder.get_by_test_id("nbmemory-exact-text")
        expect(exact).to_contain_text(HOSTILE)
        expect(exact.locator('mark[data-term="ACME-42"]')).to_have_count(1)
        # As stored, the bold's asterisks sit inside the term: there it is not ACME-42.
        exact_split = split.get_by_test_id("nbmemory-exact-text")
        expect(exact_split).to_have_text("Still open: **ACME**-42.")
        expect(exact_split.locator('mark[data-term="ACME-42"]')).to_have_count(0)
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

        # The context menu of a compaction opens its archive; this workspace is outside the
        # server's root, so JupyterLab cannot: it says so and shows the absolute path.
        timeline.first.click(button="right")
        menu = page.locator(".lm-Menu")
        item = menu.get_by_text(f"Open Archive {first.archive} in Editor")
        expect(item).to_be_visible()
        item.click()
        dialog = page.locator(".jp-Dialog")
        expect(dialog).to_contain_text("JupyterLab cannot open Auditor's archive")
        expect(dialog).to_contain_text(cannot_open_why())
        path = ReadModel(workspace).file_path("Auditor", first.archive)
        expect(dialog.get_by_test_id("nbmemory-absolute-path")).to_have_text(str(path))
        dialog.get_by_role("button", name="Close").click()
        expect(dialog).to_be_hidden()


def palette(page, label: str) -> None:
    """Run the command labelled ``label`` from the command palette, in "Agent Memory"."""
    from playwright.sync_api import expect

    page.keyboard.press("Control+Shift+C")
    modal = page.locator(".jp-ModalCommandPalette")
    box = modal.locator(".lm-CommandPalette-input")
    expect(box).to_be_visible()
    box.fill(label)
    item = modal.locator(".lm-CommandPalette-item").filter(
        has=page.locator(
            ".lm-CommandPalette-itemLabel", has_text=re.compile(f"^{re.escape(label)}$")
        )
    )
    expect(item).to_have_count(1)
    expect(modal.locator(".lm-CommandPalette-header").first).to_contain_text("Agent Memory")
    item.click()
    expect(modal).to_be_hidden()


def test_the_palette_commands_act_on_the_agent_and_message_chosen(
    tmp_path: Path, workspace: Path
) -> None:
    require("jupyterlab", "playwright")
    from playwright.sync_api import expect

    from nbmemory.memory.export import export_text

    convo = persistent("Scout")
    for i in range(250):
        role = ["User", "Scout", "Tool"][i % 3]
        convo.add(role, f"note {i} about the Budget of team {i % 7}")
    convo.add("User", HOSTILE)
    write_notebook(tmp_path / "work.ipynb", "print('hello')")
    model = ReadModel(workspace)
    assert workspace.parent == tmp_path  # the workspace is under the server's root

    with (
        jupyter_lab(tmp_path, extra_args=lab_args(tmp_path)) as server,
        open_lab(server, failure_name="palette") as page,
    ):
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
        page.evaluate(
            "() => window.jupyterapp.commands.execute('docmanager:open', {path: 'work.ipynb'})"
        )
        expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(1)
        panel = open_panel(page)
        select(panel, "Scout")
        memory = panel.get_by_test_id("nbmemory-messages").get_by_test_id("nbmemory-message")
        expect(memory.first).to_contain_text("window.__pwned=1")
        caption = panel.get_by_test_id("nbmemory-list-caption")
        expect(caption).to_have_text("#251\u2013#232 of 251 messages, newest first")

        # Search: a hit count, paging past 200 hits, the matches marked, "no results".
        search = panel.get_by_test_id("nbmemory-search")
        search.fill("budget")
        search.press("Enter")
        found = panel.get_by_test_id("nbmemory-search-caption")
        expect(found).to_have_text(search_words("budget", 250, 0, 20, False, None))
        hits = panel.get_by_test_id("nbmemory-search-results").get_by_test_id("nbmemory-message")
        expect(hits).to_have_count(20)
        expect(hits.first.locator("mark.jp-nbmemory-hit")).to_have_text("Budget")
        expect(memory).to_have_count(20)  # the message list stays, apart
        panel.get_by_role("button", name="Last results").click()
        expect(found).to_have_text(search_words("budget", 250, 240, 10, False, None))
        field = panel.get_by_test_id("nbmemory-search-section").get_by_test_id(
            "nbmemory-page-input"
        )
        field.fill("11")
        field.press("Enter")
        expect(found).to_have_text("250 messages with “budget” in MEMORY.md; 201\u2013220 shown")
        expect(hits.first).to_contain_text("note 200 about")
        search.fill("onerror")
        search.press("Enter")
        expect(found).to_have_text(search_words("onerror", 1, 0, 1, False, None))
        expect(hits.first.locator("mark.jp-nbmemory-hit")).to_have_text("onerror")
        search.fill("zebra")
        search.press("Enter")
        expect(found).to_contain_text("No results for “zebra” in MEMORY.md.")
        expect(hits).to_have_count(0)
        panel.get_by_role("button", name="Close search").click()
        expect(panel.get_by_test_id("nbmemory-search-section")).to_be_hidden()

        # Filter by role; jump to the oldest page, a page number, the newest.
        panel.get_by_test_id("nbmemory-role").select_option("Tool")
        tools = model.messages("Scout", role="Tool")
        shown = f"#{tools.items[0].index + 1}\u2013#{tools.items[-1].index + 1}"
        expect(caption).to_have_text(f"{shown} of {tools.total} messages by Tool, newest first")
        assert {m.get_attribute("data-role") for m in memory.all()} == {"Tool"}
        assert [int(m.get_attribute("data-index")) for m in memory.all()] == [
            item.index for item in tools.items
        ]
        panel.get_by_test_id("nbmemory-role").select_option("")
        expect(caption).to_have_text("#251\u2013#232 of 251 messages, newest first")
        palette(page, "Go to Oldest Messages")  # numbered as its cards are: #11 to #1
        expect(caption).to_have_text("#11\u2013#1 of 251 messages, newest first")
        expect(memory.last).to_contain_text("note 0 about")
        palette(page, "Go to Page of Messages…")
        dialog = page.locator(".jp-Dialog")
        dialog.locator("input").fill("3")
        dialog.get_by_role("button", name="Ok").click()
        expect(caption).to_have_text("#211\u2013#192 of 251 messages, newest first")
        palette(page, "Go to Newest Messages")
        expect(caption).to_have_text("#251\u2013#232 of 251 messages, newest first")

        # Copy: the message focused last, whole, to the clipboard.
        memory.first.click()
        palette(page, "Copy Message Text")
        expect(
            page.locator(".Toastify__toast").filter(
                has_text="Copied message #251"
            )  # numbered from 1
        ).to_have_count(1)
        assert page.evaluate("() => navigator.clipboard.readText()") == HOSTILE

        # Insert it into the notebook: a raw cell, as text, never run.
        palette(page, "Insert Message into Notebook as Raw Cell")
        cells_js = """() => [...window.jupyterapp.shell.widgets('main')]
            .find(w => w.context && w.context.path === 'work.ipynb')
            .content.model.sharedModel.cells.map(c => [c.cell_type, c.source])"""
        page.wait_for_function(f"() => ({cells_js})().length === 2")
        cells = page.evaluate(cells_js)
        assert cells == [["code", "print('hello')"], ["raw", HOSTILE]]
        assert page.locator(".jp-Notebook img, .jp-Notebook script").count() == 0

        # Open MEMORY.md in JupyterLab's editor, by its path from the server's root; a memory
        # in a database has no file to open: a dialog says so.
        palette(page, "Open Scout's MEMORY.md in Editor")
        if agent_docs("Scout").is_database:
            dialog = page.locator(".jp-Dialog")
            expect(dialog).to_contain_text(cannot_open_why())
            dialog.get_by_role("button", name="Close").click()
        else:
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget?.context?.path"
                " === 'workspace/agents/Scout/MEMORY.md'"
            )
            editor = page.locator(".jp-FileEditor .cm-content")
            expect(editor).to_contain_text("### User —")

        # Export as JSON and as Markdown: what `nbmemory export` writes.
        for label, form in (("JSON", "json"), ("Markdown", "md")):
            with page.expect_download() as download:
                palette(page, f"Export Agent Memory as {label}")
            saved = Path(download.value.path()).read_text(encoding="utf-8")
            assert saved == export_text("Scout", model.records("Scout"), form)
            assert download.value.suggested_filename == f"Scout.{form}"

        screenshot(page, "palette-editor.png")

        # Compact, after confirming: the dialog names the agent and the messages, and offers
        # the model's summary; an emptied summary is asked for again.
        palette(page, "Compact Scout's Memory…")
        dialog = page.locator(".jp-Dialog")
        expect(dialog).to_contain_text("Compact Scout?", timeout=WAIT_MS)
        expect(dialog.get_by_test_id("nbmemory-compact-what")).to_contain_text(
            "all 251 messages of Scout's MEMORY.md"
        )
        summary = dialog.get_by_test_id("nbmemory-compact-summary")
        expect(summary).not_to_have_value("")
        summary.fill("")
        dialog.get_by_role("button", name="Compact").click()
        expect(page.locator(".jp-Dialog [role=alert]")).to_contain_text("A summary is needed")
        assert model.messages("Scout").total == 251
        page.locator(".jp-Dialog").get_by_test_id("nbmemory-compact-summary").fill(
            "Budget notes of seven teams."
        )
        page.locator(".jp-Dialog").get_by_role("button", name="Compact").click()
        toast = page.locator(".Toastify__toast").filter(has_text="Compacted Scout")
        expect(toast).to_have_count(1, timeout=WAIT_MS)
        expect(caption).to_have_text("#1 of 1 message, newest first", timeout=WAIT_MS)
        assert [i.text for i in model.messages("Scout").items] == ["Budget notes of seven teams."]
        assert len(model.archives("Scout")) == 1
        expect(panel.get_by_test_id("nbmemory-compaction")).to_have_count(1)
        assert page.evaluate("() => typeof window.__pwned") == "undefined"


def test_the_panel_works_in_notebook_7(tmp_path: Path, workspace: Path) -> None:
    """Notebook 7's shell is not JupyterLab's: a left area on the file tree and on the notebook
    page, shown from the View menu, and a main area that holds one document and ignores
    anything else added to it (a compaction view goes to the area under it)."""
    require("notebook", "playwright")
    from playwright.sync_api import expect

    convo = persistent("Scout")
    convo.add("User", "Ticket ACME-42 blocks the release in Lyon.")
    convo.add("Scout", "Noted: the budget is 40k EUR.")
    convo.compact("The budget is 40k EUR.")  # ACME-42 and Lyon dropped
    convo.add("User", HOSTILE)
    model = ReadModel(workspace)
    usage = model.usage("Scout")
    (compaction,) = model.compactions("Scout")
    assert "ACME-42" in compaction.dropped
    write_notebook(tmp_path / "work.ipynb", "print('hello')")

    with jupyter_lab(tmp_path, extra_args=lab_args(tmp_path), app="notebook") as server:
        # The file tree: "Show Agent Memory", once in the palette (Notebook 7 lists one for
        # each panel of its left area: the panel does not add its own), opens it.
        with open_lab(server, failure_name="nb7-tree") as page:
            expect(page.locator(".jp-DirListing-item").first).to_be_visible()
            page.keyboard.press("Control+Shift+C")
            modal = page.locator(".jp-ModalCommandPalette")
            modal.locator(".lm-CommandPalette-input").fill("Show Agent Memory")
            shows = modal.locator(".lm-CommandPalette-itemLabel").filter(
                has_text=re.compile("^Show Agent Memory$")
            )
            expect(shows).to_have_count(1)
            shows.click()
            panel = page.get_by_test_id("nbmemory-panel")
            expect(panel).to_be_visible()
            expect(page.locator("#jp-left-stack")).to_contain_text("Agent Memory")
            select(panel, "Scout")
            xray = panel.get_by_test_id("nbmemory-xray")
            expect(xray).to_have_attribute("data-tokens", str(usage.tokens))
            total = xray.get_by_test_id("nbmemory-xray-total")
            tokens = total.locator(".jp-nbmemory-xray-tokens").inner_text()
            assert shown_number(tokens) == usage.tokens
            messages = panel.get_by_test_id("nbmemory-messages")
            expect(messages.get_by_test_id("nbmemory-message").first).to_contain_text(
                '<img src=x onerror="window.__pwned=1">'  # as stored, not rewritten
            )
            no_payload_ran(page, panel)

            # What did the compaction forget: the main area holds the file tree, so the view
            # opens under it, with room to read (Notebook 7.6 opens that area at a tab bar's
            # height), ACME-42 listed as dropped and marked in the transcript.
            panel.get_by_role("button", name="What did compaction 1 forget?").click()
            view = page.locator("#jp-down-stack").get_by_test_id("nbmemory-compaction-view")
            expect(view).to_be_visible()
            page.wait_for_function(
                "() => document.querySelector('.jp-nbmemory-view').offsetHeight > 300"
            )
            expect(view.get_by_test_id("nbmemory-summary")).to_contain_text(
                "The budget is 40k EUR."
            )
            expect(view.get_by_test_id("nbmemory-summary")).to_be_in_viewport()
            terms = view.get_by_test_id("nbmemory-dropped-term")
            expect(terms).to_have_count(len(compaction.dropped))
            assert [t.get_attribute("data-term") for t in terms.all()] == compaction.dropped
            transcript = view.get_by_test_id("nbmemory-transcript-message")
            expect(transcript.locator('mark[data-term="ACME-42"]')).to_have_count(1)
            expect(page.locator(".jp-DirListing-item").first).to_be_in_viewport()  # still there
            screenshot(page, "nb7-tree-panel.png")

        # The notebook page: View > Left Sidebar > Show Agent Memory; copy a message from its
        # context menu, insert it into the notebook from the palette.
        with open_notebook(server, "work.ipynb") as page:
            page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^View$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Left Sidebar$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Show Agent Memory$")).click()
            panel = page.get_by_test_id("nbmemory-panel")
            expect(panel).to_be_visible()
            select(panel, "Scout")
            xray = panel.get_by_test_id("nbmemory-xray")
            expect(xray).to_have_attribute("data-tokens", str(usage.tokens))
            message = panel.get_by_test_id("nbmemory-messages").get_by_test_id("nbmemory-message")
            expect(message.first).to_have_attribute("data-index", "1")
            message.first.click(button="right")
            page.locator(".lm-Menu").get_by_text("Copy Message Text").click()
            toast = page.locator(".Toastify__toast").filter(has_text="Copied message #2 of Scout")
            expect(toast).to_have_count(1)
            assert page.evaluate("() => navigator.clipboard.readText()") == HOSTILE

            palette(page, "Insert Message into Notebook as Raw Cell")
            cells_js = """() => window.jupyterapp.shell.currentWidget.content.model.sharedModel
                .cells.map(c => [c.cell_type, c.source])"""
            page.wait_for_function(f"() => ({cells_js})().length === 2")
            assert page.evaluate(cells_js) == [["code", "print('hello')"], ["raw", HOSTILE]]
            assert page.locator(".jp-Notebook img, .jp-Notebook script").count() == 0
            no_payload_ran(page, panel)
            screenshot(page, "nb7-notebook-panel.png")


def test_the_settings_change_the_panel(tmp_path: Path, workspace: Path) -> None:
    require("jupyterlab", "playwright")
    from playwright.sync_api import expect

    convo = persistent("Scout")
    for i in range(29):
        convo.add("User", f"message {i}")
    convo.add("User", "long " + "x" * 300)
    root = tmp_path / "lab"
    root.mkdir()
    args = lab_args(tmp_path, "--NbMemoryServer.poll_interval=0.5")

    with jupyter_lab(root, extra_args=args) as server, open_lab(server) as page:
        panel = open_panel(page)
        select(panel, "Scout")
        caption = panel.get_by_test_id("nbmemory-list-caption")
        memory = panel.get_by_test_id("nbmemory-messages").get_by_test_id("nbmemory-message")
        polling = panel.get_by_test_id("nbmemory-polling")
        expect(caption).to_have_text("#30\u2013#11 of 30 messages, newest first")
        expect(memory.first).to_have_attribute("data-index", "29")
        expect(memory.first).not_to_contain_text("Showing")
        expect(polling).to_have_text("Checks for changes every 0.5 s (the server's setting)")
        archives_too = panel.get_by_label("archives too")
        expect(archives_too).not_to_be_checked()

        page.evaluate(
            "() => window.jupyterapp.commands.execute("
            "'settingeditor:open', {query: 'Agent Memory'})"
        )
        form = page.locator(".jp-SettingsPanel")

        def field(key: str):
            return form.locator(f'[id="jp-SettingsEditor-nbmemory:plugin_{key}"]')

        expect(field("order")).to_be_visible()
        field("order").select_option("oldest")
        expect(caption).to_have_text("#1\u2013#20 of 30 messages, oldest first", timeout=WAIT_MS)
        expect(memory.first).to_have_attribute("data-index", "0")

        field("foldLength").fill("100")
        field("order").select_option("newest")
        expect(memory.first).to_contain_text("Showing 100 of 305 characters.", timeout=WAIT_MS)

        field("searchArchives").check()
        expect(archives_too).to_be_checked(timeout=WAIT_MS)

        field("pollInterval").fill("0")
        expect(polling).to_have_text(
            "Does not check for changes (off in the settings): use Refresh", timeout=WAIT_MS
        )
        expect(panel).to_have_attribute("data-poll-seconds", "0")
        subprocess.run([sys.executable, "-c", APPEND, "Scout", "1"], check=True, timeout=60)
        page.locator(".jp-nbmemory-toolbar [data-command='nbmemory:refresh']").click()
        expect(memory.first).to_contain_text("filler 0", timeout=WAIT_MS)

        field("pollInterval").fill("2")
        expect(polling).to_have_text("Checks for changes every 2 s", timeout=WAIT_MS)
        expect(panel).to_have_attribute("data-poll-seconds", "2")
        screenshot(page, "settings.png")


# Every mark the inspector draws, with the colour it is drawn in and what it is drawn on, and the
# contrast it needs: 3:1 for graphical marks, 4.5:1 for text.
MEASURE_MARKS = """() => {
    const parse = (text) => {
        const m = text.match(/rgba?\\(([^)]*)\\)/);
        if (!m) return null;
        const [r, g, b, a] = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
        return [r, g, b, a === undefined ? 1 : a];
    };
    const over = (fg, bg) => [0, 1, 2].map((i) => fg[i] * fg[3] + bg[i] * (1 - fg[3])).concat(1);
    const backgroundOf = (node) => {
        const layers = [];
        for (let n = node; n; n = n.parentElement) {
            const c = parse(getComputedStyle(n).backgroundColor);
            if (c && c[3] > 0) { layers.push(c); if (c[3] === 1) break; }
        }
        return layers.reverse().reduce((bg, c) => over(c, bg), [255, 255, 255, 1]);
    };
    const lum = (c) => {
        const f = (v) => {
            v /= 255;
            return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
        };
        return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
    };
    const ratio = (a, b) => {
        const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
        return (x + 0.05) / (y + 0.05);
    };
    const found = [];
    const measure = (what, node, property, behind, min) => {
        const base = behind || backgroundOf(node.parentElement);
        const colour = over(parse(getComputedStyle(node)[property]), base);
        found.push({what, ratio: Math.round(ratio(colour, base) * 100) / 100, min});
    };
    const all = (selector) => [...document.querySelectorAll(selector)]
        .filter((n) => n.offsetParent !== null || n.getClientRects().length);
    for (const n of all('.jp-nbmemory-gauge-threshold'))
        measure('agent threshold mark', n, 'backgroundColor', backgroundOf(n.parentElement), 3);
    for (const n of all('.jp-nbmemory-gauge-bar'))
        if (n.offsetWidth) measure('agent gauge bar', n, 'backgroundColor', null, 3);
    for (const n of all('.jp-nbmemory-xray-segment'))
        measure(`segment ${n.dataset.part}`, n, 'backgroundColor',
                backgroundOf(n.closest('.jp-nbmemory-xray-gauge')), 3);
    for (const n of all('.jp-nbmemory-xray-swatch[class*=part-]'))
        measure(`swatch ${n.parentElement.dataset.part}`, n, 'backgroundColor', null, 3);
    for (const n of all('.jp-nbmemory-xray-threshold'))
        measure('x-ray threshold mark', n, 'backgroundColor',
                backgroundOf(n.parentElement), 3);
    for (const n of all('.jp-nbmemory-xray-compacts'))
        measure('compacts-next bar', n, 'borderLeftColor', backgroundOf(n), 3);
    for (const n of all('mark.jp-nbmemory-hit')) {
        const card = backgroundOf(n.parentElement);
        measure('search hit mark', n, 'backgroundColor', card, 3);
        measure('search hit text', n, 'color', backgroundOf(n), 4.5);
    }
    for (const n of all('mark.jp-nbmemory-dropped-mark')) {
        measure('dropped term outline', n, 'outlineColor', backgroundOf(n.parentElement), 3);
        measure('dropped term text', n, 'color', backgroundOf(n), 4.5);
    }
    return found;
}"""


def check_marks(page, theme: str) -> set[str]:
    marks = page.evaluate(MEASURE_MARKS)
    weak = [m for m in marks if m["ratio"] < m["min"]]
    assert not weak, f"{theme}: marks under their contrast: {weak}"
    return {m["what"] for m in marks}


def use_theme(page, theme: str, light: bool) -> None:
    page.evaluate(
        "(theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme
    )
    page.wait_for_function(
        "(light) => document.body.dataset.jpThemeLight === String(light)"
        " && getComputedStyle(document.querySelector('.jp-nbmemory-panel')).backgroundColor"
        " === (light ? 'rgb(255, 255, 255)' : 'rgb(33, 33, 33)')",
        arg=light,
        timeout=WAIT_MS,
    )
    page.wait_for_function("() => !document.getElementById('jupyterlab-splash')", timeout=WAIT_MS)


def test_every_mark_has_contrast_in_the_light_and_dark_themes(
    tmp_path: Path, workspace: Path
) -> None:
    require("jupyterlab", "playwright")
    from playwright.sync_api import expect

    convo = persistent("Scout")
    convo.add("User", "Ticket ACME-42 blocks the release in Lyon.")
    convo.add("Scout", "Noted: the budget is 40k EUR.")
    convo.compact("The budget is 40k EUR.")  # ACME-42 and Lyon dropped
    for i in range(4):
        convo.add("User" if i % 2 else "Scout", f"earlier {i} about the budget")
    inode = agent_docs("Scout").identity()
    convo.add("User", "the budget again, " + HOSTILE)
    Notes(memory_path("Scout").parent).add("The budget is 40k EUR.")
    settings = RunSettings(
        "gpt-4o",
        1200,
        0.5,
        "o200k_base",
        static_tokens=120,
        overhead_tokens=400,
        rules_tokens=30,
        tool_tokens=80,
        session=(os.getpid(), inode, 5),
    )
    write_settings(agent_docs("Scout"), settings)
    usage = ReadModel(workspace).usage("Scout")
    assert usage.compacts_next and usage.tokens < usage.context_length
    assert all(tokens > 0 for _, tokens in usage.parts)
    root = tmp_path / "lab"
    root.mkdir()

    with (
        jupyter_lab(root, extra_args=lab_args(tmp_path)) as server,
        open_lab(server, failure_name="themes") as page,
    ):
        panel = open_panel(page)
        select(panel, "Scout")
        expect(panel.get_by_test_id("nbmemory-xray-compacts")).to_be_visible()
        search = panel.get_by_test_id("nbmemory-search")
        search.fill("budget")
        search.press("Enter")
        hits = panel.get_by_test_id("nbmemory-search-results").locator("mark.jp-nbmemory-hit")
        expect(hits.first).to_be_visible()
        panel.get_by_role("button", name="What did compaction 1 forget?").click()
        view = page.get_by_test_id("nbmemory-compaction-view")
        expect(view.locator("mark.jp-nbmemory-dropped-mark[data-term='ACME-42']")).to_have_count(
            2  # listed, and marked in the transcript
        )
        expected = {
            "agent threshold mark",
            "agent gauge bar",
            "x-ray threshold mark",
            "compacts-next bar",
            "search hit mark",
            "search hit text",
            "dropped term outline",
            "dropped term text",
            *(f"segment {name}" for name in PARTS),
            *(f"swatch {name}" for name in PARTS),
        }
        for theme, light in (("JupyterLab Light", True), ("JupyterLab Dark", False)):
            use_theme(page, theme, light)
            assert check_marks(page, theme) == expected
            name = "light" if light else "dark"
            panel.get_by_test_id("nbmemory-xray").scroll_into_view_if_needed()
            screenshot(page, f"inspector-{name}.png")
            screenshot(panel, f"panel-{name}.png")
        assert page.evaluate("() => typeof window.__pwned") == "undefined"
        assert page.locator(".jp-nbmemory-body img, .jp-nbmemory-view img").count() == 0


def focused(page) -> dict[str, str | None]:
    """What has the keyboard focus: its test id, agent name, label and key."""
    return page.evaluate(
        """() => {
            const n = document.activeElement;
            return {testid: n.dataset.testid || null, name: n.dataset.name || null,
                    label: n.getAttribute('aria-label'), key: n.dataset.key || null,
                    text: (n.textContent || '').slice(0, 60)};
        }"""
    )


def tab_to(page, wanted, most: int = 60) -> None:
    """Press Tab (Shift+Tab with ``back``) until ``wanted(focused)`` holds."""
    for _ in range(most):
        page.keyboard.press("Tab")
        if wanted(focused(page)):
            return
    pytest.fail(f"Tab never reached the control; last focus: {focused(page)}")


ROLES = (
    "button",
    "checkbox",
    "textbox",
    "searchbox",
    "combobox",
    "spinbutton",
    "option",
    "listbox",
    "meter",
    "img",
    "navigation",
    "region",
)


def test_the_panel_works_from_the_keyboard_alone(tmp_path: Path, workspace: Path) -> None:
    require("jupyterlab", "playwright")
    from playwright.sync_api import expect

    for name in ("Alpha", "Scout", "Zed"):
        convo = persistent(name)
        for i in range(45):
            convo.add("User" if i % 2 else name, f"{name} message {i}")
    persistent("Scout").add("User", HOSTILE)
    persistent("Scout").compact("Scout summarized.")
    for i in range(45):
        persistent("Scout").add("User", f"Scout again {i}")
    root = tmp_path / "lab"
    root.mkdir()
    args = lab_args(tmp_path, "--NbMemoryServer.poll_interval=0.5")

    with (
        jupyter_lab(root, extra_args=args) as server,
        open_lab(server, failure_name="keyboard") as page,
    ):
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
        # Open the panel from the palette: the focus lands on the agent list. (Lab gives the
        # launcher the focus just after it is restored: a palette opened before closes again.)
        page.wait_for_function("() => document.activeElement.closest('.jp-Launcher') !== null")
        page.keyboard.press("Control+Shift+C")
        modal = page.locator(".jp-ModalCommandPalette")
        expect(modal.locator(".lm-CommandPalette-input")).to_be_focused()
        page.keyboard.type("Show Agent Memory")
        expect(modal.locator(".lm-CommandPalette-item.lm-mod-active")).to_contain_text(
            "Show Agent Memory"
        )
        page.keyboard.press("Enter")
        panel = page.get_by_test_id("nbmemory-panel")
        expect(panel).to_be_visible()
        page.wait_for_function("() => document.activeElement.dataset.name === 'Alpha'")
        rows = panel.get_by_test_id("nbmemory-agent")
        assert [r.get_attribute("tabindex") for r in rows.all()] == ["0", "-1", "-1"]

        # Arrow keys move along the listbox and select; End and Home jump.
        page.keyboard.press("ArrowDown")
        assert focused(page)["name"] == "Scout"
        expect(rows.nth(1)).to_have_attribute("aria-selected", "true")
        page.keyboard.press("End")
        assert focused(page)["name"] == "Zed"
        page.keyboard.press("Home")
        assert focused(page)["name"] == "Alpha"
        page.keyboard.press("ArrowDown")
        expect(panel.locator(".jp-nbmemory-detail-title")).to_have_text("Scout")

        # The focus survives polls that change the focused agent, and a new agent before it.
        subprocess.run([sys.executable, "-c", APPEND, "Scout", "2"], check=True, timeout=60)
        subprocess.run([sys.executable, "-c", APPEND, "Aaron", "1"], check=True, timeout=60)
        expect(rows).to_have_count(4, timeout=WAIT_MS)
        expect(rows.filter(has_text="Scout")).to_have_attribute(
            "data-messages", "48", timeout=WAIT_MS
        )
        assert focused(page)["name"] == "Scout"

        # Tab on to the pages of messages; Enter turns them; the focus stays through polls.
        tab_to(page, lambda f: f["text"] == "Older messages")
        page.keyboard.press("Enter")
        caption = panel.get_by_test_id("nbmemory-list-caption")
        expect(caption).to_have_text("#28\u2013#9 of 48 messages, newest first")
        subprocess.run([sys.executable, "-c", APPEND, "Scout", "1"], check=True, timeout=60)
        expect(caption).to_have_text("#29\u2013#10 of 49 messages, newest first", timeout=WAIT_MS)
        assert focused(page)["text"] == "Older messages"
        tab_to(page, lambda f: f["testid"] == "nbmemory-page-input")
        page.keyboard.press("Control+A")
        page.keyboard.type("3")
        page.keyboard.press("Enter")
        expect(caption).to_have_text("#9\u2013#1 of 49 messages, newest first")

        # Into the list: arrow keys between messages, Page Up to the page before.
        tab_to(page, lambda f: f["testid"] == "nbmemory-message")
        first = focused(page)["key"]
        page.keyboard.press("ArrowDown")
        assert focused(page)["key"] != first and focused(page)["testid"] == "nbmemory-message"
        page.keyboard.press("PageUp")
        expect(caption).to_have_text("#29\u2013#10 of 49 messages, newest first")
        page.wait_for_function(
            "() => document.activeElement.dataset.testid === 'nbmemory-message'"
            " && document.activeElement.dataset.index === '28'"
        )

        # The context menu from the keyboard: copy the focused message.
        page.keyboard.press("Shift+F10")
        menu = page.locator(".lm-Menu")
        expect(menu.get_by_text("Copy Message Text")).to_be_visible()
        active = menu.locator(".lm-Menu-item.lm-mod-active")
        for _ in range(10):
            page.keyboard.press("ArrowDown")
            if "Copy Message Text" in active.inner_text():
                break
        page.keyboard.press("Enter")
        expect(menu).to_be_hidden()
        toast = page.locator(".Toastify__toast").filter(has_text="Copied message #29 of Scout")
        expect(toast).to_have_count(1, timeout=WAIT_MS)
        copied = ReadModel(workspace).message("Scout", 28).text
        assert copied == "Scout again 27"
        assert page.evaluate("() => navigator.clipboard.readText()") == copied

        # Search from the keyboard; hits page with their own controls.
        tab_to(page, lambda f: f["testid"] == "nbmemory-search")
        page.keyboard.type("again")
        page.keyboard.press("Enter")
        found = panel.get_by_test_id("nbmemory-search-caption")
        expect(found).to_have_text(search_words("again", 45, 0, 20, False, None))
        tab_to(page, lambda f: f["text"] == "Next results")
        page.keyboard.press("Enter")
        expect(found).to_have_text(search_words("again", 45, 20, 20, False, None))
        assert focused(page)["text"] == "Next results"

        # Every control of the panel has an accessible name.
        for role in ROLES:
            every = panel.get_by_role(role)
            named = panel.get_by_role(role, name=re.compile(r"\S"))
            assert every.count() == named.count(), role
        no_payload_ran(page, panel)
        screenshot(panel, "keyboard.png")
