import json
import re
import textwrap
from pathlib import Path

import pytest

import nbmemory
from nbmemory import Agent, Conversation, InvalidAgentNameError, Workspace
from nbmemory.agent.compressor import ContextCompressor
from nbmemory.errors import CompactionError
from nbmemory.memory.compactions import read_record
from nbmemory.memory.notes import PROMPT_LINE as NOTES_LINE
from nbmemory.recall import PROMPT_LINE as RECALL_LINE
from nbmemory.store import memory_path
from nbmemory.views.read_model import ReadModel
from support import (
    KNOWLEDGE,
    ROOT,
    http_agent,
    run_python,
    search_knowledge_base,
    stored,
    stored_messages,
)


def test_the_default_model_is_offline_unless_chosen(monkeypatch):
    monkeypatch.delenv("NBMEMORY_MODEL", raising=False)
    assert Agent(agent_name="A").model_name == "nbmemory/offline"
    monkeypatch.setenv("NBMEMORY_MODEL", "gpt-4o")
    assert Agent(agent_name="A").model_name == "gpt-4o"


@pytest.mark.parametrize(("model", "window"), [("gpt-4o", 128_000), ("mystery-model", 16_000)])
def test_context_length_resolves_per_model_offline(model, window):
    assert Agent(agent_name="A", model_name=model).context_length == window
    assert Agent(agent_name="A", model_name=model, context_length=32_000).context_length == 32_000


def test_a_retrieval_tool_is_called_and_its_result_reaches_the_answer_and_memory():
    agent = Agent(
        agent_name="KnowledgeAgent",
        tools=[search_knowledge_base],
        max_loops=2,
        persistent_memory=True,
    )
    answer = agent.run("Summarize what our renewable energy documents say about storage.")
    assert "Grid-scale batteries now cover 4-hour peaks at $95/kWh." in answer
    on_disk = stored_messages("KnowledgeAgent")
    assert [m["role"] for m in on_disk] == ["User", "KnowledgeAgent", "Tool", "KnowledgeAgent"]
    call = on_disk[1]["content"]["tool_calls"][0]
    assert call["function"]["name"] == "search_knowledge_base"
    assert on_disk[2]["content"]["content"] == KNOWLEDGE["storage"]


def test_a_tool_that_raises_does_not_end_the_run():
    def search_documents(query: str) -> str:
        """Search the documents.

        Args:
            query: What to look for.
        """
        raise ConnectionError("index offline")

    agent = Agent(agent_name="A", tools=[search_documents], max_loops="auto")
    answer = agent.run("Search the documents for storage")
    assert answer == (
        "search_documents returned: Error: search_documents raised ConnectionError: index offline"
    )


def test_streamed_pieces_join_into_the_answer_written_to_memory():
    agent = Agent(agent_name="Streamer", persistent_memory=True)
    agent.run("Our warehouse is ClickHouse.")
    pieces: list[str] = []
    answer = agent.run("Which warehouse do we use?", streaming_callback=pieces.append)
    assert len(pieces) > 3
    assert "".join(pieces) == answer
    assert stored_messages("Streamer")[-1]["content"] == answer


RESUME = """
import sys
from nbmemory import Agent
agent = Agent(agent_name="Resumer", persistent_memory=True, system_prompt="Be brief.")
print(agent.run(sys.argv[1]))
"""


def test_a_restarted_agent_remembers():
    run_python(RESUME, "Our launch date is 14 March.")
    answer = run_python(RESUME, "When is our launch date?").stdout
    assert "> Our launch date is 14 March." in answer


def test_an_ephemeral_agent_writes_nothing(workspace, tmp_path):
    Agent(agent_name="Ephemeral").run("hello")
    assert not workspace.exists()
    assert list((tmp_path / "cwd").iterdir()) == []


def test_the_default_name_with_persistent_memory_warns():
    with pytest.warns(UserWarning, match="default agent_name"):
        Agent(persistent_memory=True)


@pytest.mark.parametrize("name", ["../escape", "a/b", ""])
def test_a_bad_name_is_refused(name, workspace):
    with pytest.raises(InvalidAgentNameError):
        Agent(agent_name=name, persistent_memory=True)
    assert not workspace.exists()


@pytest.mark.parametrize("loops", [0, -1, "forever", 1.5])
def test_bad_max_loops_is_refused(loops):
    with pytest.raises(ValueError, match="max_loops"):
        Agent(agent_name="A", max_loops=loops)


def test_long_term_memory_is_only_saved_on_autosave(workspace):
    class Store:
        def __init__(self):
            self.calls = []

        def save(self, path):
            self.calls.append(path)

        def __getattr__(self, name):
            raise AssertionError(f"the agent used long_term_memory.{name}")

    store = Store()
    Agent(agent_name="Quiet", long_term_memory=store).run("hi")
    assert store.calls == []
    agent = Agent(agent_name="Saver", long_term_memory=store, autosave=True, persistent_memory=True)
    agent.run("hi")
    folder = workspace / "agents" / "Saver"
    assert store.calls == [str(folder / "long_term_memory")]
    assert json.loads(stored("Saver", "agent_state.json"))["agent_name"] == "Saver"


def test_compression_is_attached_only_when_asked():
    assert isinstance(Agent(agent_name="A")._context_compressor, ContextCompressor)
    assert Agent(agent_name="A", context_compression=False)._context_compressor is None


SPEC = ROOT.parent / "shared" / "reference" / "agent-memory-spec.md"


def spec_examples() -> list[str]:
    if not SPEC.exists():
        return []
    return re.findall(r"```python[^\n]*\n(.*?)```", SPEC.read_text(), re.DOTALL)


@pytest.mark.skipif(
    not SPEC.exists(), reason="the reference specification is not beside this clone"
)
def test_the_specification_examples_run_unchanged_on_nbmemory(monkeypatch):
    """Every example runs, in order and in one namespace (later ones use the earlier ``agent``),
    with ``swarms`` resolving to nbmemory; only model names change."""
    modules = __import__("sys").modules
    monkeypatch.setitem(modules, "swarms", nbmemory)
    monkeypatch.setitem(modules, "swarms.agents", nbmemory)
    monkeypatch.setitem(modules, "swarms.agents.context_compressor", nbmemory.compressor)
    Path("conversation_agent-123.json").write_text('[{"role": "User", "content": "hi"}]')
    namespace: dict = {}
    examples = spec_examples()
    assert len(examples) >= 10
    for number, example in enumerate(examples):
        code = re.sub(
            r'model(_name)?="[^"]+"', r'model\1="nbmemory/offline"', textwrap.dedent(example)
        )
        exec(compile(code, f"<spec example {number}>", "exec"), namespace)
    summary = stored_messages("ResearchAgent")[0]["content"]
    assert "Shortlist: BigQuery, AlloyDB, and ClickHouse Cloud." in summary
    assert namespace["response"].startswith("search_knowledge_base returned:")


HTTP_RESTART = """
import sys
from nbmemory import Agent
agent = Agent(agent_name="Resumer", persistent_memory=True, model_name="openai/test-model",
              api_base=sys.argv[1], api_key="test-key", max_retries=0,
              system_prompt="You are a researcher.", rules="Cite sources.",
              custom_rules_prompt="Be brief.")
print(agent.run(sys.argv[2]))
"""


def test_after_a_restart_the_request_carries_the_earlier_conversation_in_order(openai_server):
    openai_server.reply("BigQuery and ClickHouse.")
    openai_server.reply("Then BigQuery.")
    run_python(HTTP_RESTART, openai_server.url, "Which warehouse for low latency?")
    assert (
        run_python(HTTP_RESTART, openai_server.url, "Narrow it to GCP.").stdout
        == "Then BigQuery.\n"
    )
    sent = openai_server.requests[1]["messages"]
    assert [(m["role"], m["content"]) for m in sent[:3]] == [
        ("system", "\n\n".join(["You are a researcher.", RECALL_LINE, NOTES_LINE])),
        ("user", "Cite sources."),
        ("user", "Be brief."),
    ]
    assert sent[3]["role"] == "system"
    memory = sent[3]["content"]
    assert memory.startswith("[Persistent Memory — MEMORY.md]")
    assert memory.index("Which warehouse for low latency?") < memory.index(
        "BigQuery and ClickHouse."
    )
    assert sent[4:] == [{"role": "user", "content": "Narrow it to GCP."}]


def test_a_tool_round_trip_over_http(openai_server):
    def explode(reason: str) -> str:
        """Fail on purpose.

        Args:
            reason: Why.
        """
        raise RuntimeError(reason)

    openai_server.reply(
        tool_calls=[
            {"name": "search_knowledge_base", "arguments": {"query": "storage"}},
            {"name": "explode", "arguments": {"reason": "no luck"}},
        ]
    )
    openai_server.reply("Batteries cover 4-hour peaks.")
    agent = http_agent(openai_server, tools=[search_knowledge_base, explode], max_loops="auto")
    assert agent.run("What do we know about storage?") == "Batteries cover 4-hour peaks."

    first, second = openai_server.requests
    assert [t["function"]["name"] for t in first["tools"]] == [
        "search_knowledge_base",
        "explode",
        "recall_memory",
        "recall_around",
        "recall_between",
        "edit_notes",
    ]
    assistant, search_result, failure = second["messages"][-3:]
    ids = [call["id"] for call in assistant["tool_calls"]]
    assert search_result == {
        "role": "tool",
        "tool_call_id": ids[0],
        "content": KNOWLEDGE["storage"],
    }
    assert failure["tool_call_id"] == ids[1]
    assert failure["content"] == "Error: explode raised RuntimeError: no luck"
    on_disk = stored_messages("Worker")
    assert [m["role"] for m in on_disk] == ["User", "Worker", "Tool", "Tool", "Worker"]
    assert on_disk[2]["content"]["content"] == KNOWLEDGE["storage"]


def test_an_integer_max_loops_makes_that_many_calls(openai_server):
    assert http_agent(openai_server, max_loops=3).run("Think it over.") == "ok"
    assert len(openai_server.requests) == 3


def test_streaming_over_http_writes_the_joined_answer(openai_server):
    text = "Streaming arrives piece by piece and is saved whole."
    openai_server.reply(text)
    pieces: list[str] = []
    agent = http_agent(openai_server, streaming_callback=pieces.append)
    assert agent.run("Stream please.") == text
    assert len(pieces) > 3 and "".join(pieces) == text
    assert stored_messages("Worker")[-1]["content"] == text


def test_a_failed_call_keeps_the_task_in_memory(openai_server):
    openai_server.reply(status=500, error_message="upstream exploded")
    with pytest.raises(nbmemory.ProviderError, match="upstream exploded"):
        http_agent(openai_server).run("Remember this task.")
    assert [m["content"] for m in stored_messages("Worker")] == ["Remember this task."]


def test_building_an_agent_with_tools_writes_nothing_to_memory():
    for _ in range(3):
        Agent(agent_name="Toolful", tools=[search_knowledge_base], persistent_memory=True)
    assert stored_messages("Toolful") == []


def test_a_missing_key_is_reported_before_anything_is_written(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = Agent(agent_name="Keyless", model_name="gpt-4o-mini", persistent_memory=True)
    with pytest.raises(nbmemory.MissingKeyError, match="OPENAI_API_KEY"):
        agent.run("Is anyone there?")
    assert stored_messages("Keyless") == []


# ----------------------------------------------------------------------------------------------
# Compacting: the one write path every view takes


def test_a_summary_given_by_a_person_is_recorded_like_the_compressors(workspace):
    agent = Agent(agent_name="Keeper", model_name="nbmemory/offline", persistent_memory=True)
    agent.notes.add("The budget is 40k EUR.")
    agent.run("Order PO-7731 ships from Lyon on 2026-05-04.")
    compaction = agent.compact("An order ships from Lyon.")
    assert compaction.archive is not None and compaction.tokens_after < compaction.tokens_before
    assert "PO-7731" in compaction.missing and "Lyon" not in compaction.missing
    assert "40k" not in compaction.missing  # kept by the pinned notes
    [seen] = ReadModel().compactions("Keeper")
    assert seen.recorded and seen.dropped == compaction.missing
    assert read_record(agent.short_memory.docs, compaction.archive) == compaction


def test_compacting_with_nothing_to_summarize_says_why_and_changes_nothing(workspace):
    agent = Agent(
        agent_name="Idle",
        model_name="nbmemory/offline",
        persistent_memory=True,
        context_compression=False,
    )
    agent.run("hello")
    before = stored("Idle")
    with pytest.raises(CompactionError, match="Idle was not compacted: its context compression"):
        agent.compact()
    with pytest.raises(CompactionError, match="must not be empty"):
        agent.compact("   ")
    assert stored("Idle") == before


def test_an_agent_built_on_a_memory_takes_the_model_and_window_it_recorded(workspace):
    Agent(
        agent_name="Origin", model_name="gpt-4o-mini", persistent_memory=True, context_length=5000
    )
    again = Agent.from_memory("Origin", Workspace.from_env(), record_settings=False)
    assert (again.model_name, again.context_length) == ("gpt-4o-mini", 5000)
    fresh = Agent.from_memory("Nobody", Workspace.from_env(), "nbmemory/offline")
    assert fresh.model_name == "nbmemory/offline"


def depot_of(city: str) -> str:
    """The depot that serves a city."""
    return f"{city} is served by depot D-42."


def test_an_agent_built_on_a_memory_counts_what_its_agent_recorded_until_it_runs(workspace):
    first = Agent(
        agent_name="Depot",
        model_name="nbmemory/offline",
        persistent_memory=True,
        system_prompt="Answer with the depot's code.",
        tools=[depot_of],
    )
    first.run("Which depot serves Lyon?")
    shown = ReadModel().usage("Depot").tokens
    again = Agent.from_memory("Depot", Workspace.from_env())  # no prompt, no tool of its own
    assert again.next_request_tokens() == shown == first.next_request_tokens()
    again.run("And Nantes?")  # now it is the agent: its own prompt and tools are counted
    assert again.run_settings().tool_tokens == again.tool_tokens() < first.tool_tokens()
    assert ReadModel().usage("Depot").tokens == again.next_request_tokens()


def test_an_agent_built_on_a_memory_no_agent_ran_on_counts_as_every_view_does(workspace):
    """A memory only a Conversation wrote: the views count it with the default settings (no
    prompt, no tools), and so does an agent built on it to compact it, until it runs."""
    plain = Conversation(name="Written", memory_md_path=memory_path("Written"))
    for n in range(20):
        plain.add("User", f"Vault {n} opens with code ZA{1000 + n}.")
    shown = ReadModel().usage("Written")
    assert not ReadModel().settings("Written")[1]  # nothing recorded: the default settings
    again = Agent.from_memory("Written", Workspace.from_env(), "nbmemory/offline")
    assert again.next_request_tokens() == shown.tokens
    assert again.compact_preview().tokens_before == shown.tokens


def test_an_agent_that_does_not_record_settings_leaves_them_as_they_are(workspace):
    Conversation(name="Plain", memory_md_path=memory_path("Plain")).add("User", "hi")
    agent = Agent.from_memory("Plain", Workspace.from_env(), record_settings=False)
    agent.compact("A greeting.")
    assert not (memory_path("Plain").parent / "settings.json").exists()
