"""``MemoryWidget``: a live view of one agent's memory (anywidget; traits are the whole contract).

It shows how full the context is against the compression threshold, the counts, and the
messages a page at a time (never the whole history), with search, archives and a compact
button. It follows the conversation through its change hook, so it updates while an agent
runs, without polling. Outside a widget-capable front end it shows a Markdown summary.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from nbmemory.agent import Agent
from nbmemory.conversation import ChangeEvent, Conversation
from nbmemory.search import content_text

_STATIC = Path(__file__).parent / "static"
PAGE_SIZE = 20
PREVIEW_CHARS = 4000  # longer messages are folded; the browser never gets more than this


def _item(index: int, message: dict[str, Any]) -> dict[str, Any]:
    text = content_text(message.get("content"))
    return {
        "index": index,
        "role": str(message.get("role", "")),
        "time": str(message.get("timestamp", "")),
        "content": text[:PREVIEW_CHARS],
        "folded": len(text) > PREVIEW_CHARS,
    }


class MemoryWidget(anywidget.AnyWidget):
    """A live view of an ``Agent``'s (or a ``Conversation``'s) memory."""

    _esm = _STATIC / "widget.js"
    _css = _STATIC / "widget.css"

    name = traitlets.Unicode("").tag(sync=True)
    model_name = traitlets.Unicode("").tag(sync=True)
    tokens_used = traitlets.Int(0).tag(sync=True)
    context_length = traitlets.Int(0).tag(sync=True)
    threshold = traitlets.Float(0.9).tag(sync=True)
    message_count = traitlets.Int(0).tag(sync=True)
    archive_count = traitlets.Int(0).tag(sync=True)
    memory_bytes = traitlets.Int(0).tag(sync=True)
    last_compaction = traitlets.Unicode("").tag(sync=True)

    page = traitlets.Int(0).tag(sync=True)
    page_size = traitlets.Int(PAGE_SIZE).tag(sync=True)
    newest_first = traitlets.Bool(True).tag(sync=True)
    messages = traitlets.List(traitlets.Dict()).tag(sync=True)
    """The current page only."""

    query = traitlets.Unicode("").tag(sync=True)
    search_archives = traitlets.Bool(False).tag(sync=True)
    search_results = traitlets.List(traitlets.Dict()).tag(sync=True)
    archives = traitlets.List(traitlets.Unicode()).tag(sync=True)
    open_archive = traitlets.Unicode("").tag(sync=True)
    archive_messages = traitlets.List(traitlets.Dict()).tag(sync=True)
    streaming = traitlets.Unicode("").tag(sync=True)
    """The answer an agent is writing right now."""
    status = traitlets.Unicode("").tag(sync=True)

    def __init__(self, source: Agent | Conversation, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.agent = source if isinstance(source, Agent) else None
        self.conversation = source.short_memory if isinstance(source, Agent) else source
        self._history: list[dict[str, Any]] = []
        self.name = self.agent.agent_name if self.agent else self.conversation.name
        self.model_name = self.agent.model_name if self.agent else ""
        compressor = self.agent._context_compressor if self.agent else None
        self.threshold = compressor.threshold if compressor else 1.0
        self._unsubscribe = self.conversation.on_change(self._changed)
        if self.agent is not None:
            self.agent.stream_observers.append(self._streamed)
        self.on_msg(self._command)
        self._reload()

    def __repr__(self) -> str:
        return (
            f"MemoryWidget({self.name!r}: {self.message_count} messages, "
            f"{self.tokens_used}/{self.context_length} tokens)"
        )

    def close(self) -> None:
        """Stop following the conversation."""
        self._unsubscribe()
        if self.agent is not None and self._streamed in self.agent.stream_observers:
            self.agent.stream_observers.remove(self._streamed)
        super().close()

    # ------------------------------------------------------------------------------------------
    # Following the conversation

    def _source_messages(self) -> list[dict[str, Any]]:
        convo = self.conversation
        return convo.memory_messages() if convo.memory_md_path else convo.to_dict()

    def _reload(self) -> None:
        self._history = self._source_messages()
        self.archives = [p.name for p in self.conversation.archives()]
        self.archive_count = len(self.archives)
        self._refresh()

    def _changed(self, event: ChangeEvent) -> None:
        if event.kind == "add" and event.message is not None:
            self._history.append(event.message)
            self.streaming = ""
        else:
            if event.kind == "compact":
                self.last_compaction = datetime.datetime.now().isoformat(timespec="seconds")
            self._reload()
            return
        self._refresh()

    def _streamed(self, piece: str) -> None:
        self.streaming += piece

    def _refresh(self) -> None:
        convo = self.conversation
        path = Path(convo.memory_md_path) if convo.memory_md_path else None
        with self.hold_sync():
            self.tokens_used = convo.count_history_tokens()
            self.context_length = convo.context_length
            self.message_count = len(self._history)
            self.memory_bytes = path.stat().st_size if path and path.exists() else 0
            self._show_page()

    @traitlets.observe("page", "page_size", "newest_first")
    def _paging(self, change: dict[str, Any]) -> None:
        self._show_page()

    def _show_page(self) -> None:
        total = len(self._history)
        size = max(1, self.page_size)
        last_page = max(0, (total - 1) // size)
        if self.page > last_page:
            self.page = last_page
            return
        first = self.page * size
        if self.newest_first:
            chosen = range(total - 1 - first, max(total - 1 - first - size, -1), -1)
        else:
            chosen = range(first, min(total, first + size))
        self.messages = [_item(i, self._history[i]) for i in chosen]

    # ------------------------------------------------------------------------------------------
    # What the browser asks for

    @traitlets.observe("query", "search_archives")
    def _search(self, change: dict[str, Any]) -> None:
        if not self.query.strip():
            self.search_results = []
            return
        hits = self.conversation.search_memory(self.query, archives=self.search_archives)
        self.search_results = [
            {**_item(h.index, h.message), "source": h.source} for h in hits[:100]
        ]

    @traitlets.observe("open_archive")
    def _open(self, change: dict[str, Any]) -> None:
        if not self.open_archive:
            self.archive_messages = []
            return
        messages = self.conversation.archive_messages(self.open_archive)
        self.archive_messages = [_item(i, m) for i, m in enumerate(messages[: self.page_size * 5])]

    def _command(self, widget: Any, content: dict[str, Any], buffers: list[Any]) -> None:
        if content.get("command") == "compact":
            self.compact()

    def compact(self) -> None:
        """Compact with the agent's compressor (what the widget's button does)."""
        if self.agent is None or self.agent._context_compressor is None:
            self.status = "Compaction needs an agent with context compression on."
            return
        self.status = "Compacting…"
        try:
            summary = self.agent._context_compressor.compress(self.agent, keep_turn=False)
        except Exception as exc:  # shown to the user in the widget, not lost in a log
            self.status = f"Compaction failed: {exc}"
            return
        self.status = "Compacted." if summary else "Not compacted: see the warning in the notebook."

    # ------------------------------------------------------------------------------------------
    # Outside a widget front end

    def _repr_markdown_(self) -> str:
        percent = self.tokens_used / self.context_length if self.context_length else 0.0
        lines = [
            f"**{self.name}** memory: {self.tokens_used:,} / {self.context_length:,} tokens "
            f"({percent:.0%}; compression at {self.threshold:.0%}), "
            f"{self.message_count} messages, {self.archive_count} archives",
        ]
        for item in self.messages[:5]:
            lines.append(f"- *{item['role']}* · {item['time']}: {item['content'][:120]!r}")
        return "\n".join(lines)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = {**(data or {}), "text/markdown": self._repr_markdown_(), "text/plain": repr(self)}
        return data, metadata
