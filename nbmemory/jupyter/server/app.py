"""A jupyter_server extension: agents' memory over REST, behind Jupyter's authentication.

Routes, under ``<base_url>/nbmemory``::

    GET     /api/agents                             workspace, poll interval, every agent's figures
    GET     /api/agents/NAME?offset=&limit=&newest_first=&fold=&role=   a page of MEMORY.md
    GET     /api/agents/NAME/messages/INDEX?archive=FILE   one whole message ("show full text")
    GET     /api/agents/NAME/tokens?indexes=3,4&archive=FILE   what those messages add to a request
    GET     /api/agents/NAME/archives               the agent's archives
    GET     /api/agents/NAME/archives/FILE?offset=&limit=&newest_first=&fold=&role=
    GET     /api/agents/NAME/compactions            the agent's compactions, oldest first: what
                                                    each archived, its summary, what it dropped
    GET     /api/agents/NAME/search?q=&archives=1&offset=&limit=&fold=&role=
                                                    total and a page of hits
    GET     /api/agents/NAME/find?term=&archive=FILE&limit=&newest_first=&role=
                                                    the first message with the term and the
                                                    page that shows it
    GET     /api/agents/NAME/path?archive=FILE      where MEMORY.md (or the archive) is, absolute
                                                    and from the Jupyter server's root
    GET     /api/agents/NAME/export?format=json|yaml|md&archive=FILE   the memory as a file
    POST    /api/agents/NAME/compact                {"preview": true, "keep": [...]}: the model's
                                                    summary, tokens before and after, what it
                                                    drops; with "summary": measured for a
                                                    person's edit (with "plan": ID, no model
                                                    call); {"summary": "...", "plan": ID}: write it
    GET     /api/agents/NAME/notes                  pinned notes and the tokens they add
    POST    /api/agents/NAME/notes                  {"pin": "text"}, {"unpin": "number or words"},
                                                    {"accept"|"reject"|"restore": N} or
                                                    {"approval": "auto"|"ask"|"off"|"default"}
    GET     /mcp                                    ``nbmemory mcp``'s tools and resources over
    POST    /mcp                                    streamable HTTP, with ``nbmemory[mcp]``
    DELETE  /mcp                                    installed (:mod:`.mcp_endpoint`)

All behind the same authentication and authorizer (see :mod:`.base_handler`, which also says
how a poll costs a few ``stat`` calls and what each error means).

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

import gc
import os
import threading
import time
from pathlib import Path
from typing import Any

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Float, TraitError, Unicode, validate

from nbmemory.errors import NbmemoryError, StoreConfigError
from nbmemory.jupyter.server.base_handler import AUTH_RESOURCE
from nbmemory.jupyter.server.compact_handler import CompactHandler, PreviewPlans
from nbmemory.jupyter.server.file_handlers import ExportHandler, PathHandler
from nbmemory.jupyter.server.notes_handler import NotesHandler
from nbmemory.jupyter.server.read_handlers import (
    AgentHandler,
    AgentsHandler,
    ArchiveHandler,
    ArchivesHandler,
    CompactionsHandler,
    FindHandler,
    MessageHandler,
    SearchHandler,
    TokensHandler,
)
from nbmemory.jupyter.server.saved_widgets import pre_save_hook
from nbmemory.jupyter.server.workers import HeavyReads
from nbmemory.jupyter.store_setting import checked_store
from nbmemory.memory.provenance import SERVER_ROOT_ENV
from nbmemory.store import folders
from nbmemory.store import workspace as memory_store
from nbmemory.views.answers import AgentInfo
from nbmemory.views.read_model import ReadModel

MIN_POLL_INTERVAL = 0.5


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
        return checked_store(proposal["value"], "NbMemoryServer.store")

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
        assert self.serverapp is not None
        self.serverapp.contents_manager.register_pre_save_hook(
            pre_save_hook(self.settings["nbmemory_model"])
        )
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
            from nbmemory.jupyter.server.mcp_endpoint import ROUTE, McpEndpoint, McpHandler
        except ImportError as exc:
            self.log.info("nbmemory: no MCP endpoint without pip install 'nbmemory[mcp]' (%s)", exc)
            return
        endpoint = McpEndpoint(self.settings["nbmemory_model"].workspace)
        self.settings["nbmemory_mcp"] = endpoint
        options = {"endpoint": endpoint, "resource": AUTH_RESOURCE}
        self.handlers.append((ROUTE, McpHandler, options))


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


def main(argv: list[str] | None = None) -> None:
    """``nbmemory server [OPTIONS]``: a Jupyter server with this extension on (``--help-all``
    lists every setting)."""
    NbMemoryServer.launch_instance(argv=argv)
