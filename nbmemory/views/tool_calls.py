"""Tool calls and tool results as people read them: the tool's name, its arguments one per line
(``key: value``, a value of several lines as those lines) and its result as text.

A tool message is stored as JSON (a call's arguments are JSON inside that JSON), which reads as
one escaped line with literal ``\\n``; every view shows this form instead, and "Exact text" the
stored one. The browser views get it as :meth:`ToolMessage.to_json` and draw it with the same
words; the CLI and ``%memory`` print :func:`tool_text`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from nbmemory.wording import LABELS


@dataclass(frozen=True)
class ToolCall:
    """One call: the tool's name and its arguments as (key, value as text) pairs."""

    name: str
    arguments: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ToolMessage:
    """A message of tool calls (``calls``, with what the model ``said`` beside them) or a tool's
    ``result`` (from tool ``name``)."""

    calls: tuple[ToolCall, ...] = ()
    said: str = ""
    name: str = ""
    result: str | None = None

    def to_json(self) -> dict[str, Any]:
        """What the browser views draw: ``calls`` (name, arguments as [key, value] pairs) and
        ``said``, or ``name`` and ``result``."""
        if self.result is None:
            calls = [
                {"name": c.name, "arguments": [list(a) for a in c.arguments]} for c in self.calls
            ]
            return {"said": self.said, "calls": calls}
        return {"name": self.name, "result": self.result}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolMessage:
        """The message :meth:`to_json` gave (a widget's ``messages`` trait holds it)."""
        if "result" in data:
            return cls(name=str(data.get("name", "")), result=str(data["result"]))
        calls = tuple(
            ToolCall(str(c["name"]), tuple((str(k), str(v)) for k, v in c["arguments"]))
            for c in data.get("calls", [])
        )
        return cls(calls, said=str(data.get("said", "")))

    def cut(self, chars: int) -> ToolMessage:
        """This message with each text in it cut to its first ``chars`` characters."""
        calls = tuple(
            ToolCall(c.name, tuple((k, v[:chars]) for k, v in c.arguments)) for c in self.calls
        )
        result = None if self.result is None else self.result[:chars]
        return replace(self, calls=calls, said=self.said[:chars], result=result)


def _as_text(value: Any) -> str:
    """A value as text: a string as it is, anything else as JSON (indented when nested)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    indent = 2 if isinstance(value, dict | list) and value else None
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _arguments(raw: Any) -> tuple[tuple[str, str], ...]:
    """A call's arguments (a JSON object, usually kept as a string) as (key, text) pairs."""
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return (("arguments", raw),)
    if isinstance(value, dict):
        return tuple((str(key), _as_text(inner)) for key, inner in value.items())
    return (("arguments", _as_text(value)),)


def _call(call: Any) -> ToolCall:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        function = call if isinstance(call, dict) else {}
    return ToolCall(str(function.get("name") or "?"), _arguments(function.get("arguments")))


def tool_message(content: Any) -> ToolMessage | None:
    """``content`` as a tool message, if it is one: a dict with ``tool_calls``, or a tool's
    result (a dict with ``tool_call_id``)."""
    if not isinstance(content, dict):
        return None
    calls = content.get("tool_calls")
    if isinstance(calls, list):
        return ToolMessage(tuple(_call(c) for c in calls), said=_as_text(content.get("content")))
    if "tool_call_id" in content:
        return ToolMessage(
            name=str(content.get("name") or "?"), result=_as_text(content.get("content"))
        )
    return None


def _lines(key: str, value: str) -> list[str]:
    """An argument as lines: ``key: value``, or the key and the value's lines under it."""
    if "\n" not in value:
        return [f"  {key}: {value}"]
    return [f"  {key}:", *(f"    {line}" for line in value.split("\n"))]


def tool_text(tool: ToolMessage) -> str:
    """The text every printed view shows for a tool message: "Calls NAME" and its arguments,
    one per line, or "Result of NAME" and the result's lines."""
    if tool.result is not None:
        return f"{LABELS['tool result']} {tool.name}\n{tool.result}".rstrip("\n")
    lines = [tool.said, ""] if tool.said.strip() else []
    for call in tool.calls:
        lines.append(f"{LABELS['tool call']} {call.name}")
        for key, value in call.arguments:
            lines += _lines(key, value)
    return "\n".join(lines)
