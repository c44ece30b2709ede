import json

import pytest

from nbmemory.errors import (
    AuthenticationError,
    MissingKeyError,
    ModelTimeoutError,
    ProviderError,
    RateLimitError,
)
from nbmemory.models import llm
from support import run_python

HELLO = [{"role": "user", "content": "Say hello."}]


def call(server, messages=HELLO, **options):
    options.setdefault("max_retries", 0)
    return llm.complete(
        "openai/test-model", messages, api_base=server.url, api_key="test-key", **options
    )


def test_a_plain_reply_and_the_request_it_answered(openai_server):
    openai_server.reply("Hello there.")
    reply = call(openai_server, temperature=0.2, max_tokens=50)
    assert (reply.content, reply.tool_calls, reply.finish_reason) == ("Hello there.", [], "stop")
    sent = openai_server.requests[0]
    assert sent["messages"] == HELLO
    assert (sent["temperature"], sent["max_tokens"]) == (0.2, 50)
    assert openai_server.headers[0]["authorization"] == "Bearer test-key"


def test_streamed_pieces_arrive_in_order_and_join_into_the_reply(openai_server):
    text = "Streaming works: one piece, then another, then the last one."
    openai_server.reply(text)
    pieces: list[str] = []
    reply = call(openai_server, on_delta=pieces.append)
    assert len(pieces) >= 5
    assert "".join(pieces) == reply.content == text
    assert openai_server.requests[0]["stream"] is True


@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_come_back_whole(openai_server, stream):
    openai_server.reply(tool_calls=[{"name": "search", "arguments": {"query": "né storage"}}])
    reply = call(
        openai_server,
        tools=[{"type": "function", "function": {"name": "search"}}],
        on_delta=(lambda piece: None) if stream else None,
    )
    assert reply.finish_reason == "tool_calls"
    [tool_call] = reply.tool_calls
    assert (tool_call.name, json.loads(tool_call.arguments)) == ("search", {"query": "né storage"})
    assert reply.message()["tool_calls"][0]["id"] == tool_call.id


def test_a_rate_limit_is_retried(openai_server):
    openai_server.reply(status=429, error_message="slow down", retry_after="0.01")
    openai_server.reply("made it")
    assert call(openai_server, max_retries=1).content == "made it"
    assert len(openai_server.requests) == 2


@pytest.mark.parametrize(
    ("status", "error", "message"),
    [
        (401, AuthenticationError, "Incorrect API key provided"),
        (429, RateLimitError, "quota exceeded"),
        (500, ProviderError, "the model crashed"),
    ],
)
def test_failures_become_clear_errors_that_keep_the_providers_words(
    openai_server, status, error, message
):
    openai_server.reply(status=status, error_message=message)
    with pytest.raises(error, match=message) as raised:
        call(openai_server)
    assert raised.value.model == "openai/test-model"


def test_a_slow_reply_is_a_timeout(openai_server):
    openai_server.reply("too late", delay=3)
    with pytest.raises(ModelTimeoutError):
        call(openai_server, timeout=0.5)


@pytest.mark.parametrize(
    ("model", "variable"),
    [("gpt-4o", "OPENAI_API_KEY"), ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY")],
)
def test_a_missing_key_names_the_variable_before_any_request(
    monkeypatch, openai_server, model, variable
):
    monkeypatch.delenv(variable, raising=False)
    with pytest.raises(MissingKeyError, match=f"needs {variable}") as raised:
        llm.complete(model, HELLO, api_base=openai_server.url)
    assert raised.value.variables == [variable]
    assert openai_server.requests == []


def test_the_offline_model_answers_without_importing_litellm():
    code = (
        "import sys\n"
        "from nbmemory import Agent, ContextCompressor\n"
        "agent = Agent(agent_name='a', persistent_memory=True)\n"
        "agent.run('Our warehouse is ClickHouse.')\n"
        "print(agent.run('Which warehouse?', streaming_callback=lambda piece: None))\n"
        "print(ContextCompressor().compress(agent))\n"
        "print('litellm' in sys.modules)"
    )
    out = run_python(code).stdout
    assert out.count("ClickHouse") >= 2 and out.split()[-1] == "False"


def test_litellm_is_imported_on_the_first_call_to_a_provider_and_offline(openai_server):
    code = (
        "import os, sys; from nbmemory import Agent; from nbmemory.models import llm;"
        "Agent(agent_name='a');"
        "print('litellm' in sys.modules);"
        "llm.complete('openai/test-model', [{'role': 'user', 'content': 'hi'}],"
        f" api_base={openai_server.url!r}, api_key='k', max_retries=0);"
        "print('litellm' in sys.modules, os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])"
    )
    assert run_python(code).stdout.split() == ["False", "True", "True"]
    assert len(openai_server.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_a_providers_request_goes_through_litellm(openai_server, monkeypatch, stream):
    lib = llm.litellm()
    calls = []

    def spy(**options):
        calls.append(options["model"])
        return original(**options)

    original = lib.completion
    monkeypatch.setattr(lib, "completion", spy)
    openai_server.reply("Through litellm.")
    reply = call(openai_server, on_delta=(lambda piece: None) if stream else None)
    assert reply.content == "Through litellm."
    assert calls == ["openai/test-model"] and len(openai_server.requests) == 1


def test_litellm_can_be_imported_in_the_background_once_and_quietly():
    code = (
        "import os, sys, threading\n"
        "from nbmemory.models import llm\n"
        "llm.import_in_background(); llm.import_in_background()\n"
        "threads = [t for t in threading.enumerate() if t.name == 'nbmemory: import litellm']\n"
        "[t.join(120) for t in threads]\n"
        "print(len(threads), 'litellm' in sys.modules, os.environ['LITELLM_OFFLINE_MODE'])\n"
        "print(llm.litellm() is sys.modules['litellm'])"
    )
    env = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    done = run_python(code, env=env)
    assert done.stdout.split() == ["1", "True", "true", "True"]
    assert done.stderr == ""


def test_a_users_own_litellm_settings_are_kept():
    code = (
        "import os; os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] = 'False';"
        "from nbmemory.models import llm; llm.litellm();"
        "print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])"
    )
    env = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    assert run_python(code, env=env).stdout.strip() == "False"


def test_a_stream_can_be_iterated_and_then_read_whole(openai_server):
    openai_server.reply("Iterate over me, then read me whole.")
    stream = llm.Stream(
        "openai/test-model", HELLO, api_base=openai_server.url, api_key="test-key", max_retries=0
    )
    assert stream.reply is None
    pieces = list(stream)
    assert "".join(pieces) == stream.reply.content == "Iterate over me, then read me whole."
    assert stream.reply.finish_reason == "stop"


def test_an_endpoint_is_not_a_missing_key(monkeypatch):
    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)
    llm.check_key("ollama/llama3")
    llm.check_key("ollama/llama3", api_base="http://127.0.0.1:11434")
    assert llm.missing_keys("nbmemory/offline") == []
