import json

import pytest

from nbmemory import ChangeEvent, Conversation, MemoryFormatError, MemoryWarning
from nbmemory.memory.preload import PRELOAD_MARKER, preload_text
from nbmemory.store import list_agents, memory_path
from nbmemory.store.memory_format import parse
from nbmemory.tokens import TokenCounter
from support import append_raw, run_python, stored, stored_messages


def agent_conversation(name="ResearchAgent", **kwargs):
    kwargs.setdefault("system_prompt", "You are a researcher.")
    return Conversation(name=name, memory_md_path=memory_path(name), **kwargs)


def test_first_use_creates_memory_md_with_its_header():
    convo = agent_conversation()
    text = stored("ResearchAgent").decode()
    assert text.startswith("# Agent Memory\n\n**Conversation:** ResearchAgent\n**Created:** ")
    assert text.endswith("## Interaction Log\n\n")
    assert convo.memory_md_path == str(memory_path("ResearchAgent"))


def test_every_add_is_on_disk_before_it_returns_and_static_messages_never_are():
    convo = agent_conversation(rules="Cite sources.", custom_rules_prompt="Be brief.")
    convo.add("User", "Research cloud databases.")
    assert [m["content"] for m in stored_messages("ResearchAgent")] == ["Research cloud databases."]
    convo.add("ResearchAgent", "BigQuery and ClickHouse.")
    assert [(m["role"], m["content"]) for m in stored_messages("ResearchAgent")] == [
        ("User", "Research cloud databases."),
        ("ResearchAgent", "BigQuery and ClickHouse."),
    ]


RESTART = """
import json, sys
from nbmemory import Conversation
from nbmemory.store import list_agents, memory_path
name = sys.argv[1]
convo = Conversation(name=name, system_prompt="You are a researcher.", rules="Cite sources.",
                     custom_rules_prompt="Be brief.", memory_md_path=memory_path(name))
if len(sys.argv) > 2:
    convo.add("User", sys.argv[2])
    convo.add(name, "Reply to: " + sys.argv[2])
print(json.dumps(convo.to_dict()))
"""


def test_a_new_process_with_the_same_name_preloads_memory_in_the_spec_order():
    run_python(RESTART, "ResearchAgent", "Which warehouse for low latency?")
    run_python(RESTART, "ResearchAgent", "Narrow it to GCP.")
    history = json.loads(run_python(RESTART, "ResearchAgent").stdout)
    assert [(m["role"], m["content"]) for m in history[:3]] == [
        ("System", "You are a researcher."),
        ("User", "Cite sources."),
        ("User", "Be brief."),
    ]
    assert len(history) == 4
    assert history[3]["role"] == "System"
    preload = history[3]["content"]
    assert preload.startswith(PRELOAD_MARKER)
    order = ["Which warehouse", "Reply to: Which", "Narrow it to GCP.", "Reply to: Narrow"]
    positions = [preload.index(text) for text in order]
    assert positions == sorted(positions)
    assert "You are a researcher." not in preload
    assert len(stored_messages("ResearchAgent")) == 4


def test_another_name_starts_a_separate_folder(workspace):
    run_python(RESTART, "ResearchAgent", "remember me")
    history = json.loads(run_python(RESTART, "OtherAgent").stdout)
    assert len(history) == 3
    assert list_agents() == ["OtherAgent", "ResearchAgent"]


def test_without_a_memory_path_nothing_touches_the_disk(workspace, tmp_path):
    convo = Conversation(name="Ephemeral", system_prompt="s")
    convo.add("User", "hello")
    convo.compact("summary")
    assert convo.memory_md_path is None
    assert not workspace.exists()
    assert list((tmp_path / "cwd").iterdir()) == []


def test_clearing_memory_md_path_stops_writes_but_keeps_the_file():
    convo = agent_conversation()
    convo.add("User", "written")
    convo.memory_md_path = None
    convo.add("User", "only in memory")
    assert [m["content"] for m in stored_messages("ResearchAgent")] == ["written"]
    assert convo.get_final_message_content() == "only in memory"


def test_compact_archives_wipes_and_reseeds_with_the_summary():
    convo = agent_conversation(rules="Cite sources.")
    convo.add("User", "Research warehouses.")
    convo.add("ResearchAgent", "BigQuery, ClickHouse, AlloyDB.")
    archive = convo.compact("User prefers GCP. Shortlist: BigQuery, AlloyDB.")
    assert [m["content"] for m in stored_messages("ResearchAgent", archive)] == [
        "Research warehouses.",
        "BigQuery, ClickHouse, AlloyDB.",
    ]
    summary = "User prefers GCP. Shortlist: BigQuery, AlloyDB."  # stored as given
    assert [(m["role"], m["content"]) for m in convo.to_dict()] == [
        ("System", "You are a researcher."),
        ("User", "Cite sources."),
        ("System", summary),
    ]
    assert [(m["role"], m["content"]) for m in stored_messages("ResearchAgent")] == [
        ("System", summary)
    ]
    assert convo.archives() == [archive]
    restarted = agent_conversation()
    assert restarted.preloaded_messages[0]["content"] == summary
    assert "Research warehouses." not in restarted.return_history_as_string()


@pytest.mark.parametrize("summary", ["", "   ", None])
def test_an_empty_summary_is_refused_and_nothing_changes(summary):
    convo = agent_conversation()
    convo.add("User", "keep me")
    with pytest.raises(ValueError, match="summary"):
        convo.compact(summary)
    assert [m["content"] for m in stored_messages("ResearchAgent")] == ["keep me"]
    assert convo.archives() == []


def test_history_string_final_message_and_search():
    convo = Conversation(system_prompt="sys")
    convo.add("User", "Research low-latency warehouses on GCP.")
    convo.add("Agent", {"shortlist": ["BigQuery", "AlloyDB"]})
    assert convo.return_history_as_string() == (
        "System: sys\n\nUser: Research low-latency warehouses on GCP.\n\n"
        'Agent: {"shortlist": ["BigQuery", "AlloyDB"]}'
    )
    assert convo.get_final_message_content() == {"shortlist": ["BigQuery", "AlloyDB"]}
    assert [m["role"] for m in convo.search("GCP")] == ["User"]
    assert [m["role"] for m in convo.search_keyword_in_conversation("AlloyDB")] == ["Agent"]
    assert convo.search("gcp") == []


def test_search_memory_reaches_archives():
    convo = agent_conversation()
    convo.add("User", "The budget is 40k EUR.")
    convo.compact("Budget agreed.")
    convo.add("User", "Budget approved by finance.")
    hits = convo.search_memory("BUDGET", archives=True)
    assert [(h.source.startswith("history_"), h.message["content"]) for h in hits] == [
        (True, "The budget is 40k EUR."),
        (False, "Budget agreed."),
        (False, "Budget approved by finance."),
    ]
    assert len(convo.search_memory("budget")) == 2
    assert convo.search_memory("budget", case_sensitive=True) == []
    assert convo.archive_messages(hits[0].source)[0]["content"] == "The budget is 40k EUR."


def test_token_count_matches_tiktoken_on_the_history_string_and_is_not_capped():
    convo = Conversation(
        system_prompt="You are terse.", context_length=50, tokenizer_model_name="gpt-4o"
    )
    for i in range(40):
        convo.add("User" if i % 2 else "Agent", f"Message number {i} about latency budgets.")
    expected = TokenCounter("gpt-4o").count(convo.return_history_as_string())
    assert convo.count_history_tokens() == expected
    assert expected > 50
    usage = convo.token_usage()
    assert (usage.used, usage.context_length, usage.encoding) == (expected, 50, "o200k_base")
    convo.compact("short")
    assert convo.count_history_tokens() == TokenCounter("gpt-4o").count(
        convo.return_history_as_string()
    )


def test_observers_see_adds_and_compactions():
    convo = agent_conversation()
    events: list[ChangeEvent] = []
    unsubscribe = convo.on_change(events.append)
    convo.add("User", "hello")
    archive = convo.compact("greeted")
    unsubscribe()
    convo.add("User", "unseen")
    assert [(e.kind, e.message["content"]) for e in events] == [
        ("add", "hello"),
        ("compact", "greeted"),
    ]
    assert events[1].archive == archive


def test_a_failing_observer_does_not_break_a_write():
    convo = agent_conversation()
    convo.on_change(lambda event: 1 / 0)
    with pytest.warns(UserWarning, match="ZeroDivisionError"):
        convo.add("User", "still saved")
    assert stored_messages("ResearchAgent")[0]["content"] == "still saved"


@pytest.mark.parametrize("role", ["", "  ", "two\nlines", None])
def test_a_bad_role_is_refused_and_nothing_is_written(role):
    convo = agent_conversation()
    with pytest.raises(ValueError, match="role"):
        convo.add(role, "text")
    assert stored_messages("ResearchAgent") == []
    assert len(convo) == 1


def test_a_ten_megabyte_message_works():
    big = ("0123456789abcdef" * 64 + "\n") * 10_000
    agent_conversation().add("Tool", big)
    assert agent_conversation().preloaded_messages[0]["content"] == big


def test_a_damaged_memory_still_preloads_with_a_warning():
    agent_conversation().add("User", "before the crash")
    append_raw("ResearchAgent", b"### ResearchAgent \xe2\x80\x94 2026-04-20T18:35:21\n\nhalf \xff")
    with pytest.warns(MemoryWarning):
        convo = agent_conversation()
    assert [(m["role"], m["content"]) for m in convo.preloaded_messages] == [
        ("User", "before the crash"),
        ("unparsed", "### ResearchAgent — 2026-04-20T18:35:21\n\nhalf \ufffd"),
    ]


@pytest.mark.files("what was found whole is noted on the file")
def test_a_memory_changed_in_place_since_it_was_resumed_is_checked_again():
    convo = agent_conversation()
    convo.add("User", "one")
    convo.add("User", "two")
    assert agent_conversation().preloaded_count == 2  # found whole, and noted so
    path = memory_path("ResearchAgent")
    data = path.read_bytes()
    with open(path, "r+b") as file:  # the same size: only the bytes tell
        file.write(data.replace(b"one\n\n---", b"one\n\n-+-"))
    with pytest.warns(MemoryWarning, match="no closing"):
        resumed = agent_conversation()
    assert [m["role"] for m in resumed.preloaded_messages] == ["unparsed", "User"]


def test_a_resumed_history_holds_the_file_however_it_is_first_read():
    convo = agent_conversation(rules="Cite sources.")
    convo.add("User", "naïve ✓ — 中文")
    first_reads = [
        lambda c: c.conversation_history[2]["content"],
        lambda c: c.to_dict()[2]["content"],
        lambda c: c.return_history_as_string().split("System: ")[-1].rsplit("\n\nUser: ")[0],
        lambda c: json.loads(c.to_json())[2]["content"],
    ]
    for n, read in enumerate(first_reads):
        text = stored("ResearchAgent").decode()
        resumed = agent_conversation(rules="Cite sources.")
        assert len(resumed) == 3 and resumed.preloaded_count == 1 + n
        resumed.add("User", "after the resume")  # appending needs not the preload's text
        assert read(resumed).startswith(PRELOAD_MARKER) and read(resumed).endswith(text)
    cleared = agent_conversation()
    cleared.clear()
    assert cleared.conversation_history == [] and cleared.preloaded_count == 5


def test_export_and_load_round_trip(tmp_path):
    convo = Conversation(system_prompt="sys", save_filepath=str(tmp_path / "out" / "convo.json"))
    convo.add("User", "naïve ✓")
    convo.add("Agent", {"k": [1, 2]})
    json_path = convo.export(force=True)
    yaml_path = convo.save_as_yaml(force=True)
    assert json_path.endswith("convo.json") and yaml_path.endswith("convo.yaml")
    for path in (json_path, yaml_path):
        fresh = Conversation()
        fresh.load(path)
        assert fresh.to_dict() == convo.to_dict()


def test_saving_without_force_or_autosave_only_warns(tmp_path):
    convo = Conversation(save_filepath=str(tmp_path / "c.json"))
    with pytest.warns(UserWarning, match="force=True"):
        assert convo.save_as_json(force=False) is None
    assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize(
    ("name", "text", "error"),
    [
        ("bad.json", "{not json", "not valid JSON"),
        ("bad.yaml", "a: [unclosed", "not valid YAML"),
        ("object.yaml", "!!python/object:os.system {}", "not valid YAML"),
        ("shape.json", '{"role": "User"}', "list of messages"),
        ("message.json", '[{"role": "User"}]', "needs a 'role' and a 'content'"),
        ("notes.txt", "[]", ".json, .yaml or .yml"),
    ],
)
def test_a_malformed_file_is_a_clear_error_and_memory_is_untouched(tmp_path, name, text, error):
    path = tmp_path / name
    path.write_text(text)
    convo = Conversation(system_prompt="sys")
    convo.add("User", "keep")
    before = convo.to_dict()
    with pytest.raises(MemoryFormatError, match=error):
        convo.load(path)
    assert convo.to_dict() == before


def test_load_accepts_the_wrapped_shape(tmp_path):
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"conversation_history": [{"role": "User", "content": "hi"}]}))
    convo = Conversation()
    convo.load(path)
    assert convo.to_dict() == [{"role": "User", "content": "hi"}]


def test_the_preload_is_the_memory_as_written_and_only_what_was_readable_when_damaged():
    convo = agent_conversation()
    convo.add("User", "Research warehouses.")
    convo.add("ResearchAgent", "a line\n---\nthat looks like structure")
    text = stored("ResearchAgent").decode()
    preload = agent_conversation().to_dict()[1]["content"]
    assert preload.endswith("\n\n" + text.split("## Interaction Log\n\n", 1)[1])
    append_raw("ResearchAgent", "### User — 2026-04-20T18:36:00\n\ntorn".encode())
    with pytest.warns(MemoryWarning, match="no closing"):
        damaged = agent_conversation().to_dict()[1]["content"]
    assert damaged.endswith(
        "### unparsed — 2026-04-20T18:36:00\n\n\\### User — 2026-04-20T18:36:00\n\ntorn\n\n---\n\n"
    )


def test_an_unset_context_length_is_the_models_window():
    assert (
        Conversation(context_length=None, tokenizer_model_name="gpt-4o").context_length == 128_000
    )
    assert (
        Conversation(context_length=None, tokenizer_model_name="mystery").context_length == 16_000
    )
    assert Conversation(context_length=32_000).context_length == 32_000


def test_a_resumed_memory_is_read_once_and_its_messages_are_what_the_file_held_then():
    convo = agent_conversation("Echo")
    convo.add("User", "### Step 1\nplain text — with a dash")
    convo.add("Echo", {"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]})
    held = parse(stored("Echo"))
    resumed = agent_conversation("Echo")  # its messages are parsed when first used
    assert resumed.preloaded_count == 2
    convo.add("User", "added after the resume")
    convo.compact("a summary")
    assert resumed.preloaded_messages == held.messages
    assert resumed.to_dict()[1]["content"] == preload_text(held.header, held.log)
