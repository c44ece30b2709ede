"""The memory widget in real JupyterLab and Chromium: rendering, live updates, no HTML injection."""

from __future__ import annotations

from pathlib import Path

import pytest

from browser import (
    WAIT_MS,
    execute,
    jupyter_lab,
    open_notebook,
    require,
    run_all_cells,
    screenshot,
    write_notebook,
)

pytestmark = pytest.mark.browser

CELLS = [
    "from nbmemory import Conversation\nfrom nbmemory.jupyter.widget import MemoryWidget",
    'convo = Conversation(name="Viewer", memory_md_path=None, context_length=2000)\n'
    "for i in range(30):\n"
    '    convo.add("User" if i % 2 else "Viewer", f"Message number {i} with **bold** text")',
    "widget = MemoryWidget(convo)\nwidget",
]
HOSTILE = '<img src=x onerror="window.__pwned=1"> and <script>window.__pwned=2</script>'


def test_the_widget_renders_updates_live_and_never_runs_message_html(tmp_path: Path) -> None:
    require("jupyterlab", "playwright", "nbformat")
    from playwright.sync_api import expect

    root = tmp_path / "lab"
    root.mkdir()
    write_notebook(root / "widget.ipynb", *CELLS)
    with jupyter_lab(root) as server, open_notebook(server, "widget.ipynb", height=1800) as page:
        run_all_cells(page)
        widget = page.locator('[data-testid="nbmemory-widget"]')
        expect(widget).to_be_visible(timeout=WAIT_MS)

        gauge = widget.locator('[data-testid="gauge"]')
        percent = float(gauge.get_attribute("data-percent") or "nan")
        assert 0 < percent < 100, f"data-percent={percent}"
        expect(gauge.locator('[data-testid="threshold"]')).to_have_count(1)
        expect(widget.locator('[data-testid="usage"]')).to_contain_text("/ 2,000 tokens")

        messages = widget.locator('[data-testid="messages"] [data-testid="message"]')
        expect(messages).to_have_count(20)  # one page, not the 30 messages
        first = messages.first
        expect(first.locator(".role")).to_have_text("User")
        expect(first.locator(".time")).not_to_be_empty()
        expect(first.locator(".content")).to_have_text("Message number 29 with bold text")
        expect(first.locator(".content strong")).to_have_text("bold")
        expect(messages.last.locator(".content")).to_contain_text("Message number 10 ")

        execute(page, 'convo.add("User", "Live message from Python")')
        expect(first.locator(".content")).to_have_text("Live message from Python", timeout=WAIT_MS)
        expect(messages).to_have_count(20)

        execute(page, f"convo.add('User', {HOSTILE!r})")
        expect(first.locator(".content")).to_contain_text("<img src=x", timeout=WAIT_MS)
        expect(widget.locator("img")).to_have_count(0)
        expect(widget.locator("script")).to_have_count(0)
        assert page.evaluate("() => typeof window.__pwned") == "undefined"

        path = screenshot(widget, "widget.png")
        assert path.exists() and path.stat().st_size > 0, path
