"""Plain Python functions as tools a model can call: their schema, and a safe way to run them.

A tool is a function with type hints and a Google-style docstring; its name, summary and
``Args:`` section become the OpenAI tool schema, and its hints become a pydantic model that
checks the arguments a model sends. A tool that fails returns a message saying what went
wrong instead of raising, so the model can correct itself and the run goes on.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$")
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The summary of a Google-style docstring and the description of each argument."""
    summary: list[str] = []
    args: dict[str, str] = {}
    section = current = None
    indent = 0
    for line in inspect.cleandoc(doc or "").splitlines():
        header = _SECTION.match(line)
        if header:
            section, current = header.group(1), None
        elif section is None:
            summary.append(line)
        elif section in ("Args", "Arguments", "Parameters") and line.strip():
            found = _ARG_LINE.match(line.strip())
            depth = len(line) - len(line.lstrip())
            if found and (current is None or depth <= indent):
                current, indent = found.group(1).lstrip("*"), depth
                args[current] = found.group(3).strip()
            elif current is not None:
                args[current] = f"{args[current]} {line.strip()}".strip()
    paragraph = "\n".join(summary).strip().split("\n\n")[0]
    return paragraph.replace("\n", " "), args


def _strip_titles(schema: Any, *, names: bool = False) -> Any:
    """Drop pydantic's generated titles (noise in a prompt); ``names`` marks a properties map."""
    if isinstance(schema, dict):
        return {
            k: _strip_titles(v, names=k == "properties" and not names)
            for k, v in schema.items()
            if names or k != "title"
        }
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


@dataclass
class Tool:
    """One callable tool: the function, its OpenAI schema, and the model that checks arguments."""

    function: Callable[..., Any]
    name: str
    description: str
    parameters: dict[str, Any]
    arguments_model: Any

    @classmethod
    def from_function(cls, function: Callable[..., Any]) -> Tool:
        """Build the tool of ``function``; raises ``TypeError`` if a parameter has no type hint."""
        from typing import get_type_hints

        from pydantic import ConfigDict, Field, create_model

        name = function.__name__
        summary, docs = parse_docstring(function.__doc__)
        hints = get_type_hints(function)
        fields: dict[str, Any] = {}
        for param in inspect.signature(function).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            if param.name not in hints:
                raise TypeError(f"tool {name}: parameter {param.name!r} needs a type hint")
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (
                hints[param.name],
                Field(default, description=docs.get(param.name)),
            )
        model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        parameters = _strip_titles(model.model_json_schema())
        parameters.setdefault("properties", {})
        return cls(function, name, summary or name, parameters, model)

    def schema(self) -> dict[str, Any]:
        """The tool as the OpenAI ``tools`` list expects it."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def call(self, arguments: str | dict[str, Any] | None) -> str:
        """Run the tool on a model's arguments; any failure comes back as a message, not raised."""
        from pydantic import ValidationError

        try:
            given = json.loads(arguments or "{}") if isinstance(arguments, str) else arguments or {}
        except json.JSONDecodeError as exc:
            return f"Error: the arguments for {self.name} are not valid JSON ({exc.msg})."
        try:
            checked = self.arguments_model.model_validate(given)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            return f"Error: bad arguments for {self.name}: {problems}."
        try:
            result = self.function(**{k: getattr(checked, k) for k in type(checked).model_fields})
        except Exception as exc:
            return f"Error: {self.name} raised {type(exc).__name__}: {exc}"
        if isinstance(result, str):
            return result
        try:
            return json.dumps(result, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return str(result)


class ToolBox:
    """The tools an agent may call, looked up by name."""

    def __init__(self, functions: Iterable[Callable[..., Any] | Tool] = ()) -> None:
        self.tools: dict[str, Tool] = {}
        for function in functions:
            tool = function if isinstance(function, Tool) else Tool.from_function(function)
            if tool.name in self.tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self.tools[tool.name] = tool

    def __bool__(self) -> bool:
        return bool(self.tools)

    def schemas(self) -> list[dict[str, Any]]:
        """Every tool's OpenAI schema."""
        return [tool.schema() for tool in self.tools.values()]

    def call(self, name: str, arguments: str | dict[str, Any] | None) -> str:
        """Run the tool called ``name``; an unknown name is reported to the model, not raised."""
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(self.tools) or "none"
            return f"Error: there is no tool named {name!r} (available: {known})."
        return tool.call(arguments)
