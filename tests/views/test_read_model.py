"""The read model: the figures every view shows, read without writing, following every writer."""

from __future__ import annotations

import json
import os
import sys

import pytest

from nbmemory import Agent, Conversation
from nbmemory.errors import (
    AgentNotFoundError,
    ArchiveNotFoundError,
    InvalidAgentNameError,
    MemoryWarning,
)
from nbmemory.memory.compactions import read_record, record_path
from nbmemory.memory.notes import Notes
from nbmemory.memory.run_settings import RunSettings, write_settings
from nbmemory.store import memory_path
from nbmemory.store.follow import follow
from nbmemory.store.memory_format import format_block, format_header
from nbmemory.views.read_model import ReadModel
from support import agent_docs, hostile_names, plant_agent, run_python, snapshot, text_lengths

APPEND = (
    "import sys\n"
    "from nbmemory import Conversation\n"
    "from nbmemory.store import memory_path\n"
    "convo = Conversation(name=sys.argv[1], memory_md_path=memory_path(sys.argv[1]))\n"
    "for text in sys.argv[2:]:\n"
    "    convo.add('User', text)\n"
)


def persistent(name: str) -> Conversation:
    return Conversation(name=name, memory_md_path=memory_path(name))


def test_the_figures_are_the_agents_own_before_and_after_a_restart(workspace):
    agent = Agent(
        agent_name="Scout",
        persistent_memory=True,
        context_length=3000,
        system_prompt="Answer in one line.",
    )
    agent.run("Our budget is 40k EUR.")
    agent.run("What is our budget?")
    usage = ReadModel().usage("Scout")
    live = agent.short_memory.context_tokens() + agent.request_overhead_tokens()
    assert (usage.tokens, usage.context_length, usage.threshold) == (live, 3000, 0.9)
    assert usage.recorded and usage.model == "nbmemory/offline"
    resumed = run_python(
        "from nbmemory import Agent\n"
        "a = Agent(agent_name='Scout', persistent_memory=True, context_length=3000,"
        " system_prompt='Answer in one line.')\n"
        "print(a.short_memory.context_tokens() + a.request_overhead_tokens())"
    )
    assert int(resumed.stdout) == usage.tokens


def test_an_agent_that_never_ran_here_shows_the_defaults_and_says_so(workspace):
    persistent("Plain").add("User", "hello")
    usage = ReadModel().usage("Plain")
    assert (usage.context_length, usage.threshold, usage.recorded) == (16000, 0.9, False)
    write_settings(agent_docs("Plain"), RunSettings("gpt-4o", 128_000, None, "o200k_base"))
    usage = ReadModel().usage("Plain")
    assert (usage.context_length, usage.threshold, usage.recorded) == (128_000, None, True)
    assert usage.encoding == "o200k_base" and not usage.compacts_next


def test_compacts_next_is_the_compressors_own_test(workspace):
    agent = Agent(agent_name="Full", persistent_memory=True, context_length=2000)
    for i in range(60):
        agent.short_memory.add("User", f"fact {i}: the warehouse in city {i} stores item {i}.")
    usage = ReadModel().usage("Full")
    assert usage.compacts_next == agent._context_compressor.should_compress(agent)
    assert usage.compacts_next


def test_pages_in_either_order_with_folding_and_the_full_text(workspace):
    convo = persistent("Pager")
    for i in range(50):
        convo.add("User", f"m{i}")
    convo.add("Tool", "y" * 5000)
    reader = ReadModel()
    page = reader.messages("Pager", offset=1, limit=3)
    assert page.total == 51 and [i.text for i in page.items] == ["m49", "m48", "m47"]
    page = reader.messages("Pager", offset=48, limit=5, newest_first=False)
    assert [i.index for i in page.items] == [48, 49, 50]
    folded = page.items[-1]
    assert folded.folded and len(folded.text) == 2000 and folded.length == 5000
    assert reader.message("Pager", 50).text == "y" * 5000
    assert not reader.messages("Pager", limit=1, fold=None).items[0].folded


def test_archives_search_and_records(workspace):
    convo = persistent("Scout")
    for i in range(120):
        convo.add("User", f"budget note {i}")
    convo.add("Scout", {"tool_calls": [{"id": "1"}]})
    convo.compact("Budget notes summarized.")
    convo.add("User", "The budget is final.")
    reader = ReadModel()
    [archive] = reader.archives("Scout")
    assert archive.messages == 121
    stamp = archive.name.removeprefix("history_").removesuffix(".md")
    assert archive.time == stamp[:10] + "T" + stamp[11:].replace("-", ":")
    page = reader.archive_messages("Scout", archive.name, offset=100, limit=50)
    assert [i.text for i in page.items][:2] == ["budget note 100", "budget note 101"]
    assert len(page.items) == 21
    found = reader.search("Scout", "BUDGET", archives=True, offset=110, limit=5)
    assert found.total == 122 and len(found.items) == 5
    assert [i.source for i in reader.search("Scout", "final", archives=True).items] == ["MEMORY.md"]
    assert reader.records("Scout", archive.name)[-1]["content"] == {"tool_calls": [{"id": "1"}]}
    assert page.items[-1].text == '{\n  "tool_calls": [\n    {\n      "id": "1"\n    }\n  ]\n}'
    with pytest.raises(ArchiveNotFoundError):
        reader.archive_messages("Scout", "history_none.md")
    with pytest.raises(AgentNotFoundError, match="no agent named 'Nobody'"):
        reader.agent("Nobody")
    with pytest.raises(InvalidAgentNameError):
        reader.messages("../etc")


@pytest.mark.files("a memory file deleted by hand; files compared by size, time and inode")
def test_reading_never_creates_changes_or_locks_a_file(workspace):
    convo = persistent("Gone")
    convo.add("User", "kept in the archive")
    convo.compact("summary")
    memory_path("Gone").unlink()
    persistent("Here").add("User", "hello")
    before = snapshot(workspace)
    reader = ReadModel()
    for name in reader.names():
        reader.agent(name)
        reader.messages(name)
        reader.search(name, "e", archives=True)
        reader.usage(name)
        reader.version(name)
        for archive in reader.archives(name):
            reader.archive_messages(name, archive.name)
    reader.agents()
    assert snapshot(workspace) == before
    assert reader.agent("Gone").messages == 0 and reader.agent("Gone").archives == 1


@pytest.mark.files("an agent folder's documents written and removed by hand")
def test_the_version_changes_whenever_a_document_of_an_agent_appears_changes_or_goes(workspace):
    persistent("Watched").add("User", "hello")
    persistent("Other").add("User", "hi")
    folder = memory_path("Watched").parent
    reader = ReadModel()
    versions = [reader.version()]
    for doc in ("NOTES.md", "settings.json", "NOTES.history.jsonl", "PROVENANCE.jsonl"):
        (folder / doc).write_text("x")
        versions.append(reader.version())
        (folder / doc).write_text("xy")
        versions.append(reader.version())
    (folder / "archive").mkdir()
    versions.append(reader.version())
    persistent("Watched").add("User", "again")
    versions.append(reader.version())
    for doc in ("NOTES.md", "settings.json", "NOTES.history.jsonl", "PROVENANCE.jsonl"):
        (folder / doc).unlink()
        versions.append(reader.version())
    (folder / "archive").rmdir()
    versions.append(reader.version())
    assert len(set(versions)) == len(versions)
    assert reader.version() == versions[-1]  # unchanged: the same token


def test_it_follows_appends_from_another_process_reading_only_what_is_new(workspace):
    persistent("Shared").add("User", "first")
    reader = ReadModel()
    assert reader.agent("Shared").messages == 1
    version = reader.version("Shared")
    assert reader.version("Shared") == version  # nothing changed, same token
    run_python(APPEND, "Shared", "second", "third")
    assert reader.version("Shared") != version
    assert [i.text for i in reader.messages("Shared", newest_first=False).items] == [
        "first",
        "second",
        "third",
    ]
    assert reader.usage("Shared").tokens == ReadModel().usage("Shared").tokens


def test_it_notices_a_compaction(workspace):
    convo = persistent("Edited")
    convo.add("User", "alpha")
    convo.add("User", "beta")
    reader = ReadModel()
    assert reader.agent("Edited").messages == 2
    convo.compact("gamma")
    assert [i.text for i in reader.messages("Edited").items] == ["gamma"]


@pytest.mark.files("a memory file edited by hand in place: a database has no such edit")
def test_it_notices_a_hand_edit_in_place(workspace):
    convo = persistent("Edited")
    convo.add("User", "gamma")
    reader = ReadModel()
    assert [i.text for i in reader.messages("Edited").items] == ["gamma"]
    path = memory_path("Edited")
    text = path.read_text().replace("gamma", "delta") + format_block("User", "epsilon", "t")
    with open(path, "r+", encoding="utf-8") as handle:  # same inode, rewritten and grown
        handle.write(text)
    assert [i.text for i in reader.messages("Edited", newest_first=False).items] == [
        "delta",
        "epsilon",
    ]


def test_usage_is_counted_once_per_message(workspace):
    convo = persistent("Counted")
    for i in range(100):
        convo.add("User", f"message {i}")
    reader = ReadModel()
    first = reader.usage("Counted").tokens
    [counts] = follow(memory_path("Counted"), agent_docs("Counted")).per_message.values()
    assert len(counts) == 100
    convo.add("User", "one more")
    assert reader.usage("Counted").tokens > first
    [counts] = follow(memory_path("Counted"), agent_docs("Counted")).per_message.values()
    assert len(counts) == 101


FACTS = [
    "The launch is on 2027-03-14.",
    "Ticket ACME-42 blocks the release.",
    "Our contact is Margot Dupont in Lyon.",
    "The budget is 40k EUR.",
]


def test_the_audit_names_what_each_summary_dropped(openai_server):
    from nbmemory import ContextCompressor
    from nbmemory.memory.notes import Notes

    convo = persistent("Auditor")
    for fact in FACTS:
        convo.add("User", fact)
    Notes(memory_path("Auditor").parent).add("Margot Dupont is our contact.")
    convo.compact("Launch on 2027-03-14, budget 40k EUR.")  # by hand: recorded all the same
    [manual] = ReadModel().compactions("Auditor")
    assert manual.summary == "Launch on 2027-03-14, budget 40k EUR."
    assert manual.dropped == ["ACME-42", "Lyon"]  # the rest is in the summary or the notes
    assert (manual.messages, manual.recorded, manual.kept_messages) == (4, True, 0)
    assert manual.tokens_before > manual.tokens_after > 0

    convo.add("User", "Order PO-7781 ships from Rotterdam.")
    agent = type("Plain", (), {})()
    agent.short_memory, agent.context_length = convo, 4000
    agent.model_name, agent.agent_name = "openai/test-model", "Auditor"
    agent.api_base, agent.api_key, agent.max_retries = openai_server.url, "test-key", 0
    openai_server.reply("An order ships from Rotterdam.")
    ContextCompressor(keep_dropped=False).compress(agent)  # the model's summary alone
    first, second = ReadModel().compactions("Auditor")
    assert first == manual
    # The second summary lost the first summary's facts too: dropped, though the archives keep them.
    assert second.recorded and second.dropped == ["2027-03-14", "40k", "EUR", "PO-7781"]
    assert second.summary == "[Compressed Memory Summary]\nAn order ships from Rotterdam."
    assert second.time and second.archive.startswith("history_")
    assert ReadModel().compactions("Auditor") == [first, second]  # reading changes nothing


@pytest.mark.parametrize("store", ["files", "database"])
def test_a_bare_conversations_compaction_is_recorded(store, request):
    if store == "database":
        request.getfixturevalue("database")
    convo = persistent("Bare")
    for fact in FACTS:
        convo.add("User", fact)
    archive = convo.compact("Launch on 2027-03-14; budget 40k EUR.")
    record = read_record(agent_docs("Bare"), archive)
    assert record is not None and record.missing == ["ACME-42", "Margot", "Dupont", "Lyon"]
    assert (record.tokens_before, record.tokens_after) == (None, None)  # the request: unknown
    [compaction] = ReadModel().compactions("Bare")
    assert compaction.recorded and compaction.dropped == record.missing


def unrecorded(name: str, *texts: str) -> Conversation:
    """An agent whose one compaction has no record, as an nbmemory older than records left."""
    convo = persistent(name)
    for text in texts:
        convo.add("User", text)
    archive = convo.compact("Launch on 2027-03-14.")
    agent_docs(name).remove(record_path(archive))
    return convo


def counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the transcripts the read model looks through for salient terms."""
    from nbmemory.views import audit

    return text_lengths(monkeypatch, audit, "salient_terms")


@pytest.mark.parametrize("store", ["files", "database"])
def test_an_archive_without_a_record_is_worked_out_once(store, request, monkeypatch):
    from nbmemory.memory.notes import Notes

    if store == "database":
        request.getfixturevalue("database")
    convo = unrecorded("Old", *FACTS)
    calls = counting(monkeypatch)
    reader = ReadModel()
    [first] = reader.compactions("Old")
    assert not first.recorded
    assert first.dropped == ["ACME-42", "Margot", "Dupont", "Lyon", "40k", "EUR"]
    for _ in range(3):
        assert reader.compactions("Old") == [first]
    assert ReadModel().compactions("Old") == [first]  # another reader shares the work
    convo.add("User", "More talk.")
    assert reader.compactions("Old") == [first]  # the memory grew: the archive is the same
    assert len(calls) == 1
    Notes(agent_docs("Old")).add("Margot Dupont is our contact.")
    [noted] = reader.compactions("Old")
    assert noted.dropped == ["ACME-42", "Lyon", "40k", "EUR"]  # the notes now, no new look
    assert len(calls) == 1


def test_a_changed_archive_is_never_trusted(workspace, monkeypatch):
    unrecorded("Changed", *FACTS)
    calls = counting(monkeypatch)
    reader = ReadModel()
    [first] = reader.compactions("Changed")
    docs = agent_docs("Changed")
    [archive] = docs.archives()
    docs.write(archive, docs.read(archive).replace(b"ACME-42", b"ACME-43"))
    [second] = reader.compactions("Changed")
    assert "ACME-43" in second.dropped and "ACME-42" not in second.dropped
    assert len(calls) == 2 and first.dropped != second.dropped


def test_an_answer_is_bounded_whatever_the_transcript(workspace):
    from nbmemory.views.answers import MAX_DROPPED, SUMMARY_CHARS

    convo = persistent("Huge")
    convo.add("User", " ".join(f"TICKET-{n}" for n in range(MAX_DROPPED * 3)))
    summary = "Many tickets. " * (SUMMARY_CHARS // 10)
    convo.compact(summary)
    [compaction] = ReadModel().compactions("Huge")
    assert compaction.dropped == [f"TICKET-{n}" for n in range(MAX_DROPPED)]
    assert compaction.dropped_total == MAX_DROPPED * 3
    assert compaction.summary == summary[:SUMMARY_CHARS]
    assert compaction.summary_length == len(summary) > SUMMARY_CHARS


def test_an_agent_that_never_compacted_has_an_empty_audit():
    persistent("Fresh").add("User", "hello")
    assert ReadModel().compactions("Fresh") == []
    with pytest.raises(AgentNotFoundError):
        ReadModel().compactions("Nobody")


def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


def test_the_xray_splits_the_next_request_into_what_it_carries(openai_server):
    from nbmemory.wording import PARTS

    options = dict(
        agent_name="Xray",
        persistent_memory=True,
        model_name="openai/test-model",
        api_base=openai_server.url,
        api_key="test-key",
        context_length=4000,
        system_prompt="You are exact.",
        rules="Cite sources.",
        tools=[weather],
    )
    earlier = Agent(**options)
    openai_server.reply("Noted.")
    earlier.run("The launch is on 2027-03-14.")
    agent = Agent(**options)  # a new session preloads the first one
    openai_server.reply("Also noted.")
    agent.run("The budget is 40k EUR.")
    usage = ReadModel().usage("Xray")
    parts = dict(usage.parts)
    assert [name for name, _ in usage.parts] == list(PARTS)
    assert sum(parts.values()) == usage.tokens == agent.next_request_tokens()
    memory = agent.short_memory
    assert parts["system prompt"] + parts["rules"] == memory.static_tokens()
    assert parts["rules"] == memory.rules_tokens() > 0
    assert parts["tool schemas"] == agent.tool_tokens() > 0
    assert parts["reply room"] == agent.request_overhead_tokens() - agent.tool_tokens()
    assert parts["pinned notes"] == agent.notes.tokens()
    # This process preloaded two messages and added two: the memory splits where it began.
    assert parts["earlier sessions"] > 0 and parts["this session"] > 0
    assert parts["earlier sessions"] + parts["this session"] == memory.context_tokens() - (
        memory.static_tokens()
    )
    agent.short_memory.compact("Launch 2027-03-14, budget 40k EUR.")
    parts = dict(ReadModel().usage("Xray").parts)
    assert parts["earlier sessions"] == 0 and parts["this session"] > 0  # compacted here


def test_with_no_live_process_all_of_the_memory_is_earlier_sessions(workspace):
    persistent("Quiet").add("User", "hello")
    write_settings(
        agent_docs("Quiet"),
        RunSettings("gpt-4o", 3000, 0.9, "o200k_base", session=(2**22 + 12345, 1, 0)),
    )
    parts = dict(ReadModel().usage("Quiet").parts)
    assert parts["this session"] == 0 and parts["earlier sessions"] > 0


def test_tokens_per_message_add_up_to_the_memorys_part_of_the_request(workspace):
    convo = persistent("Counter")
    for i in range(6):
        convo.add("User" if i % 2 else "Counter", f"message {i} " + "word " * i)
    write_settings(agent_docs("Counter"), RunSettings("gpt-4o", 3000, 0.9, "o200k_base"))
    reader = ReadModel()
    counted = reader.message_tokens("Counter")
    assert counted.encoding == "o200k_base" and sorted(counted.tokens) == list(range(6))
    assert all(count > 0 for count in counted.tokens.values())
    assert counted.tokens[5] > counted.tokens[0]  # a longer message weighs more
    parts = dict(reader.usage("Counter").parts)
    memory = parts["earlier sessions"] + parts["this session"]
    assert counted.total == counted.preload + sum(counted.tokens.values()) == memory
    some = reader.message_tokens("Counter", [4, 1])
    assert some.tokens == {4: counted.tokens[4], 1: counted.tokens[1]}
    assert some.total == counted.total
    with pytest.raises(IndexError, match="no message 6"):
        reader.message_tokens("Counter", [6])
    convo.compact("Six messages.")
    [archive] = reader.archives("Counter")
    archived = reader.message_tokens("Counter", archive=archive.name)
    assert archived.tokens == counted.tokens  # the same messages, counted the same way
    after = reader.message_tokens("Counter")
    assert after.tokens == {0: after.total - after.preload}  # the summary alone


def test_pages_and_search_by_role_keep_the_files_indexes(workspace):
    convo = persistent("Roles")
    for i in range(30):
        convo.add(["User", "Roles", "Tool"][i % 3], f"turn {i} about the budget")
    reader = ReadModel()
    assert reader.roles("Roles") == [("User", 10), ("Roles", 10), ("Tool", 10)]
    page = reader.messages("Roles", limit=4, role="user")  # any case
    assert page.total == 10
    assert [item.index for item in page.items] == [27, 24, 21, 18]
    assert {item.role for item in page.items} == {"User"}
    page = reader.messages("Roles", offset=8, limit=4, newest_first=False, role="Tool")
    assert [item.index for item in page.items] == [26, 29]
    assert reader.messages("Roles", role="Nobody").total == 0
    found = reader.search("Roles", "budget", role="roles")
    assert found.total == 10 and [i.index for i in found.items][:2] == [1, 4]
    convo.compact("Thirty turns.")
    [archive] = reader.archives("Roles")
    page = reader.archive_messages("Roles", archive.name, limit=3, role="TOOL")
    assert (page.total, [i.index for i in page.items]) == (10, [2, 5, 8])
    assert reader.roles("Roles", archive.name) == [("User", 10), ("Roles", 10), ("Tool", 10)]
    assert reader.roles("Roles") == [("System", 1)]
    assert reader.file_path("Roles") == memory_path("Roles")
    assert reader.file_path("Roles", archive.name).name == archive.name
    with pytest.raises(ArchiveNotFoundError):
        reader.file_path("Roles", "history_none.md")


def test_find_names_the_first_message_with_a_term_and_the_page_that_shows_it(workspace):
    convo = persistent("Finder")
    for i in range(45):
        convo.add(
            ["User", "Tool"][i % 2], f"turn {i}" + (" with the Vault code" if i >= 31 else "")
        )
    convo.compact("Forty-five turns.")
    [archive] = ReadModel().archives("Finder")
    reader = ReadModel()
    found = reader.find("Finder", "VAULT", archive.name)  # any case; the first of 14 hits
    assert (found.index, found.offset, found.source) == (31, 20, archive.name)
    # Newest first, message 31 of 45 is the 14th listed: on the first page of 20.
    assert reader.find("Finder", "vault", archive.name, newest_first=True).offset == 0
    assert reader.find("Finder", "vault", archive.name, limit=7, newest_first=True).offset == 7
    # Among the Tool messages only (every odd one), 31 is the 16th: on the page from 15.
    tool = reader.find("Finder", "vault", archive.name, limit=5, role="tool")
    assert (tool.index, tool.offset) == (31, 15)
    assert reader.find("Finder", "vault", archive.name, role="User").index == 32
    page = reader.archive_messages("Finder", archive.name, tool.offset, 5, role="tool")
    assert 31 in [item.index for item in page.items]
    missing = reader.find("Finder", "nowhere", archive.name)
    assert (missing.index, missing.offset) == (None, 0)
    assert reader.find("Finder", "Forty-five").index is not None  # MEMORY.md: the summary
    with pytest.raises(ArchiveNotFoundError):
        reader.find("Finder", "vault", "history_none.md")
    with pytest.raises(ValueError):
        reader.find("Finder", "  ", archive.name)


def test_a_compaction_never_counts_the_agents_name_as_dropped(workspace):
    agent = Agent(agent_name="ResearchAgent", persistent_memory=True, context_length=3000)
    agent.run("Book the Lyon office for 2027-03-14.")
    agent.run("And order PO-7781.")
    assert agent._context_compressor.compress(agent)
    [compaction] = ReadModel().compactions("ResearchAgent")
    assert compaction.recorded and "ResearchAgent" not in compaction.dropped
    docs = agent_docs("ResearchAgent")
    archive = memory_path("ResearchAgent").parent / "archive" / compaction.archive
    assert "ResearchAgent" not in read_record(docs, archive).missing
    # A record written before this rule still lists it: reading leaves the label out.
    path = record_path(archive)
    record = json.loads(docs.read(path))
    docs.write(path, json.dumps({**record, "missing": ["ResearchAgent", *record["missing"]]}))
    assert "ResearchAgent" in read_record(docs, archive).missing
    assert "ResearchAgent" not in ReadModel().compactions("ResearchAgent")[0].dropped


def test_a_compaction_says_both_figures_with_their_labels(workspace):
    convo = persistent("Labelled")
    for n in range(6):
        convo.add("User", f"Fact {n}: project {n} costs {n * 10}k EUR.")
    convo.compact("Six projects, 0k to 50k EUR.")  # its record does not know the request
    [compaction] = ReadModel().compactions("Labelled")
    usage = ReadModel().usage("Labelled")
    rest = usage.tokens - usage.memory_tokens
    assert (compaction.request_before, compaction.request_after) == (
        compaction.tokens_before + rest,
        usage.tokens,
    )
    assert compaction.figures == (
        f"memory {compaction.tokens_before:,} → {compaction.tokens_after:,} tokens · "
        f"next request {compaction.request_before:,} → {compaction.request_after:,} tokens"
    )
    assert compaction.to_json()["figures"] == compaction.figures


def test_a_memory_in_ram_has_the_same_usage_as_on_disk(workspace):
    from nbmemory.views.in_ram import usage_in_ram

    kept = Agent(agent_name="Kept", persistent_memory=True, context_length=3000)
    ram = Agent(agent_name="Ram", persistent_memory=False, context_length=3000)
    for agent in (kept, ram):
        agent.run("Our budget is 40k EUR.")
    on_disk, in_ram = ReadModel().usage("Kept"), usage_in_ram(ram.short_memory, ram)
    assert in_ram.tokens == ram.next_request_tokens() == sum(t for _, t in in_ram.parts)
    assert [name for name, _ in in_ram.parts] == [name for name, _ in on_disk.parts]
    assert (in_ram.context_length, in_ram.threshold) == (on_disk.context_length, 0.9)
    assert dict(in_ram.parts)["this session"] > 0  # the memory in RAM is this session's


def test_each_read_by_name_finds_the_agents_documents_once(workspace, monkeypatch):
    """A read turns the agent's name into its documents (and asks whether it exists) once, at
    its entry, and hands the documents down: no helper looks the name up again."""
    from nbmemory.store.workspace import Workspace

    convo = persistent("Once")
    for i in range(4):
        convo.add("User", f"Budget note {i}: 40k EUR for Lyon.")
    convo.compact("Budget notes summarized.")
    convo.add("User", "The budget is final.")
    reader = ReadModel()
    [archive] = reader.archives("Once")
    reads = {
        "agent": lambda: reader.agent("Once"),
        "usage": lambda: reader.usage("Once"),
        "settings": lambda: reader.settings("Once"),
        "messages": lambda: reader.messages("Once"),
        "lineage": lambda: reader.lineage("Once"),
        "roles": lambda: reader.roles("Once", archive.name),
        "file_path": lambda: reader.file_path("Once", archive.name),
        "notes": lambda: reader.notes("Once"),
        "note_history": lambda: reader.note_history("Once"),
        "waiting_notes": lambda: reader.waiting_notes("Once"),
        "records": lambda: reader.records("Once"),
        "message": lambda: reader.message("Once", 0, archive.name),
        "message_tokens": lambda: reader.message_tokens("Once"),
        "archives": lambda: reader.archives("Once"),
        "compactions": lambda: reader.compactions("Once"),
        "archive_messages": lambda: reader.archive_messages("Once", archive.name),
        "search": lambda: reader.search("Once", "budget", archives=True),
        "find": lambda: reader.find("Once", "Lyon", archive.name),
    }
    calls = {"agent": 0, "has_agent": 0}
    for method in calls:
        original = getattr(Workspace, method)

        def spy(self, name, _original=original, _method=method):
            calls[_method] += 1
            return _original(self, name)

        monkeypatch.setattr(Workspace, method, spy)
    looked_up = {}
    for what, read in reads.items():
        before = dict(calls)
        read()
        looked_up[what] = (
            calls["agent"] - before["agent"],
            calls["has_agent"] - before["has_agent"],
        )
    not_once = {what: times for what, times in looked_up.items() if times != (1, 1)}
    assert not not_once, f"(documents, existence) looked up per read: {not_once}"


def test_a_tool_call_reads_as_its_name_and_arguments_and_exact_text_as_stored(workspace):
    arguments = json.dumps({"url": "https://x.test/", "note": "first line\nsecond line"})
    call = {"id": "c1", "function": {"name": "fetch", "arguments": arguments}}
    convo = persistent("Caller")
    convo.add("Caller", {"content": None, "tool_calls": [call]})
    convo.add("Tool", {"tool_call_id": "c1", "name": "fetch", "content": "<b>page</b>\nends"})
    asked, answered = ReadModel().messages("Caller", newest_first=False).items
    assert asked.readable == (
        "Calls fetch\n  url: https://x.test/\n  note:\n    first line\n    second line"
    )
    assert answered.readable == "Result of fetch\n<b>page</b>\nends"
    assert json.loads(asked.text) == {"content": None, "tool_calls": [call]}  # as stored
    assert answered.to_json()["tool"] == {"name": "fetch", "result": "<b>page</b>\nends"}


def test_a_bad_stored_name_is_left_out_of_every_listing_with_one_warning(on_store):
    persistent("Alpha").add("User", "first")
    persistent("Omega").add("User", "last")
    bad = hostile_names(on_store)
    for name in bad:
        plant_agent(name)
    reader = ReadModel()
    with pytest.warns(MemoryWarning) as warned:
        assert [info.name for info in reader.agents()] == ["Alpha", "Omega"]
    messages = [str(w.message) for w in warned]
    assert len(messages) == len(bad)
    assert all(not any(c in m for c in "\x07\x1b\x85\udcff") for m in messages)
    assert any("'esc\\x1b]0;title\\x07' left out" in m for m in messages)
    with pytest.warns(MemoryWarning):
        before = reader.version()
    persistent("Omega").add("User", "later")
    with pytest.warns(MemoryWarning):
        assert reader.version() != before
        assert reader.names() == ["Alpha", "Omega"]
    with pytest.raises(InvalidAgentNameError):  # asked for by name: the asker's mistake
        reader.agent(bad[0])


def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of what a listing reads: agent listings, statements sent to the database, files
    opened, messages counted (or looked up among the kept counts)."""
    from nbmemory.memory import token_counts
    from nbmemory.store import docs, follow
    from nbmemory.store.postgresql import PgStore
    from nbmemory.store.workspace import Workspace
    from nbmemory.views import figures

    counts = {"listings": 0, "statements": 0, "opens": 0, "counted": 0}

    def counting(module, name: str, key: str) -> None:
        original = getattr(module, name)

        def spy(*args, **kwargs):
            counts[key] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)

    counting(Workspace, "agents", "listings")
    counting(PgStore, "statement", "statements")
    counting(follow, "open_reader", "opens")
    counting(docs, "read_regular", "opens")
    counting(token_counts, "open_reader", "opens")
    counting(figures, "block_text", "counted")
    return counts


def test_listing_reads_each_agent_once_and_nothing_again_when_unchanged(on_store):
    """A listing of N agents costs O(N) reads, none of them a listing of every agent again; on
    a database, a few statements whatever N; unchanged, no memory is read or counted again."""
    figures = {}
    for many in (3, 12):
        for i in range(len(figures) * 3, many):
            agent = persistent(f"agent-{i:02d}")
            agent.add("User", f"note {i}")
            agent.add("User", "and another")
        write_settings(agent_docs("agent-01"), RunSettings("gpt-4o", 3000, 0.75, "o200k_base"))
        reader = ReadModel()
        with pytest.MonkeyPatch.context() as patch:
            counts = counted(patch)
            assert len(reader.agents()) == many
            cold = dict(counts)
            assert len(reader.agents()) == many
            reader.version()
        warm = {key: counts[key] - cold[key] for key in counts}
        figures[many] = cold, warm
    for many, (cold, warm) in figures.items():
        assert cold["listings"] == 1 and warm["listings"] == 2
        assert warm["counted"] == 0
        if on_store == "files":
            # MEMORY.md, the kept token counts, and settings.json where there is one
            assert cold["opens"] <= 3 * many
            assert warm["opens"] <= many  # settings.json again; no MEMORY.md
        else:
            assert cold["opens"] == warm["opens"] == 0
    if on_store == "postgresql":
        statements = [(cold["statements"], warm["statements"]) for cold, warm in figures.values()]
        assert statements[0] == statements[1] and max(statements[1]) <= 4


def written_by_hand(name: str, contents: list, *, per_row: int = 7) -> None:
    """An agent's MEMORY.md written as another program would: no counts kept, no settings.
    On a database, as rows of ``per_row`` blocks after the header's."""
    blocks = [
        format_block("User" if i % 2 else name, content, f"2026-04-20T18:35:{i % 60:02d}")
        for i, content in enumerate(contents)
    ]
    header = format_header(name, "2026-04-20T18:33:12")
    if agent_docs(name).is_database:
        rows = ["".join(blocks[i : i + per_row]) for i in range(0, len(blocks), per_row)]
        plant_agent(name, header.encode())
        for row in rows:
            appended_by_hand(name, row.encode())
        return
    path = memory_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + "".join(blocks), encoding="utf-8")


def appended_by_hand(name: str, data: bytes) -> None:
    """``data`` added at the end of agent ``name``'s MEMORY.md, unchecked: to its file, or as
    a row of its own (the agent's version bumped, as an append does)."""
    docs = agent_docs(name)
    if not docs.is_database:
        with memory_path(name).open("ab") as file:
            file.write(data)
        return
    with docs.db.transaction(f"append to {name}") as conn:
        conn.execute(
            "WITH v AS (UPDATE nbmemory_agents SET version = version + 1 WHERE name = %s "
            "RETURNING version) INSERT INTO nbmemory_memory (agent, seq, data) "
            "SELECT %s, version, %s FROM v",
            (name, name, data),
        )


_looking: list[str] | None = None


def _audit(event: str, args: tuple) -> None:
    looked_for = event in ("open", "os.scandir", "os.listdir") and isinstance(args[0], str)
    if _looking is not None and looked_for:
        _looking.append(args[0])


@pytest.mark.files("folders are listed on files; a database answers for all agents at once")
def test_a_listing_of_agents_that_never_ran_looks_for_no_file_that_is_missing():
    """Each agent's folder is listed once; its settings, notes, kept counts, archives and
    recall index are looked for only when they are there (thousands of agents written by
    other programs have none of them)."""
    global _looking
    sys.addaudithook(_audit)  # stays for the process, but only records inside this test
    for i in range(5):
        written_by_hand(f"hand-{i}", [f"message {i}", "a reply"])
    Notes(agent_docs("hand-0")).add("Budget: 40k EUR.")
    write_settings(agent_docs("hand-1"), RunSettings("gpt-4o", 3000, 0.75, "o200k_base"))
    _looking = []
    try:
        listed = ReadModel().agents()
    finally:
        looked, _looking = _looking, None
    assert [agent.messages for agent in listed] == [2] * 5
    assert [agent.usage.parts[2][1] > 0 for agent in listed] == [True] + [False] * 4
    assert [path for path in looked if not os.path.lexists(path)] == []
    for i in range(5):
        folder = str(memory_path(f"hand-{i}").parent)
        assert looked.count(folder) == 1  # the listing of the folder


def test_a_big_memory_is_listed_from_pieces_with_the_figures_of_a_whole_reading(
    monkeypatch, on_store
):
    """A memory too big to read whole for a listing is tallied a piece at a time (a file read,
    or a database's rows streamed): the same messages, tokens, last activity and size as when
    it is read whole, before and after an append; a damaged one is read whole, so its
    problems are told as always."""
    from nbmemory.store import follow as following

    monkeypatch.setattr(following, "LARGE", 1)  # every memory is "big"
    monkeypatch.setattr(following, "PIECE", 700)  # and read in pieces of a few blocks
    contents = ["plain", "### not a heading — x\n---", "é" * 900, "```json\n{}\n```"]
    written_by_hand(
        "big",
        [{"tool": [i]} if i % 5 == 4 else contents[i % 4] + f" {i}" * (i % 3) for i in range(60)],
    )
    docs = agent_docs("big")

    def figures() -> list:
        return [(a.messages, a.usage, a.size, a.last_activity) for a in ReadModel().agents()]

    def whole() -> list:
        follow(memory_path("big"), docs)  # read whole: listings use that reading
        return figures()

    def read_whole() -> bool:
        if docs.is_database:
            return following.followed(docs)
        return following.current(memory_path("big"), os.stat(memory_path("big")))

    tallied = figures()
    assert not read_whole()
    assert tallied == whole() and tallied[0][0] == 60
    persistent("big").add("User", "one more")
    following._followed.clear()
    assert figures() == whole() and figures()[0][0] == 61
    appended_by_hand("big", b"### User \xe2\x80\x94 2026-04-20T18:40:00\n\ncut sh")
    following._followed.clear()
    listed = ReadModel().agents()[0]
    assert listed.problems and listed.messages == 62  # the torn block is kept as unparsed text


def test_listing_a_big_memory_takes_memory_a_piece_bounds(on_store):
    """``nbmemory ls`` of a 64 MB memory in a new process: its peak grows by less than half
    the memory over the peak of a listing of a small one."""
    peak = (  # the high-water mark of this program, not of the test process it was forked from
        "import re, sys\n"
        "from nbmemory.cli import main\n"
        "main(['ls'])\n"
        "status = open('/proc/self/status').read()\n"
        "print(int(re.search(r'VmHWM:\\s*(\\d+)', status)[1]) * 1024, file=sys.stderr)\n"
    )
    written_by_hand("small", ["hello"])
    small = int(run_python(peak).stderr.split()[-1])
    block = format_block("User", "memory and latency " * 100, "2026-04-20T18:35:04").encode()
    row = block * (8 * 2**20 // len(block))  # on a database, rows as an import writes them
    for _ in range(8):
        appended_by_hand("small", row)
    big = int(run_python(peak).stderr.split()[-1])
    assert big - small < 32 * 2**20
