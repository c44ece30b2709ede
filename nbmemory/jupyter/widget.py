"""``MemoryWidget``: a live view of one agent's memory (anywidget; traits are the whole contract).

Everything it shows comes from the read model (:mod:`nbmemory.views.read_model`), serialized as the
server serializes it for the panel: the figures (``AgentInfo.to_json()`` in the ``info`` trait:
tokens against the window and the compression threshold, what the next request carries part by
part, counts, bytes, and their words), pages of messages in either order (with each message's
tokens on demand), archives and their pages, the compactions (what each archived, its summary,
what that summary dropped), search with a hit count, and whole messages when a folded one is
opened. It follows the agent it names from whatever process writes it: a daemon thread asks
the read model for the agent's version token every ``POLL_SECONDS`` (a few ``stat`` calls when
nothing changed); given an ``Agent`` or ``Conversation`` it also listens to their change hooks,
for immediacy and for the answer being streamed. Only a ``Conversation`` kept in RAM is read
from the object itself. It may be shown before the agent exists and fills in once it is written.

It also shows the agent's pinned notes (``NOTES.md``, see :mod:`nbmemory.memory.notes`) and lets a
person pin and unpin them: the browser sends ``{"command": "pin", "note": ...}`` or ``{"command":
"unpin", "number": n, "note": <the text it showed>}``, handled here through
:class:`nbmemory.memory.notes.Notes` (which locks the agent's folder and writes atomically);
refusals (over the budget, an empty note, notes changed meanwhile) go to ``status`` and change
nothing.

Its Compact button asks first: ``{"command": "preview", "keep": [...]}`` puts the model's summary,
the tokens before and after and the terms it would drop in ``compaction_preview``, changing
nothing; ``{"command": "compact", "summary": ...}`` writes the summary shown (or as the person
edited it), ``{"command": "cancel"}`` drops the preview.

Message and note text is untrusted: the browser renders it with marked (vendored in
``static/``) with raw HTML escaped, no images loaded and only http(s)/mailto links live, or
verbatim with "Exact text"; the Markdown fallback escapes it.
"""

from __future__ import annotations

import functools
import html
import os
import re
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets
import traitlets

from nbmemory.agent.agent import Agent
from nbmemory.agent.compressor import CompactionPlan
from nbmemory.errors import (
    AgentNotFoundError,
    ArchiveNotFoundError,
    CompactionError,
    NbmemoryError,
    NoteChangedError,
)
from nbmemory.memory import note_history
from nbmemory.memory.conversation import ChangeEvent, Conversation
from nbmemory.memory.note_history import Author
from nbmemory.memory.notes import DEFAULT_BUDGET, Notes
from nbmemory.store import Workspace, folders
from nbmemory.views.read_model import (
    FOLD_CHARS,
    ArchiveInfo,
    CompactionInfo,
    Item,
    ReadModel,
    agent_in_ram,
    has_role,
    page_of,
    to_items,
)
from nbmemory.views.report import markdown_escape, visible
from nbmemory.wording import (
    counted,
    message_number,
    preview_words,
    search_words,
    widget_vocabulary,
)

_STATIC = Path(__file__).parent / "static"
PAGE_SIZE = 20
POLL_SECONDS = 0.5
CHANGES_SHOWN = 20
"""Note changes a widget lists: those waiting for review, then the latest."""
MEMORY_SOURCE = folders.MEMORY_FILE
RAM_SOURCE = "memory (RAM)"
MARKED_VERSION = "18.2.1"
"""The vendored renderer: npm ``marked`` 18.2.1, ``lib/marked.esm.js`` (MIT, see marked.LICENSE)."""

_EXPORTS = re.compile(r"export\s*\{([^}]*)\}\s*;?\s*(?://# sourceMappingURL=\S*\s*)?$")
_IMPORT = re.compile(r'^import \{([^}]*)\} from "(\.\.?/[^"]+)";[ \t]*\n', re.MULTILINE)
_MODULE_SYNTAX = re.compile(r"^[ \t]*(?:import|export)\b", re.MULTILINE)


_VENDORED = _STATIC / "marked.esm.js"


def _pairs(names: str) -> list[tuple[str, str]]:
    """``a, b as c`` of an import or export list as ``(name, alias)`` pairs."""
    pairs = []
    for part in names.split(","):
        name, _, alias = part.strip().partition(" as ")
        if name:
            pairs.append((name.strip(), alias.strip() or name.strip()))
    return pairs


def _property(key: str, value: str) -> str:
    """``key: value`` of an object literal or pattern, as ``key`` alone when they are the same."""
    return key if key == value else f"{key}: {value}"


def _compact(text: str) -> str:
    """One of the widget's own modules as sent: without its whole-line ``//`` comments, blank
    lines and indentation (the source keeps them for people; the browser needs none of them).

    Safe because no multi-line template literal of ``static/widget*`` holds such a line:
    tests/test_widget_module.py checks, with TypeScript's parser, that every literal of the
    module sent is the source's.
    """
    lines = (line.strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line and not line.startswith("//")) + "\n"


def _variable(path: Path) -> str:
    """The name an inlined module's exports are kept under: ``__widget_dom_js``, ..."""
    return "__" + re.sub(r"\W", "_", path.relative_to(_STATIC).as_posix())


def _linked(path: Path) -> tuple[str, list[Path]]:
    """A module's text with each import a read of an inlined module, and the modules it reads."""
    text = path.read_text(encoding="utf-8")
    needs: list[Path] = []

    def read(match: re.Match[str]) -> str:
        need = Path(os.path.normpath(path.parent / match.group(2)))
        if not need.is_relative_to(_STATIC) or not need.is_file():
            raise RuntimeError(f"{path.name} imports {match.group(2)}, not a file of static/")
        needs.append(need)
        names = ", ".join(_property(name, alias) for name, alias in _pairs(match.group(1)))
        return f"const {{ {names} }} = {_variable(need)};\n"

    return _IMPORT.sub(read, text), needs


def _inlined(path: Path, text: str) -> str:
    """An imported module as a function run once; its named exports become its result."""
    found = _EXPORTS.search(text)
    body = text[: found.start()] if found else text
    if found is None or _MODULE_SYNTAX.search(body):
        raise RuntimeError(
            f"static/{path.relative_to(_STATIC).as_posix()}: a module the widget imports may "
            'only have `import { ... } from "./file.js";` lines and one export list at its end'
        )
    exports = ", ".join(_property(alias, name) for name, alias in _pairs(found.group(1)))
    return f"const {_variable(path)} = (() => {{\n{body}\nreturn {{ {exports} }};\n}})();"


@functools.cache
def _module(compact: bool = True) -> str:
    """widget.js with the modules it imports inlined (anywidget sends one module, not a folder),
    ``compact`` (see :func:`_compact`) but the vendored marked, which comes minified.

    The widget's views are plain ES modules under ``static/widget/`` (a browser can load them as
    they are); each module it imports, and theirs, and the vendored marked, runs inside a
    function whose result is its export list, and each import becomes a read of that result,
    dependencies first. String work on a few small files when this module is imported: no
    bundler, no build step, nothing for ``pip install`` to run.
    """
    done: dict[Path, str] = {}  # dependencies before what imports them

    def visit(path: Path, importing: tuple[Path, ...]) -> None:
        if path in importing:
            raise RuntimeError(f"static/ modules import each other: {path.name}")
        if path not in done:
            text, needs = _linked(path)
            for need in needs:
                visit(need, (*importing, path))
            done[path] = _compact(text) if compact and path != _VENDORED else text

    entry = _STATIC / "widget.js"
    visit(entry, ())
    widget = done.pop(entry)
    if re.search(r"^[ \t]*import\b", widget, re.MULTILINE):
        raise RuntimeError('static/widget.js may import only as `import { ... } from "./file.js";`')
    return "\n".join([*(_inlined(path, text) for path, text in done.items()), widget])


def _weak(method: Callable[..., None]) -> Callable[..., None]:
    """A callback that calls ``method`` while its widget lives, without keeping it alive."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any) -> None:
        target = ref()
        if target is not None:
            target(*args)

    return call


def _follow(ref: weakref.ref[MemoryWidget], stop: threading.Event, interval: float) -> None:
    """The polling thread: refresh the widget when its agent's version token changes."""
    while not stop.is_set():
        widget = ref()
        if widget is None:
            return
        try:
            widget._poll()
        except Exception as exc:  # the view keeps following; the user sees why it lags
            widget.status = f"Could not read the memory: {exc}"
        del widget
        stop.wait(interval)


def _md_text(text: str, limit: int | None = None) -> str:
    """Untrusted text as Markdown that renders as exactly that text: no tag, link or image."""
    text = " ".join(str(text).split())
    if limit is not None and len(text) > limit:
        text = text[:limit] + "…"
    return markdown_escape(text)


def _md_line(text: str, limit: int | None = None) -> str:
    """Untrusted text on one line, cut to ``limit`` characters."""
    text = " ".join(str(text).split())
    return text[:limit] + "…" if limit is not None and len(text) > limit else text


def _html_text(text: str, limit: int | None = None) -> str:
    """Untrusted text as HTML that shows exactly that text (on one line)."""
    return html.escape(_md_line(text, limit))


def _sentence(exc: BaseException) -> str:
    """An error's message as a sentence for the status line."""
    text = str(exc).strip().strip("'\"")
    return text if text.endswith((".", "!", "?")) else text + "."


class Vocabulary(ipywidgets.Widget):
    """The widget's words (``wording.widget_vocabulary()``) as a model of their own, which every
    ``MemoryWidget`` of a kernel refers to, as ipywidgets' widgets do to a shared layout: the
    words go to the browser (and into a notebook's saved widget state) once per kernel, not once
    per widget, and the views read them from there."""

    words = traitlets.Dict().tag(sync=True)


_vocabulary: Vocabulary | None = None


def shared_vocabulary() -> Vocabulary:
    """The kernel's :class:`Vocabulary` model, made again if it was closed (``close_all``)."""
    global _vocabulary  # one model per kernel is the point
    if _vocabulary is None or _vocabulary.comm is None:
        _vocabulary = Vocabulary(words=widget_vocabulary())
    return _vocabulary


class MemoryWidget(anywidget.AnyWidget):
    """A live view of one agent's memory, named or given as an ``Agent`` or ``Conversation``.

    ``MemoryWidget("Writer")`` follows agent ``Writer`` of ``workspace`` (default
    ``$WORKSPACE_DIR``, fixed when the widget is made), even before it exists; ``agent=`` adds
    that agent's hooks (streamed answers, immediate updates) and compresses with it.
    """

    _esm = _module()
    _css = (_STATIC / "widget.css").read_text(encoding="utf-8")
    """Text, not a path: anywidget keeps every widget with a file-backed ``_css`` alive."""

    # Figures (from ReadModel.agent)
    name = traitlets.Unicode("").tag(sync=True)
    workspace = traitlets.Unicode("").tag(sync=True)
    exists = traitlets.Bool(False).tag(sync=True)
    in_ram = traitlets.Bool(False).tag(sync=True)
    counting = traitlets.Bool(False).tag(sync=True)
    """True until the first token figure is in (a long memory is counted once, off the cell)."""
    info = traitlets.Dict().tag(sync=True)
    """The agent's figures as every view gets them, ``AgentInfo.to_json()``: ``tokens`` of
    ``context_length``, ``threshold``, ``parts``, ``words``, ``messages``, ``size``, ``counts``...
    (the server's and the panel's names). While ``counting``, only what the settings and the
    first page tell: ``name``, ``model``, ``context_length``, ``threshold``, ``recorded`` and
    ``messages``; empty while there is no agent."""
    vocabulary = traitlets.Instance(Vocabulary).tag(sync=True, **ipywidgets.widget_serialization)
    """What the browser needs to word and draw as the other views do: the kernel's
    :class:`Vocabulary` (``wording.widget_vocabulary()``), sent as a reference to it."""

    # The memory, a page at a time
    page = traitlets.Int(0).tag(sync=True)
    page_size = traitlets.Int(PAGE_SIZE).tag(sync=True)
    newest_first = traitlets.Bool(True).tag(sync=True)
    messages = traitlets.List(traitlets.Dict()).tag(sync=True)
    """The current page only: ``Item.to_json(sparse=True)`` dicts (text folded to
    ``FOLD_CHARS``; ``length`` and ``folded`` only for a folded message)."""
    listed_total = traitlets.Int(0).tag(sync=True)
    """How many messages the pages go through: ``info["messages"]``, or those of ``role``."""
    role = traitlets.Unicode("").tag(sync=True)
    """Show (and search) only the messages of this role (any case); empty for every role."""
    roles = traitlets.List(traitlets.Unicode()).tag(sync=True)
    """The roles found in the memory and its archives, for the role filter."""

    # Search
    query = traitlets.Unicode("").tag(sync=True)
    search_archives = traitlets.Bool(False).tag(sync=True)
    search_page = traitlets.Int(0).tag(sync=True)
    search_total = traitlets.Int(0).tag(sync=True)
    search_results = traitlets.List(traitlets.Dict()).tag(sync=True)
    search_caption = traitlets.Unicode("").tag(sync=True)
    """What the search found, as the panel says it (``wording.search_words``); empty: no search."""

    # Archives
    archives = traitlets.List(traitlets.Dict()).tag(sync=True)
    """Oldest first: ``ArchiveInfo.to_json()`` (``name``, ``messages``, ``size``, ``time``)."""
    open_archive = traitlets.Unicode("").tag(sync=True)
    archive_page = traitlets.Int(0).tag(sync=True)
    archive_total = traitlets.Int(0).tag(sync=True)
    archive_messages = traitlets.List(traitlets.Dict()).tag(sync=True)

    # Compactions: what each archived, the summary that replaced it, what that summary dropped
    compactions = traitlets.List(traitlets.Dict()).tag(sync=True)
    """Oldest first (``ReadModel.compactions``), without their summaries: ``{"archive", "time",
    "messages", "tokens_before", "tokens_after", "kept_messages", "dropped", "dropped_total",
    "recorded"}``."""
    compaction = traitlets.Dict().tag(sync=True)
    """The compaction that wrote ``open_archive``, its ``summary`` included; empty if none."""
    compaction_preview = traitlets.Dict().tag(sync=True)
    """A compaction shown for a person to confirm (:meth:`preview_compaction`): ``summary``,
    ``tokens_before``, ``tokens_after`` (``None``: not reckoned), ``missing`` (the terms it would
    drop) and ``keep`` (the terms asked for); empty if none."""

    # Pinned notes (NOTES.md): carried by every request, never compacted
    pinned_notes = traitlets.List(traitlets.Unicode()).tag(sync=True)
    """The agent's notes in order (``ReadModel.notes``); the browser numbers them from 1."""
    notes_tokens = traitlets.Int(0).tag(sync=True)
    note_changes = traitlets.List(traitlets.Dict()).tag(sync=True)
    """The model's note edits waiting for review, then the latest recorded changes to the
    notes, newest first: ``{"n", "said", "pending"}`` (``said`` worded by
    ``nbmemory.memory.note_history``, as every view words it)."""
    """Tokens the notes add to every request, counted for the agent's recorded model."""
    notes_budget = traitlets.Int(DEFAULT_BUDGET).tag(sync=True)

    exact = traitlets.Bool(False).tag(sync=True)
    """Show each message's stored text verbatim instead of rendered Markdown."""
    show_tokens = traitlets.Bool(False).tag(sync=True)
    """Give each listed message its tokens (``ReadModel.message_tokens``) as ``"tokens"``."""
    streaming = traitlets.Unicode("").tag(sync=True)
    """The answer an agent is writing right now."""
    expanded = traitlets.Bool(True).tag(sync=True)
    """The whole inspector, or (``False``) a one-line summary: the gauge and the counts."""
    model_ref = traitlets.Unicode("").tag(sync=True)
    """This widget's model id: the browser asks the widget manager whether a kernel still
    backs it, and shows a saved view (from the notebook's widget state) when none does."""
    status = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        source: str | Agent | Conversation,
        *,
        workspace: Workspace | str | Path | None = None,
        agent: Agent | None = None,
        poll_seconds: float = POLL_SECONDS,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._version: str | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._stream_hook: Callable[[str], None] | None = None
        self._thread: threading.Thread | None = None
        self._absent_status = ""
        self._notes_files: dict[str, Notes] = {}
        self._compactions_key: tuple[Any, ...] | None = None
        self._archive_roles: list[str] = []
        self._compaction_infos: dict[str, CompactionInfo] = {}
        self._plan: CompactionPlan | None = None

        conversation: Conversation | None = None
        if isinstance(source, Agent):
            agent = source
        elif isinstance(source, Conversation):
            conversation = source
        elif not isinstance(source, str):
            raise TypeError(
                f"MemoryWidget needs an agent name, Agent or Conversation, not {source!r}"
            )
        if agent is not None:
            conversation = agent.short_memory
            workspace = workspace if workspace is not None else agent.workspace
        self.agent = agent
        self.conversation = conversation

        path = conversation.memory_md_path if conversation is not None else None
        if isinstance(source, str):
            name = folders.validate_agent_name(source)
            if agent is not None and agent.agent_name != name:
                raise ValueError(f"agent {agent.agent_name!r} given for the view of {name!r}")
        elif path is not None:
            name = Path(path).parent.name
            if workspace is None:
                workspace = conversation.workspace or Path(path).parent.parent.parent
        else:
            name = agent.agent_name if agent is not None else conversation.name  # type: ignore[union-attr]
        self._ram = conversation if conversation is not None and path is None else None
        if not isinstance(workspace, Workspace):
            workspace = Workspace.from_env(workspace)
        self._reader = ReadModel(Workspace(workspace.root.absolute(), workspace.url))

        self.name = name
        self.in_ram = self._ram is not None
        self.workspace = str(self._reader.root)

        if conversation is not None:
            self._unsubscribe = conversation.on_change(_weak(self._changed))
        if agent is not None:
            self._stream_hook = _weak(self._streamed)
            agent.stream_observers.append(self._stream_hook)
        self.model_ref = self._comm_id()
        self.on_msg(self._command)
        if self.comm is not None:  # the front end closed the widget: stop following
            ref = weakref.ref(self)
            self.comm.on_close(lambda _msg: (w := ref()) is not None and w.close())
        weakref.finalize(self, self._stop.set)

        if self._ram is not None:
            self._refresh()
        else:
            self._first_page()
            self._thread = threading.Thread(
                target=_follow,
                args=(weakref.ref(self), self._stop, poll_seconds),
                name=f"nbmemory-widget-{name}",
                daemon=True,
            )
            self._thread.start()

    def __repr__(self) -> str:
        if not self.exists and not self.in_ram:
            return f"MemoryWidget({self.name!r}: no agent yet)"
        figures = self.info
        return (
            f"MemoryWidget({self.name!r}: {figures.get('messages', 0)} messages, "
            f"{figures.get('tokens', 0)}/{figures.get('context_length', 0)} tokens)"
        )

    def close(self) -> None:
        """Stop following the agent (thread and hooks) and close the view."""
        self._stop.set()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self.agent is not None and self._stream_hook in self.agent.stream_observers:
            self.agent.stream_observers.remove(self._stream_hook)
        super().close()

    def _comm_id(self) -> str:
        try:
            return str(self.model_id)
        except (AttributeError, TypeError):  # no comm: nothing to refer to
            return ""

    @traitlets.default("vocabulary")
    def _vocabulary_default(self) -> Vocabulary:
        return shared_vocabulary()

    @property
    def following(self) -> bool:
        """Whether the polling thread is running (never for a memory kept in RAM)."""
        return self._thread is not None and self._thread.is_alive()

    # ------------------------------------------------------------------------------------------
    # Following the agent

    def _first_page(self) -> None:
        """What the cell shows at once: the settings, the count and the first page.

        The token figure, bytes and archives come from the polling thread's first refresh, so
        a long memory read for the first time does not hold the cell up while it is counted.
        """
        with self._lock:
            try:
                settings, recorded = self._reader.settings(self.name)
            except AgentNotFoundError:
                self._absent()
                return
            with self.hold_sync():
                self.exists = True
                self.counting = True
                self._show_page()
                self.info = {
                    "name": self.name,
                    "model": settings.model,
                    "context_length": settings.context_length,
                    "threshold": settings.threshold,
                    "recorded": recorded,
                    "messages": self.listed_total,
                }

    def _poll(self) -> None:
        if self._reader.version(self.name) != self._version:
            self._refresh()

    def refresh(self) -> None:
        """Read everything again now (the thread and the hooks do this on their own)."""
        self._refresh()

    def _refresh(self) -> None:
        with self._lock:
            if self._ram is not None:
                self._refresh_ram()
                return
            version = self._reader.version(self.name)  # before reading: a later write shows next
            try:  # archives first: a compaction seen there is then seen in the memory too
                archives = self._reader.archives(self.name)
                info = self._reader.agent(self.name)
                compactions = self._read_compactions(archives)
            except AgentNotFoundError:
                self._version = version
                self._absent()
                return
            with self.hold_sync():
                if self.status == self._absent_status:
                    self.status = ""
                self.exists = True
                self.archives = [archive.to_json() for archive in archives]
                self._show_notes(info.usage.model)
                if compactions is not None:
                    self._show_compactions(*compactions)
                self._show_roles([role for role, _ in self._reader.roles(self.name)])
                self._show_page()
                self.info = info.to_json()  # after the page: whoever waits for it finds both
                self._show_archive()
                self._show_search()
                self.counting = False  # last: whoever waits for the figures finds them all
            self._version = version

    def _refresh_ram(self) -> None:
        convo = self._ram
        assert convo is not None
        with self.hold_sync():
            self.exists = True
            self.pinned_notes, self.note_changes = [], []
            self.notes_tokens = 0
            self._show_roles([str(m.get("role", "")) for m in convo.conversation_history])
            self._show_page()
            self.info = agent_in_ram(self.name, convo, self.agent).to_json()
            self._show_search()

    def _absent(self) -> None:
        self._absent_status = (
            f"No agent named {self.name!r} in {self._reader.root} yet; "
            "this view fills in when it is first written."
        )
        with self.hold_sync():
            self.exists = False
            self.counting = False
            self.info = {}
            self.listed_total = 0
            self.roles = []
            self.messages = self.archives = self.search_results = self.archive_messages = []
            self.search_caption = ""
            self.pinned_notes, self.note_changes = [], []
            self.notes_tokens = 0
            self.compactions, self.compaction = [], {}
            self._compactions_key, self._compaction_infos = None, {}
            self.page = self.search_total = self.archive_total = 0
            self.status = self._absent_status

    def _changed(self, event: ChangeEvent) -> None:
        if event.kind == "add":
            self.streaming = ""
        self._refresh()

    def _streamed(self, piece: str) -> None:
        self.streaming += piece

    # ------------------------------------------------------------------------------------------
    # Pages

    @staticmethod
    def _clamp(page: int, total: int, size: int) -> int:
        return min(max(0, page), max(0, (total - 1) // size))

    def _show_roles(self, found: list[str]) -> None:
        roles = list(dict.fromkeys([*found, *self._archive_roles]))
        if roles != self.roles:
            self.roles = roles

    @traitlets.observe("role")
    def _role_chosen(self, change: dict[str, Any]) -> None:
        with self._lock, self.hold_trait_notifications():
            self.page = self.archive_page = self.search_page = 0
        with self._lock:
            self._show_page()
            self._show_archive()
            self._show_search()

    @traitlets.observe("page", "page_size", "newest_first")
    def _paging(self, change: dict[str, Any]) -> None:
        with self._lock:
            self._show_page()
            if change["name"] != "page":
                self._show_archive()
                self._show_search()

    def _show_page(self) -> None:
        if not self.exists:
            return
        size = max(1, self.page_size)
        if self._ram is not None:
            history = self._ram.to_dict()
            page = page_of(
                history,
                RAM_SOURCE,
                self.page * size,
                size,
                self.newest_first,
                FOLD_CHARS,
                role=self.role or None,
            )
            total, items = page.total, page.items
        else:
            try:
                page = self._reader.messages(
                    self.name,
                    self.page * size,
                    size,
                    newest_first=self.newest_first,
                    role=self.role or None,
                )
            except AgentNotFoundError:
                return
            total, items = page.total, page.items
        if self.page != self._clamp(self.page, total, size):
            self.page = self._clamp(self.page, total, size)  # observed: shows that page
            return
        self.messages = self._json(items)
        self.listed_total = total

    def _json(self, items: list[Item]) -> list[dict[str, Any]]:
        """Items as the browser gets them; with ``show_tokens``, each with its tokens."""
        found = [item.to_json(sparse=True) for item in items]
        if not self.show_tokens or self._ram is not None:
            return found
        by_source: dict[str, list[dict[str, Any]]] = {}
        for item in found:
            by_source.setdefault(item["source"], []).append(item)
        for source, group in by_source.items():
            archive = None if source == MEMORY_SOURCE else source
            try:
                counts = self._reader.message_tokens(
                    self.name, [item["index"] for item in group], archive=archive
                ).tokens
            except (AgentNotFoundError, ArchiveNotFoundError, IndexError):
                continue  # the file changed since the page was read: the next refresh counts
            for item in group:
                item["tokens"] = counts[item["index"]]
        return found

    @traitlets.observe("show_tokens")
    def _tokens_shown(self, change: dict[str, Any]) -> None:
        with self._lock:
            self._show_page()
            self._show_archive()
            self._show_search()

    @traitlets.observe("open_archive", "archive_page")
    def _archive_paging(self, change: dict[str, Any]) -> None:
        with self._lock:
            if change["name"] == "open_archive":
                self._show_compaction()
                if self.archive_page:
                    self.archive_page = 0  # observed: shows the first page
                    return
            self._show_archive()

    def _show_archive(self) -> None:
        if not self.open_archive or self._ram is not None:
            self.archive_messages, self.archive_total = [], 0
            return
        size = max(1, self.page_size)
        try:
            page = self._reader.archive_messages(
                self.name,
                self.open_archive,
                self.archive_page * size,
                size,
                newest_first=self.newest_first,
                role=self.role or None,
            )
        except (AgentNotFoundError, ArchiveNotFoundError) as exc:
            self.archive_messages, self.archive_total = [], 0
            self.status = str(exc)
            return
        if self.archive_page != self._clamp(self.archive_page, page.total, size):
            self.archive_page = self._clamp(self.archive_page, page.total, size)
            return
        self.archive_total = page.total
        self.archive_messages = self._json(page.items)

    # ------------------------------------------------------------------------------------------
    # Compactions

    def _read_compactions(
        self, archives: list[ArchiveInfo]
    ) -> tuple[tuple[Any, ...], list[CompactionInfo]] | None:
        """The compactions, read again only when an archive or the notes changed (what a
        summary dropped is reckoned against the notes when no record was kept)."""
        key = (tuple((a.name, a.size) for a in archives), tuple(self._reader.notes(self.name)))
        if key == self._compactions_key:
            return None
        return key, self._reader.compactions(self.name)

    def _show_compactions(self, key: tuple[Any, ...], found: list[CompactionInfo]) -> None:
        self._archive_roles = list(
            dict.fromkeys(
                role for info in found for role, _ in self._reader.roles(self.name, info.archive)
            )
        )
        self._compaction_infos = {info.archive: info for info in found}
        self.compactions = [
            {k: v for k, v in info.to_json().items() if k != "summary"} for info in found
        ]
        self._compactions_key = key
        self._show_compaction()

    def _show_compaction(self) -> None:
        info = self._compaction_infos.get(self.open_archive)
        self.compaction = info.to_json() if info is not None else {}

    def find_in_archive(self, term: str) -> int | None:
        """Turn the open archive to the page where ``term`` first appears (any case,
        ``ReadModel.find``), and return that message's index; ``None`` (said in ``status``) if
        it is not there."""
        with self._lock:
            if not self.open_archive or not term.strip() or self._ram is not None:
                return None
            size = max(1, self.page_size)
            try:
                found = self._reader.find(
                    self.name,
                    term,
                    self.open_archive,
                    limit=size,
                    newest_first=self.newest_first,
                    role=self.role or None,
                )
            except (AgentNotFoundError, ArchiveNotFoundError) as exc:
                self.status = str(exc)
                return None
            if found.index is None:
                self.status = f"{term!r} is not in {self.open_archive}."
                return None
            self.archive_page = found.offset // size
            self.status = (
                f"{term!r} first appears in message {message_number(found.index)} of "
                f"{self.open_archive}."
            )
            return found.index

    # ------------------------------------------------------------------------------------------
    # Search

    @traitlets.observe("query", "search_archives", "search_page")
    def _searching(self, change: dict[str, Any]) -> None:
        with self._lock:
            if change["name"] != "search_page" and self.search_page:
                self.search_page = 0  # observed: searches from the first hit
                return
            self._show_search()

    def _show_search(self) -> None:
        query = self.query.strip()
        if not query or not self.exists:
            self.search_results, self.search_total, self.search_caption = [], 0, ""
            return
        size = max(1, self.page_size)
        offset = self.search_page * size
        if self._ram is not None:
            found = [
                h for h in self._ram.search_memory(query) if has_role(h.message, self.role or None)
            ]
            total = len(found)
            chosen = ((hit.index, hit.message) for hit in found[offset : offset + size])
            items = to_items(chosen, RAM_SOURCE, FOLD_CHARS)
        else:
            try:
                found = self._reader.search(
                    self.name,
                    query,
                    archives=self.search_archives,
                    offset=offset,
                    limit=size,
                    role=self.role or None,
                )
            except AgentNotFoundError:
                return
            total, items = found.total, found.items
        if self.search_page != self._clamp(self.search_page, total, size):
            self.search_page = self._clamp(self.search_page, total, size)
            return
        with self.hold_sync():
            self.search_total = total
            self.search_results = self._json(items)
            self.search_caption = search_words(
                query, total, offset, len(items), self.search_archives, self.role or None
            )

    # ------------------------------------------------------------------------------------------
    # Pinned notes

    def _notes_file(self, model: str) -> Notes:
        """The agent's notes, counted with ``model``'s encoding (one instance per model)."""
        notes = self._notes_files.get(model)
        if notes is None:
            docs = self._reader.workspace.agent(self.name)
            notes = self._notes_files[model] = Notes(docs, model=model)
        return notes

    def _show_notes(self, model: str) -> None:
        notes = self._reader.notes(self.name)
        if notes != self.pinned_notes:
            self.pinned_notes = notes
        history = self._reader.note_history(self.name)
        waiting = note_history.pending(history)
        changes = [
            *({"n": c.n, "said": c.describe(), "pending": True} for c in waiting),
            *({"n": c.n, "said": c.describe(), "pending": False} for c in history[::-1]),
        ][:CHANGES_SHOWN]
        if changes != self.note_changes:
            self.note_changes = changes
        notes_file = self._notes_file(model)
        self.notes_tokens = notes_file.tokens()
        self.notes_budget = notes_file.budget

    def _writable_notes(self) -> Notes | None:
        """The notes a person may change now, or ``None`` with the reason in ``status``."""
        if self._ram is not None:
            self.status = (
                "Pinned notes need persistent memory: this Conversation is kept in RAM only."
            )
            return None
        try:
            settings, _ = self._reader.settings(self.name)
        except AgentNotFoundError:
            self.status = f"No agent named {self.name!r} yet: there are no notes to change."
            return None
        return self._notes_file(settings.model)

    def pin(self, note: str) -> bool:
        """Pin ``note`` (what the Pin button does); says the outcome in ``status``."""
        with self._lock:
            notes = self._writable_notes()
            if notes is None:
                return False
            try:
                pinned = notes.add(note, by=Author("person", "widget"))
            except (NbmemoryError, OSError) as exc:
                self.status = f"Not pinned: {_sentence(exc)}"
                return False
            self._refresh()
            self.status = f"Pinned as note {len(pinned)}."
            return True

    def unpin(self, match: str | int, shown: str | None = None) -> bool:
        """Unpin the note ``match`` names (its number from 1, or words found in it alone).

        ``shown`` is the text the person saw at that number: if the notes changed since, and
        that number now holds another note, nothing is unpinned. Says the outcome in ``status``.
        """
        with self._lock:
            notes = self._writable_notes()
            if notes is None:
                return False
            try:
                notes.remove(str(match), expected=shown, by=Author("person", "widget"))
            except NoteChangedError:
                self._refresh()
                self.status = (
                    "Not unpinned: the notes changed since they were shown; look again and retry."
                )
                return False
            except (NbmemoryError, OSError, ValueError) as exc:
                self.status = f"Not unpinned: {_sentence(exc)}"
                return False
            self._refresh()
            self.status = f"Unpinned note {match}."
            return True

    def review(self, action: str, n: int) -> bool:
        """Accept or reject the model's proposal ``n``, or restore the notes as they were after
        change ``n`` (the Accept, Reject and Restore buttons); says the outcome in ``status``."""
        done = {"accept": "Accepted proposal", "reject": "Rejected proposal"}
        with self._lock:
            notes = self._writable_notes()
            if notes is None or action not in (*done, "restore"):
                return False
            try:
                getattr(notes, action)(n, by=Author("person", "widget"))
            except (NbmemoryError, OSError, ValueError) as exc:
                self._refresh()
                self.status = f"Not done: {_sentence(exc)}"
                return False
            self._refresh()
            self.status = (
                f"{done[action]} #{n}."
                if action in done
                else f"Restored the notes as they were after change #{n}."
            )
            return True

    # ------------------------------------------------------------------------------------------
    # What the browser asks for

    def full_text(self, index: int, source: str = MEMORY_SOURCE) -> Item:
        """The whole message ``index`` of ``source`` (MEMORY.md, an archive, or the RAM memory)."""
        if self._ram is not None:
            history = self._ram.to_dict()
            if not 0 <= index < len(history):
                raise IndexError(f"{self.name} has no message {index}")
            return to_items([(index, history[index])], RAM_SOURCE)[0]
        archive = None if source == MEMORY_SOURCE else source
        return self._reader.message(self.name, index, archive=archive)

    def _command(self, widget: Any, content: dict[str, Any], buffers: list[Any]) -> None:
        command = content.get("command")
        if command == "preview":
            keep = content.get("keep")
            terms = keep if isinstance(keep, list) else []
            self.preview_compaction([t for t in terms if isinstance(t, str) and t.strip()])
        elif command == "compact":  # only what a person confirmed: a preview is shown first
            summary = content.get("summary")
            if self._plan is None:
                self.status = "Not compacted: press Compact to see a preview first."
            else:
                self.compact(summary if isinstance(summary, str) else None)
        elif command == "cancel":
            self._plan, self.compaction_preview = None, {}
            self.status = "Not compacted: cancelled."
        elif command == "pin":
            ok = self.pin(str(content.get("note") or ""))
            self.send({"command": "pin", "ok": ok})
        elif command == "unpin":
            shown = content.get("note")
            ok = self.unpin(
                str(content.get("number", "")), str(shown) if shown is not None else None
            )
            self.send({"command": "unpin", "ok": ok})
        elif command == "review":
            try:
                n = int(content.get("n"))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                n = 0
            ok = self.review(str(content.get("action")), n)
            self.send({"command": "review", "ok": ok})
        elif command == "find":
            term = str(content.get("term") or "")
            self.send({"command": "find", "term": term, "index": self.find_in_archive(term)})
        elif command == "full":
            index, source = content.get("index"), str(content.get("source") or MEMORY_SOURCE)
            reply: dict[str, Any] = {"command": "full", "index": index, "source": source}
            try:
                item = self.full_text(int(index), source)  # type: ignore[arg-type]
            except (IndexError, TypeError, ValueError, NbmemoryError) as exc:
                reply["error"] = f"Could not read the whole message: {exc}"
            else:
                reply.update(text=item.text, length=item.length)
            self.send(reply)

    def _compactor(self) -> Agent:
        """The given agent, or one built on the memory with the model it recorded."""
        if self.agent is not None:
            return self.agent
        return Agent.from_memory(self.name, self._reader.workspace)

    def _cannot_compact(self) -> str:
        """Why this widget cannot compact its memory; empty if it can."""
        if self._ram is not None and self.agent is None:
            return "Not compacted: a Conversation alone has no summarizer; give an Agent."
        if not self._exists_now():
            return f"Nothing to compact: there is no agent named {self.name!r} yet."
        return ""

    def preview_compaction(self, keep: Sequence[str] = ()) -> CompactionPlan | None:
        """What the Compact button shows before anything changes: the model's summary (``keep``:
        terms it must keep word for word), the tokens before and after and the terms it would
        drop, in ``compaction_preview``; :meth:`compact` then writes it."""
        self._plan, self.compaction_preview = None, {}
        self.status = self._cannot_compact()
        if self.status:
            return None
        self.status = "Asking the model for a summary…"
        try:
            plan = self._compactor().compact_preview(keep)
        except (NbmemoryError, OSError) as exc:  # shown in the widget, not lost in a log
            self.status = f"No preview: {_sentence(exc)}"
            return None
        self._plan = plan
        self.compaction_preview = {
            "summary": plan.summary,
            "tokens_before": plan.tokens_before,
            "tokens_after": plan.tokens_after,
            "missing": plan.missing,
            "keep": list(keep),
            "words": preview_words(plan.tokens_before, plan.tokens_after, len(plan.missing)),
        }
        self.status = "Preview: nothing has changed yet."
        return plan

    def compact(self, summary: str | None = None) -> None:
        """Compact with the preview shown (its summary, or ``summary``: the person's edit of it);
        with none shown, with ``summary`` or else the model's summary at once. Says the outcome
        in ``status``."""
        self.status = self._cannot_compact()
        if self.status:
            return
        if summary is not None and not summary.strip():
            self.status = "Not compacted: the summary is empty."
            return
        plan, self._plan, self.compaction_preview = self._plan, None, {}
        self.status = "Compacting…"
        try:
            agent = self._compactor()
            if plan is None and summary is None:
                agent.check_ready()
            agent.compact(summary, plan=plan)
        except CompactionError as exc:
            self._refresh()
            said = _sentence(exc)
            self.status = said[:1].upper() + said[1:]
            return
        except (NbmemoryError, OSError) as exc:  # shown in the widget, not lost in a log
            self.status = f"Compaction failed: {exc}"
            return
        self._refresh()
        where = (
            f"; the transcript is in archive/{self.archives[-1]['name']}" if self.archives else ""
        )
        figures = self.compactions[-1]["figures"] if self.compactions else ""
        self.status = f"Compacted: {figures}{where}."

    def _exists_now(self) -> bool:
        if self._ram is not None:
            return True
        return self._reader.exists(self.name)

    # ------------------------------------------------------------------------------------------
    # Outside a widget front end

    def _summary(self) -> tuple[str, str, list[str], list[tuple[str, str, str]]]:
        """The summary's plain-text pieces (untrusted: each view escapes them): the title, the
        figures, further lines, and (role, time, text) of the newest messages."""
        if self.counting:  # a summary is read once, as it is: wait for the figures
            self.refresh()
        info = self.info
        model = info.get("model", "")
        title = f"{self.name} memory" + (f" · {model}" if model else "")
        if not self.exists:
            return title, "no agent with this name in the workspace yet", [], []
        words = info.get("words", {})
        if self.counting:
            usage = "tokens being counted"
        else:
            usage = f"{words['usage']}, {words['threshold']}"
        usage += f", {info.get('counts', '')}"
        lines = []
        parts = [f"{p['name']} {p['tokens']:,}" for p in info.get("parts", [])]
        if parts:
            lines.append("Next request: " + " · ".join(parts))
        if not self.counting:
            said = [words.get(key) for key in ("compacts_next", "stuck", "over_window")]
            lines += filter(None, said)
        if self.compactions:
            last = self.compactions[-1]
            lines.append(
                f"{counted(len(self.compactions), 'compaction')}; the last at {last['time']}: "
                f"{last['figures']}, {counted(last['dropped_total'], 'term')} dropped"
            )
        if self.pinned_notes:
            lines.append(
                f"{counted(len(self.pinned_notes), 'pinned note')} ({self.notes_tokens:,} tokens)"
            )
        shown = [(m["role"], m["timestamp"], m["text"]) for m in self.messages[:5]]
        return title, usage, lines, shown

    def _repr_markdown_(self) -> str:
        _, usage, _, shown = self._summary()
        if not self.exists:
            return f"**{_md_text(self.name)}**: no agent with this name in the workspace yet."
        out = [f"**{_md_text(self.name)}** memory: {_md_text(usage)}"]
        for role, time, text in shown:
            out.append(f"- *{_md_text(role)}* · {_md_text(time)}: {_md_text(text, 120)}")
        return "\n".join(out)

    def _static_html(self) -> str:
        """The summary as HTML, every piece of text escaped: what a notebook shows when no
        kernel backs this widget (see :meth:`_ipython_display_`)."""
        title, usage, lines, shown = self._summary()
        items = "".join(
            f"<li><em>{_html_text(role)}</em> · {_html_text(time)}: {_html_text(text, 120)}</li>"
            for role, time, text in shown
        )
        body = "".join(f"<div>{_html_text(line)}</div>" for line in lines)
        return (
            f"<style>{_STATIC_CSS}</style>"
            f'<div class="nbmemory-static" data-nbmemory-static="{html.escape(self.model_ref)}">'
            f"<div><strong>{_html_text(title)}</strong>: {_html_text(usage)}</div>{body}"
            + (f"<ul>{items}</ul>" if items else "")
            + f"<div><small>{_STATIC_NOTE}</small></div></div>"
        )

    def _static_bundle(self) -> dict[str, str]:
        """The static summary as a display bundle (HTML, and plain text for terminals)."""
        title, usage, lines, shown = self._summary()
        plain = [f"{title}: {usage}", *lines]
        plain += [f"- {role} · {time}: {_md_line(text, 120)}" for role, time, text in shown]
        return {"text/html": self._static_html(), "text/plain": visible("\n".join(plain))}

    def _view_bundle(self) -> dict[str, Any]:
        """The widget's own output: its view, and a one-line text for what cannot show it."""
        bundle = super()._repr_mimebundle_()
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        return {**(data or {}), "text/plain": repr(self)}

    def _ipython_display_(self, **kwargs: Any) -> None:
        """Show the widget as two outputs: a static summary, then the live view.

        A notebook saved with its outputs and opened again without the kernel that made the
        widget (or with no kernel at all) has no widget model to render: JupyterLab and
        Notebook 7 would show "Error displaying widget: model not found" or "Loading
        widget...", whatever else the bundle holds, because the widget renderer outranks
        every other. So the summary is an output of its own, with a style rule that hides it
        while the view beside it renders (and hides that output while it cannot), and the
        view hides the summary from its script too, for front ends without that rule.
        """
        from IPython.display import display

        display(self._static_bundle(), raw=True)
        display(self._view_bundle(), raw=True)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = {**(data or {}), "text/markdown": self._repr_markdown_(), "text/plain": repr(self)}
        return data, metadata


_STATIC_NOTE = "A summary saved with the notebook: run the cell to inspect this memory live."
_STATIC_CSS = (
    # The summary is shown when the widget beside it is not (no kernel, no widget model) and
    # hidden once the widget view is there; the widget's own output is hidden while it holds
    # no view ("Loading widget...", "Error displaying widget").
    ".jp-OutputArea-child:has(.nbmemory-static):has(+ .jp-OutputArea-child .nbmemory-widget)"
    "{display:none}"
    ".jp-OutputArea-child:has(.nbmemory-static) + .jp-OutputArea-child:not(:has(.nbmemory-widget))"
    "{display:none}"
    ".nbmemory-static{border-left:3px solid var(--jp-border-color1,#bdbdbd);padding-left:8px}"
)


__all__ = ["MARKED_VERSION", "PAGE_SIZE", "MemoryWidget"]
