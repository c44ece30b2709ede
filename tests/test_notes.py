"""Pinned notes: in every request word for word, untouched by compaction, edited safely."""

from __future__ import annotations

import stat

import pytest

from nbmemory import Agent
from nbmemory.cli import main
from nbmemory.errors import InvalidNoteError, NoteChangedError, NoteNotFoundError, NotesFullError
from nbmemory.memory_file import parse as parse_memory
from nbmemory.notes import (
    MARKER,
    NOTES_FILE,
    TOOL_NAME,
    Notes,
    parse,
    render,
    saved_notes,
    tool_answer,
)
from nbmemory.read_model import ReadModel
from support import http_agent, stored


def test_the_file_is_a_heading_and_bullets_and_hand_edits_are_kept():
    text = render(["Budget: 40k EUR.", "Two lines\nof one note."])
    assert text == "# Pinned notes\n\n- Budget: 40k EUR.\n- Two lines\n  of one note.\n"
    assert parse(text) == ["Budget: 40k EUR.", "Two lines\nof one note."]
    assert parse(text + "\nWritten by hand.\n") == [*parse(text), "Written by hand."]
    assert render([]) == ""


def test_pin_replace_and_unpin_under_the_budget(tmp_path):
    notes = Notes(tmp_path / "agent", budget=60)
    notes.add("The user is Ada.")
    notes.add("Budget: 40k EUR.")
    assert stat.S_IMODE(notes.path.stat().st_mode) == 0o600
    assert notes.replace("budget", "Budget: 45k EUR.") == ["The user is Ada.", "Budget: 45k EUR."]
    assert notes.remove("1") == ["Budget: 45k EUR."]
    with pytest.raises(NoteNotFoundError):
        notes.remove("zeppelin")
    with pytest.raises(InvalidNoteError):
        notes.add("   ")
    before = notes.text()
    with pytest.raises(NotesFullError, match="over their budget of 60"):
        notes.add("word " * 80)
    assert notes.text() == before  # nothing cut, nothing written
    notes.remove("Budget")
    assert not notes.path.exists() and notes.items() == []


def test_every_request_carries_the_notes_and_compaction_leaves_them(openai_server):
    agent = http_agent(openai_server, "Pinner", system_prompt="Be brief.")
    agent.notes.add("The user's name is Ada.")
    agent.run("Hello.")
    agent.short_memory.compact("Greetings were exchanged.")
    agent.run("Hello again.")
    for request in openai_server.requests:
        notes = request["messages"][1]
        assert notes == {"role": "system", "content": f"{MARKER}\n{agent.notes.text()}"}
    assert agent.notes.items() == ["The user's name is Ada."]
    assert "Ada" not in stored("Pinner").decode()


def test_the_model_edits_its_notes_through_its_tool(openai_server):
    openai_server.reply(tool_calls=[{"name": TOOL_NAME, "arguments": {"add": "Budget: 40k."}}])
    openai_server.reply("Pinned.")
    openai_server.reply(tool_calls=[{"name": TOOL_NAME, "arguments": {"add": "x " * 600}}])
    openai_server.reply("Too long.")
    agent = http_agent(openai_server, "Pinner")
    assert agent.run("Remember the budget: 40k.") == "Pinned."
    assert agent.notes.items() == ["Budget: 40k."]
    agent.run("Remember this long text.")
    refusal = openai_server.requests[-1]["messages"][-1]
    assert refusal["role"] == "tool" and refusal["content"].startswith("Notes unchanged:")
    assert agent.notes.items() == ["Budget: 40k."]
    tools = [m["content"] for m in parse_memory(stored("Pinner")).messages]
    assert tools[2]["name"] == TOOL_NAME and "Budget: 40k." in tools[2]["content"]


def test_every_view_counts_the_notes_as_the_agent_does(workspace):
    agent = Agent(agent_name="Counted", persistent_memory=True)
    agent.run("hello")
    before = ReadModel().usage("Counted").tokens
    agent.notes.add("A long standing instruction: answer in French, always. " * 3)
    assert ReadModel().usage("Counted").tokens == agent.next_request_tokens() > before
    assert ReadModel().notes("Counted") == agent.notes.items()


def test_people_pin_from_the_command_line(workspace, capsys):
    Agent(agent_name="Shell", persistent_memory=True).run("hello")
    assert main(["notes", "Shell", "--pin", "Office: Lyon."]) == 0
    assert main(["notes", "Shell", "--pin", "Deadline: May."]) == 0
    assert main(["notes", "Shell", "--unpin", "Lyon"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1. Deadline: May."
    assert stored("Shell", NOTES_FILE) == b"# Pinned notes\n\n- Deadline: May.\n"
    assert main(["notes", "Shell", "--unpin", "zeppelin"]) == 1
    assert main(["notes", "../x", "--pin", "x"]) == 2


def test_the_offline_model_pins_what_it_is_asked_to_remember_and_answers_from_it(workspace):
    agent = Agent(agent_name="Keeper", persistent_memory=True)
    assert agent.run("Please remember: the vault code is KA1234.") == "Pinned to my notes."
    agent.short_memory.compact("Nothing of note was said.")
    resumed = Agent(agent_name="Keeper", persistent_memory=True, recall=False)
    assert resumed.run("What is the vault code?").endswith("> the vault code is KA1234.")


def test_the_offline_model_says_when_the_notes_are_full(workspace):
    agent = Agent(agent_name="Keeper", persistent_memory=True)
    agent.notes.budget = 40
    agent.run("Remember: the office is in Lyon.")
    reply = agent.run("Remember: " + "a very long note that will not fit " * 4)
    assert reply.startswith("Notes unchanged:") and "budget" in reply
    assert agent.notes.items() == ["the office is in Lyon."]


def test_without_the_notes_tool_a_request_to_remember_is_only_a_message(workspace):
    agent = Agent(agent_name="Keeper", persistent_memory=True, pinned_notes=False)
    agent.run("Remember: the office is in Lyon.")
    assert agent.notes.items() == []


def test_unpinning_what_was_shown_refuses_a_note_that_moved(tmp_path):
    notes = Notes(tmp_path)
    for note in ("Budget: 40k EUR.", "Office: Lyon.", "Deadline: May."):
        notes.add(note)
    shown = notes.items()
    notes.remove("1")  # someone else unpins note 1 meanwhile: "Office" is now note 1
    with pytest.raises(NoteChangedError, match="no longer the one shown"):
        notes.remove("1", expected=shown[0])
    with pytest.raises(NoteChangedError):
        notes.remove("3", expected=shown[2])  # past the end now
    assert notes.items() == ["Office: Lyon.", "Deadline: May."]
    assert notes.remove("2", expected="Deadline: May.") == ["Office: Lyon."]


@pytest.mark.parametrize(
    "notes", [[], ["Budget: 40k EUR."], ["Two\nlines", "3. looks numbered", "Notes saved (9):"]]
)
def test_the_tool_answer_reads_back_as_the_notes_it_lists(notes):
    assert saved_notes(tool_answer(notes)) == notes


def test_an_answer_that_changed_nothing_lists_no_notes():
    assert saved_notes("Notes unchanged: no note matches 'x'") is None
