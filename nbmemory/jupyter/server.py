"""A jupyter_server extension: agents' memory over REST, behind Jupyter's authentication.

Routes, under ``<base_url>/nbmemory/api``::

    GET  /agents                                    workspace, poll interval, every agent's figures
    GET  /agents/NAME?offset=&limit=&newest_first=&fold=&role=   a page of MEMORY.md
    GET  /agents/NAME/messages/INDEX?archive=FILE   one whole message ("show full text")
    GET  /agents/NAME/tokens?indexes=3,4&archive=FILE   what those messages add to a request
    GET  /agents/NAME/archives                      the agent's archives
    GET  /agents/NAME/archives/FILE?offset=&limit=&newest_first=&fold=&role=
    GET  /agents/NAME/search?q=&archives=1&offset=&limit=&fold=&role=   total and a page of hits
    GET  /agents/NAME/find?term=&archive=FILE&limit=&newest_first=&role=   the first message
                                                    with the term and the page that shows it
    GET  /agents/NAME/path?archive=FILE             where MEMORY.md (or the archive) is, absolute
                                                    and from the Jupyter server's root
    GET  /agents/NAME/export?format=json|yaml|md&archive=FILE   the memory as a file to save
    POST /agents/NAME/compact                       {"preview": true, "keep": [...]}: the model's
                                                    summary, tokens before and after, what it drops;
                                                    {"summary": "...", "plan": ID}: write it
    GET  /agents/NAME/notes                         pinned notes and the tokens they add
    POST /agents/NAME/notes                         {"pin": "text"} or {"unpin": "number or words"}

and, with ``nbmemory[mcp]`` installed, ``<base_url>/nbmemory/mcp``: ``nbmemory mcp``'s tools and
resources over streamable HTTP, behind the same authentication (:mod:`nbmemory.jupyter.mcp_http`).

Every handler reads through :class:`nbmemory.views.read_model.ReadModel` (compaction writes through
:meth:`nbmemory.agent.agent.Agent.compact`, which records it as every compaction is recorded, pins
and unpins through :class:`nbmemory.memory.notes.Notes`), in a worker thread so the server's event
loop never waits on a disk. Reads whose cost grows with an agent's history (``/compactions``) have
their own few threads (:class:`HeavyReads`), and each user at most one of them at a time: a burst
of them waits behind itself, never in front of another request. Every GET carries an ``ETag`` built
from ``ReadModel.version`` and the query, and answers ``304`` with no body to a matching
``If-None-Match``: a poll when nothing changed costs a few ``stat`` calls and a few hundred bytes.

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

Settings are the traits of :class:`NbMemoryServer` (an ``ExtensionApp``), set like any Jupyter
option: ``c.NbMemoryServer.workspace = "..."`` in ``jupyter_server_config.py``, or
``--NbMemoryServer.poll_interval=5`` on the ``jupyter lab`` / ``jupyter server`` command line.
``nbmemory server --help-all`` (or ``jupyter nbmemory server --help-all``) lists them. The
workspace is, in this order: the ``workspace`` setting (relative to the server's root folder),
else ``$WORKSPACE_DIR``, else ``agent_workspace`` in the server's root folder. The server then
exports the resolved absolute path as ``$WORKSPACE_DIR``, so kernels it starts (whatever folder
their notebook is in) write where the panel reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import hashlib
import json
import os
import re
import secrets
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Float, TraitError, Unicode, validate

from nbmemory.agent.agent import Agent
from nbmemory.agent.compressor import CompactionPlan
from nbmemory.errors import (
    AgentNotFoundError,
    ArchiveNotFoundError,
    CompactionError,
    InvalidAgentNameError,
    InvalidNoteError,
    InvalidTextError,
    MessageTooLargeError,
    ModelError,
    NbmemoryError,
    NoteChangedError,
    NoteNotFoundError,
    NotesFullError,
    StoreConfigError,
    UnsafeFileError,
)
from nbmemory.memory import note_history
from nbmemory.memory.compactions import Compaction
from nbmemory.memory.export import FORMATS, export_text
from nbmemory.memory.note_history import Author
from nbmemory.memory.notes import Notes
from nbmemory.memory.provenance import SERVER_ROOT_ENV
from nbmemory.store import folders
from nbmemory.store import workspace as memory_store
from nbmemory.store.docs import check_size
from nbmemory.store.masked_url import MaskedUrl
from nbmemory.views.read_model import FOLD_CHARS, AgentInfo, Item, ReadModel
from nbmemory.wording import preview_words, vocabulary

AUTH_RESOURCE = "nbmemory"
MAX_LIMIT = 200
"""The largest page a client gets, whatever ``limit`` it asks for."""
HISTORY_SHOWN = 100
"""The latest changes to an agent's notes a notes answer lists."""
MAX_FOLD = 100_000
MAX_KEEP = 100
"""The most terms a compaction request may ask to keep."""
MAX_TERM = 200
MIN_POLL_INTERVAL = 0.5
API_VERSION = "2"
"""Part of every ETag, so a client never keeps an answer of an older server."""

T = TypeVar("T")
HEAVY_WORKERS = 2
"""Threads for reads whose cost grows with an agent's history (see :class:`HeavyReads`)."""


class HeavyReads:
    """Threads for the reads whose cost grows with an agent's history, apart from the pool every
    other request uses: at most ``workers`` of them run at once, and at most ``per_user`` for
    one user (the rest of that user's wait, costing no thread), so neither a slow read nor a
    user's burst of them can hold up anyone else's requests.

    A client that signs in with the server's token and keeps no cookie is a new anonymous user
    at every request: ``workers`` still bounds it."""

    def __init__(self, workers: int = HEAVY_WORKERS, per_user: int = 1) -> None:
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="nbmemory-heavy")
        self.per_user = per_user
        self._turns: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}

    def __len__(self) -> int:
        """How many users have a heavy read running or waiting."""
        return len(self._turns)

    @contextlib.asynccontextmanager
    async def turn(self, user: str) -> AsyncIterator[None]:
        """Wait for one of ``user``'s turns (on the event loop's thread); a user's entry is
        dropped once nothing of theirs runs or waits."""
        semaphore, holders = self._turns.setdefault(user, (asyncio.Semaphore(self.per_user), [0]))
        holders[0] += 1
        try:
            async with semaphore:
                yield
        finally:
            holders[0] -= 1
            if not holders[0]:
                del self._turns[user]

    def shutdown(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


_WHOLE = re.compile(r"-?[0-9]{1,18}")


def _whole(raw: str) -> int | None:
    """``raw`` as a whole number, if it is one written in ASCII digits (``int`` takes other
    scripts' digits and ``1_000``, ``str.isdigit`` takes ``'²'``) that fits a database's bigint."""
    return int(raw) if _WHOLE.fullmatch(raw.strip()) else None


def _shown(raw: str) -> str:
    """``raw`` quoted for an error message, cut short: a client may send megabytes."""
    return repr(raw if len(raw) <= 40 else raw[:40] + "…")


class NbMemoryServer(ExtensionApp):
    """nbmemory's server extension: the REST API behind the JupyterLab "Agent Memory" panel."""

    name = "nbmemory"
    description = "REST API over nbmemory agents' memory, for the JupyterLab sidebar."
    load_other_extensions = True

    workspace = Unicode(
        "",
        help="""Workspace folder the panel reads and the server's kernels write (exported to them
        as $WORKSPACE_DIR). Empty: $WORKSPACE_DIR of the server, else agent_workspace in the
        server's root folder. A relative path is taken from the server's root folder.""",
    ).tag(config=True)

    store = Unicode(
        "",
        help="""A PostgreSQL URL (postgresql://USER:PASSWORD@HOST:PORT/DB) to keep agents in,
        exported to the server's kernels as $NBMEMORY_STORE. Empty: $NBMEMORY_STORE of the
        server, else files in the workspace. Other users of the host can read a command line:
        rather set $NBMEMORY_STORE, or this in a config file.""",
    ).tag(config=True)

    @validate("store")
    def _check_store(self, proposal: dict[str, Any]) -> str:
        try:
            return MaskedUrl(memory_store.check(proposal["value"]))
        except StoreConfigError as exc:  # its message never holds the password
            raise TraitError(f"NbMemoryServer.store: {exc}") from None

    poll_interval = Float(
        3.0,
        help=f"""Seconds between two polls of the sidebar for changes (at least
        {MIN_POLL_INTERVAL}). A poll when nothing changed is answered 304 with no body.""",
    ).tag(config=True)

    @validate("poll_interval")
    def _check_poll_interval(self, proposal: dict[str, Any]) -> float:
        value = proposal["value"]
        if not value >= MIN_POLL_INTERVAL:  # also rejects NaN
            raise TraitError(
                f"NbMemoryServer.poll_interval must be at least {MIN_POLL_INTERVAL} s, not {value}"
            )
        return value

    warm_up = Bool(
        True,
        help="""Read and count every agent once, in the background, when the server starts:
        the panel's first listing then finds them read (cold, 3,000 agents that never ran
        take about a second: the tokenizers their models use are loaded, every memory is
        read and counted).""",
    ).tag(config=True)

    def resolve_workspace(self, root_dir: str | os.PathLike[str]) -> Path:
        """The one rule: the setting, else $WORKSPACE_DIR, else ``root_dir/agent_workspace``."""
        root = Path(root_dir).expanduser()
        if self.workspace:
            path = root / Path(self.workspace).expanduser()
        elif os.environ.get("WORKSPACE_DIR"):
            path = Path(os.environ["WORKSPACE_DIR"]).expanduser()
        else:
            path = root / folders.DEFAULT_WORKSPACE
        return Path(os.path.abspath(path))

    def export_workspace(self) -> Path:
        """Resolve the workspace and export it to the kernels to come: $WORKSPACE_DIR,
        $NBMEMORY_STORE when ``store`` is set, and the server's root (for the notebook paths
        that cell provenance records)."""
        assert self.serverapp is not None
        root = self.resolve_workspace(self.serverapp.root_dir)
        os.environ[memory_store.WORKSPACE_ENV] = str(root)
        os.environ[SERVER_ROOT_ENV] = os.path.abspath(Path(self.serverapp.root_dir).expanduser())
        if self.store:
            os.environ[memory_store.ENV] = self.store
        self.resolved_workspace = root
        self.memory_workspace = memory_store.Workspace.from_env(root)
        return root

    resolved_workspace: Path | None = None
    memory_workspace: memory_store.Workspace | None = None

    def _link_jupyter_server_extension(self, serverapp: Any) -> None:
        try:
            super()._link_jupyter_server_extension(serverapp)
        except TraitError as exc:
            # Not a warning and a server on files: the team's agents would seem to be gone,
            # and what is written meanwhile would be in the wrong place. The message names the
            # database without its password (see ``_check_store``).
            serverapp.log.critical("nbmemory: %s; the server does not start", exc)
            raise SystemExit(2) from None
        try:
            self.export_workspace()
        except StoreConfigError as exc:
            # The server's $NBMEMORY_STORE, which its kernels inherit and refuse as well: one
            # line (the message never holds the password), not a traceback each time Jupyter
            # links and loads the extension, and the server goes on without nbmemory.
            serverapp.log.critical(
                "nbmemory: $NBMEMORY_STORE: %s; nbmemory is off in this server", exc
            )
            self._turn_off(serverapp)

    def _turn_off(self, serverapp: Any) -> None:
        """Have Jupyter neither load nor start this extension (it still stops it)."""
        for package in serverapp.extension_manager.extensions.values():
            if any(point.app is self for point in package.extension_points.values()):
                package.enabled = False

    def initialize_settings(self) -> None:
        if self.memory_workspace is None:
            self.export_workspace()
        root = self.resolved_workspace
        self.settings["nbmemory_model"] = ReadModel(self.memory_workspace)
        self.settings["nbmemory_poll_interval"] = self.poll_interval
        self.settings["nbmemory_heavy_reads"] = HeavyReads()
        self.settings["nbmemory_previews"] = PreviewPlans()
        kept = self.settings["nbmemory_model"].store
        self.log.info("nbmemory: agents' memory in %s", root if kept == "files" else kept)
        # The server's own objects (modules, classes, settings: some 200,000) live as long as
        # it does; left to the collector, each full collection walks them all again, and the
        # first listing of thousands of agents triggers one (0.1 s of a 1 s answer).
        gc.freeze()
        warm = self.settings["nbmemory_warm_up"] = WarmUp()
        if self.warm_up:
            model, log = self.settings["nbmemory_model"], self.log
            threading.Thread(target=warm.run, args=(model, log), daemon=True).start()
        else:
            warm.done.set()

    async def stop_extension(self) -> None:
        """Stop what :meth:`initialize_settings` and the MCP endpoint started, if they did:
        Jupyter stops an extension that failed to load, or was turned off, as well."""
        if self.settings.get("nbmemory_heavy_reads") is not None:
            self.settings["nbmemory_heavy_reads"].shutdown()
        if self.settings.get("nbmemory_mcp") is not None:
            await self.settings["nbmemory_mcp"].stop()

    def initialize_handlers(self) -> None:
        base = "/nbmemory/api"
        name = r"/agents/(?P<name>[^/]+)"
        self.handlers.extend(
            [
                (f"{base}/agents", AgentsHandler),
                (f"{base}{name}", AgentHandler),
                (f"{base}{name}/messages/(?P<index>[^/]+)", MessageHandler),
                (f"{base}{name}/tokens", TokensHandler),
                (f"{base}{name}/archives", ArchivesHandler),
                (f"{base}{name}/compactions", CompactionsHandler),
                (f"{base}{name}/archives/(?P<archive>[^/]+)", ArchiveHandler),
                (f"{base}{name}/search", SearchHandler),
                (f"{base}{name}/find", FindHandler),
                (f"{base}{name}/compact", CompactHandler),
                (f"{base}{name}/notes", NotesHandler),
                (f"{base}{name}/path", PathHandler),
                (f"{base}{name}/export", ExportHandler),
            ]
        )
        self.add_mcp_endpoint()

    def add_mcp_endpoint(self) -> None:
        """``/nbmemory/mcp``: the MCP server over streamable HTTP, when the MCP SDK is here."""
        try:  # the MCP SDK comes with nbmemory[mcp], not with nbmemory
            from nbmemory.jupyter.mcp_http import ROUTE, McpEndpoint, McpHandler
        except ImportError as exc:
            self.log.info("nbmemory: no MCP endpoint without pip install 'nbmemory[mcp]' (%s)", exc)
            return
        endpoint = McpEndpoint(self.settings["nbmemory_model"].workspace)
        self.settings["nbmemory_mcp"] = endpoint
        options = {"endpoint": endpoint, "resource": AUTH_RESOURCE}
        self.handlers.append((ROUTE, McpHandler, options))


# ----------------------------------------------------------------------------------------------
# Loading (the package's extension point names this module)

_APP_KEY = "_nbmemory_app"


class WarmUp:
    """The agents listed once when the server starts, in the background, as the panel's first
    request will list them: what that reads and counts is kept (``nbmemory.store.follow``)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self._listed: tuple[str, list[AgentInfo]] | None = None

    def run(self, model: ReadModel, log: Any) -> None:
        """List the agents of ``model`` (and the version they were read at), then set
        :attr:`done`. Only reads."""
        start = time.perf_counter()
        try:
            version = model.version()
            self._listed = version, model.agents()
        except (NbmemoryError, OSError) as exc:  # the panel's own request will say what is wrong
            log.info("nbmemory: the agents were not read at start: %s", exc)
        else:
            elapsed = time.perf_counter() - start
            log.info("nbmemory: %d agents read at start in %.2f s", len(self._listed[1]), elapsed)
        finally:
            self.done.set()

    def take(self, version: str) -> list[AgentInfo] | None:
        """The listing, once, if nothing changed since it began (the workspace is still at
        ``version``); else ``None``."""
        listed, self._listed = self._listed, None
        return listed[1] if listed is not None and listed[0] == version else None


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """The extension point with its app, for ``jpserver_extensions`` naming this module."""
    return [{"module": "nbmemory.jupyter.server", "app": NbMemoryServer}]


def _link_jupyter_server_extension(serverapp: Any) -> None:
    """Read the settings and export the workspace before the server starts any kernel."""
    app = NbMemoryServer()
    app._link_jupyter_server_extension(serverapp)
    setattr(serverapp, _APP_KEY, app)


def _load_jupyter_server_extension(serverapp: Any) -> NbMemoryServer:
    """Add the routes to the server's web application."""
    if getattr(serverapp, _APP_KEY, None) is None:
        _link_jupyter_server_extension(serverapp)
    app: NbMemoryServer = getattr(serverapp, _APP_KEY)
    app.initialize()
    return app


# ----------------------------------------------------------------------------------------------
# Handlers


def _items(items: list[Item]) -> list[dict[str, Any]]:
    return [item.to_json() for item in items]


class _Handler(APIHandler):
    """Shared pieces: the read model, query parameters, ETags, errors as JSON."""

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
        value = _whole(raw)
        if value is None:
            raise tornado.web.HTTPError(400, f"{key} must be a whole number, not {_shown(raw)}")
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
                "items": _items(page.items),
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


class AgentsHandler(_Handler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self) -> None:
        poll = self.settings["nbmemory_poll_interval"]
        if await self.not_modified(None, poll):
            return
        warm = self.settings["nbmemory_warm_up"]
        if not warm.done.is_set():  # read them once, not twice at once
            await asyncio.to_thread(warm.done.wait)
        agents = warm.take(self.read_at)
        if agents is None:
            agents = await self.in_thread(self.model.agents)
        self.reply(
            {
                "workspace": str(self.model.root),
                "store": self.model.store,
                "poll_interval": poll,
                "agents": [info.to_json() for info in agents],
                "vocabulary": vocabulary(),
            }
        )


class AgentHandler(_Handler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        paging = self.paging(newest_first=True)
        if await self.not_modified(name, paging):
            return
        self.reply(await self.page_json(name, None, paging))


class MessageHandler(_Handler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str, index: str) -> None:
        number = _whole(index)
        if number is None or number < 0:
            raise tornado.web.HTTPError(
                400, f"a message index is a whole number from 0, not {_shown(index)}"
            )
        archive = self.get_query_argument("archive", None) or None
        if await self.not_modified(name, archive):
            return
        item = await self.in_thread(self.model.message, name, number, archive)
        self.reply({"name": name, "archive": archive, **item.to_json()})


class TokensHandler(_Handler):
    """Tokens per message, on demand: ``indexes`` (at most ``MAX_LIMIT``, comma-separated;
    all of the file's without it), counted as the agent's model reads them."""

    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        archive = self.get_query_argument("archive", None) or None
        raw = self.get_query_argument("indexes", None)
        indexes = None
        if raw is not None:
            numbers = [_whole(word) for word in raw.split(",") if word.strip()]
            if not all(number is not None and number >= 0 for number in numbers):
                raise tornado.web.HTTPError(
                    400, f"indexes must be whole numbers separated by commas, not {_shown(raw)}"
                )
            if len(numbers) > MAX_LIMIT:
                raise tornado.web.HTTPError(400, f"at most {MAX_LIMIT} indexes at a time")
            indexes = numbers
        if await self.not_modified(name, archive, indexes):
            return
        counted = await self.in_thread(self.model.message_tokens, name, indexes, archive)
        self.reply({"name": name, "archive": archive, **counted.to_json()})


class ArchivesHandler(_Handler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        if await self.not_modified(name):
            return
        archives = await self.in_thread(self.model.archives, name)
        self.reply(
            {
                "name": name,
                "archives": [archive.to_json() for archive in archives],
            }
        )


class CompactionsHandler(_Handler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        if await self.not_modified(name):
            return
        compactions = await self.heavy(self.model.compactions, name)
        self.reply({"name": name, "compactions": [c.to_json() for c in compactions]})


class ArchiveHandler(_Handler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str, archive: str) -> None:
        paging = self.paging(newest_first=False)
        if await self.not_modified(name, paging):
            return
        self.reply({"archive": archive, **await self.page_json(name, archive, paging)})


class SearchHandler(_Handler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        query = self.get_query_argument("q", "")
        if not query.strip():
            raise tornado.web.HTTPError(400, "q must not be empty")
        archives = self.bool_arg("archives", False)
        offset = self.int_arg("offset", 0, 0)
        limit = self.int_arg("limit", 50, 1, MAX_LIMIT)
        fold = self.int_arg("fold", FOLD_CHARS, 1, MAX_FOLD)
        role = self.role_arg()
        if await self.not_modified(name, query, archives, offset, limit, fold, role):
            return
        found = await self.in_thread(
            self.model.search,
            name,
            query,
            archives=archives,
            offset=offset,
            limit=limit,
            fold=fold,
            role=role,
        )
        self.reply(
            {
                "name": name,
                "query": found.query,
                "archives": archives,
                "role": role,
                "total": found.total,
                "offset": found.offset,
                "limit": limit,
                "items": _items(found.items),
            }
        )


class FindHandler(_Handler):
    """Which page of MEMORY.md or ``archive`` holds ``term`` first (``ReadModel.find``)."""

    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        term = self.get_query_argument("term", "")
        if not term.strip():
            raise tornado.web.HTTPError(400, "term must not be empty")
        archive = self.get_query_argument("archive", None) or None
        limit = self.int_arg("limit", 20, 1, MAX_LIMIT)
        newest_first = self.bool_arg("newest_first", False)
        role = self.role_arg()
        if await self.not_modified(name, term, archive, limit, newest_first, role):
            return
        found = await self.in_thread(
            self.model.find,
            name,
            term,
            archive,
            limit=limit,
            newest_first=newest_first,
            role=role,
        )
        self.reply({"name": name, **found.to_json()})


class CompactHandler(_Handler):
    """Compact an agent's memory: preview the model's summary, then write it, edited or not.

    ``{"preview": true, "keep": [...]}`` answers the summary the model would write, the next
    request's tokens before and after and the terms it would drop, changing nothing, with a
    ``"plan"`` id; ``{"summary": "...", "plan": id}`` writes that summary (the model's, as
    shown, or as the person edited it; ``409`` if the memory changed since the preview);
    ``{"summary": "..."}`` alone writes a summary written by hand; ``{}`` or ``{"keep": [...]}``
    the model's summary without a preview. A model that fails answers ``502``; nothing to
    compact, ``409``."""

    def previews(self) -> PreviewPlans:
        return self.settings["nbmemory_previews"]

    def request_json(self) -> tuple[bool, str | None, list[str], str | None]:
        """(preview, summary, keep, plan) of the request, each checked (400 for a bad one)."""
        body = self.json_body()
        preview, summary = body.get("preview", False), body.get("summary")
        keep, plan = body.get("keep", []), body.get("plan")
        if not isinstance(preview, bool):
            raise tornado.web.HTTPError(400, '"preview" must be true or false')
        if summary is not None and (not isinstance(summary, str) or not summary.strip()):
            raise tornado.web.HTTPError(400, "summary must be a non-empty string")
        if summary is not None:
            _within_size(summary, "summary")
        if not isinstance(keep, list) or not all(
            isinstance(term, str) and term.strip() and len(term) <= MAX_TERM for term in keep
        ):
            raise tornado.web.HTTPError(
                400, f'"keep" must be a list of terms (non-empty strings of {MAX_TERM} or fewer)'
            )
        if len(keep) > MAX_KEEP:
            raise tornado.web.HTTPError(400, f'"keep" holds at most {MAX_KEEP} terms')
        if plan is not None and not isinstance(plan, str):
            raise tornado.web.HTTPError(400, '"plan" must be the id a preview answered')
        if preview and (summary is not None or plan is not None):
            raise tornado.web.HTTPError(400, 'a preview takes "keep" alone, not a summary or plan')
        if summary is not None and keep:
            raise tornado.web.HTTPError(400, '"keep" goes with the model summary, not a given one')
        return preview, summary, keep, plan

    @tornado.web.authenticated
    @authorized("write")
    async def post(self, name: str) -> None:
        preview, summary, keep, plan_id = self.request_json()
        before = await self.in_thread(self.model.usage, name)  # 404 before anything is built
        place = self.model.workspace
        shown = self.previews().take(plan_id, name) if plan_id is not None else None
        if plan_id is not None and shown is None:
            raise tornado.web.HTTPError(409, "that preview is no longer known: preview again")

        def compact() -> CompactionPlan | Compaction:
            agent = Agent.from_memory(name, place, record_settings=False)
            if preview:
                return agent.compact_preview(keep)
            plan = shown if summary is not None else (shown or agent.compact_preview(keep))
            return agent.compact(summary, plan=plan)

        try:
            done = await self.in_thread(compact)
        except CompactionError as exc:
            failed = isinstance(exc.__cause__, ModelError)
            raise tornado.web.HTTPError(502 if failed else 409, str(exc)) from None
        if isinstance(done, CompactionPlan):
            self.reply(
                {
                    "name": name,
                    "plan": self.previews().add(done, name),
                    "summary": done.summary,
                    "tokens_before": done.tokens_before,
                    "tokens_after": done.tokens_after,
                    "missing": done.missing,
                    "keep": keep,
                    "words": preview_words(
                        done.tokens_before, done.tokens_after, len(done.missing)
                    ),
                }
            )
            return
        archive = done.archive
        after = await self.in_thread(self.model.usage, name)
        records = await self.in_thread(self.model.compactions, name) if archive else []
        self.reply(
            {
                "name": name,
                "archive": archive.name if archive else None,
                "tokens_before": before.tokens,
                "tokens_after": after.tokens,
                "figures": records[-1].figures if records else "",
                "missing": done.missing,
            }
        )


class PreviewPlans:
    """The compactions previewed through the API and not yet carried out, the latest ``size``
    of them, by an id no one guesses (a client signed in with the token alone is a new user at
    every request, so the id, not the user, says whose preview it is), each for its agent."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._plans: dict[str, tuple[str, CompactionPlan]] = {}

    def add(self, plan: CompactionPlan, name: str) -> str:
        key = secrets.token_urlsafe(16)
        self._plans[key] = (name, plan)
        while len(self._plans) > self.size:
            del self._plans[next(iter(self._plans))]
        return key

    def take(self, key: str, name: str) -> CompactionPlan | None:
        """The plan ``key`` of agent ``name``, forgotten; ``None`` if unknown."""
        found = self._plans.get(key)
        if found is None or found[0] != name:
            return None
        del self._plans[key]
        return found[1]


class NotesHandler(_Handler):
    """An agent's pinned notes (``NOTES.md``): read them, pin one, unpin one."""

    def notes_file(self, name: str) -> Notes:
        """The agent's notes, counted for the model it recorded (AgentNotFoundError if none)."""
        settings, _ = self.model.settings(name)
        return Notes(self.model.workspace.agent(name), model=settings.model)

    def notes_json(self, name: str) -> dict[str, Any]:
        notes = self.notes_file(name)
        history = self.model.note_history(name)
        return {
            "name": name,
            "notes": self.model.notes(name),
            "tokens": notes.tokens(),
            "budget": notes.budget,
            "approval": note_history.approval(history) or note_history.DEFAULT,
            "pending": [
                {**c.to_json(), "said": c.describe()} for c in note_history.pending(history)
            ],
            "history": [{**c.to_json(), "said": c.describe()} for c in history[-HISTORY_SHOWN:]],
        }

    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        if await self.not_modified(name):
            return
        self.reply(await self.in_thread(self.notes_json, name))

    @tornado.web.authenticated
    @authorized("write")
    async def post(self, name: str) -> None:
        body = self.json_body()
        asked = [
            key for key in ("pin", "unpin", "approval", *_REVIEWS) if body.get(key) is not None
        ]
        if len(asked) != 1:
            raise tornado.web.HTTPError(
                400, 'give one of "pin", "unpin", "approval", "accept", "reject" or "restore"'
            )
        by = Author("person", "panel", user=self.current_user.username)
        if asked[0] == "approval":
            value = body["approval"]
            if value not in (*note_history.APPROVALS, note_history.DEFAULT):
                raise tornado.web.HTTPError(
                    400, '"approval" is one of "auto", "ask", "off" or "default"'
                )
            change = functools.partial(self.approve, name, value, by)
        elif asked[0] in _REVIEWS:
            n = body[asked[0]]
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise tornado.web.HTTPError(400, f'"{asked[0]}" takes a change number from 1')
            change = functools.partial(self.review, name, asked[0], n, by)
        else:
            change = functools.partial(self.edit, name, *self.pin_or_unpin(body), by)
        try:
            data = await self.in_thread(change)
        except NoteChangedError as exc:
            raise tornado.web.HTTPError(409, str(exc)) from None
        self.reply(data)

    @staticmethod
    def pin_or_unpin(body: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
        """The note to pin, or the one to unpin and the text shown for it; 400 if malformed."""
        pin, unpin, shown = body.get("pin"), body.get("unpin"), body.get("note")
        if isinstance(unpin, int) and not isinstance(unpin, bool):
            if unpin < 1:
                raise tornado.web.HTTPError(400, f'"unpin" numbers notes from 1, not {unpin}')
            unpin = str(unpin)
        if not isinstance(pin if pin is not None else unpin, str):
            raise tornado.web.HTTPError(400, '"pin" and "unpin" take a string')
        if shown is not None and (unpin is None or not isinstance(shown, str)):
            raise tornado.web.HTTPError(400, '"note" goes with "unpin", as a string')
        if unpin is not None and not unpin.strip():
            raise tornado.web.HTTPError(400, '"unpin" needs a note number or words')
        if pin is not None:
            _within_size(pin, "note")
        return pin, unpin, shown

    def edit(
        self, name: str, pin: str | None, unpin: str | None, shown: str | None, by: Author
    ) -> dict[str, Any]:
        notes = self.notes_file(name)
        if pin is not None:
            notes.add(pin, by=by)
        else:
            notes.remove(unpin or "", expected=shown, by=by)
        return self.notes_json(name)

    def approve(self, name: str, value: str, by: Author) -> dict[str, Any]:
        self.notes_file(name).set_approval(value, by=by)
        return self.notes_json(name)

    def review(self, name: str, action: str, n: int, by: Author) -> dict[str, Any]:
        """Accept or reject proposal ``n``, or restore the notes after change ``n``."""
        getattr(self.notes_file(name), action)(n, by=by)
        return self.notes_json(name)


_REVIEWS = ("accept", "reject", "restore")


def _within_size(text: str, what: str) -> None:
    """413 if ``text``, sent to be stored, is over the size of a message
    (``docs.MAX_MESSAGE_BYTES``)."""
    try:
        check_size(text, what)
    except MessageTooLargeError as exc:
        raise tornado.web.HTTPError(413, str(exc)) from None


class PathHandler(_Handler):
    """Where an agent's MEMORY.md (or one of its archives) is: its absolute path and, when
    JupyterLab can open it, its path from the Jupyter server's root folder; else why not."""

    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        archive = self.get_query_argument("archive", None) or None
        if await self.not_modified(name, archive):
            return
        manager = self.contents_manager
        root = Path(os.path.realpath(manager.root_dir))

        def locate() -> dict[str, Any]:
            path = self.model.file_path(name, archive)
            relative, why = None, None
            real = Path(os.path.realpath(path))
            kept = self.model.store
            if kept != "files":
                why = (
                    f"{path.name} is kept in the database {kept}, not in a file JupyterLab can "
                    "open: export it (Export in this menu, or nbmemory export --layout FOLDER)"
                )
            else:
                try:
                    inside = real.relative_to(root)
                except ValueError:
                    why = (
                        f"{path} is outside the Jupyter server's root folder {root}, so "
                        "JupyterLab cannot open it; open it by its path instead"
                    )
                else:
                    hidden = [part for part in inside.parts if part.startswith(".")]
                    if hidden and not getattr(manager, "allow_hidden", False):
                        why = (
                            f"{path} is in the hidden folder {hidden[0]!r}, and JupyterLab opens "
                            "hidden files only with ContentsManager.allow_hidden = True"
                        )
                    else:
                        relative = inside.as_posix()
            return {
                "name": name,
                "archive": archive,
                "absolute": str(path),
                "relative": relative,
                "root": str(root),
                "exists": path.is_file() if kept == "files" else True,  # it was found
                "reason": why,
            }

        self.reply(await self.in_thread(locate))


EXPORT_TYPES = {
    "json": "application/json; charset=utf-8",
    "yaml": "application/yaml; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
}


class ExportHandler(_Handler):
    """The memory (or an archive) as ``nbmemory export`` writes it, to download."""

    @tornado.web.authenticated
    @authorized("read")
    async def get(self, name: str) -> None:
        form = self.get_query_argument("format", "md")
        if form not in FORMATS:
            raise tornado.web.HTTPError(
                400, f"format must be one of {', '.join(FORMATS)}, not {form!r}"
            )
        archive = self.get_query_argument("archive", None) or None
        if await self.not_modified(name, form, archive):
            return
        text = await self.in_thread(
            lambda: export_text(name, self.model.records(name, archive), form)
        )
        stem = name if archive is None else f"{name}-{Path(archive).stem}"
        filename = f"{stem}.{form}"
        plain = "".join(
            c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in filename
        )
        self.set_header("Content-Type", EXPORT_TYPES[form])
        self.set_header(
            "Content-Disposition",
            f'attachment; filename="{plain}"; '
            f"filename*=UTF-8''{urllib.parse.quote(filename, safe='')}",
        )
        self.timing()
        self.finish(text.encode("utf-8"))


def main(argv: list[str] | None = None) -> None:
    """``nbmemory server [OPTIONS]``: a Jupyter server with this extension on (``--help-all``
    lists every setting)."""
    NbMemoryServer.launch_instance(argv=argv)


if __name__ == "__main__":
    main()
