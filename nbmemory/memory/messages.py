"""What a conversation takes as a message: checks on a role, on content, and on an export read.

A message is a dict with a ``role``, a ``content`` and, once added, a ``timestamp``. Its role
heads its block in MEMORY.md, so it must be one non-empty line; blank content stays in the
history but, as in swarms, is never written to MEMORY.md.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from nbmemory.errors import MemoryFormatError


def check_role(role: object) -> str:
    """``role``, if it is one line of text; else ``ValueError``."""
    if not isinstance(role, str) or not role.strip():
        raise ValueError(f"role must be a non-empty string, not {role!r}")
    if "\n" in role or "\r" in role:
        raise ValueError(f"role must be one line, not {role!r}")
    return role


def check_timestamp(timestamp: object) -> str:
    """``timestamp``, if it is an ISO 8601 date and time that heads a block as it is; else
    ``ValueError``."""
    try:
        if isinstance(timestamp, str) and timestamp == timestamp.strip():
            datetime.datetime.fromisoformat(timestamp)
            return timestamp
    except ValueError:
        pass
    raise ValueError(f"timestamp must be an ISO 8601 date and time, not {timestamp!r}")


def is_blank(content: Any) -> bool:
    """Whether ``content`` is kept in the history but, as in swarms, never written to MEMORY.md."""
    return content is None or (isinstance(content, str) and not content.strip())


def exported_messages(data: Any, path: Path) -> list[dict[str, Any]]:
    """The messages of an export read from ``path`` (a list, or a dict holding one: a swarms
    export, or an agent state from ``Agent.save``), copied; ``MemoryFormatError`` if it holds
    none, ``ValueError`` for a bad role."""
    if isinstance(data, dict):
        data = data.get("conversation_history", data.get("history", data))
    if not isinstance(data, list):
        raise MemoryFormatError(f"{path}: expected a list of messages, found {type(data).__name__}")
    for i, message in enumerate(data):
        if not isinstance(message, dict) or "role" not in message or "content" not in message:
            raise MemoryFormatError(f"{path}: message {i} needs a 'role' and a 'content'")
        check_role(message["role"])
    return [dict(message) for message in data]
