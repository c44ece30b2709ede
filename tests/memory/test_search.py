"""Keyword search: each message indexed once, the index extended as a memory grows."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nbmemory import Agent, Conversation
from nbmemory.memory import search
from nbmemory.memory.search import MessageIndex, file_index
from nbmemory.views.read_model import ReadModel
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


def test_a_conversation_search_sees_every_change_to_the_history():
    convo = Conversation(name="Finder")
    convo.add("User", "The code name is BLUEFIN-7.")
    convo.add("Finder", "Noted: BLUEFIN-7.")
    assert [m["role"] for m in convo.search("BLUEFIN")] == ["User", "Finder"]
    assert convo.search("bluefin") == []  # case-sensitive, as in swarms
    convo.add("User", "BLUEFIN ships in May.")
    assert len(convo.search("BLUEFIN")) == 3  # added after a search
    convo.conversation_history[0]["content"] = "The code name changed."  # edited in place
    assert convo.search("BLUEFIN")[0]["content"] == "Noted: BLUEFIN-7."
    convo.delete(1)
    assert [m["content"] for m in convo.search("BLUEFIN")] == ["BLUEFIN ships in May."]
    convo.add("Tool", {"result": "BLUEFIN"})
    assert len(convo.search("BLUEFIN")) == 2
    convo.conversation_history[-1]["content"]["result"] = "ORCA"  # structured, changed in place
    assert len(convo.search("BLUEFIN")) == 1
    assert len(convo.search("")) == len(convo.conversation_history)


def test_a_match_never_runs_from_one_message_into_the_next():
    convo = Conversation(name="Finder")
    convo.add("User", "left\x00")
    convo.add("User", "right")
    convo.add("User", "\x00right")
    assert [m["content"] for m in convo.search("t\x00r")] == []
    assert [m["content"] for m in convo.search("\x00r")] == ["\x00right"]
    assert [m["content"] for m in convo.search("t\x00")] == ["left\x00"]


@settings(max_examples=2000, deadline=None)
@given(
    text=st.text(alphabet="eta zqZ7é\x00", max_size=300).map(lambda t: t * 40),
    needle=st.text(alphabet="eta zqZ7é\x00", max_size=5),
    start=st.integers(-20, 400),
    end=st.one_of(st.none(), st.integers(-20, 12_000)),
)
def test_find_finds_what_str_find_finds(text, needle, start, end):
    """The rarest character is looked for first; where it is common, the whole needle is."""
    assert search.find(text, needle, start, end) == text.find(needle, start, end)


def test_a_long_history_is_searched_whole_as_it_grows():
    convo = Conversation(name="Finder")
    for i in range(1300):  # three chunks of joined text
        convo.add("User", f"note {i}" + (" ORCA" if i % 500 == 499 else ""))
    assert [m["content"] for m in convo.search("ORCA")] == ["note 499 ORCA", "note 999 ORCA"]
    convo.add("User", "ORCA again")
    convo.conversation_history[999]["content"] = "note 999"
    assert [m["content"] for m in convo.search("ORCA")] == ["note 499 ORCA", "ORCA again"]
    assert len(convo.search("note 1")) == 1 + 10 + 100 + 300
