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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

_OPENAI_KEYS = ("role", "content")


class SwarmsConversation:
    """Methods of swarms' ``Conversation`` that nbmemory's own API does not name.

    Mixed into :class:`nbmemory.Conversation`; uses its ``conversation_history``, ``add``,
    ``load`` and ``return_history_as_string``, and ``_history_edited`` after editing in place.
    """

    conversation_history: list[dict[str, Any]]

    if TYPE_CHECKING:

        def add(self, role: str, content: Any, metadata: dict[str, Any] | None = None) -> Any: ...
        def load(self, filename: str) -> None: ...
        def _history_edited(self) -> None: ...

    # Adding ----------------------------------------------------------------------------------

    def add_multiple(self, roles: list[str], contents: list[Any]) -> list[Any]:
        """Add one message per (role, content) pair, in order; the lists must be as long."""
        if len(roles) != len(contents):
            raise ValueError(f"got {len(roles)} roles for {len(contents)} contents")
        return [self.add(role, content) for role, content in zip(roles, contents, strict=True)]

    add_multiple_messages = add_multiple

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
        from nbmemory.atomic import write_atomic

        if filename.endswith(".json"):
            text = json.dumps(self.conversation_history, indent=4, default=str)
        else:
            text = "".join(f"{m['role']}: {m['content']}\n" for m in self.conversation_history)
        write_atomic(filename, text)
