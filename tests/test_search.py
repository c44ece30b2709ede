"""Keyword search: each message indexed once, the index extended as a memory grows."""

from __future__ import annotations

from nbmemory import Agent
from nbmemory.read_model import ReadModel
from nbmemory.search import MessageIndex, file_index
from support import agent_docs, run_python

APPEND = (
    "import sys\n"
    "from nbmemory import Agent\n"
    "Agent(agent_name='Finder', persistent_memory=True).short_memory.add('User', sys.argv[1])\n"
)


def test_a_search_finds_any_case_and_says_which_messages():
    index = MessageIndex([{"content": "Budget: 40k EUR"}, {"content": {"tool": "BUDGET"}}])
    assert index.search("budget") == [0, 1]
    assert index.search("budget", case_sensitive=True) == []
    assert index.search("") == [0, 1]
    index.extend([*index.messages, {"content": "the budget again"}])
    assert index.search("budget") == [0, 1, 2]
    assert index.search("budget", within=2) == [0, 1]  # a reading made before the third
    assert index.search("again", within=2) == []


def test_an_append_extends_the_index_and_a_compaction_starts_a_new_one(workspace):
    agent = Agent(agent_name="Finder", persistent_memory=True)
    agent.short_memory.add("User", "The code name is BLUEFIN-7.")
    docs = agent_docs("Finder")
    first = file_index(docs, "MEMORY.md")
    assert [first.messages[i]["content"] for i in first.search("bluefin")] == [
        "The code name is BLUEFIN-7."
    ]
    run_python(APPEND, "Bluefin ships in May.")  # another process appends
    grown = file_index(docs, "MEMORY.md")
    assert grown is first  # extended, not built again
    assert len(grown.search("BLUEFIN")) == 2
    found = ReadModel().search("Finder", "bluefin")
    assert [item.text for item in found.items] == [
        "The code name is BLUEFIN-7.",
        "Bluefin ships in May.",
    ]
    agent.compact("Nothing about fish.")
    after = file_index(docs, "MEMORY.md")
    assert after is not first and after.search("bluefin") == []
    assert ReadModel().search("Finder", "bluefin", archives=True).total == 2


def test_the_read_model_never_shows_a_hit_beyond_its_reading(workspace):
    agent = Agent(agent_name="Finder", persistent_memory=True)
    agent.short_memory.add("User", "alpha one")
    model = ReadModel()
    assert model.search("Finder", "alpha").total == 1
    index = file_index(agent_docs("Finder"), "MEMORY.md")
    index.extend([*index.messages, {"role": "User", "content": "alpha two, not in the file"}])
    assert model.search("Finder", "alpha").total == 1
    assert model.find("Finder", "two").index is None
