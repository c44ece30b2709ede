"""A widget whose traits follow one agent's memory, from whatever process writes it.

The traits (:mod:`.traits`) hold what the read model (:mod:`nbmemory.views.read_model`) returns,
as :mod:`.state` turns it into JSON: the figures, a page of messages in either order, the open
archive's page, search with a hit count, the compactions and the pinned notes. A daemon thread
asks the read model for the agent's version token every ``POLL_SECONDS`` (a few ``stat`` calls
when nothing changed) and reads everything again when it changed; given an ``Agent`` or
``Conversation``, the widget also listens to their change hooks, for immediacy and for the
answer being streamed. Only a ``Conversation`` kept in RAM is read from the object itself. The
widget may be shown before the agent exists and fills in once it is written. When the browser
turns a page, filters by role or searches, the observers here show what it asked for; it may
also ask to read: ``{"command": "find", "term": ...}`` turns the open archive to where a term
first appears, ``{"command": "full", "index": i, "source": ...}`` sends a folded message whole.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import traitlets

from nbmemory.agent.agent import Agent
from nbmemory.errors import AgentNotFoundError, ArchiveNotFoundError, NbmemoryError
from nbmemory.jupyter.widget import state
from nbmemory.jupyter.widget.state import MEMORY_SOURCE, RAM_SOURCE
from nbmemory.jupyter.widget.traits import MemoryTraits
from nbmemory.memory.conversation import ChangeEvent, Conversation
from nbmemory.memory.notes import Notes
from nbmemory.store import Workspace, folders
from nbmemory.views.answers import ArchiveInfo, CompactionInfo, Item
from nbmemory.views.in_ram import agent_in_ram
from nbmemory.views.pages import page_of, to_items
from nbmemory.views.read_model import ReadModel
from nbmemory.wording import FOLD_CHARS, message_number, search_words

POLL_SECONDS = 0.5


def _weak(method: Callable[..., None]) -> Callable[..., None]:
    """A callback that calls ``method`` while its widget lives, without keeping it alive."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any) -> None:
        target = ref()
        if target is not None:
            target(*args)

    return call


def _follow(ref: weakref.ref[FollowingWidget], stop: threading.Event, interval: float) -> None:
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


class FollowingWidget(MemoryTraits):
    """The traits of a ``MemoryWidget``, kept in step with the memory of the agent it names,
    and the reads the browser asks for (the base of :class:`nbmemory.jupyter.widget.MemoryWidget`,
    which says what the arguments are and adds what a person changes)."""

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
                self.info = state.first_figures(self.name, settings, recorded, self.listed_total)

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
                self._show_notes()
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
            self.notes = {}
            self._show_roles([str(m.get("role", "")) for m in convo.conversation_history])
            self._show_page()
            self.info = agent_in_ram(self.name, convo, self.agent).to_json()
            self._show_search()

    def _absent(self) -> None:
        self._absent_status = state.absent_status(self.name, self._reader.root)
        with self.hold_sync():
            self.exists = False
            self.counting = False
            self.info = {}
            self.listed_total = 0
            self.roles = []
            self.messages = self.archives = self.search_results = self.archive_messages = []
            self.search_caption = ""
            self.notes = {}
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
        if self.page != state.clamped_page(self.page, total, size):
            self.page = state.clamped_page(self.page, total, size)  # observed: shows that page
            return
        self.messages = self._json(items)
        self.listed_total = total

    def _json(self, items: list[Item]) -> list[dict[str, Any]]:
        """Items as the browser gets them; with ``show_tokens``, each with its tokens."""
        counted = self.show_tokens and self._ram is None
        return state.item_payloads(items, self._reader if counted else None, self.name)

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
        if self.archive_page != state.clamped_page(self.archive_page, page.total, size):
            self.archive_page = state.clamped_page(self.archive_page, page.total, size)
            return
        self.archive_total = page.total
        self.archive_messages = self._json(page.items)

    # ------------------------------------------------------------------------------------------
    # Compactions

    def _read_compactions(
        self, archives: list[ArchiveInfo]
    ) -> tuple[tuple[Any, ...], list[CompactionInfo]] | None:
        """The compactions, read again only when an archive or the notes changed."""
        key = state.compactions_key(archives, self._reader.notes(self.name))
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
        self.compactions = state.compaction_rows(found)
        self._compactions_key = key
        self._show_compaction()

    def _show_compaction(self) -> None:
        info = self._compaction_infos.get(self.open_archive)
        self.compaction = info.to_json() if info is not None else {}

    # ------------------------------------------------------------------------------------------
    # What the browser asks to read

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
        """A read the browser asks for: the page where a term first appears in the open
        archive (``find``), or a folded message whole (``full``)."""
        command = content.get("command")
        if command == "find":
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
                if item.tool is not None:
                    reply["tool"] = item.tool.to_json()
            self.send(reply)

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
            total, items = state.ram_search(self._ram, query, self.role or None, offset, size)
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
        if self.search_page != state.clamped_page(self.search_page, total, size):
            self.search_page = state.clamped_page(self.search_page, total, size)
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

    def _show_notes(self) -> None:
        notes = self._reader.pinned(self.name).to_json()
        if notes != self.notes:
            self.notes = notes
