"""The reading tools a person may list for ``jupyter_server_mcp`` (Jupyter AI's MCP server, on
a port without Jupyter's authentication): none by default, resolved as it resolves its setting,
and served by a FastMCP server (the MCP SDK's, which jupyter_server_mcp's ``fastmcp`` grew
from) to the SDK's client."""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import time
import types
from importlib.metadata import entry_points

import anyio
import pytest
from mcp.server.fastmcp import FastMCP
from mcp.shared.memory import create_connected_server_and_client_session

from browser import LabServer, jupyter_lab
from nbmemory import Agent, Workspace
from nbmemory.jupyter import mcp_tools
from nbmemory.mcp_server import TOOLS, MemoryServer
from nbmemory.recall import DEFAULT_PASSAGES
from support import ROOT
from test_mcp_server import HOSTILE, READERS, answer, failure

GROUP = "jupyter_server_mcp.tools"


def resolve(spec: str):
    """``module:function`` as jupyter_server_mcp resolves it."""
    module, _, name = spec.rpartition(":")
    return getattr(importlib.import_module(module), name)


def test_nothing_is_declared_for_the_port_without_authentication():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    with open(ROOT / "pyproject.toml", "rb") as file:
        assert GROUP not in tomllib.load(file)["project"]["entry-points"]
    assert not [point for point in entry_points(group=GROUP) if point.name == "nbmemory"]
    extension = pytest.importorskip("jupyter_server_mcp.extension")
    discovered = extension.MCPExtensionApp()._discover_entrypoint_tools()
    assert not [spec for spec in discovered if spec.startswith("nbmemory")]


def test_the_tools_a_person_may_list_are_the_reading_tools_as_plain_typed_functions():
    functions = [resolve(spec) for spec in mcp_tools.TOOLS]
    assert {function.__name__ for function in functions} == READERS
    described = {spec.name: spec.description for spec in TOOLS}
    for function in functions:
        assert inspect.iscoroutinefunction(function)
        signature = inspect.signature(function, eval_str=True)
        assert signature.return_annotation is str
        assert all(p.annotation in (str, int) for p in signature.parameters.values())
        assert described[function.__name__] in function.__doc__
        takes_agent = function.__name__ != "list_agents"
        assert ("agent" in signature.parameters) == takes_agent


def test_a_fastmcp_server_serves_them_as_nbmemory_mcp_answers(workspace):
    Agent(agent_name="Research", persistent_memory=True).add_memory("The launch is on May 4.")
    same = MemoryServer(Workspace.from_env())
    app = FastMCP("jupyter")
    for spec in mcp_tools.TOOLS:  # as jupyter_server_mcp registers each
        app.add_tool(resolve(spec))

    async def scenario() -> None:
        async with create_connected_server_and_client_session(app) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) == READERS
            recall = tools["recall_memory"].inputSchema
            assert recall["required"] == ["agent", "query"]
            assert recall["properties"]["limit"]["default"] == DEFAULT_PASSAGES
            asked = {"agent": "Research", "query": "launch"}
            found = answer(await session.call_tool("recall_memory", asked))
            assert found == same.call("recall_memory", asked)[0]
            assert "The launch is on May 4." in found
            listed = answer(await session.call_tool("list_agents", {}))
            assert listed == same.call("list_agents", {})[0]
            usage = answer(await session.call_tool("memory_usage", {"agent": "Research"}))
            assert usage == same.call("memory_usage", {"agent": "Research"})[0]
            notes = answer(await session.call_tool("read_notes", {"agent": "Research"}))
            assert notes.startswith("Research has no pinned notes")
            for name in ("../etc", HOSTILE):
                refused = await session.call_tool("memory_usage", {"agent": name})
                assert "agent name" in failure(refused)
            gone = await session.call_tool("recall_memory", {"agent": "Nobody", "query": "x"})
            assert "no agent named 'Nobody'" in failure(gone)

    anyio.run(scenario)


def test_with_fastmcp_a_failure_is_its_tool_error(monkeypatch):
    """jupyter_server_mcp's fastmcp shows a ``ToolError``'s line as it is, unmasked."""

    class ToolError(Exception):
        pass

    monkeypatch.setitem(sys.modules, "fastmcp", types.ModuleType("fastmcp"))
    monkeypatch.setitem(
        sys.modules, "fastmcp.exceptions", types.SimpleNamespace(ToolError=ToolError)
    )
    with pytest.raises(ToolError, match=r"^agent name '\.\./x' must not contain '/'"):
        anyio.run(mcp_tools.memory_usage, "../x")


def test_jupyter_server_mcp_serves_them_to_its_clients(workspace):
    """With Jupyter AI's MCP server installed: its own registration and fastmcp's client."""
    served = pytest.importorskip("jupyter_server_mcp.mcp_server")
    fastmcp = pytest.importorskip("fastmcp")
    Agent(agent_name="Research", persistent_memory=True).add_memory("The launch is on May 4.")
    server = served.MCPServer(name="Jupyter", port=0)
    for spec in mcp_tools.TOOLS:  # as jupyter_server_mcp registers its mcp_tools setting
        server.register_tool(resolve(spec))

    async def scenario() -> None:
        async with fastmcp.Client(server.mcp) as client:
            assert {tool.name for tool in await client.list_tools()} == READERS
            asked = {"agent": "Research", "query": "launch"}
            found = await client.call_tool("recall_memory", asked)
            assert "The launch is on May 4." in found.content[0].text
            refused = await client.call_tool(
                "memory_usage", {"agent": "../x"}, raise_on_error=False
            )
            assert refused.is_error
            assert refused.content[0].text == "agent name '../x' must not contain '/' or '\\'"

    anyio.run(scenario)


def _served_tools(server: LabServer, asked: dict[str, str]) -> tuple[set[str], str | None]:
    """What a client with no token finds on the port of ``server``'s jupyter_server_mcp (its
    runtime file says where): the tools' names, and ``recall_memory``'s answer to ``asked``
    where it is offered."""
    fastmcp = pytest.importorskip("fastmcp")

    async def ask(url: str) -> tuple[set[str], str | None]:
        async with fastmcp.Client(url) as client:
            names = {tool.name for tool in await client.list_tools()}
            if "recall_memory" not in names:
                return names, None
            found = await client.call_tool("recall_memory", asked)
            return names, found.content[0].text

    assert server.runtime is not None
    deadline = time.monotonic() + 60
    while True:  # the MCP server starts after Jupyter's own port answers
        try:
            (info,) = server.runtime.glob("jpserver-mcp-*.json")
            return anyio.run(ask, json.loads(info.read_text())["url"])
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_a_jupyter_server_offers_them_without_a_token_only_once_a_person_lists_them(
    workspace, tmp_path
):
    pytest.importorskip("jupyter_server_mcp")
    Agent(agent_name="Vault", persistent_memory=True).add_memory("The vault code is 4711.")
    opt_in = tmp_path / "opt_in.py"
    opt_in.write_text(
        "from nbmemory.jupyter.mcp_tools import TOOLS\nc.MCPExtensionApp.mcp_tools = TOOLS\n"
    )
    asked = {"agent": "Vault", "query": "vault code"}
    for extra, offered in (((), False), ((f"--config={opt_in}",), True)):
        with jupyter_lab(tmp_path, extra_args=extra) as server:
            names, recalled = _served_tools(server, asked)
        assert names, "jupyter_server_mcp serves Jupyter AI's own tools"
        if offered:
            assert names >= READERS and "4711" in (recalled or "")
        else:
            assert not READERS & names and recalled is None
