"""What a model answered: its text, the tools it asked to run, and why it stopped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolCall:
    """A model's request to run a tool; ``arguments`` is the JSON text the model wrote."""

    id: str
    name: str
    arguments: str


@dataclass
class Reply:
    """What the model answered: text, tool calls, and why it stopped."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None

    def message(self) -> dict[str, Any]:
        """The reply as an OpenAI assistant message, ready to send back with tool results."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        return message
