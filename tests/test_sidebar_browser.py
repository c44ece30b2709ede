"""The "Agent Memory" sidebar in real JupyterLab and Chromium: agents, live updates, safe HTML."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from browser import WAIT_MS, jupyter_lab, open_lab, require, screenshot, server_extension_on
from nbmemory import Conversation
from nbmemory.workspace import memory_path
from support import ROOT

pytestmark = pytest.mark.browser

BUILT = ROOT / "nbmemory" / "labextension"
HOSTILE = '<img src=x onerror="window.__pwned=1">'
APPEND = (
    "import sys\n"
    "from nbmemory import Conversation\n"
    "from nbmemory.workspace import memory_path\n"
    'Conversation(name="Scout", memory_md_path=memory_path("Scout")).add("User", sys.argv[1])\n'
)


def lab_args(tmp_path: Path) -> tuple[str, ...]:
    """Turn the server extension on and serve the in-tree front end, installed or not.

    Lab serves an extension's files from ``<labextensions dir>/<package name>/``, hence the link.
    """
    if not (BUILT / "package.json").exists():
        pytest.fail(f"{BUILT} is missing: cd labextension && npm install && npm run build:prod")
    labextensions = tmp_path / "labextensions"
    labextensions.mkdir()
    (labextensions / "nbmemory").symlink_to(BUILT, target_is_directory=True)
    return (server_extension_on(tmp_path), f"--LabApp.extra_labextensions_path={labextensions}")


def test_the_sidebar_lists_agents_follows_other_processes_and_never_runs_html(
    tmp_path: Path, workspace: Path
) -> None:
    require("jupyterlab", "playwright")
    from playwright.sync_api import expect

    scout = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    for i in range(4):
        scout.add("User" if i % 2 else "Scout", f"note {i} about the budget")
    scout.compact("Budget notes summarized.")
    scout.add("Scout", "Plan: **ship** the `panel`")
    Conversation(name="Writer", memory_md_path=memory_path("Writer")).add("User", "memo")
    root = tmp_path / "lab"
    root.mkdir()

    with jupyter_lab(root, extra_args=lab_args(tmp_path)) as server, open_lab(server) as page:
        page.locator('.jp-SideBar [data-id="nbmemory-panel"]').click()
        panel = page.get_by_test_id("nbmemory-panel")
        expect(panel).to_be_visible()
        agents = panel.get_by_test_id("nbmemory-agent")
        expect(agents).to_have_count(2)
        expect(agents.nth(0)).to_contain_text("Scout")
        expect(agents.nth(1)).to_contain_text("Writer")
        expect(agents.nth(0)).to_contain_text("tokens")

        agents.filter(has_text="Scout").click()
        messages = panel.get_by_test_id("nbmemory-message")
        expect(messages.first).to_contain_text("Plan: ship the panel")  # newest first
        expect(messages.first.locator("strong")).to_have_text("ship")

        extra = f"Appended elsewhere {HOSTILE}"
        subprocess.run([sys.executable, "-c", APPEND, extra], check=True, timeout=60)
        expect(messages.first).to_contain_text("Appended elsewhere", timeout=WAIT_MS)  # polling
        expect(messages.first).to_contain_text('<img src="x"')  # shown as text
        assert panel.locator("img").count() == 0
        assert page.evaluate("() => window.__pwned") is None

        panel.get_by_test_id("nbmemory-search").fill("budget")
        panel.get_by_label("archives too").check()
        panel.get_by_test_id("nbmemory-search").press("Enter")
        expect(messages).to_have_count(5)  # the summary in memory and the four archived notes
        expect(messages.filter(has_text="about the budget")).to_have_count(4)

        panel.get_by_role("button", name="Back to memory").click()
        panel.get_by_test_id("nbmemory-archive").get_by_role("button").click()
        expect(messages).to_have_count(4)
        expect(messages.last).to_contain_text("note 0 about the budget")

        panel.get_by_role("button", name="Back to memory").click()
        expect(messages.first).to_contain_text("Appended elsewhere")
        screenshot(page, "sidebar.png")
