"""nbmemory's reading tools for ``jupyter_server_mcp``, the MCP server Jupyter AI brings,
offered only when a person lists them.

jupyter_server_mcp serves its tools to Jupyter AI's agents on a localhost port of its own, with
Host and Origin checks but without Jupyter's token: any process on the machine, any user's on a
shared host, may call them. So nbmemory declares no entry point in its group
``jupyter_server_mcp.tools`` and nothing of it is served there by default. A person who wants
the reading tools there, and accepts that every local user can then read every agent the
server's workspace holds, lists them in jupyter_server_mcp's own setting (in
``jupyter_server_config.py``, beside any other tools it lists)::

    from nbmemory.jupyter.mcp_tools import TOOLS

    c.MCPExtensionApp.mcp_tools = TOOLS

Even then only the tools that read are offered; ``remember``, ``edit_notes`` and ``compact``
are at ``/nbmemory/mcp`` of the server extension, behind Jupyter's token and authorizer.

Each is the tool of ``nbmemory mcp`` (:meth:`nbmemory.mcp_server.MemoryServer.call`: the same
checks, the same answers, failures as one line) as a plain typed function whose docstring is
the tool's description, which is what jupyter_server_mcp turns into a tool. They read the
Jupyter server's workspace: the one nbmemory's server extension exports as ``$WORKSPACE_DIR``
(and ``$NBMEMORY_STORE``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from nbmemory.mcp_server import AGENT_ARGUMENT, MemoryServer, ToolError
from nbmemory.mcp_server import TOOLS as SPECS
from nbmemory.recall import DEFAULT_PASSAGES
from nbmemory.store import Workspace

WHY_READ_ONLY = "jupyter_server_mcp is served without Jupyter's authentication: it reads only"


@functools.lru_cache(maxsize=4)
def _server(workspace: Workspace) -> MemoryServer:
    return MemoryServer(workspace, read_only=True, why_read_only=WHY_READ_ONLY)


def _failure() -> type[Exception]:
    """What a tool raises to fail with one line: fastmcp's ``ToolError`` where there is one
    (jupyter_server_mcp's server passes it on as it is, never masked, with no traceback in
    Jupyter's log), else nbmemory's."""
    try:
        from fastmcp.exceptions import ToolError as FastMCPToolError
    except ImportError:
        return ToolError
    return FastMCPToolError


async def _call(name: str, **arguments: Any) -> str:
    """Tool ``name`` of the workspace the environment names, in a thread; its answer as text."""
    server = _server(Workspace.from_env())
    try:
        text, _ = await anyio.to_thread.run_sync(server.call, name, arguments)
    except Exception as exc:
        raise _failure()(server.error_line(exc)) from None
    return text


Tool = Callable[..., Awaitable[str]]


def _described(function: Tool) -> Tool:
    """``function`` with the description of the tool of its name as its docstring."""
    spec = next(spec for spec in SPECS if spec.name == function.__name__)
    assert not spec.writes, f"{spec.name} writes: it cannot be served without authentication"
    arguments = {"agent": AGENT_ARGUMENT["description"]} if spec.per_agent else {}
    arguments.update({key: value["description"] for key, value in spec.properties.items()})
    lines = [f"    {key}: {text}" for key, text in arguments.items()]
    args = "\n\nArgs:\n" + "\n".join(lines) if lines else ""
    function.__doc__ = f"nbmemory agents' persistent memory. {spec.description}{args}"
    return function


@_described
async def recall_memory(agent: str, query: str, limit: int = DEFAULT_PASSAGES) -> str:
    return await _call("recall_memory", agent=agent, query=query, limit=limit)


@_described
async def recall_around(
    agent: str, source: str, message: int, before: int = 3, after: int = 3
) -> str:
    asked = {"source": source, "message": message, "before": before, "after": after}
    return await _call("recall_around", agent=agent, **asked)


@_described
async def recall_between(agent: str, start: str, end: str = "") -> str:
    return await _call("recall_between", agent=agent, start=start, end=end)


@_described
async def read_notes(agent: str) -> str:
    return await _call("read_notes", agent=agent)


@_described
async def list_agents() -> str:
    return await _call("list_agents")


@_described
async def memory_usage(agent: str) -> str:
    return await _call("memory_usage", agent=agent)


TOOLS = [
    f"{__name__}:{tool.__name__}"
    for tool in (
        recall_memory,
        recall_around,
        recall_between,
        read_notes,
        list_agents,
        memory_usage,
    )
]
"""Each tool as ``module:function``: the values for ``MCPExtensionApp.mcp_tools``."""
