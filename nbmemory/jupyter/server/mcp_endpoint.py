"""``nbmemory mcp`` over streamable HTTP, as ``<base_url>/nbmemory/mcp`` of the server extension.

The same tools and resources as over stdio (:class:`nbmemory.mcp_server.MemoryServer`), behind
Jupyter's authentication: the server's token (or its login cookie, with the XSRF rules of every
Jupyter API), then its authorizer, asked about the resource ``"nbmemory"`` as the REST API asks.
Whoever may ``"read"`` gets the reading tools; whoever may also ``"write"`` gets every tool. A
read-only caller's call of a writing tool is an MCP error of one line, with nothing written.

Why an endpoint of Jupyter's rather than a server of its own on 127.0.0.1: one port and one
token, which the user and Jupyter AI already have; the authorizer a deployment configured (a
JupyterHub's scopes, say) applies unchanged; the workspace is the panel's; nothing more to start,
stop or guard.

The transport is the MCP SDK's own (``StreamableHTTPSessionManager``: sessions, the SSE stream
that carries subscriptions' notifications, protocol checks), an ASGI application. A tornado
handler hands it each request, after Jupyter has authenticated and authorized it, and streams
its answer back; the SDK's host and origin checks stay off, as Jupyter makes its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import anyio
import tornado.iostream
import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import ensure_async
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from nbmemory.mcp_server import MemoryServer
from nbmemory.store import Workspace

ROUTE = "/nbmemory/mcp"
READ_ONLY = "Jupyter authorizes you to read nbmemory's agents, not to change them"
HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length"})
"""Headers of the SDK's answers that tornado writes itself."""


class _SessionEnd(logging.Filter):
    """Drops the SDK's traceback for a session that ends while its GET stream is open (its own
    client's ``DELETE`` at every close, or Jupyter stopping): the stream is closed under its
    reader, which is how it ends, not a failure."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, anyio.ClosedResourceError)


class McpEndpoint:
    """Two MCP servers over one workspace, one with every tool and one read-only, each with its
    session manager; started at the first request, stopped with the Jupyter server."""

    def __init__(self, workspace: Workspace) -> None:
        self.servers = {
            "write": MemoryServer(workspace),
            "read": MemoryServer(workspace, read_only=True, why_read_only=READ_ONLY),
        }
        self.managers: dict[str, StreamableHTTPSessionManager] = {}
        transport = logging.getLogger("mcp.server.streamable_http")
        if not any(isinstance(f, _SessionEnd) for f in transport.filters):
            transport.addFilter(_SessionEnd())
        self._ready: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None

    async def manager(self, access: str) -> StreamableHTTPSessionManager:
        """The session manager for callers with ``access`` (``"read"`` or ``"write"``)."""
        if self._task is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._run(self._ready))
        assert self._ready is not None
        await asyncio.shield(self._ready)
        return self.managers[access]

    async def _run(self, ready: asyncio.Future[None]) -> None:
        try:
            async with anyio.create_task_group() as group, contextlib.AsyncExitStack() as stack:
                for access, server in self.servers.items():
                    watcher = server.watcher()
                    manager = StreamableHTTPSessionManager(server.app(watcher))
                    await stack.enter_async_context(manager.run())
                    group.start_soon(watcher.run)
                    self.managers[access] = manager
                ready.set_result(None)
                await anyio.sleep_forever()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    async def stop(self) -> None:
        """End every session (their requests end too)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class McpHandler(APIHandler):
    """The MCP endpoint: a request that Jupyter let through, handed to the SDK's transport."""

    def initialize(self, endpoint: McpEndpoint, resource: str) -> None:
        self.endpoint = endpoint
        self.auth_resource = resource
        self._gone = asyncio.Event()
        self._body_sent = False
        self._content_type = "application/json"

    def on_connection_close(self) -> None:
        self._gone.set()

    # Every method is "read": a session carries reading tools unless the caller may also write.
    @tornado.web.authenticated
    @authorized("read")
    async def get(self) -> None:
        await self.serve()

    @tornado.web.authenticated
    @authorized("read")
    async def post(self) -> None:
        await self.serve()

    @tornado.web.authenticated
    @authorized("read")
    async def delete(self) -> None:
        await self.serve()

    async def serve(self) -> None:
        writes = self.authorizer.is_authorized(self, self.current_user, "write", self.auth_resource)
        manager = await self.endpoint.manager("write" if await ensure_async(writes) else "read")
        await manager.handle_request(self.scope(), self.receive, self.send)
        if not self._gone.is_set():
            with contextlib.suppress(tornado.iostream.StreamClosedError):
                await self.finish(set_content_type=self._content_type)

    def scope(self) -> dict[str, Any]:
        """The request as an ASGI scope."""
        request = self.request
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": request.version.rpartition("/")[2],
            "method": request.method,
            "scheme": request.protocol,
            "path": request.path,
            "raw_path": request.path.encode(),
            "query_string": request.query.encode("latin-1"),
            "root_path": "",
            "headers": [
                (key.lower().encode("latin-1"), value.encode("latin-1"))
                for key, value in request.headers.get_all()
            ],
            "client": (request.remote_ip, 0),
            "server": None,
        }

    async def receive(self) -> dict[str, Any]:
        """The body (tornado has read it whole), then, once the client went away, that."""
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.request.body, "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        """The SDK's answer, written as it comes: an SSE stream is flushed event by event."""
        if self._gone.is_set():
            return
        if message["type"] == "http.response.start":
            self.set_status(message["status"])
            for raw_key, raw_value in message.get("headers", []):
                key, value = raw_key.decode("latin-1"), raw_value.decode("latin-1")
                if key.lower() == "content-type":
                    self._content_type = value
                elif key.lower() not in HOP_BY_HOP:
                    self.set_header(key, value)
        elif message["type"] == "http.response.body":
            self.write(message.get("body", b""))
            if message.get("more_body", False):
                self.set_header("Content-Type", self._content_type)
                try:
                    await self.flush()
                except tornado.iostream.StreamClosedError:
                    self._gone.set()
