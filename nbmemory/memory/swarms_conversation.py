"""The part of swarms' ``Conversation`` API that nbmemory keeps only so swarms code runs as is.

Every method here is a thin layer over :class:`nbmemory.Conversation`'s own API, gathered in
one place so a reader sees what exists for compatibility alone. Behaviour follows swarms
16.0.3 where its documentation says what a method does. Two rules of nbmemory's apply:

- ``MEMORY.md`` is an append-only log. ``delete``, ``update`` and ``batch_add`` change the
  history in this process (what the model is sent next), as in swarms; the log keeps what was
  said, so a restart preloads it again. After such an edit the history no longer mirrors
  ``MEMORY.md`` and token figures are counted from the history itself.
- Messages always go through ``add``, so they are written through to ``MEMORY.md``, except in
  ``batch_add``, which in swarms appends raw dicts to the history without writing them.
"""

from __future__ import annotations

import json
import os
import warnings
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from nbmemory.tokens import TokenCounter

_OPENAI_KEYS = ("role", "content")


class SwarmsConversation:
    """Methods of swarms' ``Conversation`` that nbmemory's own API does not name.

    Mixed into :class:`nbmemory.Conversation`; uses its ``conversation_history``, ``add``,
    ``load`` and ``return_history_as_string``, and ``_history_edited`` after editing in place.
    """

    conversation_history: list[dict[str, Any]]
    context_length: int
    time_enabled: bool
    _counter: TokenCounter

    if TYPE_CHECKING:

        def __init__(self, name: str | None = None, conversations_dir: str | None = None): ...
        def add(
            self,
            role: str,
            content: Any,
            metadata: dict[str, Any] | None = None,
            category: str | None = None,
        ) -> dict[str, Any]: ...
        def load(self, filename: str) -> None: ...
        def _history_edited(self) -> None: ...
        @staticmethod
        def _format_line(message: dict[str, Any], with_time: bool) -> str: ...

    # Adding ----------------------------------------------------------------------------------

    def add_multiple(self, roles: list[str], contents: list[Any]) -> list[Any]:
        """Add one message per (role, content) pair, in order; the lists must be as long."""
        if len(roles) != len(contents):
            raise ValueError(f"got {len(roles)} roles for {len(contents)} contents")
        return [self.add(role, content) for role, content in zip(roles, contents, strict=True)]

    add_multiple_messages = add_multiple

    def add_in_memory(
        self,
        role: str,
        content: Any,
        metadata: dict[str, Any] | None = None,
        category: str | None = None,
    ) -> dict[str, Any]:
        """``add`` under the name swarms' ``add`` delegates to (written through all the same)."""
        return self.add(role, content, metadata, category)

    def add_messages(self, messages: Iterable[dict[str, Any]]) -> list[Any]:
        """Add chat-format messages (``{"role", "content", ...}``); other keys become metadata."""
        added = []
        for message in messages:
            if not isinstance(message, dict) or "role" not in message:
                raise ValueError(f"a message must be a dict with a 'role', not {message!r}")
            extra = {k: v for k, v in message.items() if k not in _OPENAI_KEYS}
            added.append(self.add(message["role"], message.get("content"), extra or None))
        return added

    def add_tool_output_to_agent(self, role: str, tool_output: Any) -> Any:
        """Add a tool's output as a message of ``role``."""
        return self.add(role, tool_output)

    def batch_add(self, messages: Iterable[dict[str, Any]]) -> None:
        """Append message dicts to the history as they are, without writing them to disk."""
        self.conversation_history.extend(messages)
        self._history_edited()

    # Tool calls ------------------------------------------------------------------------------

    def record_assistant(self, parsed: Any, role: str = "assistant") -> list[dict[str, Any]]:
        """Add the model's turn; returns the tool calls in it (``id``, ``name``, ``arguments``).

        ``parsed`` is the model's text, or a list of OpenAI-style tool calls. A call without an
        id gets one, so that its result can be paired with it by :meth:`flush_tool_results`.
        """
        calls = []
        for i, item in enumerate(parsed if isinstance(parsed, list) else ()):
            function = (item.get("function") or {}) if isinstance(item, dict) else {}
            if function.get("name"):
                call_id = item.get("id") or f"call_{len(self.conversation_history)}_{i}"
                arguments = function.get("arguments", "{}")
                calls.append({"id": call_id, "name": function["name"], "arguments": arguments})
        text_turn = not calls and role == "assistant"
        message = self.add(role, str(parsed) if text_turn else parsed)
        if calls:
            message["tool_results"] = {}
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {k: c[k] for k in ("name", "arguments")},
                }
                for c in calls
            ]
        return calls

    def flush_tool_results(self, calls: list[dict[str, Any]], results: dict[str, Any]) -> None:
        """Attach ``results`` (by call id, as text) to the latest turn that made tool calls."""
        for message in reversed(self.conversation_history):
            if "tool_results" in message:
                message["tool_results"].update(
                    {c["id"]: str(results[c["id"]]) for c in calls if c["id"] in results}
                )
                return

    @staticmethod
    def map_batch_results(
        tool_calls: list[dict[str, Any]],
        output: Any,
        results: dict[str, Any],
        formatter: Callable[[Any], str] = str,
    ) -> None:
        """Put a batched tool output into ``results`` by call id: one value per call when
        ``output`` is a list as long as the calls, else the same value for every call."""
        if isinstance(output, list) and len(output) == len(tool_calls):
            values = output
        else:
            values = [output] * len(tool_calls)
        for call, value in zip(tool_calls, values, strict=True):
            results[call.get("id", "")] = formatter(value)

    def to_messages(
        self,
        agent_name: str | None = None,
        start: int = 0,
        prefix: Sequence[dict[str, Any]] = (),
    ) -> list[dict[str, Any]]:
        """The history from ``start``, after ``prefix``, as an OpenAI chat request body.

        A turn with tool calls becomes the assistant's calls followed by one ``tool`` message
        per result; rows already in chat form pass as they are; ``agent_name``'s messages are
        the assistant's and the rest the user's (system prompts and tool bookkeeping left out).
        """
        messages: list[dict[str, Any]] = []
        for row in [*prefix, *self.conversation_history[start:]]:
            role, content = row.get("role"), row.get("content")
            if "tool_results" in row:
                calls = row["tool_calls"]
                messages.append({"role": "assistant", "content": None, "tool_calls": calls})
                messages.extend(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": row["tool_results"].get(
                            call["id"], f"(no result recorded for {call['function']['name']})"
                        ),
                    }
                    for call in calls
                )
            elif role in ("system", "user", "assistant", "tool"):
                fields = {**(row.get("metadata") or {}), **row}
                keys = ("role", "content", "name", "tool_calls", "tool_call_id")
                messages.append({key: fields[key] for key in keys if key in fields})
            elif content is not None and role not in ("System", "Tool Executor"):
                chat_role = "assistant" if role == agent_name else "user"
                messages.append({"role": chat_role, "content": str(content)})
        return messages

    def get_visible_messages(self, agent: Any, turn: int) -> list[dict[str, Any]]:
        """Messages from turns before ``turn`` that ``agent`` may see: rows with a ``turn`` and
        a ``visible_to`` ("all" or names), as swarms' multi-agent structures write them."""
        return [
            m
            for m in self.conversation_history
            if m.get("turn", turn) < turn
            and (m.get("visible_to") == "all" or agent.agent_name in m.get("visible_to", ()))
        ]

    # Editing in place ------------------------------------------------------------------------

    def delete(self, index: int | str) -> None:
        """Remove the message at ``index`` from the history (``MEMORY.md`` keeps it)."""
        self.conversation_history.pop(int(index))
        self._history_edited()

    def update(self, index: int | str, role: str, content: Any) -> None:
        """Give the message at ``index`` a new role and content (``MEMORY.md`` keeps the old).

        An index out of range changes nothing, as in swarms.
        """
        if 0 <= int(index) < len(self.conversation_history):
            self.conversation_history[int(index)].update(role=role, content=content)
            self._history_edited()

    def truncate_memory_with_tokenizer(self) -> None:
        """Keep the oldest messages whose contents fit ``context_length`` tokens, cutting the
        first that does not (``MEMORY.md`` keeps them all; nbmemory compacts instead)."""
        kept: list[dict[str, Any]] = []
        room = self.context_length
        for message in self.conversation_history:
            content = (
                message["content"]
                if isinstance(message["content"], str)
                else str(message["content"])
            )
            size = self._counter.count(content)
            if size > room:
                if room > 0:
                    kept.append({**message, "content": self._counter.fit(content, room)})
                break
            kept.append(message)
            room -= size
        self.conversation_history[:] = kept
        self._history_edited()

    def query(self, index: int | str) -> dict[str, Any] | None:
        """The message at ``index``, or ``None`` if there is none."""
        if 0 <= int(index) < len(self.conversation_history):
            return self.conversation_history[int(index)]
        return None

    # Reading ---------------------------------------------------------------------------------

    def count_messages_by_role(self) -> dict[str, int]:
        """How many messages each role has; the four OpenAI roles are always listed."""
        counts = dict.fromkeys(("system", "user", "assistant", "function"), 0)
        for message in self.conversation_history:
            counts[message["role"]] = counts.get(message["role"], 0) + 1
        return counts

    def search_keyword_in_conversation(self, keyword: str) -> list[dict[str, Any]]:
        """Messages whose content, as text, contains ``keyword``."""
        return [m for m in self.conversation_history if keyword in str(m["content"])]

    def to_list(self) -> list[dict[str, Any]]:
        """The history itself (not a copy), as swarms returns it."""
        return self.conversation_history

    def to_yaml(self) -> str:
        """The history as YAML."""
        import yaml

        return yaml.safe_dump(self.conversation_history, allow_unicode=True, sort_keys=False)

    def return_messages_as_list(self) -> list[dict[str, Any]]:
        """One ``{"role", "content"}`` dict per message."""
        return [{"role": m["role"], "content": m["content"]} for m in self.conversation_history]

    return_messages_as_dictionary = return_messages_as_list

    def return_messages_as_strings(self) -> list[str]:
        """One ``"role: content"`` string per message."""
        return [f"{m['role']}: {m['content']}" for m in self.conversation_history]

    def return_json(self) -> str:
        """:meth:`return_messages_as_list` as indented JSON."""
        return json.dumps(self.return_messages_as_list(), indent=4, default=str)

    def get_last_message_as_string(self) -> str:
        """The last message as ``"role: content"``, or ``""``."""
        if not self.conversation_history:
            return ""
        last = self.conversation_history[-1]
        return f"{last['role']}: {last['content']}"

    def _after_first(self) -> int:
        """Where the messages after the system prompt and the first input start."""
        history = self.conversation_history
        return (1 if history and history[0].get("role") == "System" else 0) + 1

    def return_all_except_first(self) -> list[dict[str, Any]]:
        """The messages after the system prompt and the first input."""
        return self.conversation_history[self._after_first() :]

    def return_all_except_first_string(self) -> str:
        """:meth:`return_all_except_first` as their contents, one per line."""
        return "\n".join(f"{m['content']}" for m in self.return_all_except_first())

    def return_dict_final(self) -> tuple[Any, Any]:
        """The last message's content, twice (swarms returns this pair)."""
        last = self.conversation_history[-1]["content"]
        return last, last

    def return_list_final(self) -> list[Any]:
        """The last message's content in a list."""
        return [self.conversation_history[-1]["content"]]

    def dynamic_auto_chunking(self) -> str:
        """The newest part of :meth:`return_history_as_string` that fits ``context_length``
        tokens: whole messages, then the end of the first one that does not fit."""
        room = self.context_length
        kept: list[str] = []
        for message in reversed(self.conversation_history):
            line = self._format_line(message, self.time_enabled)
            size = self._counter.count(line) + (1 if kept else 0)  # "\n\n" between messages
            if size > room:
                tail = self._counter.fit(line, room - (1 if kept else 0), tail=True)
                kept.extend([tail] if tail else [])
                break
            kept.append(line)
            room -= size
        return "\n\n".join(reversed(kept))

    def export_and_count_categories(self) -> dict[str, int]:
        """Tokens of the messages added with ``category="input"`` and ``"output"``."""
        texts: dict[str, list[str]] = {"input": [], "output": []}
        for message in self.conversation_history:
            if message.get("category") in texts:
                texts[message["category"]].append(str(message["content"]))
        counts = {k: self._counter.count(" ".join(v)) if v else 0 for k, v in texts.items()}
        total = counts["input"] + counts["output"]
        return {
            "input_tokens": counts["input"],
            "output_tokens": counts["output"],
            "total_tokens": total,
        }

    def get_cache_stats(self) -> dict[str, Any]:
        """swarms' string-cache statistics; nbmemory keeps no such cache, so all zero."""
        return {"hits": 0, "misses": 0, "cached_tokens": 0, "hit_rate": 0.0}

    # Files -----------------------------------------------------------------------------------

    def load_from_json(self, filename: str) -> None:
        """Replace the history with a JSON export (nothing happens if the file is missing)."""
        if filename is not None and os.path.exists(filename):
            self.load(filename)

    load_from_yaml = load_from_json
    import_conversation = load_from_json

    def export_conversation(self, filename: str) -> None:
        """Write the history to ``filename``: JSON for ``.json``, else ``role: content`` lines."""
        from nbmemory.store.atomic import write_atomic

        if filename.endswith(".json"):
            text = json.dumps(self.conversation_history, indent=4, default=str)
        else:
            text = "".join(f"{m['role']}: {m['content']}\n" for m in self.conversation_history)
        write_atomic(filename, text)

    # Saved conversations ---------------------------------------------------------------------

    @classmethod
    def load_conversation(
        cls,
        name: str,
        conversations_dir: str | None = None,
        load_filepath: str | None = None,
    ) -> Any:
        """A conversation loaded from ``load_filepath``, else from the file ``name`` names in
        ``conversations_dir`` (``<name>`` or ``conversation_<name>``, as .json, .yaml or .yml,
        or ``name`` itself); a new, empty one (with a warning) if there is none."""
        if load_filepath:
            conversation = cls(name=name)
            conversation.load(load_filepath)
            return conversation
        folder = Path(conversations_folder(conversations_dir))
        candidates = [
            folder / f"{stem}{ext}"
            for stem in (name, f"conversation_{name}")
            for ext in (".json", ".yaml", ".yml")
        ]
        for path in [*candidates, folder / name]:
            if path.is_file():
                conversation = cls(name=name, conversations_dir=str(folder))
                conversation.load(str(path))
                return conversation
        warnings.warn(f"no saved conversation named {name!r} in {folder}", stacklevel=2)
        return cls(name=name, conversations_dir=str(folder))

    @classmethod
    def list_cached_conversations(cls, conversations_dir: str | None = None) -> list[str]:
        """Names (file names without extension) of the conversations saved in a folder."""
        return sorted(path.stem for path in _saved_files(conversations_dir))

    @classmethod
    def list_conversations(cls, conversations_dir: str | None = None) -> list[dict[str, str]]:
        """The saved JSON conversations of a folder, newest first: ``id``, ``name``,
        ``created_at`` and ``filepath``. A file that is not JSON is left out with a warning."""
        found = []
        for path in _saved_files(conversations_dir, (".json",)):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                warnings.warn(f"skipping {path}: {exc}", stacklevel=2)
                continue
            meta = data.get("metadata", {}) if isinstance(data, dict) else {}
            modified = datetime.fromtimestamp(path.stat().st_mtime).isoformat(timespec="seconds")
            name = path.stem.removeprefix("conversation_")
            found.append(
                {
                    "id": str(meta.get("id") or name),
                    "name": str(meta.get("name") or name),
                    "created_at": str(meta.get("created_at") or modified),
                    "filepath": str(path),
                }
            )
        return sorted(found, key=lambda entry: entry["created_at"], reverse=True)


def conversations_folder(conversations_dir: str | None) -> str:
    """Where conversations are saved: ``conversations_dir``, else ``./conversations``."""
    return conversations_dir or os.path.join(os.getcwd(), "conversations")


def _saved_files(
    conversations_dir: str | None, suffixes: tuple[str, ...] = (".json", ".yaml", ".yml")
) -> list[Path]:
    folder = Path(conversations_folder(conversations_dir))
    if not folder.is_dir():
        return []
    return [p for p in folder.iterdir() if p.suffix.lower() in suffixes and p.is_file()]
