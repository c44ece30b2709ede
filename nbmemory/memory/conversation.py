"""``Conversation``: an agent's message history, written through to its MEMORY.md.

This module is also swarms' ``swarms.structs.conversation`` (``nbmemory.conversation`` is the
same module): ``__all__`` is what swarms code and the README take from it. The class leans on
its neighbours: ``preload`` (the text a resumed memory is sent as), ``block_counts`` (the
token counts of its blocks), ``messages`` (what it takes as a message) and
``swarms_conversation`` (swarms' methods that nbmemory's own API does not name).
"""

from __future__ import annotations

import functools
import json
import os
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbmemory.errors import MemoryFormatError, MemoryWarning, NbmemoryError
from nbmemory.memory import provenance, search
from nbmemory.memory.block_counts import BlockCounts
from nbmemory.memory.compactions import compaction_of, write_record
from nbmemory.memory.messages import check_role, check_timestamp, exported_messages, is_blank
from nbmemory.memory.notes import Notes
from nbmemory.memory.preload import (
    PRELOAD_MARKER,
    SUMMARY_MARKER,
    block_text,
    block_tokens,
    file_preload_text,
    file_preloaded_messages,
    preload_text,
    preload_tokens,
    preloaded_messages,
)
from nbmemory.memory.provenance import Provenance
from nbmemory.memory.search import MemoryHit, content_text
from nbmemory.memory.swarms_conversation import SwarmsConversation, conversations_folder
from nbmemory.store import Workspace, memory_format
from nbmemory.store.atomic import write_atomic
from nbmemory.store.docs import AgentDocs, memory_docs
from nbmemory.store.folders import make_private_dir, read_regular
from nbmemory.store.memory_format import block_bytes, format_block, format_header, now_iso
from nbmemory.tokens import APPROXIMATE, TokenCounter, TokenUsage, context_window

__all__ = [
    "PRELOAD_MARKER",
    "SUMMARY_MARKER",
    "ChangeEvent",
    "Conversation",
    "TokenUsage",
    "preload_text",
    "preloaded_messages",
]


@dataclass(frozen=True)
class ChangeEvent:
    """What changed in a conversation: ``kind`` is "add", "compact", "load", "clear" or "edit"
    (the history changed in place)."""

    kind: str
    conversation: Conversation
    message: dict[str, Any] | None = None
    archive: Path | None = None


class Conversation(SwarmsConversation):
    """A message history that, given ``memory_md_path``, lives on disk as well as in memory.

    With a path, construction creates the file (or preloads it as one system message after the
    system prompt and rules), every :meth:`add` is appended to it before it returns, and
    :meth:`compact` archives it and starts it again from a summary. Without a path nothing
    touches the disk. Constructor arguments follow the swarms ``Conversation``;
    ``context_length=None`` means the window of ``tokenizer_model_name`` (16000 if unknown).

    As in swarms, ``save_filepath`` defaults to ``conversation_<name>.json`` (or ``.yaml``) in
    ``conversations_dir``, else ``./conversations``; a conversation given a ``name`` or a
    ``save_filepath`` loads that file when it exists, unless it has a ``memory_md_path``:
    then MEMORY.md alone is what it resumes from. ``workspace`` (default: the environment's)
    says where ``memory_md_path`` is kept: a path inside one of its agent folders is that
    agent's memory, in its database if it has one; any other path is a file.

    swarms' other arguments are accepted: ``token_count`` and ``message_id_on`` add a
    ``token_count`` or ``message_id`` to each message; ``save_as_yaml_on`` makes ``export``
    write YAML; ``channel`` gets ``channel.post(role, text)`` for every message that is not a
    system message. ``dynamic_context_window``, ``cache_enabled``, ``output_metadata`` and
    ``save_as_json_bool`` change nothing: nbmemory compacts instead of truncating the history
    it sends, keeps no string cache, and exports JSON by default.
    """

    def __init__(
        self,
        id: str | None = None,
        name: str | None = None,
        system_prompt: str | None = None,
        time_enabled: bool = False,
        autosave: bool = False,
        save_filepath: str | None = None,
        load_filepath: str | None = None,
        context_length: int | None = 8192,
        rules: str | None = None,
        custom_rules_prompt: str | None = None,
        user: str = "User",
        save_as_yaml_on: bool = False,
        save_as_json_bool: bool = False,
        token_count: bool = False,
        message_id_on: bool = False,
        tokenizer_model_name: str = "gpt-4o",
        conversations_dir: str | None = None,
        export_method: str = "json",
        dynamic_context_window: bool = True,
        cache_enabled: bool = False,
        output_metadata: bool = False,
        memory_md_path: str | os.PathLike[str] | None = None,
        messages: Iterable[dict[str, Any]] | None = None,
        channel: Any = None,
        workspace: Workspace | None = None,
    ) -> None:
        resumes = name is not None or save_filepath is not None
        import uuid  # here, not when nbmemory is imported: uuid imports platform

        self.id = id or uuid.uuid4().hex
        self.name = name or f"conversation-{self.id[:8]}"
        self.system_prompt = system_prompt
        self.time_enabled = time_enabled
        self.autosave = autosave
        self.save_filepath = save_filepath
        self.load_filepath = load_filepath
        self.context_length = context_length or context_window(tokenizer_model_name)
        self.rules = rules
        self.custom_rules_prompt = custom_rules_prompt
        self.user = user
        self.tokenizer_model_name = tokenizer_model_name
        self.conversations_dir = conversations_dir
        self.export_method = "yaml" if save_as_yaml_on else export_method
        self.token_count = token_count
        self.message_id_on = message_id_on
        self.save_as_yaml_on = save_as_yaml_on
        self.save_as_json_bool = save_as_json_bool
        self.dynamic_context_window = dynamic_context_window
        self.cache_enabled = cache_enabled
        self.output_metadata = output_metadata
        self.channel = None  # set last: nothing added while constructing is posted
        self.setup_file_path()
        self._history: list[dict[str, Any]] = []
        self._pending: tuple[dict[str, Any], bytes] | None = None
        """The preload's message and the file it is to hold, until the history is first read."""
        self._preloaded: list[dict[str, Any]] | Callable[[], list[dict[str, Any]]] = []
        self._preloaded_count = 0  # what _preloaded will parse, while it is a parser
        self.last_archive: Path | None = None
        self.provenance: Provenance | None = None
        """Where the messages added now come from (a notebook's cell, as ``Agent.run`` is
        told): recorded beside MEMORY.md with each, never in it (``nbmemory.memory.provenance``)."""
        self._lock = threading.RLock()
        self._observers: list[Callable[[ChangeEvent], None]] = []
        self._counter = TokenCounter(tokenizer_model_name)
        self.keeps_counts = True
        """Whether the token counts it makes are kept beside the memory (see
        :meth:`keep_counts`): off for a conversation made only to look at a memory."""
        self._static_count: tuple[tuple[Any, ...], list[int]] = ((), [])
        self._reset_counts()
        self._workspace = workspace
        """Where ``memory_md_path`` is looked up (default: the environment's workspace)."""
        self._docs_of: tuple[Any, AgentDocs | None] = (None, None)
        self._search_index = search.ContentIndex()
        self._memory: Any = None
        """A ``MemoryFile`` or a ``DatabaseMemory`` (see ``Workspace.open_memory``)."""
        self._header = ""
        """MEMORY.md's header, which a resumed agent's preload carries."""

        self._history.extend(self.static_messages())
        self._session_start: int | None = len(self._history)
        """Where this session's messages start in the history; ``None`` once it no longer
        mirrors MEMORY.md (after ``clear`` or ``load``)."""
        self.memory_md_path = memory_md_path
        if self._memory is not None:
            self._memory.ensure()
            self._preload()
        if load_filepath:
            self.load(load_filepath)
        elif resumes and self._memory is None and os.path.exists(self.save_filepath):
            self.load(self.save_filepath)
        for message in messages or ():
            self.add(message["role"], message["content"])
        self.channel = channel

    # ------------------------------------------------------------------------------------------
    # Disk

    @property
    def memory_md_path(self) -> str | None:
        """Path of the MEMORY.md written through to; set it to ``None`` to stop writing."""
        return str(self._memory.path) if self._memory is not None else None

    @memory_md_path.setter
    def memory_md_path(self, path: str | os.PathLike[str] | None) -> None:
        with self._lock:
            if self._memory is not None:
                self._memory.close()
            if path is None:
                self._memory = None
            else:
                workspace = self._workspace or Workspace.from_env()
                self._memory = workspace.open_memory(path, self.name)

    def _preload(self) -> None:
        assert self._memory is not None
        data, whole = self._memory.read_whole()
        if whole is not None:  # the usual case: the file as it is, decoded and parsed when used
            self._header = whole.header
            self._preloaded = functools.partial(file_preloaded_messages, data)
            self._preloaded_count = whole.messages
            message = self._message("System", None)
            self._pending = (message, data)
            self._history.append(message)
            self._session_start += 1
            return
        parsed = memory_format.parse(data)
        self.preloaded_messages = memory_format.warned_messages(parsed, self._memory.path)
        self._header = parsed.header
        if not parsed.messages:
            return
        blocks = parsed.log
        if parsed.problems:  # show the model what was read, not the damage
            blocks = "".join(block_text(m) for m in parsed.messages)
        text = preload_text(parsed.header, blocks)  # the whole file, as the spec says
        self._history.append(self._message("System", text))
        self._session_start += 1

    @property
    def conversation_history(self) -> list[dict[str, Any]]:
        """The messages, as in swarms: the system prompt and rules, the memory preloaded (one
        system message), then this session's."""
        if self._pending is not None:
            self._decode_preload()
        return self._history

    @conversation_history.setter
    def conversation_history(self, messages: list[dict[str, Any]]) -> None:
        with self._lock:
            self._pending = None
            self._history = messages

    def _decode_preload(self) -> None:
        """Give the preload's message its text: the file is decoded when the history is first
        read, not on resuming (most of what reading a big file costs)."""
        with self._lock:
            if self._pending is not None:
                message, data = self._pending
                message["content"] = file_preload_text(data)
                self._pending = None

    @property
    def preloaded_messages(self) -> list[dict[str, Any]]:
        """The messages MEMORY.md held when this conversation was made (its preload)."""
        with self._lock:
            if callable(self._preloaded):
                self._preloaded = self._preloaded()
            return self._preloaded

    @preloaded_messages.setter
    def preloaded_messages(self, messages: list[dict[str, Any]]) -> None:
        self._preloaded = messages

    @property
    def preloaded_count(self) -> int:
        """``len(preloaded_messages)``, without parsing them if they have not been used yet."""
        with self._lock:
            return self._preloaded_count if callable(self._preloaded) else len(self._preloaded)

    @property
    def workspace(self) -> Workspace | None:
        """The workspace given to the constructor, if one was."""
        return self._workspace

    @property
    def docs(self) -> AgentDocs | None:
        """The documents of the agent whose memory this is (its archives, notes and records),
        or ``None`` without a ``memory_md_path``."""
        memory = self._memory
        if memory is None:
            return None
        if self._docs_of[0] is not memory:  # the docs are asked for at every token count
            self._docs_of = (memory, memory_docs(memory))
        return self._docs_of[1]

    def memory_messages(self) -> list[dict[str, Any]]:
        """The messages in MEMORY.md now, parsed (all processes' writes included)."""
        return self._memory.messages() if self._memory is not None else []

    def archives(self) -> list[Path]:
        """The archive files of this memory, oldest first."""
        return self._memory.archives() if self._memory is not None else []

    def archive_messages(self, archive: str | os.PathLike[str]) -> list[dict[str, Any]]:
        """The messages of one archive, named by file name or path (it must be one of ours)."""
        wanted = Path(archive).name
        for path in self.archives():
            if path.name == wanted:
                return memory_docs(self._memory).messages(path)
        raise FileNotFoundError(f"no archive named {wanted!r} for {self.name}")

    def close(self) -> None:
        """Keep the token counts made since they were last kept, and release the open files
        of the memory (it reopens them when written again)."""
        if self._memory is not None:
            if self._block_counts.unkept:
                self.keep_counts()
            self._memory.close()

    # ------------------------------------------------------------------------------------------
    # Messages

    def _message(self, role: str, content: Any) -> dict[str, Any]:
        return {"role": role, "content": content, "timestamp": now_iso()}

    def static_messages(self) -> list[dict[str, Any]]:
        """The system prompt and rules as messages: they open the history and are never saved."""
        static = []
        if self.system_prompt is not None:
            static.append(self._message("System", self.system_prompt))
        for text in (self.rules, self.custom_rules_prompt):
            if text is not None:
                static.append(self._message(self.user or "User", text))
        return static

    def add(
        self,
        role: str,
        content: Any,
        metadata: dict[str, Any] | None = None,
        category: str | None = None,
        *,
        timestamp: str | None = None,
    ) -> dict[str, Any]:
        """Add a message; with a memory file it is on disk before this returns (but for empty
        or blank text and ``None``, which swarms keeps out of MEMORY.md too).

        ``timestamp`` (ISO 8601, as the block headings show it) is when the message was said,
        for one added again (a compaction keeps it word for word); by default, now.

        Raises ``ValueError`` for a bad role or timestamp and ``OSError`` if the disk write
        fails, in which case the message is not added. A ``KeyboardInterrupt`` once the message
        is stored leaves it in the history too: the history and the memory agree.
        """
        message = {
            "role": check_role(role),
            "content": content,
            "timestamp": now_iso() if timestamp is None else check_timestamp(timestamp),
        }
        if metadata:
            message["metadata"] = metadata
        if category:
            message["category"] = category
        if self.message_id_on:
            import uuid

            message["message_id"] = uuid.uuid4().hex
        with self._lock:
            memory = self._memory
            if memory is not None and not is_blank(content):
                block = block_bytes(role, content, message["timestamp"])
                appends = memory.appends
                try:
                    if self.provenance is None or not self.provenance.known:
                        memory.append(block)
                    else:
                        with memory.locked():  # one lock: no other writer comes between
                            memory.append(block)
                            self._record_provenance(block.decode(), self.provenance)
                except BaseException as exc:
                    # An interrupt once the block is stored: the message is in the history
                    # too, so that this process and the memory agree (errors store nothing).
                    if not isinstance(exc, Exception) and memory.holds(block, appends):
                        self._history.append(message)
                    raise
            self._history.append(message)
        if self.token_count:
            message["token_count"] = self._counter.count(self._format_line(message, False))
        if self.channel is not None and content is not None and role.lower() != "system":
            self.channel.post(role, content_text(content))
        if self._observers:
            self._notify(ChangeEvent("add", self, message=message))
        if self.autosave:
            self.export()
        return message

    def _record_provenance(self, block: str, where: Provenance) -> None:
        """Record where the block just appended came from; if that fails, say so and go on:
        the message is in memory all the same, it only shows no cell."""
        try:
            provenance.append(memory_docs(self._memory), block, where)
        except (OSError, NbmemoryError) as exc:
            warnings.warn(
                f"{self.name}: where a message came from ({provenance.PROVENANCE_FILE}) was not "
                f"recorded: {exc}",
                MemoryWarning,
                stacklevel=3,
            )

    def compact(
        self, summary: str, summary_role: str = "System", *, record: bool = True
    ) -> Path | None:
        """Replace the history with one summary message, archiving MEMORY.md first.

        The system prompt and rules stay; the summary, stored as given (the compressor marks
        its own with ``SUMMARY_MARKER``), follows them in memory and is the only message in the
        new MEMORY.md. Returns the archive written (``None`` if there was none).

        What the compaction did is recorded beside the archive (``nbmemory.memory.compactions``), so
        no reader has to work it out again: the terms of the archived transcript that neither
        the summary nor the pinned notes hold (if it cannot be written, a warning says so
        and readers work it out from the files).
        ``record=False`` is for a caller that writes a fuller record itself (``Agent.compact``,
        the compressor).
        """
        if not isinstance(summary, str) or not summary.strip():
            raise ValueError("summary must be a non-empty string")
        check_role(summary_role)
        message = self._message(summary_role, summary)
        with self._lock:
            archive = None
            try:
                if self._memory is not None:
                    block = format_block(summary_role, summary, message["timestamp"])
                    archive = self._memory.compact(block)
                self._compacted(message, archive)
            except BaseException:
                # An interrupt can come after the memory was compacted on disk: what is in
                # memory then follows the disk, whichever of the two the interrupt came between.
                if self._memory is not None and self._compacted_on_disk(message):
                    self._compacted(message, archive)
                raise
        if record and archive is not None:
            try:
                compaction = compaction_of(self.docs, archive, summary, [self.name, self.user])
                write_record(self.docs, archive, compaction)
            except OSError as exc:  # compacted all the same: readers work the record out
                warnings.warn(
                    f"{self.name} was compacted into {archive.name}, but its record was not "
                    f"written: {exc}",
                    stacklevel=2,
                )
        self._notify(ChangeEvent("compact", self, message=message, archive=archive))
        return archive

    def clear(self) -> None:
        """Empty the in-memory history (MEMORY.md is left as it is)."""
        with self._lock:
            self.conversation_history = []
        self._history_edited("clear")

    def _history_edited(self, kind: str = "edit") -> None:
        """After the history changed other than by ``add``: it no longer mirrors MEMORY.md."""
        with self._lock:
            self._session_start = None
            self._reset_counts()
        self._notify(ChangeEvent(kind, self))

    def __len__(self) -> int:
        return len(self._history)

    def __repr__(self) -> str:
        where = f", memory_md_path={self.memory_md_path!r}" if self._memory is not None else ""
        return f"Conversation(name={self.name!r}, messages={len(self)}{where})"

    # ------------------------------------------------------------------------------------------
    # Observers

    def on_change(self, callback: Callable[[ChangeEvent], None]) -> Callable[[], None]:
        """Call ``callback(event)`` after every change; returns an unsubscriber."""
        self._observers.append(callback)

        def unsubscribe() -> None:
            if callback in self._observers:
                self._observers.remove(callback)

        return unsubscribe

    def _notify(self, event: ChangeEvent) -> None:
        for callback in list(self._observers):
            try:
                callback(event)
            except Exception as exc:  # an observer must never break a write
                warnings.warn(f"change observer {callback!r} failed: {exc!r}", stacklevel=3)

    # ------------------------------------------------------------------------------------------
    # Reading

    @staticmethod
    def _format_line(message: dict[str, Any], with_time: bool) -> str:
        line = f"{message['role']}: {content_text(message['content'])}"
        return (
            f"[{message['timestamp']}] {line}" if with_time and message.get("timestamp") else line
        )

    def return_history_as_string(self) -> str:
        """The history as the model-facing text: one ``role: content`` paragraph per message."""
        return "\n\n".join(
            self._format_line(m, self.time_enabled) for m in self.conversation_history
        )

    get_str = return_history_as_string

    def to_dict(self) -> list[dict[str, Any]]:
        """The messages as a list of dicts (a copy of the list)."""
        return list(self.conversation_history)

    def to_json(self) -> str:
        return json.dumps(self.conversation_history, ensure_ascii=False, default=str)

    def get_final_message_content(self) -> Any:
        """The content of the last message, or ``""`` when there is none."""
        return self.conversation_history[-1]["content"] if self.conversation_history else ""

    def get_final_message(self) -> str:
        """The last message as ``role: content``."""
        return self._format_line(self.conversation_history[-1], False) if self else ""

    def search(self, keyword: str) -> list[dict[str, Any]]:
        """Messages of the current history whose content contains ``keyword`` (case-sensitive)."""
        return self._search_index.search(self.conversation_history, keyword)

    search_keyword_in_conversation = search

    def search_memory(
        self, query: str, *, archives: bool = False, case_sensitive: bool = False
    ) -> list[MemoryHit]:
        """Search the memory on disk (MEMORY.md, and every archive if asked), else the history.

        Matching ignores case unless ``case_sensitive``. Hits come oldest archive first, then
        MEMORY.md (``source`` says which file; "history" for a memory kept only in RAM).
        """
        memory = self._memory
        docs = memory_docs(memory) if memory is not None else None
        sources = []
        if archives:
            sources = [(p.name, search.file_index(docs, p)) for p in self.archives()]
        if memory is None:
            sources.append(("history", search.MessageIndex(self.conversation_history)))
        elif docs.exists(memory.path):
            index = search.file_index(docs, memory.path)
            sources.append((memory.path.name, index))
        return [
            MemoryHit(name, i, index.messages[i])
            for name, index in sources
            for i in index.search(query, case_sensitive=case_sensitive)
        ]

    def _compacted(self, summary: dict[str, Any], archive: Path | None) -> None:
        """Make the history the summary alone after the static messages (run again, it
        finishes what an interrupted run began)."""
        history = [*self.static_messages(), summary]
        header = format_header(self.name) if self._memory is not None else ""
        self.conversation_history = history
        self._session_start = len(history) - 1
        self._preloaded = []
        self._header = header
        self._reset_counts()
        self.last_archive = archive

    def _compacted_on_disk(self, summary: dict[str, Any]) -> bool:
        """Whether the memory holds ``summary`` alone, as a compaction to it leaves it."""
        messages = memory_format.parse(self._memory.read_bytes()).messages
        return len(messages) == 1 and all(
            messages[0].get(key) == summary[key] for key in ("role", "content", "timestamp")
        )

    # ------------------------------------------------------------------------------------------
    # Tokens

    def _reset_counts(self) -> None:
        self._counts = []
        self._counted_total = 0
        self._last_line: tuple[dict[str, Any], int] | None = None
        self._block_counts = BlockCounts()

    def count_history_tokens(self) -> int:
        """Tokens of :meth:`return_history_as_string`, exactly, never capped.

        Each message is counted once (with the blank line that follows it), the first time a
        total is asked for after it was added; after that a total costs constant time.
        """
        with self._lock:
            if self._pending is not None:
                self._decode_preload()
            history = self._history  # not the property: it would cost a budget check a tenth more
            if len(self._counts) > len(history):
                self._reset_counts()
            for message in history[len(self._counts) :]:
                line = self._format_line(message, self.time_enabled)
                alone, count = self._counter.count_ending(line, "\n\n")
                self._counts.append(count)
                self._counted_total += count
                self._last_line = (message, alone - count)
            if not history:
                return 0
            last = history[-1]
            if self._last_line is None or self._last_line[0] is not last:
                # The last message has no blank line after it, and tiktoken may merge that
                # blank line with the text before it, so its own count can differ.
                alone = self._counter.count(self._format_line(last, self.time_enabled))
                self._last_line = (last, alone - self._counts[-1])
            return self._counted_total + self._last_line[1]

    def static_tokens(self) -> int:
        """Tokens of the system prompt and rules, which open every request."""
        return sum(self._static_counts())

    def rules_tokens(self) -> int:
        """The part of :meth:`static_tokens` that is the rules (not the system prompt)."""
        counts = self._static_counts()
        return sum(counts[1:] if self.system_prompt is not None else counts)

    def _static_counts(self) -> list[int]:
        key = (self.system_prompt, self.rules, self.custom_rules_prompt, self.user)
        if self._static_count[0] != key:
            lines = (self._format_line(m, self.time_enabled) for m in self.static_messages())
            self._static_count = (key, [self._counter.count(f"{line}\n\n") for line in lines])
        return self._static_count[1]

    def context_tokens(self) -> int:
        """Tokens of the history as an agent resuming from MEMORY.md would send it.

        This is the figure every view shows (they read MEMORY.md, not this process), so it
        stays the same across a restart: the system prompt and rules, then each message as
        its block in MEMORY.md. Without a memory file it is :meth:`count_history_tokens`.

        Blocks are counted once, the first time a total is asked for after they were added;
        counts kept beside the memory are taken as they are, and what was counted is kept
        there when a whole memory was, and every ``KEEP_EVERY`` blocks or ``1 / KEEP_SHARE`` of
        the memory (see ``nbmemory.memory.block_counts``), so that a resumed agent, and every
        view, need not count it again.
        """
        with self._lock:
            if self._memory is None or self._session_start is None:
                return self.count_history_tokens()
            remembered = self.preloaded_count + len(self._history) - self._session_start
            blocks = self._block_counts
            if len(blocks) < remembered:
                new = self._blocks(len(blocks))
                if blocks.count(self.docs, self._counter, self._header, new):
                    self.keep_counts()
            memory = blocks.tokens() if remembered else 0
            return self.static_tokens() + memory

    def memory_tokens(self, messages: list[dict[str, Any]]) -> int:
        """Tokens :meth:`context_tokens` would count for a memory holding only ``messages``
        (besides the system prompt and rules): what a compaction would leave, reckoned."""
        if not messages:
            return 0
        stamped = [{"timestamp": now_iso(), **m} for m in messages]
        head = preload_tokens(self._counter, format_header(self.name))
        return head + sum(block_tokens(self._counter, m) for m in stamped)

    def _blocks(self, start: int = 0) -> list[dict[str, Any] | None]:
        """The messages of MEMORY.md from ``start`` on, as this conversation knows them: those
        preloaded, then this session's (``None`` for one never written: blank text)."""
        preloaded = self.preloaded_messages
        session = self._history[self._session_start + max(0, start - len(preloaded)) :]
        return [*preloaded[start:], *(None if is_blank(m["content"]) else m for m in session)]

    def keep_counts(self) -> bool:
        """Keep the token counts of the memory made so far beside it, for readers and resumed
        agents; whether they were written. A cache: only the pinned notes are counted for it,
        and a failed write costs the next reader a count."""
        with self._lock:
            if self._memory is None or self._session_start is None or not self._block_counts:
                return False
            if not self.keeps_counts:
                return False
            if self._counter.encoding_name == APPROXIMATE:
                return False
            notes = Notes(self.docs, model=self.tokenizer_model_name)
            text = notes.request_text(notes.text())
            return self._block_counts.keep(self.docs, self._counter, self._header, text)

    @property
    def encoding_name(self) -> str:
        """The tokenizer that counts this conversation's tokens (see ``nbmemory.tokens``)."""
        return self._counter.encoding_name

    def token_usage(self) -> TokenUsage:
        """Tokens used against ``context_length``, and the encoding that counted them."""
        return TokenUsage(
            self.count_history_tokens(), self.context_length, self._counter.encoding_name
        )

    # ------------------------------------------------------------------------------------------
    # Export and load

    def setup_file_path(self) -> None:
        """Check ``export_method`` and give ``save_filepath`` its default if it has none."""
        if self.export_method not in ("json", "yaml"):
            raise ValueError(f"export_method must be 'json' or 'yaml', not {self.export_method!r}")
        if not self.save_filepath:
            folder = conversations_folder(self.conversations_dir)
            stem = self.name if _plain_file_name(self.name) else self.id
            self.save_filepath = os.path.join(folder, f"conversation_{stem}.{self.export_method}")

    def _default_save_path(self, suffix: str) -> str:
        return str(Path(self.save_filepath).with_suffix(suffix))

    def _save(self, text: str, path: str, force: bool) -> str | None:
        if not (force or self.autosave):
            warnings.warn("autosave is off; pass force=True to save anyway", stacklevel=3)
            return None
        target = Path(path)
        make_private_dir(target.parent)
        write_atomic(target, text)
        self.save_filepath = str(target)
        return str(target)

    def save_as_json(self, force: bool = True) -> str | None:
        """Write the history as JSON (``save_filepath`` with a .json suffix); returns the path."""
        text = json.dumps(self.conversation_history, indent=2, ensure_ascii=False, default=str)
        return self._save(text, self._default_save_path(".json"), force)

    def save_as_yaml(self, force: bool = True) -> str | None:
        """Write the history as YAML (``save_filepath`` with a .yaml suffix); returns the path."""
        import yaml

        plain = json.loads(json.dumps(self.conversation_history, default=str))
        text = yaml.safe_dump(plain, allow_unicode=True, sort_keys=False)
        return self._save(text, self._default_save_path(".yaml"), force)

    def export(self, force: bool = True) -> str | None:
        """Save in ``export_method`` ("json" or "yaml"); returns the path written."""
        if self.export_method == "json":
            return self.save_as_json(force=force)
        if self.export_method == "yaml":
            return self.save_as_yaml(force=force)
        raise ValueError(f"export_method must be 'json' or 'yaml', not {self.export_method!r}")

    def load(self, filename: str | os.PathLike[str]) -> None:
        """Replace the in-memory history with a JSON or YAML export.

        A file that cannot be read as messages raises ``MemoryFormatError`` and changes nothing.
        MEMORY.md is not touched.
        """
        import yaml

        path = Path(filename)
        suffix = path.suffix.lower()
        if suffix not in (".json", ".yaml", ".yml"):
            raise MemoryFormatError(f"{path}: expected a .json, .yaml or .yml file")
        text = read_regular(path).decode("utf-8")
        try:
            data = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
        except (ValueError, yaml.YAMLError) as exc:
            raise MemoryFormatError(f"{path}: not valid {suffix[1:].upper()}: {exc}") from exc
        self.load_messages(data, path)

    def load_messages(self, data: Any, source: str | os.PathLike[str]) -> None:
        """Replace the in-memory history with the messages of an export already read (a list,
        or a dict holding one); ``source`` names it in errors. MEMORY.md is not touched."""
        messages = exported_messages(data, Path(source))
        with self._lock:
            self.conversation_history = messages
        self._history_edited("load")


def _plain_file_name(name: str) -> bool:
    """Whether ``name`` can be part of a file name as it is (no folder, no special name)."""
    return name not in ("", ".", "..") and not any(c in name for c in "/\\\0:")
