"""The MCP endpoint of the server extension: the SDK's own client (``ClientSession`` over
``streamable_http_client``) against a real Jupyter server, with its token and its authorizer."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import httpx
import pytest
from jupyter_client.manager import start_new_kernel
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from browser import jupyter_lab, server_extension_on
from nbmemory import Agent, Workspace
from nbmemory.jupyter.server.app import NbMemoryServer
from nbmemory.views.read_model import ReadModel
from support import run_python, stored_messages
from test_magics_kernel import execute
from test_mcp_server import HOSTILE, READERS, Updates, answer, every_tool_and_resource, failure

TESTS = Path(__file__).parent
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@contextlib.asynccontextmanager
async def over_http(
    server, updates: Updates | None = None, token: str | None = None
) -> AsyncIterator[ClientSession]:
    """A session with the server's MCP endpoint, signed in with its token."""
    headers = {"Authorization": f"token {token or server.token}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(60, read=300)) as http,
        streamable_http_client(f"{server.url}/nbmemory/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write, message_handler=updates) as session,
    ):
        await session.initialize()
        yield session


def lab_on_this_workspace(tmp_path: Path, *args: str):
    """A JupyterLab with the extension on, its workspace the test's ($WORKSPACE_DIR, and
    $NBMEMORY_STORE on the database)."""
    root = tmp_path / "root"
    root.mkdir()
    return jupyter_lab(root, extra_args=(server_extension_on(tmp_path), *args))


def test_a_client_over_http_recalls_remembers_pins_compacts_and_is_notified(tmp_path):
    Agent(agent_name="Research", persistent_memory=True).add_memory("Our warehouse is ClickHouse.")
    updates = Updates()

    async def scenario(server) -> None:
        async with over_http(server, updates) as session:
            await every_tool_and_resource(session, updates)

    with lab_on_this_workspace(tmp_path) as server:
        anyio.run(scenario, server)
        log = server.log.read_text()
        assert "Traceback" not in log, log[-6000:]


def test_a_fact_remembered_over_http_is_what_a_new_kernels_agent_answers(tmp_path):
    """The kernel's ``%%agent`` runs the offline model, which answers from the memory."""
    Agent(agent_name="Research", persistent_memory=True).add_memory("Our warehouse is ClickHouse.")

    async def remember(server) -> None:
        async with over_http(server) as session:
            fact = {"agent": "Research", "text": "The launch moved to May 4."}
            answer(await session.call_tool("remember", fact))

    with lab_on_this_workspace(tmp_path) as server:
        anyio.run(remember, server)
    env = {k: v for k, v in os.environ.items() if k != "NBMEMORY_MODEL"}  # the offline model
    manager, client = start_new_kernel(kernel_name="python3", env=env, cwd=str(tmp_path))
    try:
        execute(client, "%load_ext nbmemory")
        said = execute(client, "%%agent Research --no-stream\nWhen is the launch?")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert "May 4" in said


def test_two_clients_and_a_kernel_writing_at_once_lose_nothing(tmp_path):
    Agent(agent_name="Shared", persistent_memory=True).add_memory("start")
    kernel = (
        "from nbmemory import Agent\n"
        "agent = Agent(agent_name='Shared', persistent_memory=True)\n"
        "for i in range(50):\n"
        "    agent.add_memory(f'kernel {i}')\n"
    )
    written: list[str] = []

    async def client(server, number: int) -> None:
        async with over_http(server) as session:
            for i in range(15):
                text = f"client {number}.{i}"
                answer(await session.call_tool("remember", {"agent": "Shared", "text": text}))
                written.append(text)

    async def clients(server) -> None:
        async with anyio.create_task_group() as group:
            for number in range(2):
                group.start_soon(client, server, number)

    with lab_on_this_workspace(tmp_path) as server, ThreadPoolExecutor(1) as pool:
        other = pool.submit(run_python, kernel)
        anyio.run(clients, server)
        other.result()
    contents = [m["content"] for m in stored_messages("Shared")]
    assert sorted(c for c in contents if c.startswith("client")) == sorted(written)
    assert [c for c in contents if c.startswith("kernel")] == [f"kernel {i}" for i in range(50)]
    assert len(contents) == 1 + 30 + 50


def test_jupyters_rules_apply_no_token_no_xsrf_no_foreign_origin(tmp_path):
    """Without the token: 403. With a browser's login cookie, a POST needs the XSRF header
    and an origin of the server's, as every POST of Jupyter's APIs does."""
    with lab_on_this_workspace(tmp_path) as server:
        url = f"{server.url}/nbmemory/mcp"
        for headers in ({}, {"Authorization": "token wrong"}):
            with httpx.Client(headers={**ACCEPT, **headers}) as http:
                assert http.post(url, json=INITIALIZE).status_code == 403
                assert http.get(url).status_code == 403
                assert http.delete(url).status_code == 403
        signed = {**ACCEPT, "Authorization": f"token {server.token}"}
        assert httpx.post(url, json=INITIALIZE, headers=signed).status_code == 200

        async def refused() -> None:
            with pytest.raises(Exception) as raised:  # a group, from the client's tasks
                async with over_http(server, token="wrong"):
                    pass
            assert raised.group_contains(httpx.HTTPStatusError, match="403 Forbidden")

        anyio.run(refused)

        with httpx.Client(headers=ACCEPT) as browser:  # signed in once, then by its cookie
            browser.get(f"{server.url}/lab?token={server.token}").raise_for_status()
            missing = browser.post(url, json=INITIALIZE)
            assert missing.status_code == 403 and "_xsrf" in missing.json()["message"]
            xsrf = {"X-XSRFToken": browser.cookies["_xsrf"]}
            assert browser.post(url, json=INITIALIZE, headers=xsrf).status_code == 200
            foreign = {**xsrf, "Origin": "http://elsewhere.example"}
            assert browser.post(url, json=INITIALIZE, headers=foreign).status_code == 404
    assert not ReadModel(Workspace.from_env()).names()


def test_a_reader_gets_the_reading_tools_and_a_write_is_refused(tmp_path, monkeypatch):
    """The authorizer allows "read" and denies "write" on the resource "nbmemory"."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ["PYTHONPATH"]]))
    Agent(agent_name="Research", persistent_memory=True).add_memory("The plan is Tuesday.")
    before = ReadModel(Workspace.from_env()).version()
    refusal = "Jupyter authorizes you to read nbmemory's agents, not to change them"

    async def scenario(server) -> None:
        async with over_http(server) as session:
            assert {tool.name for tool in (await session.list_tools()).tools} == READERS
            found = await session.call_tool("recall_memory", {"agent": "Research", "query": "plan"})
            assert "The plan is Tuesday." in answer(found)
            said = await session.call_tool("remember", {"agent": "Research", "text": HOSTILE})
            assert failure(said) == f"no tool named 'remember': {refusal}"
            for name, arguments in (("edit_notes", {"add": "x"}), ("compact", {})):
                refused = await session.call_tool(name, {"agent": "Research", **arguments})
                assert failure(refused) == f"no tool named {name!r}: {refusal}"

    authorizer = "--ServerApp.authorizer_class=readonly_authorizer.ReadOnlyAuthorizer"
    with lab_on_this_workspace(tmp_path, authorizer) as server:
        anyio.run(scenario, server)
    assert ReadModel(Workspace.from_env()).version() == before  # nothing written


def test_without_the_sdk_the_extension_serves_the_rest_api_alone(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "nbmemory.jupyter.server.mcp_endpoint", None)  # import fails
    app = NbMemoryServer()
    app.log = logging.getLogger("nbmemory-test")
    with caplog.at_level(logging.INFO, "nbmemory-test"):
        app.add_mcp_endpoint()
    assert app.handlers == [] and "nbmemory_mcp" not in app.settings
    assert "no MCP endpoint without pip install 'nbmemory[mcp]'" in caplog.text
