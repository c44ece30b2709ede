import datetime
import os
import re
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbmemory import MemoryWarning
from nbmemory import memory_file as mf
from nbmemory.memory_file import MemoryFile, format_block, format_header, parse
from support import FIXTURES

STRUCTURAL_LINES = [
    "---",
    "--- ",
    "\\---",
    "\\\\---",
    "### User — 2026-04-20T18:35:04",
    "\\### Agent — x",
    "### not a heading",
    "```json",
    "\\```json",
    "```",
    "{}",
    "## Interaction Log",
    "# Agent Memory",
    "    indented code",
    "",
    "\\",
]
lines = st.one_of(
    st.sampled_from(STRUCTURAL_LINES), st.text(max_size=30).filter(lambda s: "\n" not in s)
)
text_content = st.lists(lines, max_size=8).map("\n".join)
json_content = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
roles = st.text(min_size=1, max_size=20).filter(
    lambda r: r.strip() and "\n" not in r and "\r" not in r
)


def blocks_file(*messages):
    return format_header("test") + "".join(
        format_block(r, c, "2026-04-20T18:35:04") for r, c in messages
    )


@settings(max_examples=300)
@given(st.lists(st.tuples(roles, text_content | json_content), min_size=1, max_size=5))
def test_any_content_reloads_exactly(messages):
    parsed = parse(blocks_file(*messages).encode())
    assert parsed.problems == []
    assert [(m["role"], m["content"]) for m in parsed.messages] == messages


@pytest.mark.parametrize(
    "content",
    [
        "a\n",
        "\n\nlead",
        "trail\n\n\n",
        "",
        "\n",
        "  indented\n\tand tabbed",
        "naïve ✓ 中文 🙂",
        '```json\n{"a": 1}\n```',
        "### Heading — like\n---\nbody",
        {"tool": "x", "args": [1, None]},
        [],
        None,
        "x" * 100_000,
    ],
)
def test_edge_content_round_trips(content):
    parsed = parse(blocks_file(("User", content)).encode())
    assert parsed.messages[0]["content"] == content
    assert parsed.problems == []


def test_blocks_have_the_spec_shape():
    block = format_block("ResearchAgent", "I recommend BigQuery.", "2026-04-20T18:35:21")
    assert block == "### ResearchAgent — 2026-04-20T18:35:21\n\nI recommend BigQuery.\n\n---\n\n"
    header = format_header("ResearchAgent_id_1_conversation", "2026-04-20T18:33:12")
    assert header == (
        "# Agent Memory\n\n**Conversation:** ResearchAgent_id_1_conversation\n"
        "**Created:** 2026-04-20T18:33:12\n\n---\n\n## Interaction Log\n\n"
    )


def test_lines_that_look_like_structure_are_escaped_readably():
    block = format_block("User", "before\n---\n### A — B\nafter", "t")
    assert "\n\\---\n\\### A — B\n" in block


def test_structured_content_is_written_as_a_json_block():
    block = format_block("Tool", {"city": "Paris", "temp": 21}, "t")
    assert '```json\n{\n  "city": "Paris",\n  "temp": 21\n}\n```' in block


def test_the_spec_example_loads():
    parsed = parse((FIXTURES / "spec_memory.md").read_bytes())
    assert parsed.problems == []
    assert parsed.conversation == "ResearchAgent_id_5f0c_conversation"
    assert parsed.created == "2026-04-20T18:33:12"
    assert parsed.messages == [
        {
            "role": "User",
            "timestamp": "2026-04-20T18:35:04",
            "content": "Research cloud database options for low-latency analytics.",
        },
        {
            "role": "ResearchAgent",
            "timestamp": "2026-04-20T18:35:21",
            "content": "I recommend evaluating BigQuery, ClickHouse Cloud, and AlloyDB...",
        },
    ]


def test_a_file_written_by_swarms_loads():
    parsed = parse((FIXTURES / "swarms_16_memory.md").read_bytes())
    assert parsed.problems == []
    assert [m["role"] for m in parsed.messages] == [
        "User",
        "ResearchAgent",
        "Tool Executor",
        "User",
    ]
    assert parsed.messages[1]["content"].endswith("## Shortlist\n- BigQuery\n- ClickHouse Cloud")
    assert parsed.messages[2]["content"] == "{'tool': 'search', 'result': ['a', 'b']}"
    assert re.fullmatch(r"2026-12-02T14:12:19\.\d{6}", parsed.messages[0]["timestamp"])


GOOD = blocks_file(("User", "first"), ("Agent", "second"))


@pytest.mark.parametrize(
    ("damaged", "problem", "contents"),
    [
        (
            GOOD + "### User — 2026-04-20T18:36:00\n\nhalf a mess",
            "last message at line",
            ["first", "second", "half a mess"],
        ),
        (
            GOOD + "### User — 2026-04-20T18:36:00\n\nwhole\n\n--",
            "no closing",
            ["first", "second", "whole"],
        ),
        (GOOD + "### Us", "outside any message", ["first", "second", "### Us"]),
        (GOOD.split("## Interaction Log\n\n")[1], "header is missing", ["first", "second"]),
        (GOOD.replace("\n\n---\n\n### Agent", "\n\n### Agent"), "no closing", ["first", "second"]),
        (
            GOOD + "a note added by hand\n",
            "outside any message",
            ["first", "second", "a note added by hand"],
        ),
    ],
)
def test_damaged_files_keep_what_is_readable(damaged, problem, contents):
    parsed = parse(damaged.encode())
    assert [m["content"] for m in parsed.messages] == contents
    assert any(problem in p for p in parsed.problems), parsed.problems


def test_invalid_utf8_is_reported_and_the_rest_is_kept():
    data = GOOD.replace("second", "sec\udcffond").encode("utf-8", "surrogateescape")
    parsed = parse(data)
    assert [m["content"] for m in parsed.messages] == ["first", "sec\ufffdond"]
    assert any("invalid UTF-8" in p for p in parsed.problems)


def test_damage_is_a_warning_and_the_file_is_left_alone(tmp_path):
    path = tmp_path / "MEMORY.md"
    path.write_bytes(b"\xff\xfe garbage\n" + GOOD.encode())
    with pytest.warns(MemoryWarning, match="invalid UTF-8"):
        messages = mf.read_messages(path)
    assert [m["content"] for m in messages][-2:] == ["first", "second"]
    assert path.read_bytes().startswith(b"\xff\xfe garbage\n")


def test_an_append_after_a_torn_block_closes_it_first(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "kept", "t1"))
    with open(memory.path, "a") as f:
        f.write("### Agent — t2\n\ncut off mid-sen")
    memory.append(format_block("User", "next", "t3"))
    parsed = memory.read()
    assert [m["content"] for m in parsed.messages] == ["kept", "cut off mid-sen", "next"]
    assert parsed.problems == []


def test_an_append_after_a_torn_separator_completes_it(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "kept", "t1"))
    with open(memory.path, "a") as f:
        f.write("### Agent — t2\n\nwhole\n\n--")
    memory.append(format_block("User", "next", "t3"))
    assert [m["content"] for m in memory.read().messages] == ["kept", "whole", "next"]


def test_a_file_replaced_behind_our_back_is_reopened(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "one", "t"))
    os.unlink(memory.path)
    memory.append(format_block("User", "two", "t"))
    parsed = memory.read()
    assert parsed.conversation == "agent"
    assert [m["content"] for m in parsed.messages] == ["two"]


def test_a_deleted_agent_folder_is_recreated_on_the_next_write(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "one", "t"))
    shutil.rmtree(memory.folder)
    memory.append(format_block("User", "two", "t"))
    assert [m["content"] for m in memory.read().messages] == ["two"]
    assert (memory.folder / ".lock").exists()


def test_compaction_archives_then_replaces(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "raw", "t"))
    before = memory.path.read_bytes()
    archive = memory.compact(format_block("System", "summary", "t"))
    assert archive.read_bytes() == before
    assert re.fullmatch(r"history_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.md", archive.name)
    assert [m["content"] for m in memory.read().messages] == ["summary"]
    assert list(tmp_path.glob("agent/.*.tmp")) == []


def test_compaction_removes_temporary_files_a_crash_left(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "raw", "t"))
    stale = memory.folder / ".MEMORY.md.4242.deadbeef.tmp"
    stale.write_text("half a new memory")
    memory.compact(format_block("System", "summary", "t"))
    assert not stale.exists()


def test_compacting_an_empty_memory_writes_no_archive(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.ensure()
    assert memory.compact(format_block("System", "summary", "t")) is None
    assert memory.archives() == []


def test_two_compactions_in_the_same_second_keep_both_archives(tmp_path, monkeypatch):
    class FrozenClock(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return cls(2026, 4, 20, 14, 30, 45)

    monkeypatch.setattr(mf.datetime, "datetime", FrozenClock)
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    for word in ["first", "second", "third"]:
        memory.append(format_block("User", word, "t"))
        memory.compact(format_block("System", f"after {word}", "t"))
    names = [p.name for p in memory.archives()]
    assert names == [
        "history_2026-04-20_14-30-45.md",
        "history_2026-04-20_14-30-45_2.md",
        "history_2026-04-20_14-30-45_3.md",
    ]
    assert [m["content"] for m in mf.read_messages(memory.archives()[0])] == ["first"]
    assert [m["content"] for m in mf.read_messages(memory.archives()[2])] == [
        "after second",
        "third",
    ]


def test_archives_sort_by_time_then_number(tmp_path):
    names = [
        "history_2026-04-20_14-30-45_10.md",
        "history_2026-04-20_14-30-45_2.md",
        "history_2026-04-20_14-30-45.md",
        "history_2026-04-19_09-00-00.md",
    ]
    ordered = sorted((tmp_path / n for n in names), key=mf.archive_sort_key)
    assert [p.name for p in ordered] == [names[3], names[2], names[1], names[0]]


def test_a_failed_archive_write_leaves_memory_untouched(tmp_path, monkeypatch):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "precious", "t"))
    before = memory.path.read_bytes()

    def disk_full(data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(memory, "_write_archive", disk_full)
    with pytest.raises(OSError, match="No space"):
        memory.compact(format_block("System", "summary", "t"))
    assert memory.path.read_bytes() == before


def test_the_portable_lock_works_too(tmp_path, monkeypatch):
    monkeypatch.setattr(mf, "fcntl", None)
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "one", "t"))
    memory.compact(format_block("System", "two", "t"))
    assert [m["content"] for m in memory.read().messages] == ["two"]


def test_a_forgotten_memory_file_gives_its_descriptors_back(tmp_path):
    before = len(os.listdir("/proc/self/fd"))
    for n in range(50):
        MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent").append(format_block("User", n, "t"))
    assert len(os.listdir("/proc/self/fd")) <= before + 2
