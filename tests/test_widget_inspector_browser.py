"""The memory inspector in the widget, in real JupyterLab and Chromium: the context X-ray against
what a loopback model server receives, the compaction timeline, search, copy, roles, keyboard and
themes. Hostile text stays text in each of them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from browser import (
    WAIT_MS,
    execute,
    jupyter_lab,
    notebook_url,
    open_lab,
    open_notebook,
    require,
    restart_kernel,
    run_all_cells,
    save_notebook,
    screenshot,
    write_notebook,
)
from fake_openai import FakeOpenAI
from nbmemory import Agent
from nbmemory.memory.notes import Notes
from nbmemory.memory.search import content_text
from nbmemory.store import memory_path
from nbmemory.tokens import TokenCounter
from nbmemory.views.read_model import ReadModel
from nbmemory.wording import PARTS, search_words
from support import agent_docs

pytestmark = pytest.mark.browser
APPS = pytest.mark.parametrize("app", ["jupyterlab", "notebook"])  # Lab, and Notebook 7


def shot(app: str, name: str) -> str:
    """A screenshot's file name, marked for Notebook 7."""
    return name if app == "jupyterlab" else name.replace(".png", "-notebook7.png")


WIDGET = '[data-testid="nbmemory-widget"]'
TOOL_SOURCE = '''
def weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: The city.
    """
    return f"sunny in {city}"
'''


def xray_agent_options(url: str) -> dict[str, Any]:
    return dict(
        agent_name="Xray",
        model_name="openai/test-model",
        api_base=url,
        api_key="test-key",
        persistent_memory=True,
        context_length=4000,
        max_tokens=300,
        max_retries=0,
        system_prompt="You are exact.",
        rules="Cite sources.",
    )


def shown_parts(widget: Any) -> list[tuple[str, int]]:
    items = widget.get_by_test_id("nbmemory-xray-part")
    return [
        (item["part"], int(item["tokens"]))
        for item in items.evaluate_all(
            "(nodes) => nodes.map((n) => ({part: n.dataset.part, tokens: n.dataset.tokens}))"
        )
    ]


@APPS
def test_the_xray_adds_up_to_the_engine_and_to_what_the_model_receives(
    tmp_path: Path, app: str
) -> None:
    require("jupyterlab", "playwright", "nbformat")
    from playwright.sync_api import expect

    root = tmp_path / "lab"
    root.mkdir()
    figures = tmp_path / "figures.json"
    namespace: dict[str, Any] = {}
    exec(TOOL_SOURCE, namespace)
    with FakeOpenAI() as server:
        options = xray_agent_options(server.url)
        # An earlier session, in this process: the kernel's agent preloads it.
        server.reply("Noted.")
        Agent(**options, tools=[namespace["weather"]]).run("The launch is on 2027-03-14.")
        Notes(memory_path("Xray").parent).add("Office: Lyon <img src=x onerror=alert(1)>.")
        server.reply("Also noted.")
        write_notebook(
            root / "xray.ipynb",
            "import json, pathlib\nfrom nbmemory import Agent\n"
            "from nbmemory.jupyter.widget import MemoryWidget\n" + TOOL_SOURCE,
            f"agent = Agent(**{options!r}, tools=[weather])\n"
            "agent.run('The budget is 40k EUR.')\n"
            f"pathlib.Path({str(figures)!r}).write_text("
            "json.dumps({'tokens': agent.next_request_tokens()}))\n"
            "MemoryWidget('Xray', agent=agent)",
        )
        with (
            jupyter_lab(root, app=app) as lab,
            open_notebook(lab, "xray.ipynb", height=1600) as page,
        ):
            run_all_cells(page)
            widget = page.locator(WIDGET)
            legend = widget.get_by_test_id("nbmemory-xray-legend")
            expect(legend.get_by_test_id("nbmemory-xray-total")).to_be_visible(timeout=WAIT_MS)
            engine = json.loads(figures.read_text())["tokens"]
            usage = ReadModel().usage("Xray")

            # The shown parts are the engine's, in request order, and add up to its figure.
            parts = shown_parts(widget)
            assert [name for name, _ in parts] == list(PARTS)
            assert parts == list(usage.parts)
            assert sum(tokens for _, tokens in parts) == usage.tokens == engine
            total = legend.get_by_test_id("nbmemory-xray-total")
            assert total.get_attribute("data-tokens") == str(engine)
            usage = widget.locator('[data-testid="usage"]')
            expect(usage).to_contain_text(f"{engine:,} of 4,000 tokens")
            # Each segment is as wide as its share of the window.
            bar = widget.get_by_test_id("nbmemory-xray-gauge").bounding_box()
            assert bar is not None
            for segment in widget.get_by_test_id("nbmemory-xray-segment").all():
                tokens = int(segment.get_attribute("data-tokens") or 0)
                box = segment.bounding_box()
                assert box is not None
                assert abs(box["width"] - bar["width"] * tokens / 4000) <= 2.5, (tokens, box)
            threshold = widget.get_by_test_id("nbmemory-xray-threshold").bounding_box()
            assert threshold is not None
            assert abs(threshold["x"] - (bar["x"] + 0.9 * bar["width"])) <= 2
            expect(widget.get_by_test_id("nbmemory-xray-compacts")).to_be_hidden()

            # The next request, as the loopback server receives it, against the parts shown.
            # Compared exactly: the tool schemas (their JSON counted with the agent's encoding),
            # the reply room (the request's max_tokens), the system prompt, the rules and the
            # pinned notes (each wire message counted as the engine writes it, "Role: text"),
            # and the earlier sessions (the preloaded-memory message, "System: text"). This
            # session's messages travel as plain turns while the engine counts them as their
            # MEMORY.md blocks, so for them the messages themselves are compared, and the
            # tokens only as an upper bound of their plain text.
            before = len(server.requests)
            server.reply("Done.")
            execute(page, "agent.run('What is next?')")
            request = server.requests[before]
            counter = TokenCounter(options["model_name"])
            shown = dict(parts)
            wire = request["messages"]
            assert wire[-1] == {"role": "user", "content": "What is next?"}

            def line(message: dict[str, Any]) -> int:
                role = message["role"].capitalize()
                return counter.count(f"{role}: {message['content']}\n\n")

            assert counter.count(json.dumps(request["tools"])) == shown["tool schemas"]
            assert request["max_tokens"] == shown["reply room"]
            assert line(wire[0]) == shown["system prompt"]
            assert line(wire[1]) == shown["rules"]
            assert wire[2]["content"].startswith("[Pinned notes")
            assert "<img src=x onerror=alert(1)>" in wire[2]["content"]
            assert line(wire[2]) == shown["pinned notes"]
            assert wire[3]["content"].startswith("[Persistent Memory")
            assert counter.count(f"System: {wire[3]['content']}") == shown["earlier sessions"]
            session = wire[4:-1]
            stored = ReadModel().records("Xray")[2:4]
            assert [m["content"] for m in session] == [content_text(m["content"]) for m in stored]
            assert [m["role"] for m in session] == ["user", "assistant"]
            plain = sum(counter.count(m["content"]) for m in session)
            assert 0 < plain < shown["this session"]

            # Tokens per message on demand: each message's own figure from the read model.
            widget.get_by_label("Tokens per message").check()
            counts = widget.locator('[data-testid="message-tokens"][data-tokens]')  # counted
            expect(counts).to_have_count(6, timeout=WAIT_MS)
            expected = ReadModel().message_tokens("Xray", range(6)).tokens
            got = counts.evaluate_all("(nodes) => nodes.map((n) => Number(n.dataset.tokens))")
            assert sorted(got) == sorted(expected.values())

            # Past the threshold: the view says that the next call compacts, and it does.
            execute(
                page,
                "agent.short_memory.add('User', 'filler ' * 3000)\n"
                "agent.add_memory('Filed.')\n"
                "agent.short_memory.add('User', 'One more thing.')\n"
                "agent.add_memory('Noted too.')",
            )
            note = widget.get_by_test_id("nbmemory-xray-compacts")
            expect(note).to_contain_text("The next call compacts first", timeout=WAIT_MS)
            gauge = widget.get_by_test_id("nbmemory-xray-gauge")
            expect(gauge).to_have_class("xray-gauge compacts")
            screenshot(
                widget.get_by_test_id("nbmemory-xray"), shot(app, "widget-xray-compacts.png")
            )
            before = len(server.requests)
            server.reply("Summary: launch 2027-03-14, budget 40k EUR.")
            server.reply("Done again.")
            execute(page, "agent.run('And now?')")
            summarizer = server.requests[before]
            assert "And now?" not in json.dumps(summarizer["messages"])  # a summary request
            expect(note).to_be_hidden(timeout=WAIT_MS)
            expect(widget.locator('[data-testid="counts"]')).to_contain_text(
                "1 archive ·"
            )  # not "1 archives"
            screenshot(widget.get_by_test_id("nbmemory-xray"), shot(app, "widget-xray.png"))
            assert widget.locator("img").count() == 0


HOSTILE = '<img src=x onerror="window.__pwned=1">'


@APPS
def test_the_timeline_shows_what_a_summary_dropped(tmp_path: Path, app: str) -> None:
    require("jupyterlab", "playwright", "nbformat")
    from playwright.sync_api import expect

    root = tmp_path / "lab"
    root.mkdir()
    with FakeOpenAI() as server:
        agent = Agent(**{**xray_agent_options(server.url), "agent_name": "Forget"})
        memory = agent.short_memory
        memory.add("User", f"The vault code is ZX-4471. {HOSTILE}")
        memory.add("Forget", "Noted, the vault code.")
        for i in range(24):
            memory.add("User", f"Filler note number {i}.")
        memory.add("User", "Our office is in Lyon and the budget is 40k EUR.")
        memory.add("Forget", "Noted.")
        server.reply("The office is in Lyon; the budget is 40k EUR.")
        assert agent._context_compressor is not None
        agent._context_compressor.keep_dropped = False  # the model's summary alone
        assert agent._context_compressor.compress(agent)
    memory.add("User", "What is the vault code?")
    (compaction,) = ReadModel().compactions("Forget")
    assert compaction.recorded and "ZX-4471" in compaction.dropped
    assert "ZX-4471" not in compaction.summary
    write_notebook(
        root / "forget.ipynb",
        "from nbmemory.jupyter.widget import MemoryWidget\nMemoryWidget('Forget')",
    )
    with (
        jupyter_lab(root, app=app) as lab,
        open_notebook(lab, "forget.ipynb", height=2000) as page,
    ):
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        run_all_cells(page)
        widget = page.locator(WIDGET)
        rows = widget.get_by_test_id("nbmemory-compaction-open")
        expect(rows).to_have_count(1, timeout=WAIT_MS)
        row = rows.first
        expect(row).to_contain_text(compaction.time)
        expect(row).to_contain_text(compaction.figures)  # memory and next request, labelled
        expect(row).to_contain_text(f"{compaction.messages} messages archived")
        expect(row).to_contain_text(compaction.archive)

        # Opened: the summary beside the transcript, the dropped terms listed and marked.
        row.click()
        view = widget.locator('[data-testid="compaction-view"]')
        expect(view).to_be_visible()
        expect(view.get_by_test_id("nbmemory-summary")).to_have_text(compaction.summary)
        terms = view.get_by_test_id("nbmemory-dropped-term")
        expect(terms).to_have_count(len(compaction.dropped))
        assert terms.all_text_contents() == compaction.dropped
        expect(view.get_by_test_id("nbmemory-summary")).not_to_contain_text("ZX-4471")
        listing = widget.locator('[data-testid="listing"]')
        expect(listing).to_have_text("#28\u2013#9 of 28 messages, newest first")
        summary_box, list_box = view.bounding_box(), listing.bounding_box()
        assert summary_box and list_box and summary_box["x"] + summary_box["width"] <= list_box["x"]

        # The fact is on the last page (newest first): the term's button turns to it.
        marks = widget.locator('[data-testid="messages"] mark.dropped')
        expect(marks.filter(has_text="ZX-4471")).to_have_count(0)
        terms.filter(has_text="ZX-4471").click()
        expect(marks.filter(has_text="ZX-4471")).to_have_count(1, timeout=WAIT_MS)
        expect(widget.get_by_test_id("nbmemory-page-input")).to_have_value("2")
        fact = widget.locator('[data-testid="message"][data-index="0"]')
        expect(fact).to_be_focused()
        # Marked from text nodes: the hostile HTML around it stays text.
        expect(fact.locator(".content")).to_have_text(f"The vault code is ZX-4471. {HOSTILE}")
        made = fact.locator("mark").evaluate_all("(ms) => ms.map((m) => m.outerHTML)")
        assert '<mark class="dropped" data-term="ZX-4471">ZX-4471</mark>' in made
        assert all(
            m in (f'<mark class="dropped" data-term="{t}">{t}</mark>' for t in compaction.dropped)
            for m in made
        )
        widget.get_by_label("Exact text", exact=True).check()
        expect(fact.locator("pre mark.dropped").filter(has_text="ZX-4471")).to_have_count(1)
        widget.get_by_label("Exact text", exact=True).uncheck()
        screenshot(widget, shot(app, "widget-compaction.png"))

        # Closed: back to the memory.
        widget.get_by_role("button", name="Close this compaction and show the memory").click()
        expect(view).to_be_hidden()
        expect(widget.locator('[data-testid="listing"]')).to_have_text(
            re.compile("^#\\d+(\u2013#\\d+)? of \\d+ messages?, newest first$")
        )
        for tag in ("img", "script", "svg"):
            expect(widget.locator(tag)).to_have_count(0)
        assert page.evaluate("() => typeof window.__pwned") == "undefined"
        assert dialogs == []


@APPS
def test_search_paging_roles_jumps_and_copy(tmp_path: Path, app: str) -> None:
    require("jupyterlab", "playwright", "nbformat")
    from playwright.sync_api import expect

    from nbmemory import Conversation

    root = tmp_path / "lab"
    root.mkdir()
    convo = Conversation(name="Finder", memory_md_path=memory_path("Finder"))
    hostile = f"Budget {HOSTILE} and <b>bold</b> budget."
    long_text = "Long budget report. " + "x" * 3000 + " THE END"
    convo.add("User", hostile)
    convo.add("Tool", long_text)
    for i in range(148):
        convo.add("User" if i % 2 else "Finder", f"Budget line {i}: 40k EUR.")
    for i in range(5):
        convo.add("Finder", f"Other note {i}.")
    write_notebook(
        root / "find.ipynb",
        "from nbmemory.jupyter.widget import MemoryWidget\nMemoryWidget('Finder')",
    )
    with (
        jupyter_lab(root, app=app) as lab,
        open_notebook(lab, "find.ipynb", height=2400) as page,
    ):
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=lab.url)
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        run_all_cells(page)
        widget = page.locator(WIDGET)
        messages = widget.locator('[data-testid="messages"] [data-testid="message"]')
        expect(messages).to_have_count(20, timeout=WAIT_MS)
        listing = widget.locator('[data-testid="listing"]')
        pager = widget.get_by_test_id("nbmemory-page-input")
        pages = widget.locator(".jp-nbmemory-page-label")

        # Search: the hit count, every page reachable (no stop at 100), matches marked.
        widget.get_by_label("Search messages").fill("budget")
        widget.get_by_label("Search messages").press("Enter")
        expect(listing).to_have_text(search_words("budget", 150, 0, 20, False, None))
        expect(pager).to_have_value("1")
        expect(pages).to_have_text("Page  of 8")
        hits = widget.locator('[data-testid="messages"] mark.hit')
        expect(hits.first).to_be_visible()
        assert {t.casefold() for t in hits.all_text_contents()} == {"budget"}
        widget.get_by_role("button", name="Last results").click()
        expect(pager).to_have_value("8")
        expect(messages).to_have_count(10)
        expect(messages.last).to_contain_text("Budget line 147")
        page_field = widget.get_by_role("spinbutton", name="Page of 8")  # named as it reads
        page_field.fill("6")
        page_field.press("Enter")
        expect(pager).to_have_value("6")
        expect(messages.first).to_contain_text("Budget line 98:")
        widget.get_by_role("button", name="First results").click()
        expect(pager).to_have_value("1")
        first = messages.first
        expect(first.locator(".content")).to_have_text(hostile)  # hostile text, marked, inert
        assert first.locator("mark.hit").all_text_contents() == ["Budget", "budget"]
        expect(widget.locator("img")).to_have_count(0)
        expect(widget.locator(".content b")).to_have_count(0)
        widget.get_by_label("Search messages").fill("no such words")
        widget.get_by_label("Search messages").press("Enter")
        expect(listing).to_have_text(search_words("no such words", 0, 0, 0, False, None))
        expect(messages).to_have_count(0)
        expect(pager).to_be_hidden()  # one page: nothing to turn

        # A role: its messages only, searched and paged alone.
        widget.get_by_label("Search messages").fill("budget")
        widget.get_by_label("Search messages").press("Enter")
        widget.get_by_label("Show the messages of one role").select_option("Finder")
        expect(listing).to_contain_text(
            "74 messages with “budget” in MEMORY.md among Finder's messages"
        )
        widget.get_by_label("Search messages").fill("")
        expect(listing).to_have_text("#155\u2013#121 of 79 messages by Finder, newest first")
        roles = messages.locator(".role").all_text_contents()
        assert set(roles) == {"Finder"}, roles
        widget.get_by_label("Show the messages of one role").select_option("")
        expect(listing).to_have_text("#155\u2013#136 of 155 messages, newest first")
        expect(pages).to_have_text("Page  of 8")  # every role's pages again

        # Oldest and newest, whatever the order.
        widget.get_by_role("button", name="Oldest messages").click()
        expect(pager).to_have_value("8")
        expect(messages.last).to_have_attribute("data-index", "0")
        widget.get_by_role("button", name="Newest messages").click()
        expect(messages.first).to_have_attribute("data-index", "154")
        widget.locator('[data-testid="order"]').click()  # oldest first
        expect(messages.first).to_have_attribute("data-index", "0")
        widget.get_by_role("button", name="Newest messages").click()
        expect(messages.last).to_have_attribute("data-index", "154")
        widget.get_by_role("button", name="Oldest messages").click()

        # A page number being typed stays through a redraw (a message written by another
        # object arrives), and Enter then turns to it.
        pager.fill("3")
        execute(
            page,
            "from nbmemory import Conversation\nfrom nbmemory.store import memory_path\n"
            "Conversation(name='Finder', memory_md_path=memory_path('Finder'))"
            ".add('User', 'A late budget line.')",
        )
        expect(listing).to_have_text("#1\u2013#20 of 156 messages, oldest first")
        expect(pager).to_have_value("3")
        expect(pager).to_be_focused()
        pager.press("Enter")
        expect(messages.first).to_have_attribute("data-index", "40")
        widget.get_by_role("button", name="Oldest messages").click()

        # Copy: the stored text exactly, the whole of a folded message too.
        widget.locator('[data-testid="message"][data-index="0"]').get_by_role(
            "button", name="Copy"
        ).click()
        status = widget.locator('[data-testid="status"]')
        copied = f"Copied message #1 of MEMORY.md ({len(hostile):,} characters)."
        expect(status).to_have_text(copied)
        assert page.evaluate("() => navigator.clipboard.readText()") == hostile
        widget.locator('[data-testid="message"][data-index="1"]').get_by_role(
            "button", name="Copy"
        ).click()
        expect(status).to_contain_text(f"Copied message #2 of MEMORY.md ({len(long_text):,} ")
        assert page.evaluate("() => navigator.clipboard.readText()") == long_text
        screenshot(widget, shot(app, "widget-search.png"))

        # The kernel restarted: nothing follows the memory any more, and the view says so.
        restart_kernel(page, "find.ipynb")
        expect(widget.locator('[data-testid="offline"]')).to_contain_text(
            "no kernel follows this widget now", timeout=WAIT_MS
        )
        expect(widget.get_by_label("Search messages")).to_be_disabled()
        expect(
            widget.locator('[data-testid="message"][data-index="0"]').get_by_role(
                "button", name="Copy"
            )
        ).to_be_enabled()
        assert page.evaluate("() => typeof window.__pwned") == "undefined"
        assert dialogs == []


# ----------------------------------------------------------------------------------------------
# Accessible and themed

_COLOURS = """(widget) => {
    const css = (node) => getComputedStyle(node);
    const background = () => {  // what the widget is drawn on: the first opaque ancestor
        for (let node = widget; node; node = node.parentElement) {
            const colour = css(node).backgroundColor;
            if (!/rgba\\(.*, 0\\)$/.test(colour) && colour !== "transparent") return colour;
        }
        return "rgb(255, 255, 255)";
    };
    const gauge = widget.querySelector('[data-testid="nbmemory-xray-gauge"]');
    const mark = widget.querySelector('[data-testid="nbmemory-xray-threshold"]');
    const one = (selector) => {
        const node = widget.querySelector(selector);
        return node && {background: css(node).backgroundColor, colour: css(node).color,
                        shadow: css(node).boxShadow, outline: css(node).outlineColor};
    };
    return {
        background: background(),
        track: css(gauge).backgroundColor,
        outline: gauge.classList.contains("compacts") ? css(gauge).outlineColor : null,
        segments: [...widget.querySelectorAll('[data-testid="nbmemory-xray-segment"]')]
            .filter((s) => !s.hidden).map((s) => css(s).backgroundColor),
        mark: css(mark).backgroundColor,
        halo: css(mark).boxShadow,
        dropped: one("mark.dropped"),
        hit: one("mark.hit"),
    };
}"""

_UNNAMED = """(widget) => {
    const name = (node) => {
        const label = node.getAttribute("aria-label");
        if (label && label.trim()) return label;
        const by = node.getAttribute("aria-labelledby");
        if (by) {
            const ids = by.split(/\\s+/);
            return ids.map((id) => document.getElementById(id)?.textContent || "").join(" ");
        }
        const wrapping = node.closest("label");
        if (wrapping && wrapping.textContent.trim()) return wrapping.textContent;
        if (node.id) {
            const label = document.querySelector(`label[for="${node.id}"]`);
            if (label) return label.textContent;
        }
        if (node.tagName === "BUTTON") return node.textContent;
        return node.getAttribute("title") || "";
    };
    const controls = widget.querySelectorAll('button, input, select, textarea, [role="button"],'
        + ' [role="meter"], [tabindex]:not([tabindex="-1"])');
    const unnamed = [...controls].filter((node) => !name(node).trim());
    return unnamed.map((node) => node.outerHTML.slice(0, 120));
}"""


def _rgb(text: str) -> tuple[float, float, float, float]:
    import re

    found = re.search(r"rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)", text)
    assert found, text
    r, g, b, a = found.groups()
    return float(r), float(g), float(b), float(a) if a is not None else 1.0


def _over(colour: str, background: str) -> tuple[float, float, float]:
    """``colour`` as seen over ``background`` (alpha composited)."""
    r, g, b, a = _rgb(colour)
    br, bg, bb, _ = _rgb(background)
    return (r * a + br * (1 - a), g * a + bg * (1 - a), b * a + bb * (1 - a))


def contrast(one: str, two: str, background: str) -> float:
    """WCAG contrast ratio of two CSS colours drawn over ``background``."""

    def luminance(rgb: tuple[float, float, float]) -> float:
        def channel(c: float) -> float:
            c /= 255
            return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

        r, g, b = (channel(c) for c in rgb)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    a, b = sorted((luminance(_over(one, background)), luminance(_over(two, background))))
    return (b + 0.05) / (a + 0.05)


def check_contrast(widget: Any, theme: str) -> list[str]:
    """Every mark's contrast in the rendered colours; the failures, described."""
    colours = widget.evaluate(_COLOURS)
    ground, track = colours["background"], colours["track"]
    found = []

    def need(what: str, one: str, two: str, minimum: float = 3.0) -> None:
        ratio = contrast(one, two, ground)
        if ratio < minimum:
            found.append(f"{theme}: {what} {ratio:.2f}:1 ({one} on {two})")

    assert len(colours["segments"]) == len(PARTS), colours
    for n, segment in enumerate(colours["segments"]):
        need(f"segment {PARTS[n]} against the track", segment, track)
        need(f"segment {PARTS[n]} against the background", segment, ground)
    need("threshold mark against the track", colours["mark"], track)
    need("threshold mark against its halo", colours["mark"], colours["halo"])
    for n, segment in enumerate(colours["segments"]):
        need(f"threshold halo against segment {PARTS[n]}", colours["halo"], segment)
    assert colours["outline"], "the gauge is not marked as compacting"
    need("compaction outline against the background", colours["outline"], ground)
    for kind in ("dropped", "hit"):
        mark = colours[kind]
        if mark is None:
            continue
        need(f"{kind} mark's text", mark["colour"], mark["background"], 4.5)
        need(f"{kind} mark's underline against the background", mark["shadow"], ground)
    return found


@APPS
def test_every_control_is_named_usable_by_keyboard_and_every_mark_contrasts(
    tmp_path: Path, app: str
) -> None:
    import os

    from nbmemory import Conversation, Workspace
    from nbmemory.memory.run_settings import RunSettings, write_settings

    require("jupyterlab", "playwright", "nbformat")
    from playwright.sync_api import expect

    # The measure itself: the old threshold mark (#555) on the dark theme's track (#424242).
    assert 1.3 < contrast("rgb(85, 85, 85)", "rgb(66, 66, 66)", "rgb(17, 17, 17)") < 1.4
    root = tmp_path / "lab"
    root.mkdir()
    convo = Conversation(name="Themed", memory_md_path=memory_path("Themed"))
    convo.add("User", f"The vault code is ZX-4471. {HOSTILE}")
    for i in range(25):
        convo.add("User", f"Search line {i}.")
    convo.compact("Twenty-six lines; nothing about the vault.")
    for i in range(4):
        convo.add("User", f"Later line {i}: Lyon.")
    folder = memory_path("Themed").parent
    Notes(folder).add("Budget: 40k EUR.")
    session = (os.getpid(), agent_docs("Themed").identity(), 2)  # this process preloaded 2

    def settings(window: int) -> RunSettings:
        return RunSettings("gpt-4o", window, 0.9, "o200k_base", 120, 700, 30, 250, session)

    write_settings(Workspace.from_env().agent("Themed"), settings(100_000))
    tokens = ReadModel().usage("Themed").tokens
    write_settings(
        Workspace.from_env().agent("Themed"), settings(int(tokens / 0.95))
    )  # past the threshold: compacts next
    assert ReadModel().usage("Themed").compacts_next
    assert all(tokens for _, tokens in ReadModel().usage("Themed").parts)
    write_notebook(
        root / "themed.ipynb",
        "from nbmemory.jupyter.widget import MemoryWidget\nMemoryWidget('Themed')",
    )
    with (
        jupyter_lab(root, app=app) as lab,
        open_notebook(lab, "themed.ipynb", height=1800) as page,
    ):
        run_all_cells(page)
        widget = page.locator(WIDGET)
        expect(widget.get_by_test_id("nbmemory-xray-compacts")).to_contain_text(
            "compacts first", timeout=WAIT_MS
        )
        cells = "() => window.jupyterapp.shell.currentWidget.content.widgets.length"

        # Every control has an accessible name; the gauge says its figures.
        assert widget.evaluate(_UNNAMED) == []
        meter = widget.get_by_role("meter", name="Context window used")
        assert "tokens" in (meter.get_attribute("aria-valuetext") or "")

        # Keyboard: type, tab to a control, press it; notebook shortcuts stay out of the way.
        search = widget.get_by_label("Search messages")
        search.focus()
        page.keyboard.type("line")
        page.keyboard.press("Enter")
        expect(widget.locator('[data-testid="listing"]')).to_contain_text("5 messages with")
        page.keyboard.press("Tab")
        expect(widget.get_by_label("archives too")).to_be_focused()
        page.keyboard.press("Space")
        expect(widget.locator('[data-testid="listing"]')).to_contain_text("30 messages with")
        expect(widget.locator('[data-testid="messages"] mark.hit').first).to_be_visible()
        for _ in range(8):
            if page.evaluate("() => document.activeElement.dataset.testid") == "nbmemory-page-end":
                break
            page.keyboard.press("Tab")
        expect(widget.get_by_role("button", name="Last results")).to_be_focused()
        page.keyboard.press("Enter")
        page_field = widget.get_by_test_id("nbmemory-page-input")
        expect(page_field).to_have_value("2")
        expect(page_field).to_be_focused()  # not lost to the page
        before = page.evaluate(cells)
        for key in ("a", "b", "d", "d", "m", "y"):  # notebook commands outside the widget
            page.keyboard.press(key)
        assert page.evaluate(cells) == before
        light = check_contrast(widget, "light")
        search.fill("")

        row = widget.get_by_test_id("nbmemory-compaction-open").first
        row.focus()
        page.keyboard.press("Enter")
        view = widget.locator('[data-testid="compaction-view"]')
        expect(view).to_be_visible()
        expect(widget.get_by_test_id("nbmemory-compaction-title")).to_be_focused()
        expect(widget.locator('[data-testid="messages"] mark.dropped').first).to_be_visible()
        assert widget.evaluate(_UNNAMED) == []
        light += check_contrast(widget, "light")
        screenshot(widget, shot(app, "widget-light.png"))
        page.keyboard.press("Escape")
        expect(view).to_be_hidden()
        expect(row).to_be_focused()

        # The dark theme: the same checks in its colours.
        track = """(widget) => getComputedStyle(
            widget.querySelector('[data-testid="nbmemory-xray-gauge"]')).backgroundColor"""
        light_track = widget.evaluate(track)
        page.evaluate(
            "() => window.jupyterapp.commands.execute('apputils:change-theme',"
            " {theme: 'JupyterLab Dark'})"
        )
        page.wait_for_function(
            "() => document.body.dataset.jpThemeLight === 'false'", timeout=WAIT_MS
        )
        page.wait_for_function(
            f"([widget, light]) => ({track})(widget) !== light",
            arg=[widget.element_handle(), light_track],
            timeout=WAIT_MS,
        )
        search.fill("line")
        search.press("Enter")
        expect(widget.locator('[data-testid="messages"] mark.hit').first).to_be_visible()
        dark = check_contrast(widget, "dark")
        search.fill("")
        row.click()
        expect(widget.locator('[data-testid="messages"] mark.dropped').first).to_be_visible()
        dark += check_contrast(widget, "dark")
        screenshot(widget, shot(app, "widget-dark.png"))
        assert light + dark == []


# ----------------------------------------------------------------------------------------------
# Placement and persistence

ANSWER = ".jp-OutputArea-output"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SAVE_STATE = {"@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}}


def visible_text(page: Any, text: str) -> Any:
    return page.get_by_text(text).filter(visible=True)


@APPS
def test_the_widget_follows_the_answer_folded_and_reads_in_a_saved_notebook(
    tmp_path: Path, app: str
) -> None:
    require("jupyterlab", "playwright", "nbformat")
    import nbformat
    from nbformat.sign import NotebookNotary
    from playwright.sync_api import expect

    root = tmp_path / "lab"
    root.mkdir()
    task = f"Our office is in Lyon. {HOSTILE}"
    write_notebook(root / "placed.ipynb", "%load_ext nbmemory", f"%%agent Keeper --widget\n{task}")
    # Saved with the widget state (the user setting "Save Widget State Automatically").
    with (
        jupyter_lab(root, settings=SAVE_STATE, app=app) as lab,
        open_notebook(lab, "placed.ipynb", height=1000) as page,
    ):
        run_all_cells(page)
        cell = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
        outputs = cell.locator(".jp-OutputArea-child")
        expect(outputs).to_have_count(3, timeout=WAIT_MS)
        # The answer first, the widget after it; its static summary hidden while it is live.
        expect(outputs.nth(0)).to_contain_text("Keeper")
        expect(outputs.nth(0).locator(WIDGET)).to_have_count(0)
        expect(outputs.nth(1)).to_be_hidden()
        widget = outputs.nth(2).locator(WIDGET)
        expect(widget).to_be_visible()
        # Folded: one line, the gauge and the counts; the inspector a click away.
        line = widget.locator('[data-testid="summary-line"]')
        expect(widget.locator('[data-testid="brief"]')).to_have_text("2 messages · 0 archives")
        expect(widget.locator('[data-testid="mini-gauge"]')).to_be_visible()
        expect(widget.locator('[data-testid="details"]')).to_be_hidden()
        box, whole = line.bounding_box(), widget.bounding_box()
        assert box and whole and box["height"] < 40 and whole["height"] < 70, (box, whole)
        answer = outputs.nth(0).bounding_box()
        assert answer and answer["y"] + answer["height"] <= whole["y"]
        toggle = widget.get_by_role("button", name="Show the memory inspector")
        expect(toggle).to_have_attribute("aria-expanded", "false")
        toggle.click()
        expect(widget.locator('[data-testid="details"]')).to_be_visible()
        expect(widget.locator('[data-testid="messages"] [data-testid="message"]')).to_have_count(2)
        widget.get_by_role("button", name="Hide the memory inspector").click()
        expect(widget.locator('[data-testid="details"]')).to_be_hidden()
        screenshot(cell, shot(app, "agent-widget-placed.png"))
        save_notebook(page)

    saved = nbformat.read(root / "placed.ipynb", as_version=4)
    state = saved.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    summary, view = [o["data"] for o in saved.cells[1].outputs if "data" in o][1:]
    assert view["application/vnd.jupyter.widget-view+json"]["model_id"] in state
    # The words the saved view shows: the kernel's vocabulary model, which the widget refers to.
    words = state[view["application/vnd.jupyter.widget-view+json"]["model_id"]]["state"]
    assert state[words["vocabulary"].removeprefix("IPY_MODEL_")]["state"]["words"]["labels"]
    html = summary["text/html"].split("</style>", 1)[1]  # escaped, every piece
    assert "2 messages" in html and "&lt;img src=x" in html and "<img" not in html

    # Elsewhere: no kernel to run it (no kernelspec, no language) and no widget state, still
    # trusted (signed here, as the server signed it on saving). Without the widget state,
    # with a new kernel. From someone else: the same outputs, not signed.
    def variant(name: str, *, drop: tuple[str, ...] = (), sign: bool = True) -> None:
        copy = nbformat.from_dict(json.loads(json.dumps(saved)))
        for key in drop:
            del copy.metadata[key]
        if sign:
            NotebookNotary().sign(copy)
        else:
            copy.cells[0].source = "%load_ext nbmemory  # edited by someone else"
        nbformat.write(copy, root / name)

    variant("elsewhere.ipynb", drop=("kernelspec", "language_info", "widgets"))
    variant("stateless.ipynb", drop=("widgets",))
    variant("foreign.ipynb", sign=False)

    with (
        jupyter_lab(root, app=app) as lab,
        open_lab(lab, height=1000, failure_name="reopened") as page,
    ):
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

        def show(path: str) -> Any:
            """The notebook at ``path``, opened in Lab, or on a page of its own (Notebook 7)."""
            if app == "notebook":
                opened = page.context.new_page()
                opened.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
                opened.goto(notebook_url(lab, path))
                return opened.locator(".jp-NotebookPanel")
            page.evaluate(
                "(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", path
            )
            return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")

        def shows_the_summary(notebook: Any) -> None:
            static = notebook.locator(".nbmemory-static")
            expect(static).to_be_visible(timeout=WAIT_MS)
            expect(static).to_contain_text("Keeper memory")
            expect(static).to_contain_text("2 messages · 0 archives")
            expect(static).to_contain_text(HOSTILE)  # as text
            expect(static).to_contain_text("run the cell to inspect this memory live")
            expect(notebook.locator(ANSWER).first).to_contain_text("Keeper")
            for words in ("Error displaying widget", "Loading widget"):
                expect(visible_text(notebook, words)).to_have_count(0)
            expect(notebook.locator(f"{ANSWER} img")).to_have_count(0)

        notebook = show("elsewhere.ipynb")
        notebook.page.locator(".jp-Dialog").get_by_role("button", name="No Kernel").click()
        shows_the_summary(notebook)
        screenshot(notebook, shot(app, "saved-no-kernel.png"))

        shows_the_summary(show("stateless.ipynb"))  # a new kernel, no widget model

        shows_the_summary(show("foreign.ipynb"))  # untrusted: no widget renderer at all

        # With the widget state saved and a new kernel: the widget as it was, marked so.
        notebook = show("placed.ipynb")
        widget = notebook.locator(WIDGET)
        expect(widget.locator('[data-testid="offline"]')).to_contain_text(
            "Saved view",
            timeout=3 * WAIT_MS,  # after its new kernel started, on a busy machine
        )
        expect(notebook.locator(".nbmemory-static")).to_be_hidden()
        expect(widget.locator('[data-testid="brief"]')).to_have_text("2 messages · 0 archives")
        widget.get_by_role("button", name="Show the memory inspector").click()
        messages = widget.locator('[data-testid="messages"] [data-testid="message"]')
        expect(messages).to_have_count(2)
        expect(messages.last.locator(".content")).to_have_text(task)
        assert widget.get_by_label("Search messages").is_disabled()
        expect(visible_text(notebook, "Error displaying widget")).to_have_count(0)
        screenshot(widget, shot(app, "widget-saved-view.png"))
        for opened in page.context.pages:
            assert opened.evaluate("() => typeof window.__pwned") == "undefined"
        assert dialogs == []


@APPS
def test_a_reopened_notebook_shows_the_summary_as_it_was_saved_without_errors(
    tmp_path: Path, app: str
) -> None:
    """Saved without the widget state (the default), a notebook reopened with a new kernel
    shows each widget's static summary, and no error: the summary of the memory as it was
    when the notebook was saved, not when the cell ran."""
    require("jupyterlab", "playwright", "nbformat")
    import nbformat
    from playwright.sync_api import expect

    from nbmemory import Conversation

    root = tmp_path / "lab"
    root.mkdir()
    write_notebook(root / "kept.ipynb", "%load_ext nbmemory", "%%agent Keeper --widget\nLyon.")
    later = f"Added after the cell ran: Zurich {HOSTILE}"
    with (
        jupyter_lab(root, app=app) as lab,
        open_notebook(lab, "kept.ipynb", height=1000) as page,
    ):
        run_all_cells(page)
        widget = page.locator(WIDGET)
        expect(widget.locator('[data-testid="brief"]')).to_have_text("2 messages · 0 archives")
        Conversation(name="Keeper", memory_md_path=memory_path("Keeper")).add("User", later)
        expect(widget.locator('[data-testid="brief"]')).to_have_text(
            "3 messages · 0 archives", timeout=WAIT_MS
        )
        save_notebook(page)

    saved = nbformat.read(root / "kept.ipynb", as_version=4)
    summary = next(o for o in saved.cells[1].outputs if "nbmemory-static" in str(o))
    html = summary["data"]["text/html"].split("</style>", 1)[1]
    assert "3 messages" in html and "Zurich &lt;img src=x" in html and "<img" not in html
    assert "Zurich <img src=x" in summary["data"]["text/plain"]
    (view,) = [
        o["data"] for o in saved.cells[1].outputs if "data" in o and WIDGET_VIEW in o["data"]
    ]
    assert view[WIDGET_VIEW]["model_id"] == ""  # closed: its state is not in the notebook

    with (
        jupyter_lab(root, app=app) as lab,
        open_notebook(lab, "kept.ipynb", height=1000) as page,
    ):
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.reload()
        notebook = page.locator(".jp-NotebookPanel")
        static = notebook.locator(".nbmemory-static")
        expect(static).to_be_visible(timeout=WAIT_MS)
        expect(static).to_contain_text("3 messages · 0 archives")
        expect(static).to_contain_text(later)  # as text
        page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget.sessionContext.kernelDisplayStatus"
            " === 'idle'"
        )
        # The widget's output is a closed view: its renderer hides itself, and says no error.
        page.wait_for_function(
            """() => {
                const views = [...document.querySelectorAll('.jp-OutputArea-output')]
                    .filter((node) => /Loading widget|Error displaying/.test(node.textContent));
                return views.length === 1 && views.every(
                    (node) => node.classList.contains('lm-mod-hidden')
                        && !/Error displaying/.test(node.textContent));
            }"""
        )
        assert not [e for e in errors if "not found" in e], errors
        assert page.evaluate("() => typeof window.__pwned") == "undefined"
        screenshot(notebook, shot(app, "widget-reopened-summary.png"))
