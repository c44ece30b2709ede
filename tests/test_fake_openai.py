"""The fake OpenAI server works through litellm's real HTTP path (no mocks)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # after the environment variable above

from fake_openai import FakeOpenAI
from support import close_litellm_clients

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Say hello."},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the notes.",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["q"],
            },
        },
    }
]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A fresh fake server per test, stopped afterwards."""
    with FakeOpenAI() as fake:
        yield fake


def complete(server: FakeOpenAI, **kwargs: Any) -> Any:
    """Call litellm against ``server`` with test defaults (no retries unless asked)."""
    options: dict[str, Any] = {
        "model": "openai/fake-model",
        "api_base": server.url,
        "api_key": "test-key",
        "messages": MESSAGES,
        "max_retries": 0,
        **kwargs,
    }
    return litellm.completion(**options)


def test_plain_json_reply(server: FakeOpenAI) -> None:
    server.reply("Hello, world!")
    response = complete(server)
    assert response.choices[0].message.content == "Hello, world!"
    assert response.choices[0].finish_reason == "stop"
    assert response.usage.total_tokens > 0


def test_empty_queue_answers_ok(server: FakeOpenAI) -> None:
    assert complete(server).choices[0].message.content == "ok"
    assert complete(server).choices[0].message.content == "ok"
    assert len(server.requests) == 2


def test_a_reply_can_be_written_from_the_request_it_answers(server: FakeOpenAI) -> None:
    server.reply_with(lambda body: {"text": f"You said: {body['messages'][-1]['content']}"})
    server.reply_with(lambda body: {"tool_calls": [{"name": "search", "arguments": {"q": "x"}}]})
    assert complete(server).choices[0].message.content == "You said: Say hello."
    called = complete(server, tools=TOOLS).choices[0].message.tool_calls
    assert [call.function.name for call in called] == ["search"]


def test_request_body_and_headers_are_recorded(server: FakeOpenAI) -> None:
    server.reply("first")
    server.reply("second")
    assert complete(server).choices[0].message.content == "first"
    follow_up = [*MESSAGES, {"role": "assistant", "content": "first"}]
    assert complete(server, messages=follow_up).choices[0].message.content == "second"
    assert [r["messages"] for r in server.requests] == [MESSAGES, follow_up]
    assert server.requests[0]["model"] == "fake-model"
    assert server.headers[0]["authorization"] == "Bearer test-key"


def test_streaming_deltas_join_to_text(server: FakeOpenAI) -> None:
    text = "The quick brown fox  jumps over\nthe lazy dog."
    server.reply(text)
    chunks = list(complete(server, stream=True))
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert "".join(pieces) == text
    assert len(pieces) >= 5
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert server.requests[0]["stream"] is True


def test_streaming_usage_chunk(server: FakeOpenAI) -> None:
    server.reply("counted words")
    chunks = list(complete(server, stream=True, stream_options={"include_usage": True}))
    usages = [c.usage for c in chunks if getattr(c, "usage", None)]
    assert usages
    assert usages[-1].total_tokens > 0
    assert server.requests[0]["stream_options"] == {"include_usage": True}


def test_tool_call_round_trip(server: FakeOpenAI) -> None:
    args = {"q": "memory notes", "limit": 3}
    server.reply(tool_calls=[{"name": "search", "arguments": args}])
    server.reply("Found 3 notes.")
    response = complete(server, tools=TOOLS)
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "search"
    assert json.loads(call.function.arguments) == args
    assert call.id.startswith("call_")
    assert server.requests[0]["tools"] == TOOLS

    follow_up = [
        *MESSAGES,
        choice.message.model_dump(),
        {"role": "tool", "tool_call_id": call.id, "content": "3 notes"},
    ]
    assert complete(server, messages=follow_up, tools=TOOLS).choices[0].message.content == (
        "Found 3 notes."
    )
    sent = server.requests[1]["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": call.id, "content": "3 notes"}
    assert sent[-2]["tool_calls"][0]["id"] == call.id


def test_streamed_tool_calls(server: FakeOpenAI) -> None:
    calls = [
        {"name": "search", "arguments": {"q": "naïve “quotes”", "limit": 10}},
        {"name": "search", "arguments": {"q": "second"}},
    ]
    server.reply("Let me look.", tool_calls=calls)
    chunks = list(complete(server, stream=True, tools=TOOLS))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Let me look."
    merged: dict[int, dict[str, str]] = {}
    for c in chunks:
        for delta in (c.choices[0].delta.tool_calls or []) if c.choices else []:
            entry = merged.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            entry["id"] += delta.id or ""
            entry["name"] += delta.function.name or ""
            entry["arguments"] += delta.function.arguments or ""
    assert [m["name"] for m in merged.values()] == ["search", "search"]
    assert [json.loads(m["arguments"]) for m in merged.values()] == [c["arguments"] for c in calls]
    assert len({m["id"] for m in merged.values()}) == 2
    assert chunks[-1].choices[0].finish_reason == "tool_calls"

    rebuilt = litellm.stream_chunk_builder(chunks, messages=MESSAGES)
    tool_calls = rebuilt.choices[0].message.tool_calls
    assert [json.loads(t.function.arguments) for t in tool_calls] == [c["arguments"] for c in calls]


def test_call_ids_are_unique_across_replies(server: FakeOpenAI) -> None:
    for _ in range(2):
        server.reply(tool_calls=[{"name": "search", "arguments": {"q": "x"}}])
    first = complete(server, tools=TOOLS).choices[0].message.tool_calls[0].id
    second = complete(server, tools=TOOLS).choices[0].message.tool_calls[0].id
    assert first != second


def test_401_raises_authentication_error(server: FakeOpenAI) -> None:
    server.reply(status=401, error_message="Incorrect API key provided")
    with pytest.raises(litellm.AuthenticationError, match="Incorrect API key"):
        complete(server)


def test_500_raises(server: FakeOpenAI) -> None:
    server.reply(status=500, error_message="boom")
    with pytest.raises(litellm.InternalServerError, match="boom"):
        complete(server)
    assert len(server.requests) == 1


def test_429_is_retried_when_asked(server: FakeOpenAI) -> None:
    server.reply(status=429, error_message="slow down", retry_after="0")
    server.reply("after retry")
    start = time.perf_counter()
    response = complete(server, max_retries=1)
    assert response.choices[0].message.content == "after retry"
    assert len(server.requests) == 2
    assert server.headers[1]["x-stainless-retry-count"] == "1"
    assert time.perf_counter() - start < 5


def test_429_without_retries_raises(server: FakeOpenAI) -> None:
    server.reply(status=429, error_message="slow down", retry_after="0")
    with pytest.raises(litellm.RateLimitError):
        complete(server)
    assert len(server.requests) == 1


def test_delay_past_timeout_raises_timeout(server: FakeOpenAI) -> None:
    server.reply("too late", delay=3)
    start = time.perf_counter()
    with pytest.raises(litellm.Timeout):
        complete(server, timeout=0.5)
    assert time.perf_counter() - start < 2.5
    assert complete(server).choices[0].message.content == "ok"  # the server is still fine


def test_models_endpoint(server: FakeOpenAI) -> None:
    import urllib.request

    with urllib.request.urlopen(f"{server.url}/models", timeout=5) as response:
        listing = json.load(response)
    assert listing["data"][0]["id"] == "fake-model"


def test_stop_releases_port() -> None:
    import socket

    fake = FakeOpenAI().start()
    port = int(fake.url.rsplit(":", 1)[1].split("/")[0])
    fake.stop()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_stop_hangs_up_on_a_kept_alive_connection() -> None:
    import http.client

    fake = FakeOpenAI().start()
    connection = http.client.HTTPConnection(fake.url.split("/")[2], timeout=5)
    try:
        connection.request("GET", "/v1/models")
        assert connection.getresponse().read()
        assert fake.open_connections == 1  # HTTP/1.1: kept for the next request
        fake.stop()
        assert connection.sock.recv(1) == b""  # closed by the server, not left to time out
    finally:
        connection.close()


def test_closing_litellms_clients_ends_their_connections(server: FakeOpenAI) -> None:
    complete(server)
    assert server.open_connections == 1  # litellm keeps its client, and the connection, alive
    close_litellm_clients()
    for _ in range(100):  # the server's thread notices the hang-up and closes its end
        if server.open_connections == 0:
            break
        time.sleep(0.05)
    assert server.open_connections == 0
    assert complete(server).choices[0].message.content == "ok"  # a new client, a new connection
