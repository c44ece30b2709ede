import json
import os
import shutil

import pytest

from nbmemory import Conversation, cli
from nbmemory.memory import preload, token_counts
from nbmemory.memory.run_settings import RunSettings, write_settings
from nbmemory.store import Workspace, follow, memory_path
from nbmemory.store.atomic import write_atomic
from nbmemory.store.folders import COUNTS_FILE
from nbmemory.store.layout import export_layout
from nbmemory.store.memory_format import format_block, format_header
from nbmemory.tokens import TokenCounter
from nbmemory.views.read_model import ReadModel
from support import agent_docs, plant_agent, snapshot

MODEL = "gpt-4o"
TEXTS = [
    "Our budget is 40k EUR; the launch is on 2027-03-14.",
    "def f(x):\n    return {'a': [x, x ** 2]}  # code, with ü, 漢字 and 🚀",
    "### User — 2026-01-01T00:00:00\n\n---\n",  # looks like a heading: escaped in the file
    "word " * 3000,  # counted in pieces
    "x" * 9000,
]


def written(name: str = "Keeper", count: int = len(TEXTS)) -> Conversation:
    """An agent written through nbmemory whose model is ``MODEL``, its counts kept at close."""
    write_settings(agent_docs(name), RunSettings(MODEL, 128_000, 0.8, "o200k_base"))
    convo = Conversation(name=name, memory_md_path=memory_path(name), tokenizer_model_name=MODEL)
    for i in range(count):
        convo.add("User" if i % 2 == 0 else name, TEXTS[i % len(TEXTS)])
    convo.context_tokens()
    convo.close()
    return convo


def fresh_figures(name: str = "Keeper") -> dict:
    """What a new reader answers, with no followed file and no kept counts."""
    docs = agent_docs(name)
    kept = docs.read(COUNTS_FILE) if docs.exists(COUNTS_FILE) else None
    docs.remove(COUNTS_FILE)
    try:
        return figures(name)
    finally:
        if kept is not None:
            docs.write(COUNTS_FILE, kept)


def figures(name: str = "Keeper") -> dict:
    """What a reader in a new process answers: no file followed, no text counted yet."""
    follow._followed.clear()
    token_counts._remembered.clear()
    reader = ReadModel()
    return {
        "agent": reader.agent(name).to_json(),
        "tokens": reader.message_tokens(name).to_json(),
    }


@pytest.fixture
def counts_made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts counted by a tokenizer from now on."""
    made: list[str] = []
    original = TokenCounter.count

    def spy(self, text):
        made.append(text)
        return original(self, text)

    monkeypatch.setattr(TokenCounter, "count", spy)
    return made


def test_a_writer_keeps_counts_that_readers_take_as_they_are(on_store, counts_made):
    written()
    assert agent_docs("Keeper").exists(COUNTS_FILE)
    expected = fresh_figures()
    counts_made.clear()
    assert figures() == expected
    assert counts_made == []  # nothing counted: every block, the preload, the notes were kept


def test_a_listing_counts_the_preloads_head_once_for_all_its_agents(on_store, counts_made):
    names = ["Keeper", "Other", "Third"]
    for name in names:
        written(name, 2)
    follow._followed.clear()
    from_kept = [info.to_json() for info in ReadModel().agents()]
    for name in names:
        agent_docs(name).remove(COUNTS_FILE)
    follow._followed.clear()
    token_counts._remembered.clear()  # what this process counted while writing them
    counts_made.clear()
    assert [info.to_json() for info in ReadModel().agents()] == from_kept
    head = preload.preload_texts("")[0]
    assert counts_made.count(head) == 1  # the same for every agent: counted once
    # and so is any block that several memories hold (the user's, written in the same second)
    assert len(counts_made) == len(set(counts_made)) >= 1 + 3 * 2  # each header, each reply


def test_a_message_many_memories_hold_is_counted_once(on_store, counts_made):
    """A listing of agents that kept no counts counts a text they all hold (a message every
    agent of a team was given) once, not once per agent: the same figures for less work."""
    given = format_block("User", "Plan the launch of 2027-03-14.", "2026-04-20T18:35:04")
    for name in ("Ann", "Bob", "Cid"):  # written by another program: no counts kept
        plant_agent(name, (format_header(name, "2026-04-20T18:33:12") + given).encode())
    token_counts._remembered.clear()
    assert [info.messages for info in ReadModel().agents()] == [1, 1, 1]
    assert counts_made.count(given) == 1


def test_a_resumed_conversation_takes_the_kept_counts(on_store, counts_made):
    first = written()
    counts_made.clear()
    again = Conversation(
        name="Keeper", memory_md_path=memory_path("Keeper"), tokenizer_model_name=MODEL
    )
    assert again.context_tokens() == first.context_tokens() - first.static_tokens()
    assert counts_made == []


def rewrite(docs, data: bytes, *, in_place: bool = False) -> None:
    """Give agent ``docs`` the memory ``data``: in the same file, or a new one."""
    if docs.is_database:
        docs.db.compact(docs.name, data, keep=lambda _: False)
    elif in_place:
        with open(docs.path("MEMORY.md"), "r+b") as file:
            file.write(data)
            file.truncate()
    else:
        write_atomic(docs.path("MEMORY.md"), data)


@pytest.mark.parametrize("change", ["in place", "replaced", "cut short", "appended", "compacted"])
def test_a_changed_memory_is_never_answered_from_stale_counts(on_store, change, counts_made):
    convo = written()
    docs = agent_docs("Keeper")
    data = docs.read("MEMORY.md")
    if change == "in place":  # same size, same file: other figures where the budget was
        rewrite(docs, data.replace(b"40k EUR", b"90k USD"), in_place=True)
    elif change == "replaced":
        rewrite(docs, data.replace(b"40k EUR", b"90k USD"))
    elif change == "cut short":
        rewrite(docs, data[: data.rindex(b"\n### ") + 1], in_place=True)
    elif change == "appended":
        convo.add("User", "Our budget is 90k USD; the launch is on 2027-03-14.")
    else:
        convo.compact("Summary: the budget is 90k USD.")
    expected = fresh_figures()
    counts_made.clear()
    assert figures() == expected
    if change != "cut short":  # the changed block is counted, never taken from the old counts
        assert any("90k USD" in text for text in counts_made)


def test_kept_counts_are_keyed_by_encoding(on_store):
    written()
    write_settings(agent_docs("Keeper"), RunSettings("gpt-4", 8192, 0.8, "cl100k_base"))
    assert figures() == fresh_figures()
    assert figures()["tokens"]["encoding"] == "cl100k_base"


def test_reading_never_writes_the_kept_counts(on_store, capsys):
    written()
    other = written("Plain", 3)
    agent_docs("Plain").remove(COUNTS_FILE)
    del other
    before = stored_state()
    reader = ReadModel()
    reader.agents()
    reader.usage("Plain")
    reader.message_tokens("Keeper")
    reader.compactions("Keeper")
    assert cli.main(["ls"]) == 0
    assert stored_state() == before
    assert not agent_docs("Plain").exists(COUNTS_FILE)


def stored_state():
    """Every document of the workspace as stored: files with their stamps, or rows."""
    workspace = Workspace.from_env()
    if workspace.database is None:
        return snapshot(workspace.root)
    return {
        name: (workspace.database.stamp(name), workspace.database.documents(name))
        for name in workspace.agents()
    }


def hostile(docs, kind: str, tmp_path) -> None:
    path = docs.path(COUNTS_FILE)
    path.unlink(missing_ok=True)
    if kind == "garbage":
        path.write_bytes(os.urandom(5000))
    elif kind == "nested":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "foreign":
        path.write_text(json.dumps({"format": "other", "encoding": "o200k_base", "counts": {}}))
    elif kind == "wrong types":
        keys = {token_counts.digest(format_block("User", TEXTS[0], "")): "12", "x": -1}
        text = {"format": token_counts.FORMAT, "encoding": "o200k_base", "counts": keys}
        path.write_text(json.dumps(text))
    elif kind == "huge":
        with open(path, "wb") as file:
            file.truncate(token_counts.MAX_BYTES + 1)
    elif kind == "link":
        shutil.copy(tmp_path / "good", tmp_path / "elsewhere")
        path.symlink_to(tmp_path / "elsewhere")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()


@pytest.mark.files("links, FIFOs and folders are files' hazards")
@pytest.mark.parametrize(
    "kind", ["garbage", "nested", "foreign", "wrong types", "huge", "link", "fifo", "folder"]
)
def test_a_hostile_counts_file_is_ignored(kind, tmp_path, counts_made):
    written()
    docs = agent_docs("Keeper")
    shutil.copy(docs.path(COUNTS_FILE), tmp_path / "good")
    expected = fresh_figures()
    hostile(docs, kind, tmp_path)
    counts_made.clear()
    assert figures() == expected
    assert counts_made  # counted again: nothing was taken from it
    if kind == "link":
        assert (tmp_path / "elsewhere").read_bytes() == (tmp_path / "good").read_bytes()


def test_a_huge_counts_document_is_not_read(database, monkeypatch, counts_made):
    written()
    monkeypatch.setattr(token_counts, "MAX_BYTES", 10)
    expected = fresh_figures()
    counts_made.clear()
    assert figures() == expected
    assert counts_made


def test_the_counts_are_not_exported(on_store, tmp_path):
    written()
    export_layout(tmp_path / "out", Workspace.from_env())
    exported = tmp_path / "out" / "agents" / "Keeper"
    assert (exported / "MEMORY.md").exists()
    assert not (exported / COUNTS_FILE).exists()


def test_adding_counts_nothing_and_keeps_nothing(on_store, counts_made):
    convo = Conversation(name="Quick", memory_md_path=memory_path("Quick"))
    for text in TEXTS * 20:
        convo.add("User", text)
    assert counts_made == []
    assert not agent_docs("Quick").exists(COUNTS_FILE)
    convo.close()  # nothing was counted: nothing to keep
    assert not agent_docs("Quick").exists(COUNTS_FILE)


def test_an_agent_made_only_to_act_on_a_memory_keeps_no_counts(on_store):
    from nbmemory import Agent, Workspace

    written()
    agent_docs("Keeper").remove(COUNTS_FILE)
    agent = Agent.from_memory("Keeper", Workspace.from_env(), record_settings=False)
    assert agent.next_request_tokens() > 0  # counted the whole memory
    agent.short_memory.close()
    assert not agent_docs("Keeper").exists(COUNTS_FILE)
