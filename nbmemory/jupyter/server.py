"""A jupyter_server extension: agents' memory over REST, behind Jupyter's authentication.

Routes, under ``<base_url>/nbmemory/api``::

    GET  /agents                              every agent: messages, tokens, size, archives
    GET  /agents/NAME?page=&page_size=&newest_first=
    GET  /agents/NAME/archives
    GET  /agents/NAME/archives/FILE?page=&page_size=
    GET  /agents/NAME/search?q=&archives=1
    POST /agents/NAME/compact                 {"summary": "..."}

Names follow the engine's rules and unknown agents are 404s, so no URL reaches outside the
workspace. The workspace is ``$WORKSPACE_DIR``, else ``c.NbMemoryServer.workspace``, else
``agent_workspace`` in the server's root folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from nbmemory import overview, workspace
from nbmemory.conversation import Conversation
from nbmemory.errors import NbmemoryError
from nbmemory.search import content_text

MAX_PAGE = 200


def _item(index: int, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "index": index,
        "role": str(message.get("role", "")),
        "timestamp": str(message.get("timestamp", "")),
        "content": content_text(message.get("content")),
    }


class _Handler(APIHandler):
    """Shared pieces: the workspace, name checks, paging, JSON errors."""

    def workspace(self) -> Path:
        if os.environ.get("WORKSPACE_DIR"):
            return Path(os.environ["WORKSPACE_DIR"])
        configured = self.settings.get("nbmemory_workspace")
        if configured:
            return Path(configured)
        return (
            Path(self.settings.get("server_root_dir", ".")).expanduser()
            / workspace.DEFAULT_WORKSPACE
        )

    def conversation(self, name: str) -> Conversation:
        try:
            workspace.validate_agent_name(name)
        except NbmemoryError as exc:
            raise tornado.web.HTTPError(400, str(exc)) from None
        root = self.workspace()
        if name not in workspace.list_agents(root):
            raise tornado.web.HTTPError(404, f"no agent named {name!r}")
        return Conversation(name=name, memory_md_path=workspace.memory_path(name, root))

    def page(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        try:
            page = max(0, int(self.get_query_argument("page", "0")))
            size = min(MAX_PAGE, max(1, int(self.get_query_argument("page_size", "50"))))
        except ValueError:
            raise tornado.web.HTTPError(400, "page and page_size must be numbers") from None
        newest_first = self.get_query_argument("newest_first", "1") not in ("0", "false")
        indexes = list(range(len(messages)))
        if newest_first:
            indexes.reverse()
        chosen = indexes[page * size : (page + 1) * size]
        return {
            "total": len(messages),
            "page": page,
            "page_size": size,
            "messages": [_item(i, messages[i]) for i in chosen],
        }

    def reply(self, data: dict[str, Any]) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": message, "status": status_code}))


class AgentsHandler(_Handler):
    @tornado.web.authenticated
    def get(self) -> None:
        root = self.workspace()
        rows = overview.workspace_overview(root)
        self.reply(
            {
                "workspace": str(root),
                "agents": [
                    {
                        "name": r.name,
                        "messages": r.messages,
                        "tokens": r.tokens,
                        "size": r.size,
                        "archives": r.archives,
                        "last_activity": r.last_activity,
                    }
                    for r in rows
                ],
            }
        )


class AgentHandler(_Handler):
    @tornado.web.authenticated
    def get(self, name: str) -> None:
        convo = self.conversation(name)
        self.reply({"name": name, **self.page(convo.memory_messages())})


class ArchivesHandler(_Handler):
    @tornado.web.authenticated
    def get(self, name: str) -> None:
        from nbmemory.memory_file import read_messages

        convo = self.conversation(name)
        archives = [{"name": p.name, "messages": len(read_messages(p))} for p in convo.archives()]
        self.reply({"name": name, "archives": archives})


class ArchiveHandler(_Handler):
    @tornado.web.authenticated
    def get(self, name: str, archive: str) -> None:
        convo = self.conversation(name)
        try:
            messages = convo.archive_messages(archive)
        except FileNotFoundError as exc:
            raise tornado.web.HTTPError(404, str(exc)) from None
        self.reply({"name": name, "archive": archive, **self.page(messages)})


class SearchHandler(_Handler):
    @tornado.web.authenticated
    def get(self, name: str) -> None:
        convo = self.conversation(name)
        query = self.get_query_argument("q", "")
        if not query.strip():
            raise tornado.web.HTTPError(400, "q must not be empty")
        archives = self.get_query_argument("archives", "0") in ("1", "true")
        hits = convo.search_memory(query, archives=archives)[:MAX_PAGE]
        self.reply(
            {
                "name": name,
                "query": query,
                "hits": [{"source": h.source, **_item(h.index, h.message)} for h in hits],
            }
        )


class CompactHandler(_Handler):
    @tornado.web.authenticated
    def post(self, name: str) -> None:
        convo = self.conversation(name)
        try:
            body = self.get_json_body() or {}
        except Exception:
            raise tornado.web.HTTPError(400, "the body must be JSON") from None
        summary = body.get("summary") if isinstance(body, dict) else None
        if not isinstance(summary, str) or not summary.strip():
            raise tornado.web.HTTPError(400, "summary must be a non-empty string")
        before = convo.count_history_tokens()
        archive = convo.compact(summary)
        self.reply(
            {
                "name": name,
                "archive": archive.name if archive else None,
                "tokens_before": before,
                "tokens_after": convo.count_history_tokens(),
            }
        )


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Add the routes to a running Jupyter server."""
    web_app = serverapp.web_app
    configured = serverapp.config.get("NbMemoryServer", {}).get("workspace")
    web_app.settings["nbmemory_workspace"] = configured
    base = url_path_join(web_app.settings["base_url"], "nbmemory", "api")
    name = r"/agents/(?P<name>[^/]+)"
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "agents"), AgentsHandler),
            (url_path_join(base, name), AgentHandler),
            (url_path_join(base, name, "archives"), ArchivesHandler),
            (url_path_join(base, name, r"archives/(?P<archive>[^/]+)"), ArchiveHandler),
            (url_path_join(base, name, "search"), SearchHandler),
            (url_path_join(base, name, "compact"), CompactHandler),
        ],
    )
