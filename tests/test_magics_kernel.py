"""The magics in real kernels (jupyter_client): resuming after a restart, two kernels at once."""

import json
import os
import threading
import time

import nbformat
import pytest
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient
from nbclient.util import run_sync

from nbmemory.store.memory_format import parse
from nbmemory.views.read_model import ReadModel
from support import ROOT, leaks, stored, stored_messages


@pytest.fixture
def kernel_env(workspace):
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "WORKSPACE_DIR": str(workspace),
        "OPENAI_API_KEY": "test-key",
    }


def start(env, cwd):
    manager, client = start_new_kernel(kernel_name="python3", env=env, cwd=str(cwd))
    return manager, client


def execute(client, code, timeout=120):
    """Run ``code``; returns the text and Markdown it showed, and fails on an error."""
    shown: list[str] = []

    def collect(message):
        content = message["content"]
        kind = message["header"]["msg_type"]
        if kind == "stream":
            shown.append(content["text"])
        elif kind in ("display_data", "update_display_data", "execute_result"):
            data = content["data"]
            shown.append(data.get("text/markdown") or data.get("text/plain", ""))
        elif kind == "error":
            shown.append("ERROR " + content["ename"] + ": " + content["evalue"])

    reply = client.execute_interactive(code, output_hook=collect, timeout=timeout)
    text = "\n".join(shown)
    assert reply["content"]["status"] == "ok", text
    return text


def setup_magics(client, server):
    execute(client, "%load_ext nbmemory")
    execute(client, f"%config NbMemoryMagics.api_base = {server.url!r}")
    execute(client, "%config NbMemoryMagics.default_model = 'openai/test-model'")


def test_a_restarted_kernel_resumes_the_agent(kernel_env, openai_server, tmp_path):
    for answer in ["Noted: ClickHouse.", "Noted: 200 ms.", "ClickHouse, within 200 ms."]:
        openai_server.reply(answer)
    manager, client = start(kernel_env, tmp_path)
    try:
        setup_magics(client, openai_server)
        first = execute(client, "%%agent Resumer\nOur warehouse is ClickHouse.")
        assert first.startswith("**Resumer** · `openai/test-model`")
        assert "Noted: ClickHouse." in first
        execute(client, "%%agent Resumer\nDashboards must answer within 200 ms.")

        manager.restart_kernel(now=True)
        client.wait_for_ready(timeout=60)
        setup_magics(client, openai_server)
        assert "ClickHouse, within 200 ms." in execute(
            client, "%%agent Resumer\nWhat did we decide?"
        )
        sent = openai_server.requests[2]["messages"][1:]  # after the system prompt
        assert sent[0]["role"] == "system" and sent[0]["content"].startswith("[Persistent Memory")
        remembered = sent[0]["content"]
        order = [
            "Our warehouse is ClickHouse.",
            "Noted: ClickHouse.",
            "Dashboards must answer within 200 ms.",
            "Noted: 200 ms.",
        ]
        assert [remembered.index(text) for text in order] == sorted(
            remembered.index(t) for t in order
        )
        assert sent[1:] == [{"role": "user", "content": "What did we decide?"}]

        shown = execute(client, "%memory Resumer")
        assert "Resumer: 6 messages" in shown
        assert all(text in shown for text in [*order, "What did we decide?"])
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_two_kernels_on_one_agent_lose_nothing(kernel_env, tmp_path):
    env = {k: v for k, v in kernel_env.items() if k != "NBMEMORY_MODEL"}
    kernels = [start(env, tmp_path) for _ in range(2)]
    try:
        for _, client in kernels:
            execute(client, "%load_ext nbmemory")
        code = (
            "for i in range(15):\n"
            "    get_ipython().run_cell_magic('agent', 'Shared --no-stream', f'{tag} note {i}')\n"
        )
        threads = [
            threading.Thread(target=execute, args=(client, f"tag = 'k{n}'\n" + code))
            for n, (_, client) in enumerate(kernels)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        messages = stored_messages("Shared")
        tasks = [m["content"] for m in messages if m["role"] == "User"]
        assert sorted(tasks) == sorted(f"k{n} note {i}" for n in range(2) for i in range(15))
        assert len(messages) == 60
        for n in range(2):
            mine = [t for t in tasks if t.startswith(f"k{n} ")]
            assert mine == [f"k{n} note {i}" for i in range(15)]
    finally:
        for manager, client in kernels:
            client.stop_channels()
            manager.shutdown_kernel(now=True)


def test_interrupting_the_kernel_stops_the_run_and_keeps_memory_whole(
    kernel_env, openai_server, tmp_path
):
    """The interrupt is sent once the model has the request: the run is waiting for a reply
    that does not come until the test ends."""
    openai_server.reply("a reply that never arrives", delay=3600)  # cut short when it stops
    manager, client = start(kernel_env, tmp_path)
    try:
        setup_magics(client, openai_server)
        shown: list[str] = []

        def collect(message):
            data = message["content"].get("data", {})
            shown.append(data.get("text/plain", "") + message["content"].get("text", ""))

        done = threading.Event()

        def run():
            client.execute_interactive(
                "%%agent Patient\nTake your time.", output_hook=collect, timeout=120
            )
            done.set()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 120  # a bound for a broken kernel, not a measurement
        while not openai_server.requests:
            assert time.monotonic() < deadline, "the request never reached the model"
            time.sleep(0.05)
        manager.interrupt_kernel()
        assert done.wait(120), "the run did not stop"
        thread.join()
        assert "Interrupted" in "".join(shown)
        assert [m["content"] for m in stored_messages("Patient")] == ["Take your time."]
        assert "ok" in execute(client, "%%agent Patient\nStill there?")  # the kernel goes on
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_model_output_reaches_the_notebook_as_inert_html(kernel_env, openai_server, tmp_path):
    hostile = 'Found: <img src=x onerror="window.__pwned=1"> [go](javascript:alert(1)) **bold**'
    openai_server.reply(hostile)
    manager, client = start(kernel_env, tmp_path)
    try:
        setup_magics(client, openai_server)
        bundles: list[dict] = []

        def collect(message):
            if message["header"]["msg_type"] in ("display_data", "update_display_data"):
                bundles.append(message["content"]["data"])

        client.execute_interactive("%%agent Reader\nRead the page.", output_hook=collect)
        assert bundles and all(set(b) == {"text/html", "text/plain"} for b in bundles)
        final = bundles[-1]["text/html"]
        assert "<img" not in final and "javascript:" not in final.replace("(javascript:", "")
        assert "&lt;img src=x onerror=" in final and "<strong>bold</strong>" in final
        assert hostile in bundles[-1]["text/plain"]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_the_widget_comes_after_the_answer_as_a_one_line_summary(kernel_env, tmp_path):
    manager, client = start(kernel_env, tmp_path)
    try:
        execute(client, "%load_ext nbmemory")
        shown: list[tuple[str, dict]] = []

        def collect(message):
            kind = message["header"]["msg_type"]
            if kind in ("display_data", "update_display_data", "execute_result"):
                shown.append((kind, message["content"]["data"]))

        reply = client.execute_interactive(
            "%%agent Placed --widget\nOur office is in Lyon.", output_hook=collect, timeout=120
        )
        assert reply["content"]["status"] == "ok"
        displays = [data for kind, data in shown if kind == "display_data"]
        assert len(displays) == 3
        answer, summary, view = displays  # the answer first, then the widget
        assert set(answer) == {"text/html", "text/plain"}
        assert 'class="nbmemory-static"' in summary["text/html"]
        assert "0 messages" in summary["text/plain"]
        assert set(view) == {"application/vnd.jupyter.widget-view+json", "text/plain"}
        updates = [data for kind, data in shown if kind == "update_display_data"]
        assert "Our office is in Lyon" in updates[-2]["text/plain"]  # the answer, whole
        assert "2 messages" in updates[-1]["text/plain"]  # the summary, after the run
        assert "Lyon" in updates[-1]["text/html"]
        state = execute(
            client,
            "import gc\nfrom nbmemory.jupyter.widget import MemoryWidget\n"
            "[w] = [w for w in gc.get_objects() if isinstance(w, MemoryWidget)]\n"
            "print(w.expanded, w.model_ref == w.model_id, w.info['messages'])",
        )
        assert state.split() == ["False", "True", "2"]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_kernels_with_separate_disks_share_an_agent_through_the_database(
    kernel_env, openai_server, tmp_path, database_url
):
    """Two kernels as on two JupyterHub nodes: each its own workspace folder, one database
    (one kernel is told by %config, the other by $NBMEMORY_STORE). A restart resumes too."""
    for answer in ["Noted: Lyon.", "Lyon."]:
        openai_server.reply(answer)
    first_disk, second_disk = tmp_path / "node-a", tmp_path / "node-b"
    first_env = {**kernel_env, "WORKSPACE_DIR": str(first_disk)}
    second_env = {**kernel_env, "WORKSPACE_DIR": str(second_disk), "NBMEMORY_STORE": database_url}
    (manager_a, client_a), (manager_b, client_b) = (
        start(first_env, tmp_path),
        start(second_env, tmp_path),
    )
    try:
        setup_magics(client_a, openai_server)
        execute(client_a, f"%config NbMemoryMagics.store = {database_url!r}")
        execute(client_a, "%%agent Depot\nOur depot is in Lyon.")

        setup_magics(client_b, openai_server)
        assert "Lyon." in execute(client_b, "%%agent Depot\nWhere is the depot?")
        preload = openai_server.requests[1]["messages"][1]["content"]
        assert preload.startswith("[Persistent Memory") and "Our depot is in Lyon." in preload

        manager_a.restart_kernel(now=True)
        client_a.wait_for_ready(timeout=60)
        execute(client_a, "%load_ext nbmemory")
        execute(client_a, f"%config NbMemoryMagics.store = {database_url!r}")
        shown = execute(client_a, "%memory Depot")
        assert "Where is the depot?" in shown and "Lyon." in shown
        assert "archived" in execute(client_a, "%compact Depot --summary 'The depot is in Lyon.'")
        assert "(kept in the database postgresql://nbmemory@127.0.0.1" in execute(
            client_b, "%memory Depot --path"
        )
        after = execute(client_b, "%memory Depot")  # the other kernel sees the compaction
        assert "The depot is in Lyon." in after and "Where is the depot?" not in after
        figures = (
            "from nbmemory.views.read_model import ReadModel\ninfo = ReadModel().agent('Depot')\n"
        )
        assert execute(client_b, figures + "print(info.messages, info.archives)").strip() == "1 1"
    finally:
        for manager, client in [(manager_a, client_a), (manager_b, client_b)]:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    assert not first_disk.exists() and not second_disk.exists()
    from nbmemory import Workspace

    depot = Workspace("anywhere", database_url).agent("Depot")
    try:
        messages = parse(depot.read("MEMORY.md")).messages
        assert [m["content"] for m in messages] == ["The depot is in Lyon."]
        assert len(depot.archives()) == 1
    finally:
        depot.db.close()


def test_a_notebook_never_shows_the_database_password(kernel_env, tmp_path):
    """Every output a notebook would save, from a mistyped store to a database that cannot
    be reached."""
    manager, client = start(kernel_env, tmp_path)
    outputs: list[str] = []

    def keep(message):  # what the notebook saves (execute_input is the cell, as typed)
        if message["header"]["msg_type"] in ("stream", "error", "execute_result", "display_data"):
            outputs.append(json.dumps(message["content"]))

    cells = [
        "%load_ext nbmemory",
        "%config NbMemoryMagics.store = 'postgresql://u:Qz7Kx9@[::1/agents'",
        "%config NbMemoryMagics.store = 'postgresql://u:Qz7Kx9@127.0.0.1:9/agents'",
        "%config NbMemoryMagics.store",
        "%config NbMemoryMagics",
        "%memory",
        "%%agent Scout\nhello",
    ]
    try:
        for cell in cells:
            client.execute_interactive(cell, output_hook=keep, timeout=120)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    saved = "\n".join(outputs)
    assert "postgresql://u:***@[::1/agents is not a usable URL" in saved
    assert "'postgresql://u:***@127.0.0.1:9/agents'" in saved  # the value and the listing
    assert saved.count("127.0.0.1:9/agents: could not connect") == 2
    assert leaks("Qz7Kx9", saved) == []


def test_litellm_waits_for_a_provider_and_is_then_imported_quietly_ahead(
    kernel_env, openai_server, tmp_path
):
    """On the offline model a kernel never imports litellm; once a provider is the default,
    litellm is imported in the background, printing nothing, and the provider answers."""
    openai_server.reply("Through the provider.")
    imported = (
        "import sys, threading\n"
        "[t.join(120) for t in threading.enumerate() if t.name == 'nbmemory: import litellm']\n"
        "print('litellm' in sys.modules)"
    )
    manager, client = start(kernel_env, tmp_path)
    try:
        execute(client, "%load_ext nbmemory")
        assert "Lyon" in execute(client, "%%agent Local\nOur office is in Lyon.")
        assert execute(client, imported) == "False\n"
        assert execute(client, f"%config NbMemoryMagics.api_base = {openai_server.url!r}") == ""
        assert execute(client, "%config NbMemoryMagics.default_model = 'openai/test-model'") == ""
        assert execute(client, imported) == "True\n"
        assert "Through the provider." in execute(client, "%%agent Remote\nHello.")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


class LabClient(NotebookClient):
    """nbclient running cells as JupyterLab does: each execute_request carries the id of the
    cell in its metadata (``cellId``), which nbclient alone does not send."""

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        kc = self.kc

        def execute(code, store_history=True, stop_on_error=True, **_):
            content = {
                "code": code,
                "silent": False,
                "store_history": store_history,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": stop_on_error,
            }
            request = kc.session.msg("execute_request", content, metadata={"cellId": cell.id})
            kc.shell_channel.send(request)
            return request["header"]["msg_id"]

        kc.execute = execute
        try:
            return await super().async_execute_cell(
                cell, cell_index, execution_count, store_history
            )
        finally:
            del kc.execute

    execute_cell = run_sync(async_execute_cell)


def shown_text(cell) -> str:
    return "\n".join(
        output.get("text") or output.get("data", {}).get("text/plain", "")
        for output in cell.outputs
    )


def test_a_saved_notebook_records_the_cell_of_each_agent_message(kernel_env, tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext nbmemory", id="setup"),
        nbformat.v4.new_code_cell("%%agent Analyst\nOur warehouse is ClickHouse.", id="warehouse"),
        nbformat.v4.new_code_cell(
            "%%agent Analyst\nDashboards answer within 200 ms.", id="latency"
        ),
        nbformat.v4.new_code_cell("%memory Analyst", id="inspect"),
        nbformat.v4.new_code_cell("%compact Analyst --summary 'ClickHouse; 200 ms.'", id="compact"),
    ]
    path = tmp_path / "analysis.ipynb"
    nbformat.write(notebook, path)
    saved = nbformat.read(path, as_version=4)
    env = {**kernel_env, "JPY_SESSION_NAME": "reports/analysis.ipynb"}
    env["NBMEMORY_MODEL"] = "nbmemory/offline"
    client = LabClient(saved, kernel_name="python3", timeout=120, resources={})
    _, warehouse, _, inspect, compact = saved.cells
    with client.setup_kernel(env=env, cwd=str(tmp_path)):
        for index in (0, 1, 2):
            client.execute_cell(saved.cells[index], index)
        # The warehouse cell again, as [4]. Its messages say what the first run's said: a
        # second later, their blocks differ by their time (see nbmemory.memory.provenance).
        time.sleep(1.05)
        client.execute_cell(warehouse, 1)
        client.execute_cell(inspect, 3)
        first = "cell [2] of analysis.ipynb, superseded by cell [4]"
        shown = shown_text(inspect)
        assert shown.count(first) == 2, shown
        assert shown.count("cell [3] of analysis.ipynb") == 2
        assert shown.count("cell [4] of analysis.ipynb") == 2
        client.execute_cell(compact, 4)

    reader = ReadModel()
    archive = reader.archives("Analyst")[0].name
    items = reader.archive_messages("Analyst", archive, limit=10).items
    assert [item.cell_label for item in items] == [first] * 2 + [
        "cell [3] of analysis.ipynb"
    ] * 2 + ["cell [4] of analysis.ipynb"] * 2
    recorded = items[0].to_json()["provenance"]
    assert recorded["notebook"] == "reports/analysis.ipynb"
    assert recorded["cell_id"] == "warehouse" and recorded["superseded_by"] == 4
    assert items[2].to_json()["provenance"]["cell_id"] == "latency"
    assert len({item.to_json()["provenance"]["session"] for item in items}) == 1
    assert [item.cell_label for item in reader.messages("Analyst").items] == [None]
    # MEMORY.md and its archive carry no trace of it: they read as swarms writes them.
    for doc in ("MEMORY.md", f"archive/{archive}"):
        assert b"analysis.ipynb" not in stored("Analyst", doc)
