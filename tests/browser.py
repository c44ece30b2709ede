"""Real-browser helpers: a throwaway JupyterLab server and a real Chromium driven by playwright.

Lab runs on 127.0.0.1 with a token, in its own process group, with settings, workspaces and
runtime files in a folder of its own, so that no test sees another's or the user's. Chromium
is the one :func:`chromium` finds (never ``playwright install``, which downloads browsers).
Missing tools make the test fail, not skip.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from support import ROOT

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

DEBIAN_CHROMIUM = Path("/usr/bin/chromium")
# An npm devDependency of the lab extension, so the install command brings it: a Chromium
# (headless shell, x86-64 Linux) compressed with brotli.
PACKAGED_CHROMIUM = ROOT / "labextension" / "node_modules" / "@sparticuz" / "chromium"
INSTALL_CHROMIUM = "apt-get install -y chromium fonts-dejavu-core"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 30_000

_KERNEL_IDLE = """(path) => {
    const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const ctx = widget && widget.sessionContext;
    const kernel = ctx && ctx.session && ctx.session.kernel;
    return Boolean(
        ctx && ctx.isReady && kernel && widget.context && widget.context.path.endsWith(path)
        && kernel.connectionStatus === "connected" && ctx.kernelDisplayStatus === "idle"
    );
}"""

_ALL_CELLS_RAN = """() => {
    const widget = window.jupyterapp.shell.currentWidget;
    const cells = widget.content.widgets.filter((cell) => cell.model.type === "code");
    return widget.sessionContext.kernelDisplayStatus === "idle"
        && cells.every((cell) => cell.model.executionCount !== null);
}"""

_CELL_ERRORS = """() => window.jupyterapp.shell.currentWidget.content.widgets
    .filter((cell) => cell.model.type === "code")
    .flatMap((cell) => cell.model.outputs.toJSON())
    .filter((output) => output.output_type === "error")
    .map((output) => `${output.ename}: ${output.evalue}`)"""

_EXECUTE = """async ([code, timeoutMs]) => {
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    const future = kernel.requestExecute({code, store_history: false});
    const errors = [];
    future.onIOPub = (msg) => {
        const {ename, evalue} = msg.content;
        if (msg.header.msg_type === "error") errors.push(`${ename}: ${evalue}`);
    };
    const timeout = new Promise((_, reject) =>
        setTimeout(() => reject(new Error(`no reply after ${timeoutMs} ms`)), timeoutMs));
    const reply = await Promise.race([future.done, timeout]);
    return {status: reply.content.status, errors};
}"""


@dataclass
class LabServer:
    """A running JupyterLab: its base URL, token, process and log file."""

    url: str
    token: str
    process: subprocess.Popen[bytes]
    log: Path
    app: str = "jupyterlab"
    """The front end it serves: ``"jupyterlab"``, or ``"notebook"`` (Jupyter Notebook 7)."""
    runtime: Path | None = None
    """Its ``$JUPYTER_RUNTIME_DIR`` (where Jupyter AI's MCP server says on what port it is)."""

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the server's log, for failure messages."""
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def require(*modules: str) -> None:
    """Fail (never skip) with a clear message if a browser-test tool is missing (with
    ``playwright``, a Chromium too)."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(f"browser test needs Python packages {missing}: pip install '.[test]'")
    if "playwright" in modules:
        chromium()


@cache
def chromium() -> Path:
    """The Chromium the browser tests drive, found once per session (see :func:`find_chromium`)."""
    return find_chromium()


def find_chromium(debian: Path = DEBIAN_CHROMIUM, packaged: Path = PACKAGED_CHROMIUM) -> Path:
    """``$NBMEMORY_CHROMIUM`` if set, else Debian's ``/usr/bin/chromium`` (CI installs it), else
    the npm package's, unpacked on first use; fails naming the fix when there is none."""
    chosen = os.environ.get("NBMEMORY_CHROMIUM")
    if chosen:
        if not (Path(chosen).is_file() and os.access(chosen, os.X_OK)):
            pytest.fail(f"NBMEMORY_CHROMIUM={chosen} is not an executable file")
        return Path(chosen)
    if debian.exists():
        return debian
    if not (packaged / "package.json").exists():
        pytest.fail(
            f"browser tests need a Chromium: neither {debian} nor {packaged} is there. "
            f"pip install -e '.[test]' installs the second; or {INSTALL_CHROMIUM}"
        )
    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.fail(f"{packaged} holds an x86-64 Linux Chromium; here: {INSTALL_CHROMIUM}")
    return _unpack_chromium(packaged)


_INFLATE = """const [source, target] = process.argv.slice(1);
const fs = require("fs"), {pipeline} = require("stream"), zlib = require("zlib");
pipeline(fs.createReadStream(source), zlib.createBrotliDecompress(),
    fs.createWriteStream(target, {mode: 0o755}), (error) => { if (error) throw error; });"""


def _unpack_chromium(packaged: Path) -> Path:
    """Decompress the package's ``bin/chromium.br`` (~200 MB, a few seconds) into
    ``node_modules/.cache``, once per package version; the rename makes it all or nothing."""
    version = json.loads((packaged / "package.json").read_text())["version"]
    target = packaged.parents[1] / ".cache" / f"nbmemory-chromium-{version}" / "chromium"
    if target.exists():
        return target
    node = shutil.which("node")
    if node is None:
        pytest.fail(f"unpacking {packaged} needs Node.js; or {INSTALL_CHROMIUM}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"chromium.{os.getpid()}.partial")
    inflate = subprocess.run(
        [node, "-e", _INFLATE, str(packaged / "bin" / "chromium.br"), str(partial)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if inflate.returncode != 0:
        partial.unlink(missing_ok=True)
        pytest.fail(f"could not unpack {packaged}: {inflate.stderr[-2000:]}")
    os.replace(partial, target)
    return target


def artifacts_dir() -> Path:
    """``$NBMEMORY_ARTIFACTS`` or ``tests/artifacts`` (created)."""
    folder = Path(os.environ.get("NBMEMORY_ARTIFACTS") or ROOT / "tests" / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server (it shuts its kernels down), then kill its process group if needed."""
    if process.poll() is None:
        process.terminate()
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=15)
    with suppress(ProcessLookupError):  # leftover kernels in the process group we created
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=15)


@contextmanager
def jupyter_lab(
    root_dir: Path,
    timeout: float = 60,
    extra_args: tuple[str, ...] = (),
    settings: dict[str, dict[str, Any]] | None = None,
    app: str = "jupyterlab",
) -> Iterator[LabServer]:
    """Run ``jupyter lab`` serving ``root_dir`` until the block ends; yields once it answers.

    ``settings`` are user settings by plugin id (``"@jupyter-widgets/jupyterlab-manager:plugin":
    {"saveState": True}``); ``app="notebook"`` runs Jupyter Notebook 7 the same way instead.
    """
    require(app)
    with tempfile.TemporaryDirectory(prefix="nbmemory-lab-") as tmp:
        state = Path(tmp)
        settings_dir = state / "settings"
        notification = settings_dir / "@jupyterlab" / "apputils-extension"
        notification.mkdir(parents=True)
        (notification / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        for plugin, values in (settings or {}).items():
            package, name = plugin.rsplit(":", 1)
            (settings_dir / package).mkdir(parents=True, exist_ok=True)
            (settings_dir / package / f"{name}.jupyterlab-settings").write_text(json.dumps(values))
        env = {
            **os.environ,  # PYTHONPATH and WORKSPACE_DIR as they are now
            "JUPYTER_CONFIG_DIR": str(state / "config"),
            "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(settings_dir),
            "JUPYTERLAB_WORKSPACES_DIR": str(state / "workspaces"),
        }
        token, port = secrets.token_hex(16), _free_port()
        command = [
            *(sys.executable, "-m", app, "--allow-root", "--no-browser"),
            *("--ip", "127.0.0.1", "--port", str(port), "--ServerApp.port_retries=0"),
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root_dir}",
            "--MCPExtensionApp.mcp_port=0",  # Jupyter AI's MCP server, if installed: a free port
            "--JupyterNotebookApp.expose_app_in_browser=True"
            if app == "notebook"
            else "--LabApp.expose_app_in_browser=True",
            *extra_args,
        ]
        log = state / "lab.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        server = LabServer(
            f"http://127.0.0.1:{port}", token, process, log, app, Path(env["JUPYTER_RUNTIME_DIR"])
        )
        try:
            _wait_until_up(server, timeout)
            yield server
        finally:
            _stop(process)


def _wait_until_up(server: LabServer, timeout: float) -> None:
    request = urllib.request.Request(
        f"{server.url}/api/status", headers={"Authorization": f"token {server.token}"}
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"jupyter lab exited ({server.process.returncode}):\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    pytest.fail(f"jupyter lab did not answer within {timeout} s:\n{server.log_tail()}")


def write_notebook(path: Path, *sources: str) -> Path:
    """Write a notebook of code cells, with a ``python3`` kernelspec so Lab asks nothing."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(notebook, path)
    return path


@contextmanager
def chromium_page(height: int, failure_name: str, executable: Path | None = None) -> Iterator[Page]:
    """A page in headless Chromium (``executable``, else :func:`chromium`) with a fresh profile;
    a failure leaves a screenshot."""
    require("playwright")
    from playwright.sync_api import sync_playwright

    with (
        tempfile.TemporaryDirectory(prefix="nbmemory-chromium-") as profile,
        sync_playwright() as p,
    ):
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=str(executable or chromium()),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": height},
        )
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(WAIT_MS)
            try:
                yield page
            except BaseException:
                with suppress(Exception):
                    screenshot(page, f"{failure_name}-failure.png")
                raise
        finally:
            context.close()


@contextmanager
def open_notebook(
    server: LabServer, notebook: str, height: int = 900, timeout_ms: int = 60_000
) -> Iterator[Page]:
    """Open ``notebook`` (relative to the root) in headless Chromium once its kernel is idle.

    The page is 1280 x ``height`` pixels with the left sidebar collapsed (room for outputs);
    a Notebook 7 server opens it on a page of its own. If the block raises, a
    ``<notebook>-failure.png`` screenshot is saved to the artifacts.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with chromium_page(height, Path(notebook).stem) as page:
        page.goto(notebook_url(server, notebook))
        try:
            page.wait_for_function(_KERNEL_IDLE, arg=notebook, timeout=timeout_ms)
        except PlaywrightTimeout:
            pytest.fail(f"{notebook}: kernel not connected and idle:\n{server.log_tail()}")
        if server.app != "notebook":
            page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
        yield page


def notebook_url(server: LabServer, notebook: str) -> str:
    """Where ``server`` shows ``notebook``: in Lab (a fresh layout) or on a Notebook 7 page."""
    if server.app == "notebook":
        return f"{server.url}/notebooks/{notebook}?token={server.token}"
    return f"{server.url}/lab/tree/{notebook}?reset&token={server.token}"


def run_all_cells(page: Page, timeout_ms: int = WAIT_MS) -> None:
    """Run every cell, wait until all have run and the kernel is idle; fail on any error output."""
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(_ALL_CELLS_RAN, timeout=timeout_ms)
    errors = page.evaluate(_CELL_ERRORS)
    assert not errors, f"notebook cells raised: {errors}"


def execute(page: Page, code: str, timeout_ms: int = WAIT_MS) -> None:
    """Run ``code`` in the notebook's kernel without touching the notebook; fail on an error."""
    result: dict[str, Any] = page.evaluate(_EXECUTE, [code, timeout_ms])
    assert result["status"] == "ok", f"{code!r} failed: {result['errors']}"


def screenshot(target: Page | Locator, name: str) -> Path:
    """Save a screenshot of a page or element as ``name`` in the artifacts folder."""
    path = artifacts_dir() / name
    target.screenshot(path=str(path))
    return path


@contextmanager
def open_lab(server: LabServer, height: int = 900, failure_name: str = "lab") -> Iterator[Page]:
    """Open Lab itself (``/lab?reset``, no document; a Notebook 7 server's file tree) in
    headless Chromium once it is restored.

    If the block raises, a ``<failure_name>-failure.png`` screenshot is saved to the artifacts.
    """
    with chromium_page(height, failure_name) as page:
        start = "tree" if server.app == "notebook" else "lab?reset"
        page.goto(f"{server.url}/{start}{'&' if '?' in start else '?'}token={server.token}")
        page.wait_for_function("() => window.jupyterapp !== undefined")
        page.evaluate("() => window.jupyterapp.restored.then(() => true)")
        if server.app != "notebook":
            # Lab opens its launcher after it is restored, and the launcher takes the focus:
            # once it is shown, nothing of Lab's start moves the focus a test put somewhere.
            page.locator(".jp-Launcher").wait_for()
        yield page


def server_extension_on(folder: Path) -> str:
    """The ``jupyter lab`` argument that turns nbmemory's server extension on, installed or not."""
    config = folder / "enable_nbmemory.json"
    config.write_text(json.dumps({"ServerApp": {"jpserver_extensions": {"nbmemory": True}}}))
    return f"--config={config}"


@dataclass
class CountingServer:
    """A loopback HTTP server that answers every GET with a tiny PNG and records the paths."""

    url: str
    hits: list[str]


@contextmanager
def counting_server() -> Iterator[CountingServer]:
    """Run a ``CountingServer`` on 127.0.0.1 (a free port) until the block ends.

    A test points image or link URLs at it to prove that the browser fetched nothing.
    """
    import http.server
    import threading

    hits: list[str] = []
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(png)))
            self.end_headers()
            self.wfile.write(png)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield CountingServer(f"http://127.0.0.1:{server.server_address[1]}", hits)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


BUILT = ROOT / "nbmemory" / "labextension"


def lab_args(tmp_path: Path, *extra: str) -> tuple[str, ...]:
    """Turn the server extension on and serve the in-tree front end, installed or not.

    Lab (and Notebook 7, both a ``LabServerApp``) serves an extension's files from
    ``<labextensions dir>/<package name>/``, hence the link.
    """
    if not (BUILT / "package.json").exists():
        pytest.fail(f"{BUILT} is missing: cd labextension && npm install && npm run build:prod")
    labextensions = tmp_path / "labextensions"
    labextensions.mkdir()
    (labextensions / "nbmemory").symlink_to(BUILT, target_is_directory=True)
    return (
        server_extension_on(tmp_path),
        f"--LabServerApp.extra_labextensions_path={labextensions}",
        *extra,
    )


_RUN_CELLS = """async (indices) => {
    const widget = window.jupyterapp.shell.currentWidget;
    for (const index of indices) widget.content.widgets[index].model.executionCount = null;
    for (const index of indices) {
        widget.content.activeCellIndex = index;
        await window.jupyterapp.commands.execute("notebook:run-cell");
    }
}"""

_CELLS_RAN = """(indices) => {
    const widget = window.jupyterapp.shell.currentWidget;
    return widget.sessionContext.kernelDisplayStatus === "idle"
        && indices.every((index) => widget.content.widgets[index].model.executionCount !== null);
}"""

_OUTPUT_ERRORS = """(indices) => indices
    .map((index) => window.jupyterapp.shell.currentWidget.content.widgets[index])
    .flatMap((cell) => cell.model.outputs.toJSON())
    .filter((output) => output.output_type === "error")
    .map((output) => `${output.ename}: ${output.evalue}`)"""


def run_cells(page: Page, *indices: int, timeout_ms: int = WAIT_MS) -> None:
    """Run the code cells at ``indices`` (0-based, in that order) in the open notebook.

    Waits until each has run (its execution count is cleared first) and the kernel is idle;
    fails on any error output.
    """
    wanted = list(indices)
    page.evaluate(_RUN_CELLS, wanted)
    page.wait_for_function(_CELLS_RAN, arg=wanted, timeout=timeout_ms)
    errors = page.evaluate(_OUTPUT_ERRORS, wanted)
    assert not errors, f"cells {wanted} raised: {errors}"


def restart_kernel(page: Page, notebook: str, timeout_ms: int = 60_000) -> None:
    """Restart the open notebook's kernel (no confirmation dialog) and wait until it is idle."""
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.restartKernel()")
    page.wait_for_function(_KERNEL_IDLE, arg=notebook, timeout=timeout_ms)


def save_notebook(page: Page, timeout_ms: int = WAIT_MS) -> None:
    """Save the open notebook (``docmanager:save``) and wait until it is no longer dirty."""
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function(
        "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=timeout_ms
    )


@contextmanager
def offline_page(height: int = 900, failure_name: str = "page") -> Iterator[Page]:
    """A Chromium page that may load files and loopback URLs only: any other http(s) request
    (a CDN script of an exported notebook, say) is aborted, so a test never uses the internet.

    Register dialog handlers, then ``goto``; a failure leaves a ``<failure_name>-failure.png``.
    """
    import re

    with chromium_page(height, failure_name) as page:
        page.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"), lambda route: route.abort())
        yield page


PINNED_THEN_PROPOSED = ["Budget: 40k EUR.", "Office: Lyon.", "Deadline: May."]
"""Notes pinned one by one (changes #1 to #3) before the model proposed one more (#4)."""


def check_note_review(pinned: Locator, notes: Any, who: str) -> None:
    """What the panel and the widget both show of notes pinned as ``PINNED_THEN_PROPOSED``
    then proposed to: the proposal once, under its heading, with Accept and Reject and no
    Restore; the history newest first under its own heading; a restore of version #1 that
    lists the pins it removes and changes nothing until confirmed. ``pinned`` is the notes'
    section, ``notes`` the agent's ``Notes``, ``who`` what the restore's entry says of the
    person who made it."""
    from playwright.sync_api import expect

    proposals = pinned.get_by_test_id("nbmemory-proposal")
    expect(proposals).to_have_count(1, timeout=WAIT_MS)
    expect(pinned.get_by_test_id("nbmemory-pending-title")).to_have_text("Waiting for your review")
    expect(proposals.get_by_role("button")).to_have_text(["Accept", "Reject"])
    expect(pinned.locator('[data-n="4"]')).to_have_count(1)  # listed once, not in the history

    pinned.get_by_test_id("nbmemory-history-title").click()
    changes = pinned.get_by_test_id("nbmemory-change")
    expect(changes).to_have_count(3)
    expect(changes.first).to_have_attribute("data-n", "3")  # newest first
    restores = pinned.get_by_test_id("nbmemory-restore")
    expect(restores).to_have_count(2)  # versions #1 and #2: #3 is the notes as they are

    # Restore #1 asks first, naming the pins it would remove; Cancel leaves the notes.
    pinned.get_by_role("button", name="Restore #1").click()
    confirm = pinned.get_by_test_id("nbmemory-restore-confirm")
    expect(confirm.get_by_test_id("nbmemory-restore-removes").locator("li")).to_have_text(
        PINNED_THEN_PROPOSED[1:]
    )
    assert notes.items() == PINNED_THEN_PROPOSED
    confirm.get_by_role("button", name="Cancel").click()
    expect(confirm).to_have_count(0)
    expect(pinned.get_by_test_id("nbmemory-notes-status")).to_have_text(
        "Not restored: the notes are as they were."
    )
    expect(pinned.get_by_test_id("nbmemory-note")).to_have_count(3)
    assert notes.items() == PINNED_THEN_PROPOSED and len(notes.history()) == 4

    # Confirmed, it restores; the proposal still waits, and the record names the person.
    pinned.get_by_role("button", name="Restore #1").click()
    confirm.get_by_role("button", name="Restore these notes").click()
    expect(pinned.get_by_test_id("nbmemory-note")).to_have_count(1, timeout=WAIT_MS)
    assert notes.items() == PINNED_THEN_PROPOSED[:1]
    expect(proposals).to_have_count(1)
    expect(changes.first).to_contain_text(f"restored the notes as they were after #1 — by {who}")


_WORDS = """(node) => [node, ...node.querySelectorAll('*')]
    .filter((n) => !n.children.length || n.getAttribute('aria-label'))
    .map((n) => [n.getAttribute('aria-label') || '', n.children.length ? '' :
                 n.textContent.replace(/\\s+/g, ' ').trim()])
    .filter(([name, text]) => name || text)"""


def compaction_words(timeline: Locator, opened: Locator) -> dict[str, Any]:
    """What a view (the panel or the widget) says of an agent's compactions, styles aside:
    the timeline's title, each row's name and words in order (``timeline``: where the rows
    are; a row's own controls of the frame, the panel's "Show archive", aside), and the head
    of the compaction open in ``opened``: which it is, its line, Back, the dropped terms and
    the summary. Both views must give the same for the same agent."""
    from playwright.sync_api import expect

    rows = timeline.get_by_test_id("nbmemory-compaction-open")
    head = opened.get_by_test_id("nbmemory-compaction-head")
    expect(head).to_be_visible(timeout=WAIT_MS)
    expect(head.get_by_test_id("nbmemory-summary")).not_to_be_empty()
    return {
        "title": timeline.get_by_test_id("nbmemory-timeline-title").text_content(),
        "rows": [row.evaluate(_WORDS) for row in rows.all()],
        "opened": head.evaluate(_WORDS),
    }


EDIT_FACTS = (
    "Crate QX-7781 leaves Lyon on 2024-05-02; Dana signs for it.",
    "The budget for crate QX-7781 is 40k EUR.",
)
"""A memory whose summary by the offline model names Dana."""
EDITED = "Crate QX-7781 leaves Lyon."
"""A person's edit of that summary: it leaves Dana out."""


def check_edited_preview(preview: Locator, again: Callable[[], None]) -> list[str]:
    """What the panel's dialog and the widget both do with a person's edit of the model's
    summary of ``EDIT_FACTS``: the edit is measured again (Dana is now dropped) without the
    model, kept through Preview again (``again`` presses it and waits for the answer) until the
    person discards it. Returns the terms listed once the summary is edited again, which
    Compact must drop exactly."""
    from playwright.sync_api import expect

    summary = preview.get_by_test_id("nbmemory-compact-summary")
    expect(summary).not_to_have_value("", timeout=WAIT_MS)
    drafted = summary.input_value()
    terms = preview.get_by_test_id("nbmemory-compact-term")
    dana = terms.filter(has_text="Dana")
    edited = preview.get_by_test_id("nbmemory-compact-edited")
    expect(dana).to_have_count(0)  # the model's summary keeps it

    summary.fill(EDITED)
    expect(dana).to_have_count(1, timeout=WAIT_MS)
    expect(preview.get_by_test_id("nbmemory-compact-tokens")).to_contain_text("dropped")
    expect(edited).to_be_visible()

    again()
    expect(summary).to_have_value(EDITED)
    expect(dana).to_have_count(1)
    preview.get_by_test_id("nbmemory-compact-discard").click()
    expect(summary).to_have_value(drafted)
    expect(dana).to_have_count(0, timeout=WAIT_MS)
    expect(edited).to_be_hidden()

    summary.fill(EDITED)
    expect(dana).to_have_count(1, timeout=WAIT_MS)
    return [t.strip() for t in terms.all_inner_texts()]


def check_search_form(
    scope: Locator, caption: Locator, ended: Callable[[], None], said: Callable[[bool], str]
) -> None:
    """The views' one search form, used in the panel or the widget as a person would: Enter
    searches for "budget"; ticking "archives too" searches again, in the archives; an emptied
    field ends the search (``ended`` checks that the view shows none) and the next search keeps
    the tick; clearing the tick searches the memory alone again. ``caption`` is where the view
    says what was found, and ``said(archives)`` what it must say."""
    from playwright.sync_api import expect

    field = scope.get_by_role("searchbox", name="Search messages", exact=True)
    expect(field).to_have_attribute("placeholder", "Search messages (Enter)")
    archives = scope.get_by_role("checkbox", name="archives too", exact=True)
    expect(archives).not_to_be_checked()

    for ticked in (False, True):
        field.fill("budget")
        field.press("Enter")
        expect(caption).to_have_text(said(ticked), timeout=WAIT_MS)
        archives.set_checked(not ticked)
        expect(caption).to_have_text(said(not ticked), timeout=WAIT_MS)
        field.fill("")
        ended()
        expect(archives).to_be_checked(checked=not ticked)  # kept for the next search
