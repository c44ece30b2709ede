"""swarms' Conversation methods and arguments, as swarms code calls them, on nbmemory."""

from __future__ import annotations

import json

import pytest
import yaml

from nbmemory import Conversation
from nbmemory.store import memory_path
from nbmemory.tokens import TokenCounter
from support import stored, stored_messages


def persistent(name: str = "Swarm", **kwargs) -> Conversation:
    return Conversation(name=name, memory_md_path=memory_path(name), **kwargs)


def on_disk(name: str = "Swarm") -> list:
    return [m["content"] for m in stored_messages(name)]


def test_adding_many_at_once_writes_each_through():
    convo = persistent()
    convo.add_multiple_messages(["User", "Agent"], ["hi", "hello"])
    convo.add_multiple(["User"], ["again"])
    convo.add_messages([{"role": "tool", "content": "42", "tool_call_id": "c1"}])
    convo.add_tool_output_to_agent("tool", {"rows": 3})
    assert on_disk() == ["hi", "hello", "again", "42", {"rows": 3}]
    assert convo.conversation_history[-2]["metadata"] == {"tool_call_id": "c1"}
    with pytest.raises(ValueError, match="2 roles for 1 contents"):
        convo.add_multiple(["User", "Agent"], ["one"])
    with pytest.raises(ValueError, match="a 'role'"):
        convo.add_messages([{"content": "no role"}])


def test_batch_add_extends_the_history_only():
    convo = persistent()
    convo.add("User", "written")
    convo.batch_add([{"role": "User", "content": "in this process only"}])
    assert convo.get_final_message_content() == "in this process only"
    assert on_disk() == ["written"]
    assert convo.context_tokens() == convo.count_history_tokens()  # counted from the history


def test_delete_update_and_query_change_this_session_and_keep_the_log():
    convo = persistent()
    for text in ["one", "two", "three"]:
        convo.add("User", text)
    assert convo.query(1)["content"] == "two" and convo.query("9") is None
    convo.update("1", "Agent", "TWO")
    convo.delete(0)
    convo.update(99, "User", "nothing happens")
    assert [(m["role"], m["content"]) for m in convo.conversation_history] == [
        ("Agent", "TWO"),
        ("User", "three"),
    ]
    assert on_disk() == ["one", "two", "three"]  # MEMORY.md is an append-only log
    preload = persistent().conversation_history[-1]["content"]
    assert "\n\none\n\n" in preload and "\n\ntwo\n\n" in preload  # a restart reads the log


def test_views_of_the_history():
    convo = Conversation(system_prompt="Be brief.")
    convo.add("User", "task")
    convo.add("Agent", "first answer")
    convo.add("Agent", "second answer")
    assert convo.count_messages_by_role() == {
        "system": 0,
        "user": 0,
        "assistant": 0,
        "function": 0,
        "System": 1,
        "User": 1,
        "Agent": 2,
    }
    assert convo.get_last_message_as_string() == "Agent: second answer"
    assert convo.return_messages_as_list()[1] == {"role": "User", "content": "task"}
    assert convo.return_messages_as_dictionary() == convo.return_messages_as_list()
    assert convo.return_messages_as_strings()[2] == "Agent: first answer"
    assert json.loads(convo.return_json()) == convo.return_messages_as_list()
    assert [m["content"] for m in convo.return_all_except_first()] == [
        "first answer",
        "second answer",
    ]
    assert convo.return_all_except_first_string() == "first answer\nsecond answer"
    assert convo.return_dict_final() == ("second answer", "second answer")
    assert convo.return_list_final() == ["second answer"]
    assert convo.to_list() is convo.conversation_history
    assert yaml.safe_load(convo.to_yaml())[1]["content"] == "task"
    assert convo.search_keyword_in_conversation("answer") == convo.conversation_history[2:]
    assert convo.get_str() == convo.return_history_as_string()
    assert convo.get_cache_stats()["hits"] == 0
    assert Conversation().get_last_message_as_string() == ""


def test_export_and_import_files(tmp_path):
    convo = Conversation()
    convo.add("User", "naïve ✓")
    convo.export_conversation(str(tmp_path / "c.json"))
    convo.export_conversation(str(tmp_path / "c.txt"))
    assert (tmp_path / "c.txt").read_text(encoding="utf-8") == "User: naïve ✓\n"
    other = Conversation()
    other.import_conversation(str(tmp_path / "c.json"))
    assert other.get_final_message_content() == "naïve ✓"
    (tmp_path / "c.yaml").write_text(convo.to_yaml(), encoding="utf-8")
    third = Conversation()
    third.load_from_yaml(str(tmp_path / "c.yaml"))
    third.load_from_json(str(tmp_path / "missing.json"))  # nothing there: nothing changes
    assert third.return_messages_as_list() == [{"role": "User", "content": "naïve ✓"}]


def test_swarms_constructor_arguments_are_accepted_and_do_what_swarms_documents():
    posted = []

    class Channel:
        def post(self, role, text):
            posted.append((role, text))

    convo = Conversation(
        system_prompt="rules",
        token_count=True,
        message_id_on=True,
        save_as_yaml_on=True,
        save_as_json_bool=False,
        dynamic_context_window=True,
        cache_enabled=True,
        output_metadata=False,
        channel=Channel(),
    )
    message = convo.add("User", "hello there")
    assert message["token_count"] == TokenCounter("gpt-4o").count("User: hello there")
    assert len(message["message_id"]) == 32
    assert convo.export_method == "yaml"
    assert posted == [("User", "hello there")]  # the system prompt was never posted


def test_empty_blank_and_none_are_kept_in_the_history_but_not_written():
    convo = persistent()
    for content in ["", "   ", None, "kept"]:
        convo.add("User", content)
    assert [m["content"] for m in convo.conversation_history] == ["", "   ", None, "kept"]
    assert on_disk() == ["kept"]
    assert convo.context_tokens() == persistent().context_tokens()  # as after a restart


def test_the_preload_is_the_whole_memory_file_header_included():
    persistent().add("User", "Our warehouse is ClickHouse.")
    preload = persistent().conversation_history[-1]["content"]
    assert preload.startswith("[Persistent Memory — MEMORY.md]")
    assert preload.endswith(stored("Swarm").decode())
    assert "**Conversation:** Swarm" in preload


def test_compact_stores_the_summary_as_given():
    convo = persistent()
    convo.add("User", "hello")
    convo.compact("X")
    assert on_disk() == ["X"] and convo.get_final_message_content() == "X"


def test_the_agents_swarms_memory_surface(tmp_path, capsys):
    from nbmemory import Agent
    from nbmemory.errors import MemoryFormatError

    agent = Agent(
        agent_name="Saver",
        persistent_memory=True,
        print_on=True,
        verbose=True,
        saved_state_path="checkpoint",
    )
    agent.add_memory("The office is in Lyon.")
    assert on_disk("Saver") == ["The office is in Lyon."]
    answer = agent.run("Where is the office?")
    assert capsys.readouterr().out == f"Saver: {answer}\n"
    saved = agent.save()
    assert saved == memory_path("Saver").parent / "checkpoint.json"
    elsewhere = agent.save(tmp_path / "state")
    assert elsewhere == tmp_path / "state.json"

    fresh = Agent(agent_name="Saver", saved_state_path="checkpoint", persistent_memory=True)
    fresh.context_length = 1
    fresh.load()
    assert fresh.context_length == agent.context_length
    assert fresh.short_memory.get_final_message_content() == answer
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(MemoryFormatError, match="not an agent state"):
        fresh.load(tmp_path / "bad.json")
    with pytest.raises(FileNotFoundError):
        fresh.load(tmp_path / "missing.json")


def test_add_in_memory_is_add_written_through():
    convo = persistent()
    message = convo.add_in_memory("User", "remember Lyon", {"source": "chat"}, "input")
    assert message["metadata"] == {"source": "chat"} and message["category"] == "input"
    assert on_disk() == ["remember Lyon"]


def test_a_tool_calling_turn_becomes_a_chat_request_with_its_results():
    convo = Conversation(system_prompt="sys")
    convo.add("User", "weather in Lyon and Oslo?")
    calls = convo.record_assistant(
        [
            {"id": "a", "function": {"name": "weather", "arguments": '{"city": "Lyon"}'}},
            {"function": {"name": "weather", "arguments": '{"city": "Oslo"}'}},
            {"function": {}},  # not a call: ignored
        ]
    )
    assert [c["id"] for c in calls] == ["a", "call_2_1"]
    results: dict = {}
    Conversation.map_batch_results(calls, ["sunny", "snow"], results)
    convo.flush_tool_results(calls[:1], results)
    convo.record_assistant("It is sunny in Lyon.", role="Agent")
    assert convo.to_messages(agent_name="Agent") == [
        {"role": "user", "content": "weather in Lyon and Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": convo.conversation_history[2]["tool_calls"],
        },
        {"role": "tool", "tool_call_id": "a", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2_1", "content": "(no result recorded for weather)"},
        {"role": "assistant", "content": "It is sunny in Lyon."},
    ]
    one_for_all: dict = {}
    Conversation.map_batch_results(calls, "same", one_for_all, formatter=str.upper)
    assert one_for_all == {"a": "SAME", "call_2_1": "SAME"}
    assert convo.to_messages(start=3, prefix=[{"role": "system", "content": "p"}]) == [
        {"role": "system", "content": "p"},
        {"role": "user", "content": "It is sunny in Lyon."},
    ]


def test_visible_messages_follow_turns_and_audiences():
    from types import SimpleNamespace

    convo = Conversation()
    convo.batch_add(
        [
            {"role": "A", "content": "to all", "turn": 0, "visible_to": "all"},
            {"role": "A", "content": "to B", "turn": 0, "visible_to": ["B"]},
            {"role": "B", "content": "later", "turn": 1, "visible_to": "all"},
        ]
    )
    seen = convo.get_visible_messages(SimpleNamespace(agent_name="C"), turn=1)
    assert [m["content"] for m in seen] == ["to all"]
    seen = convo.get_visible_messages(SimpleNamespace(agent_name="B"), turn=2)
    assert [m["content"] for m in seen] == ["to all", "to B", "later"]


def test_windows_of_the_history_cut_messages_at_token_boundaries():
    counter = TokenCounter("gpt-4o")
    convo = persistent(context_length=12)
    for text in ["alpha beta gamma", "delta epsilon zeta", "eta theta iota kappa lambda"]:
        convo.add("User", text)
    newest = convo.dynamic_auto_chunking()
    assert newest.endswith("User: eta theta iota kappa lambda")
    assert counter.count(newest) <= 12 and "delta" not in newest
    convo.truncate_memory_with_tokenizer()
    contents = [m["content"] for m in convo.conversation_history]
    assert contents[:2] == ["alpha beta gamma", "delta epsilon zeta"]
    assert sum(counter.count(c) for c in contents) <= 12
    assert "eta theta iota kappa lambda".startswith(contents[2]) and contents[2]
    assert len(on_disk()) == 3  # MEMORY.md keeps every message


def test_categories_are_counted_apart():
    counter = TokenCounter("gpt-4o")
    convo = Conversation()
    convo.add("User", "what is the budget?", category="input")
    convo.add("Agent", "It is 40 EUR.", category="output")
    convo.add("Agent", "uncategorized")
    assert convo.export_and_count_categories() == {
        "input_tokens": counter.count("what is the budget?"),
        "output_tokens": counter.count("It is 40 EUR."),
        "total_tokens": counter.count("what is the budget?") + counter.count("It is 40 EUR."),
    }


def test_saved_conversations_are_named_listed_and_loaded_back(tmp_path):
    folder = str(tmp_path / "saved")
    convo = Conversation(name="plans", conversations_dir=folder)
    assert convo.save_filepath == str(tmp_path / "saved" / "conversation_plans.json")
    convo.add("User", "ship on Friday")
    convo.export()
    assert Conversation.list_cached_conversations(folder) == ["conversation_plans"]
    [listed] = Conversation.list_conversations(folder)
    assert listed["name"] == "plans" and listed["filepath"] == convo.save_filepath
    loaded = Conversation.load_conversation("plans", conversations_dir=folder)
    assert loaded.get_final_message_content() == "ship on Friday"
    # A named conversation picks up where its saved file left off, as in swarms.
    assert Conversation(name="plans", conversations_dir=folder).to_dict() == convo.to_dict()
    assert len(Conversation(conversations_dir=folder)) == 0  # unnamed: a new conversation
    with pytest.warns(UserWarning, match="no saved conversation named 'other'"):
        assert len(Conversation.load_conversation("other", conversations_dir=folder)) == 0
    assert Conversation.list_conversations(str(tmp_path / "nothing")) == []


def test_a_conversation_with_memory_resumes_from_memory_md_only(tmp_path):
    folder = str(tmp_path / "saved")
    first = persistent(conversations_dir=folder)
    first.add("User", "said once")
    first.export()
    again = persistent(conversations_dir=folder)
    assert [m["role"] for m in again.conversation_history] == ["System"]  # the preload alone


def test_a_damaged_saved_file_is_an_error_and_stays_as_it_was(tmp_path):
    from nbmemory.errors import MemoryFormatError

    saved = tmp_path / "conversation_plans.json"
    saved.write_text("{half", encoding="utf-8")
    with pytest.raises(MemoryFormatError, match="not valid JSON"):
        Conversation(name="plans", conversations_dir=str(tmp_path), autosave=True)
    assert saved.read_text(encoding="utf-8") == "{half"
    with pytest.raises(ValueError, match="export_method must be 'json' or 'yaml'"):
        Conversation(export_method="csv")


def test_the_constructor_takes_swarms_positional_order():
    import inspect

    names = list(inspect.signature(Conversation).parameters)
    assert names[11:16] == [
        "save_as_yaml_on",
        "save_as_json_bool",
        "token_count",
        "message_id_on",
        "tokenizer_model_name",
    ]
