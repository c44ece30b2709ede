"""One vocabulary in real JupyterLab and Chromium: the widget, the "Agent Memory" panel and
``%memory`` say the same thing about the same memory (issue 21, item 3)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from browser import (
    WAIT_MS,
    jupyter_lab,
    lab_args,
    open_notebook,
    require,
    run_all_cells,
    screenshot,
    write_notebook,
)
from nbmemory import Agent, Conversation
from nbmemory.memory.run_settings import RunSettings, write_settings
from nbmemory.store import memory_path
from nbmemory.views.read_model import ReadModel
from nbmemory.wording import LABELS, PAGERS, counted, phrase, search_words
from support import agent_docs

pytestmark = pytest.mark.browser

PANEL_TAB = '.jp-SideBar [data-id="nbmemory-panel"]'
SPOOF = "Pay \u202eRUE 001\u202c to\u200bday"
REVEALED = "Pay ⟨U+202E⟩RUE 001⟨U+202C⟩ to⟨U+200B⟩day"
RAW_HTML = "Use <b>bold</b> here.\n\n<p>para"
ARGUMENTS = '{"query": "Lyon"}'
IMAGE = "![chart](http://127.0.0.1:9/chart.png)"
LONG = "Long report. " + "y" * 2500


def prepare(workspace: Path) -> tuple[Any, Any]:
    """An agent compacted twice whose memory holds a spoofed text, raw HTML and a tool call;
    and an agent far over its window."""
    agent = Agent(agent_name="ResearchAgent", persistent_memory=True, context_length=3000)
    for turn in ("Book the Lyon office for 2027-03-14.", "Order PO-7781 from Acme."):
        agent.run(turn)
        assert agent._context_compressor.compress(agent)
    memory = agent.short_memory
    memory.add("User", SPOOF)
    memory.add("User", RAW_HTML)
    call = {"id": "c1", "type": "function", "function": {"name": "find", "arguments": ARGUMENTS}}
    memory.add("ResearchAgent", {"content": None, "tool_calls": [call]})
    over = Conversation(name="Over", memory_md_path=memory_path("Over"))
    for n in range(40):
        over.add("User", f"Line {n}: the quarterly figures of the Lyon office, again and again.")
    over.add("User", IMAGE)
    over.add("User", LONG)  # the newest: first in both lists, folded in both
    write_settings(agent_docs("Over"), RunSettings("gpt-4o", 300, 0.9, "o200k_base"))
    reader = ReadModel(workspace)
    return reader.agent("ResearchAgent"), reader.agent("Over")


def over_agent_views_say_the_same(panel: Any, widget: Any, over: Any) -> None:
    """The pager, a folded message and an image, in the panel and the widget, for ``Over``."""
    from playwright.sync_api import expect

    pages = str(-(-over.messages // 20))
    names = [LABELS[key] for key in PAGERS["newest first"]]
    pager = panel.get_by_test_id("nbmemory-list-section").locator(".jp-nbmemory-pager")
    in_widget = widget.locator(".jp-nbmemory-pager")
    # Named as they read, and alike: "Older messages" in both.
    for scope in (pager, in_widget):
        expect(scope.locator("button")).to_have_text([f"{name} messages" for name in names])
        expect(scope.locator("label")).to_have_text(phrase("page", page="", pages=pages))
        expect(scope.get_by_test_id("nbmemory-page-input")).to_have_value("1")
    for button, name in zip(pager.locator("button").all(), names, strict=True):
        expect(button).to_have_accessible_name(f"{name} messages")

    folded = phrase("folded", shown="2,000", length=f"{len(LONG):,}")
    cards = panel.get_by_test_id("nbmemory-message")
    expect(cards.first.locator(".jp-nbmemory-fold")).to_have_text(f"{folded} {LABELS['show full']}")
    expect(widget.get_by_test_id("fold")).to_have_text(f"{folded} {LABELS['show full']}")

    # An image is a link in both ("image: chart"): nothing is fetched, nothing drawn.
    panel.get_by_label("Exact text").first.uncheck()
    for scope in (cards.nth(1), widget.get_by_test_id("message").nth(1)):
        link = scope.locator('a[href="http://127.0.0.1:9/chart.png"]')
        expect(link).to_have_text(phrase("image", alt="chart"))
        assert scope.locator("img").count() == 0


def left(style: str | None) -> float:
    """The percentage of a ``left:`` style (``calc(30% - 1px)`` or ``30%``)."""
    found = re.search(r"left:\s*(?:calc\()?([\d.]+)%", style or "")
    assert found, style
    return float(found[1])


@pytest.mark.parametrize("app", ["jupyterlab", "notebook"])  # Lab, and Notebook 7
def test_the_widget_the_panel_and_memory_say_the_same_thing(
    tmp_path: Path, workspace: Path, app: str
) -> None:
    require(app, "playwright", "anywidget")
    from playwright.sync_api import expect

    info, over = prepare(workspace)
    reader = ReadModel(workspace)
    compactions = reader.compactions("ResearchAgent")
    assert len(compactions) == 2 and over.usage.tokens > over.usage.context_length
    newest = info.messages  # numbered from 1: the newest message is #messages
    root = tmp_path / "lab"
    root.mkdir()
    write_notebook(
        root / "same.ipynb",
        "%load_ext nbmemory",
        "%memory ResearchAgent --widget",
        "%memory Over --widget",
        "%memory ResearchAgent",
    )
    with (
        jupyter_lab(
            root, extra_args=lab_args(tmp_path, "--NbMemoryServer.poll_interval=0.5"), app=app
        ) as server,
        open_notebook(server, "same.ipynb", height=2600) as page,
    ):
        run_all_cells(page)
        widgets = page.get_by_test_id("nbmemory-widget")
        expect(widgets).to_have_count(2, timeout=WAIT_MS)
        widget, over_widget = widgets.nth(0), widgets.nth(1)
        expect(widget.get_by_test_id("usage")).to_have_text(
            info.usage.to_json()["words"]["usage"], timeout=WAIT_MS
        )

        # %memory: invisible characters shown, numbers from 1, a tool call readable.
        printed = page.locator(".jp-Notebook .jp-Cell").nth(3).locator(".jp-OutputArea-output")
        expect(printed).to_contain_text(REVEALED)
        expect(printed).to_contain_text(f"#{newest} · ResearchAgent")
        expect(printed).to_contain_text("Calls find\n  query: Lyon")

        # The widget: Exact text reveals, numbers from 1, labelled compaction figures.
        messages = widget.get_by_test_id("message")
        expect(messages.first.locator(".when")).to_contain_text(f"#{newest} ")
        rendered = messages.nth(1)  # the raw HTML, as written
        expect(rendered).to_contain_text("Use <b>bold</b> here.")
        assert rendered.locator("b").count() == 0 and "</p>" not in rendered.inner_text()
        widget.get_by_test_id("exact").check()
        exact = widget.get_by_test_id("exact-text")
        expect(exact.nth(2)).to_have_text(REVEALED)
        call = exact.nth(0).inner_text()  # the tool call as stored: its arguments a JSON string
        assert '"arguments": "{\\"query\\": \\"Lyon\\"}"' in call
        rows = widget.get_by_test_id("nbmemory-compaction")
        for row, compaction in zip(rows.all(), compactions, strict=True):
            expect(row).to_contain_text(compaction.figures)
        expect(widget.get_by_test_id("nbmemory-timeline")).to_contain_text(LABELS["compactions"])
        rows.nth(0).get_by_test_id(
            "nbmemory-compaction-open"
        ).click()  # the older compaction: its summary is not what the memory holds
        expect(widget.get_by_test_id("nbmemory-summary-title")).to_have_text(
            "The summary this compaction wrote (a later one replaced it)"
        )
        dropped = len(compactions[0].dropped)
        dropped_words = (
            phrase("dropped", terms=counted(dropped, "term"))
            if dropped
            else LABELS["nothing dropped"]
        )
        expect(widget.get_by_test_id("nbmemory-dropped-title")).to_have_text(dropped_words)
        terms = widget.get_by_test_id("nbmemory-dropped-term").all_inner_texts()
        assert "ResearchAgent" not in terms, terms
        widget.get_by_test_id("nbmemory-close-compaction").click()
        found = reader.search("ResearchAgent", "bold")
        caption = search_words("bold", found.total, 0, len(found.items[:20]), False, None)
        widget.get_by_label("Search messages").fill("bold")
        widget.get_by_label("Search messages").press("Enter")
        expect(widget.get_by_test_id("listing")).to_have_text(caption)

        # The panel: Show Agent Memory puts the focus on the agent list, as the README says;
        # a hint until an agent is chosen, then the same words and numbers.
        page.locator(".jp-Notebook").first.click()
        page.evaluate("() => window.jupyterapp.commands.execute('nbmemory:show')")
        panel = page.get_by_test_id("nbmemory-panel")
        expect(panel.get_by_test_id("nbmemory-agent").first).to_be_focused(timeout=WAIT_MS)
        expect(panel).to_contain_text("Select an agent to see its memory.", timeout=WAIT_MS)
        row = panel.get_by_test_id("nbmemory-agent").filter(has_text="ResearchAgent")
        expect(row).to_contain_text(info.to_json()["counts"])
        row.click()
        cards = panel.get_by_test_id("nbmemory-message")
        expect(cards.first.locator(".jp-nbmemory-when")).to_contain_text(f"#{newest} ")
        body = cards.nth(1).get_by_test_id("nbmemory-message-body")
        expect(body).to_contain_text("Use <b>bold</b> here.")
        assert body.locator("b").count() == 0 and "</p>" not in body.inner_text()
        expect(panel.get_by_test_id("nbmemory-notes-empty")).to_be_visible()
        expect(panel.get_by_test_id("nbmemory-notes")).to_be_hidden()
        panel.get_by_label("Exact text").first.check()
        expect(cards.nth(2).get_by_test_id("nbmemory-exact-text")).to_have_text(REVEALED)
        figures = panel.get_by_test_id("nbmemory-compaction-figures")
        for shown, compaction in zip(figures.all(), compactions, strict=True):
            expect(shown).to_contain_text(compaction.figures)
        panel.get_by_role("button", name="What did compaction 1 forget?").click()
        view = page.get_by_test_id("nbmemory-compaction-view")
        expect(view).to_contain_text("The summary this compaction wrote (a later one replaced it)")
        terms = view.get_by_test_id("nbmemory-dropped-term").all_inner_texts()
        assert "ResearchAgent" not in terms, terms
        expect(view.get_by_test_id("nbmemory-dropped-title")).to_have_text(dropped_words)
        expect(view).to_contain_text(LABELS["transcript"])
        expect(panel.get_by_test_id("nbmemory-timeline-title")).to_have_text(LABELS["compactions"])

        # One search caption: the same search, worded alike.
        panel.get_by_test_id("nbmemory-search").fill("bold")
        panel.get_by_test_id("nbmemory-search").press("Enter")
        expect(panel.get_by_test_id("nbmemory-search-caption")).to_have_text(caption)
        panel.get_by_role("button", name="Close search").click()

        # One palette: each part is the same colour in both gauges.
        def colours(scope: Any, selector: str) -> dict[str, str]:
            return scope.locator(selector).evaluate_all(
                "(nodes) => Object.fromEntries(nodes.map((n) => "
                "[n.dataset.part, getComputedStyle(n).backgroundColor]))"
            )

        in_widget = colours(widget, "[data-testid=nbmemory-xray-segment]")
        in_panel = colours(panel, "[data-testid=nbmemory-xray-segment]")
        assert in_widget == in_panel and len(set(in_panel.values())) == len(in_panel), in_panel

        # One threshold scale: past its window, both gauges mark the threshold where it falls
        # on a bar as long as the request.
        panel.get_by_test_id("nbmemory-agent").filter(has_text="Over").click()
        over_agent_views_say_the_same(panel, over_widget, over)
        mark = panel.get_by_test_id("nbmemory-xray-threshold")
        expect(panel.get_by_test_id("nbmemory-xray")).to_have_attribute(
            "data-tokens", str(over.usage.tokens)
        )
        expected = 100 * 270 / over.usage.tokens  # ceil(0.9 * 300) on a bar of the request
        assert left(mark.get_attribute("style")) == pytest.approx(expected, abs=0.01)
        widget_mark = over_widget.get_by_test_id("nbmemory-xray-threshold")
        assert left(widget_mark.get_attribute("style")) == pytest.approx(expected, abs=0.01)
        expect(over_widget.get_by_test_id("nbmemory-xray-compacts")).to_have_text(
            over.usage.to_json()["words"]["compacts_next"]
        )
        expect(panel.get_by_test_id("nbmemory-xray-compacts")).to_have_text(
            over.usage.to_json()["words"]["compacts_next"]
        )
        screenshot(
            page,
            "vocabulary-views.png" if app == "jupyterlab" else "vocabulary-views-notebook7.png",
        )
