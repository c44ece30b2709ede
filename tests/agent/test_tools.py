import json
from typing import Literal, Optional

import pytest

from nbmemory.agent.tools import Tool, ToolBox, parse_docstring
from support import search_knowledge_base


def book_flight(
    destination: str,
    seats: int = 1,
    cabin: Literal["economy", "business"] = "economy",
    note: Optional[str] = None,  # noqa: UP045 - the old spelling must work too
    stops: list[str] | None = None,
    title: str = "",
) -> dict:
    """Book a flight.

    A second paragraph that is not part of the summary.

    Args:
        destination (str): Airport code,
            three letters.
        seats: How many seats.
        cabin: Which cabin.
        note: Free text for the crew.
        stops: Airports to stop at.
        title: How to address the passenger.
    """
    return {"to": destination, "seats": seats, "cabin": cabin, "stops": stops or []}


def test_a_function_becomes_an_openai_tool_schema():
    assert Tool.from_function(search_knowledge_base).schema() == {
        "type": "function",
        "function": {
            "name": "search_knowledge_base",
            "description": "Search the internal knowledge base and return matching passages.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "Words to look for in the knowledge base.",
                    }
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    }


def test_optional_literal_and_list_parameters_are_described_right():
    params = Tool.from_function(book_flight).parameters
    props = params["properties"]
    assert params["required"] == ["destination"]
    assert props["destination"] == {"type": "string", "description": "Airport code, three letters."}
    assert props["seats"] == {"type": "integer", "default": 1, "description": "How many seats."}
    assert props["cabin"]["enum"] == ["economy", "business"]
    assert props["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert props["stops"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}
    assert props["title"]["description"] == "How to address the passenger."


def test_docstring_summary_and_arguments():
    summary, args = parse_docstring(book_flight.__doc__)
    assert summary == "Book a flight."
    assert args["destination"] == "Airport code, three letters."
    assert set(args) == {"destination", "seats", "cabin", "note", "stops", "title"}


def test_calls_are_checked_and_run():
    tools = ToolBox([search_knowledge_base, book_flight])
    assert tools.call("search_knowledge_base", '{"query": "What about storage?"}') == (
        "Grid-scale batteries now cover 4-hour peaks at $95/kWh."
    )
    result = json.loads(tools.call("book_flight", {"destination": "CDG", "seats": "2"}))
    assert result == {"to": "CDG", "seats": 2, "cabin": "economy", "stops": []}


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("book_flight", "{not json", "not valid JSON"),
        ("book_flight", '{"seats": 2}', "destination: Field required"),
        ("book_flight", '{"destination": "CDG", "cabin": "first"}', "cabin: Input should be"),
        ("book_flight", '{"destination": "CDG", "pets": 1}', "pets: Extra inputs"),
        ("cancel_flight", "{}", "no tool named 'cancel_flight' (available: book_flight)"),
    ],
)
def test_bad_calls_are_reported_to_the_model(name, arguments, message):
    result = ToolBox([book_flight]).call(name, arguments)
    assert result.startswith("Error:")
    assert message in result


def test_a_tool_that_raises_returns_what_failed():
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    assert ToolBox([divide]).call("divide", '{"a": 1, "b": 0}') == (
        "Error: divide raised ZeroDivisionError: float division by zero"
    )


def test_a_parameter_without_a_hint_is_refused():
    def untyped(x):
        """No hints."""

    with pytest.raises(TypeError, match="'x' needs a type hint"):
        Tool.from_function(untyped)


def test_two_tools_with_one_name_are_refused():
    with pytest.raises(ValueError, match="two tools are named"):
        ToolBox([search_knowledge_base, search_knowledge_base])
