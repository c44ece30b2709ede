"""What every route of the REST API shares: the read model in a worker thread, query parameters,
ETags and errors as JSON.

Every handler reads through :class:`nbmemory.views.read_model.ReadModel` (compaction writes through
:meth:`nbmemory.agent.agent.Agent.compact`, which records it as every compaction is recorded, pins
and unpins through :class:`nbmemory.memory.notes.Notes`), in a worker thread so the server's event
loop never waits on a disk. Reads whose cost grows with an agent's history (``/compactions``) have
their own few threads (:class:`~nbmemory.jupyter.server.workers.HeavyReads`), and each user at
most one of them at a time: a burst of them waits behind itself, never in front of another
request. Every GET carries an ``ETag`` built from ``ReadModel.version`` and the query, and answers
``304`` with no body to a matching ``If-None-Match``: a poll when nothing changed costs a few
``stat`` calls and a few hundred bytes.

Authorization: requests need Jupyter's authentication, then the server's authorizer is asked
about the resource ``"nbmemory"``, with the action ``"read"`` for GETs and ``"write"`` for a
compaction, a pin or an unpin. Errors are JSON ``{"message": ..., "reason": ...}``
(``APIHandler``), the shape ``ServerConnection.ResponseError`` reads: ``400`` for a bad name or
parameter, an empty note or notes over their budget, ``404`` for an unknown agent, archive,
message or note, ``409`` for an unpin whose ``"note"`` (the text the client showed at that
number) is no longer the note at that number, for nothing to compact and for a compaction
whose preview is gone or whose memory changed since, ``413`` for a summary or note over the
size of a message (``docs.MAX_MESSAGE_BYTES``), ``502`` when the model failed to write a
summary (nothing changed). Names follow the engine's rules, so no URL
reaches outside the workspace.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

import tornado.web
from jupyter_server.base.handlers import APIHandler

from nbmemory.errors import (
    AgentNotFoundError,
    ArchiveNotFoundError,
    InvalidAgentNameError,
    InvalidNoteError,
    InvalidTextError,
    NoteNotFoundError,
    NotesFullError,
    UnsafeFileError,
)
from nbmemory.jupyter.server.params import MAX_FOLD, MAX_LIMIT, quoted_excerpt, whole_number
from nbmemory.jupyter.server.workers import HeavyReads
from nbmemory.store import folders
from nbmemory.views.answers import Item
from nbmemory.views.read_model import ReadModel
from nbmemory.wording import FOLD_CHARS

AUTH_RESOURCE = "nbmemory"
"""What the server's authorizer is asked about, for the REST API and the MCP endpoint alike."""
API_VERSION = "2"
"""Part of every ETag, so a client never keeps an answer of an older server."""

T = TypeVar("T")


def items_json(items: list[Item]) -> list[dict[str, Any]]:
    """The messages of a page, or the hits of a search, as JSON."""
    return [item.to_json() for item in items]


class NbMemoryHandler(APIHandler):
    """The base of every route of the REST API: the read model, query parameters, ETags,
    errors as JSON."""

    auth_resource = AUTH_RESOURCE
    read_at = ""
    """The version (``ReadModel.version``) this answer's ETag names: set by :meth:`not_modified`."""

    def json_body(self) -> dict[str, Any]:
        """The request's JSON object (400 for anything else)."""
        try:
            body = json.loads(self.request.body or b"{}")
        except (ValueError, RecursionError):  # not UTF-8 or not JSON; nested too deep
            raise tornado.web.HTTPError(400, "the body must be a JSON object") from None
        if not isinstance(body, dict):
            raise tornado.web.HTTPError(400, "the body must be a JSON object")
        return body

    @property
    def model(self) -> ReadModel:
        return self.settings["nbmemory_model"]

    async def in_thread(
        self, function: Callable[..., T], *args: Any, pool: Executor | None = None, **kwargs: Any
    ) -> T:
        """Run ``function`` off the event loop (in ``pool``, else the shared one); the engine's
        errors become HTTP errors."""
        call = functools.partial(function, *args, **kwargs)
        try:
            if pool is None:
                return await asyncio.to_thread(call)
            return await asyncio.get_running_loop().run_in_executor(pool, call)
        except (InvalidAgentNameError, InvalidNoteError, NotesFullError, InvalidTextError) as exc:
            raise tornado.web.HTTPError(400, str(exc)) from None
        except UnsafeFileError as exc:
            raise tornado.web.HTTPError(409, str(exc)) from None
        except (AgentNotFoundError, ArchiveNotFoundError, NoteNotFoundError) as exc:
            raise tornado.web.HTTPError(404, str(exc)) from None
        except IndexError as exc:
            raise tornado.web.HTTPError(404, str(exc).strip("'\"")) from None

    async def heavy(self, function: Callable[..., T], *args: Any) -> T:
        """Run a read whose cost grows with an agent's history, on :class:`HeavyReads`."""
        reads: HeavyReads = self.settings["nbmemory_heavy_reads"]
        user = self.current_user
        async with reads.turn(getattr(user, "username", None) or str(user)):
            return await self.in_thread(function, *args, pool=reads.pool)

    # Query parameters -------------------------------------------------------------------------

    def int_arg(self, key: str, default: int, lowest: int, highest: int | None = None) -> int:
        raw = self.get_query_argument(key, str(default))
        value = whole_number(raw)
        if value is None:
            raise tornado.web.HTTPError(
                400, f"{key} must be a whole number, not {quoted_excerpt(raw)}"
            )
        if value < lowest:
            raise tornado.web.HTTPError(400, f"{key} must be at least {lowest}, not {value}")
        return value if highest is None else min(value, highest)

    def bool_arg(self, key: str, default: bool) -> bool:
        raw = self.get_query_argument(key, "1" if default else "0").lower()
        if raw in ("1", "true", "yes"):
            return True
        if raw in ("0", "false", "no", ""):
            return False
        raise tornado.web.HTTPError(400, f"{key} must be 1 or 0, not {raw!r}")

    def role_arg(self) -> str | None:
        """``role``: only that role's messages (any case); none or empty: every message."""
        return self.get_query_argument("role", "") or None

    def paging(self, newest_first: bool) -> dict[str, Any]:
        return {
            "offset": self.int_arg("offset", 0, 0),
            "limit": self.int_arg("limit", 20, 1, MAX_LIMIT),
            "newest_first": self.bool_arg("newest_first", newest_first),
            "fold": self.int_arg("fold", FOLD_CHARS, 1, MAX_FOLD),
            "role": self.role_arg(),
        }

    async def page_json(self, name: str, archive: str | None, paging: dict[str, Any]) -> Any:
        """A page of MEMORY.md or of ``archive`` and the roles of its messages, as JSON."""

        def read() -> dict[str, Any]:
            if archive is None:
                page = self.model.messages(name, **paging)
            else:
                page = self.model.archive_messages(name, archive, **paging)
            roles = self.model.roles(name, archive)
            return {
                "name": name,
                "source": archive or folders.MEMORY_FILE,
                "total": page.total,
                "offset": page.offset,
                "limit": paging["limit"],
                "newest_first": page.newest_first,
                "role": paging["role"],
                "roles": [{"role": role, "count": count} for role, count in roles],
                "items": items_json(page.items),
            }

        return await self.in_thread(read)

    # Conditional GETs -------------------------------------------------------------------------

    async def not_modified(self, name: str | None, *parts: Any) -> bool:
        """Set the ETag for this answer; ``True`` (and a 304 sent) if the client has it already.

        The tag covers the route and the parsed parameters (``parts``), not the raw query, so a
        cache-busting parameter does not defeat it. The version is taken before the data is
        read, so a change in between costs the client one more fetch, never a stale answer.
        """
        version = self.read_at = await self.in_thread(self.model.version, name)
        root = str(self.model.root)
        key = json.dumps([API_VERSION, root, version, self.request.path, parts], sort_keys=True)
        etag = '"' + hashlib.blake2b(key.encode(), digest_size=12).hexdigest() + '"'
        self.set_header("Etag", etag)
        self.set_header("Cache-Control", "no-cache")
        match = self.request.headers.get("If-None-Match", "")
        if etag in (tag.strip() for tag in match.split(",")) or match.strip() == "*":
            self.set_status(304)
            self.timing()
            self.finish()
            return True
        return False

    def reply(self, data: dict[str, Any]) -> None:
        self.set_header("Content-Type", "application/json")
        self.timing()
        self.finish(json.dumps(data))

    def timing(self) -> None:
        """How long the server took, for browsers' dev tools and the benchmark."""
        elapsed = self.request.request_time() * 1000
        self.set_header("Server-Timing", f"nbmemory;dur={elapsed:.2f}")
