"""Tool calls and results as people read them (nbmemory.views.tool_calls)."""

from __future__ import annotations

import json

from nbmemory.views.tool_calls import ToolCall, ToolMessage, tool_message, tool_text


def call_of(name: str, arguments: object) -> dict:
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}


def test_a_call_is_its_name_and_one_line_per_argument_with_no_escaped_line_break():
    arguments = json.dumps({"query": "warehouse", "limit": 5, "body": "one\ntwo", "tags": ["a"]})
    said = "Let me look."
    tool = tool_message({"content": said, "tool_calls": [call_of("recall", arguments)]})
    assert tool == ToolMessage(
        (
            ToolCall(
                "recall",
                (
                    ("query", "warehouse"),
                    ("limit", "5"),
                    ("body", "one\ntwo"),
                    ("tags", '[\n  "a"\n]'),
                ),
            ),
        ),
        said=said,
    )
    assert tool_text(tool) == (
        "Let me look.\n\nCalls recall\n  query: warehouse\n  limit: 5\n"
        '  body:\n    one\n    two\n  tags:\n    [\n      "a"\n    ]'
    )
    assert "\\n" not in tool_text(tool)


def test_a_result_is_the_tools_name_and_its_text_as_lines():
    tool = tool_message({"tool_call_id": "c1", "name": "fetch", "content": "<img onerror=x>\nbye"})
    assert tool_text(tool) == "Result of fetch\n<img onerror=x>\nbye"
    assert tool.to_json() == {"name": "fetch", "result": "<img onerror=x>\nbye"}


def test_arguments_that_are_not_json_are_shown_as_they_came():
    tool = tool_message({"tool_calls": [call_of("run", "{not json")]})
    assert tool_text(tool) == "Calls run\n  arguments: {not json"
    assert tool_message("plain text") is None
    assert tool_message({"role": "note"}) is None


def test_a_long_tool_message_is_cut_text_by_text():
    tool = tool_message({"tool_calls": [call_of("write", json.dumps({"text": "x" * 50}))]})
    assert tool.cut(10).calls[0].arguments == (("text", "x" * 10),)
