import datetime
import os
import re
import shutil
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbmemory import MemoryWarning
from nbmemory import memory_file as mf
from nbmemory.errors import InvalidTextError
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


@pytest.mark.parametrize("line", [*STRUCTURAL_LINES, "plain", "naïve ✓", "-", "#"])
def test_a_block_as_bytes_is_the_block_encoded(line):
    for content in (line, f"{line}\n{line}", {"line": line}):
        assert mf.block_bytes("User", content, "t") == format_block("User", content, "t").encode()


def test_one_line_that_looks_like_structure_is_escaped_too():
    assert "\n\n\\### A — B\n\n" in format_block("User", "### A — B", "t")
    assert "\n\n\\---\n\n" in format_block("User", "---", "t")


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


TORN = "### User — 2026-04-20T18:36:00\n\n"


@pytest.mark.parametrize(
    ("damaged", "problem", "contents"),
    [
        (
            GOOD + TORN + "half a mess",
            "last message at line",
            ["first", "second", TORN + "half a mess"],
        ),
        (GOOD + TORN + "whole\n\n--", "cut short", ["first", "second", TORN + "whole"]),
        (GOOD + "### Us", "outside any message", ["first", "second", "### Us"]),
        (GOOD.split("## Interaction Log\n\n")[1], "header is missing", ["first", "second"]),
        (
            GOOD.replace("\n\n---\n\n### Agent", "\n\n### Agent"),
            "no closing",
            ["### User — 2026-04-20T18:35:04\n\nfirst", "second"],
        ),
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
    damaged_roles = [m["role"] for m in parsed.messages if m["content"] not in ("first", "second")]
    assert set(damaged_roles) <= {"unparsed"}


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


def test_a_block_cut_short_is_put_aside_in_quarantine_by_the_next_append(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "kept", "t1"))
    with open(memory.path, "a") as f:  # what a writer killed mid-append leaves
        f.write("### Agent — t2\n\ncut off mid-sen")
    with pytest.warns(MemoryWarning, match="cut short .* moved to .*quarantine"):
        memory.append(format_block("User", "next", "t3"))
    parsed = memory.read()
    assert [(m["role"], m["content"]) for m in parsed.messages] == [
        ("User", "kept"),
        ("User", "next"),
    ]
    assert parsed.problems == []
    quarantined = memory.folder / "quarantine" / "MEMORY.cut-short.md"
    assert quarantined.read_text() == "### Agent — t2\n\ncut off mid-sen"


@pytest.mark.parametrize(
    ("torn", "put_aside"),
    [
        ("### Us", True),
        ("### Agent — t2\n\nwhole\n\n--", True),
        ("### Agent — t2\n", True),
        ("a line added by hand\n", False),
    ],
)
def test_a_write_torn_anywhere_never_changes_the_message_before_it(tmp_path, torn, put_aside):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "acknowledged", "t1"))
    with open(memory.path, "a") as f:
        f.write(torn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryWarning)
        memory.append(format_block("User", "next", "t3"))
    parsed = memory.read()
    assert parsed.messages[0] == {"role": "User", "content": "acknowledged", "timestamp": "t1"}
    assert parsed.messages[-1]["content"] == "next"
    if put_aside:  # a block a writer left cut short: moved aside, whole
        assert len(parsed.messages) == 2 and parsed.problems == []
        assert (memory.folder / "quarantine" / "MEMORY.cut-short.md").read_text() == torn
    else:  # other text stays where it is, reported
        assert [m["role"] for m in parsed.messages[1:-1]] == ["unparsed"]
        assert parsed.problems


def test_a_compaction_archives_no_block_cut_short(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "kept", "t1"))
    with open(memory.path, "a") as f:
        f.write("\n### Agent — t2\n\ncut off")
    with pytest.warns(MemoryWarning, match="cut short"):
        archive = memory.compact(format_block("System", "summary", "t3"))
    archived = mf.parse(archive.read_bytes())
    assert [m["content"] for m in archived.messages] == ["kept"]
    assert archived.problems == []
    assert (memory.folder / "quarantine" / "MEMORY.cut-short.md").read_text() == (
        "\n### Agent — t2\n\ncut off"
    )


def test_a_whole_block_missing_only_its_last_line_break_is_a_message(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "kept", "t1"))
    with open(memory.path, "a") as f:
        f.write("### Agent — t2\n\nwhole\n\n---")
    memory.append(format_block("User", "next", "t3"))
    parsed = memory.read()
    assert [m["content"] for m in parsed.messages] == ["kept", "whole", "next"]
    assert parsed.problems == []


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
    assert not (memory.folder / ".lock").exists()  # the folder itself is what is locked


def test_a_file_renamed_over_behind_our_back_is_reopened(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "one", "t"))
    edited = tmp_path / "agent" / "edited.md"  # as an editor saves: a new file, then a rename
    edited.write_text(format_header("agent") + format_block("User", "edited", "t"))
    os.replace(edited, memory.path)
    memory.append(format_block("User", "two", "t"))
    assert [m["content"] for m in memory.read().messages] == ["edited", "two"]


def test_an_append_after_another_writers_compaction_lands_in_the_new_file(tmp_path):
    writer = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    compactor = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    writer.append(format_block("User", "one", "t"))
    compactor.compact(format_block("System", "summary", "t"))
    writer.append(format_block("User", "two", "t"))
    assert [m["content"] for m in writer.read().messages] == ["summary", "two"]
    [archive] = writer.archives()
    assert [m["content"] for m in mf.read_messages(archive)] == ["one"]


def test_two_writers_of_one_file_take_turns_without_damage(tmp_path):
    first = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    second = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    for n in range(3):
        first.append(format_block("User", f"first {n}", "t"))
        second.append(mf.block_bytes("Agent", f"second {n}", "t"))
    parsed = first.read()
    assert parsed.problems == []
    assert [m["content"] for m in parsed.messages] == [
        f"{who} {n}" for n in range(3) for who in ("first", "second")
    ]


@pytest.mark.parametrize("change", ["deleted", "renamed over", "folder deleted"])
def test_without_a_link_watch_every_append_asks_the_file(tmp_path, monkeypatch, change):
    monkeypatch.setattr(mf, "link_watch", lambda: None)  # as where inotify is not available
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "one", "t"))
    if change == "deleted":
        os.unlink(memory.path)
    elif change == "renamed over":
        os.replace(shutil.copy(memory.path, tmp_path / "agent" / "copy.md"), memory.path)
    else:
        shutil.rmtree(memory.folder)
    memory.append(format_block("User", "two", "t"))
    expected = ["one", "two"] if change == "renamed over" else ["two"]
    assert [m["content"] for m in memory.read().messages] == expected


def test_compaction_archives_then_replaces(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "raw", "t"))
    before = memory.path.read_bytes()
    archive = memory.compact(format_block("System", "summary", "t"))
    assert archive.read_bytes() == before
    assert re.fullmatch(r"history_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.md", archive.name)
    assert [m["content"] for m in memory.read().messages] == ["summary"]
    assert list(tmp_path.glob("agent/.*.tmp")) == []


def test_temporary_files_a_crash_left_are_quarantined_with_one_warning(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "raw", "t"))
    stale = memory.folder / ".MEMORY.md.999999999.deadbeef.tmp"
    stale.write_text("half a new memory")
    with pytest.warns(MemoryWarning, match="interrupted write, moved to .*quarantine"):
        memory.compact(format_block("System", "summary", "t"))
    assert not stale.exists()
    assert (memory.folder / "quarantine" / "MEMORY.md.999999999.deadbeef.tmp").read_text() == (
        "half a new memory"
    )


def test_an_archive_of_an_unfinished_compaction_is_hidden_then_quarantined(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "first", "t"))
    memory.compact(format_block("System", "summary", "t"))
    memory.append(format_block("User", "second", "t"))
    torn = memory.archive_dir / "history_2999-01-01_00-00-00.md"
    torn.write_bytes(memory.path.read_bytes()[:-7])  # a crash while writing the archive
    assert mf.unfinished_archive(memory.folder) == torn
    assert torn not in memory.archives() and len(memory.archives()) == 1
    with pytest.warns(MemoryWarning, match="compaction that did not finish"):
        MemoryFile(memory.path, "agent").append(format_block("User", "third", "t"))
    assert (memory.folder / "quarantine" / torn.name).exists() and not torn.exists()
    assert [m["content"] for m in memory.read().messages][-2:] == ["second", "third"]


def test_a_failed_compaction_removes_the_archive_it_wrote(tmp_path, monkeypatch):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "precious", "t"))
    before = memory.path.read_bytes()

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(mf, "write_atomic", disk_full)
    with pytest.raises(OSError, match="No space"):
        memory.compact(format_block("System", "summary", "t"))
    assert memory.path.read_bytes() == before
    assert list(memory.archive_dir.iterdir()) == []


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


def test_a_file_whose_line_ends_became_crlf_loads_as_its_messages():
    data = GOOD.replace("\n", "\r\n").encode()
    parsed = parse(data)
    assert [m["content"] for m in parsed.messages] == ["first", "second"]
    assert parsed.problems == []


def test_text_that_is_not_valid_unicode_is_refused_before_anything_is_written(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "kept", "t"))
    before = memory.path.read_bytes()
    with pytest.raises(InvalidTextError, match="lone surrogate"):
        memory.append(format_block("User", "bad \udcff", "t"))
    with pytest.raises(InvalidTextError, match="lone surrogate"):
        mf.block_bytes("User", "bad \udcff", "t")
    with pytest.raises(InvalidTextError, match="lone surrogate"):
        memory.compact(format_block("System", "bad \udcff", "t"))
    assert memory.path.read_bytes() == before and memory.archives() == []


DAMAGE = [
    b"\n---\n",
    b"\n### User \xe2\x80\x94 2026-04-20T18:35:04\n",
    b"\n\n---\n\n### Tool \xe2\x80\x94 t\n\n```json\n{bad\n```\n\n---\n\n",
    b"\n### not a heading\n",
    b"### X \xe2\x80\x94 a\xc2\xa0b\n\n",
    b"stray",
    b"\xff",
    b"\r\n",
    b"\n",
]


def damaged(data, damage):
    for at, piece in damage:
        at %= len(data) + 1
        data = data[:at] + piece + data[at:]
    return data


def assert_read_whole_as_parsed(data, whole):
    if whole is not None:
        parsed = parse(data)
        assert parsed.problems == []
        assert (whole.header, whole.messages) == (parsed.header, len(parsed.messages))
        assert parsed.header + parsed.log == data.decode()


@settings(max_examples=300)
@given(
    st.lists(st.tuples(roles, text_content | json_content), min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(DAMAGE)), max_size=3),
)
def test_a_file_read_whole_is_one_that_parses_without_a_problem(messages, damage):
    data = damaged(blocks_file(*messages).encode(), damage)
    assert_read_whole_as_parsed(data, mf.read_whole(data))


@settings(max_examples=300)
@given(
    st.lists(st.tuples(roles, text_content | json_content), min_size=1, max_size=3),
    st.lists(st.tuples(roles, text_content | json_content), max_size=3),
    st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(DAMAGE)), max_size=2),
)
def test_a_note_spares_checking_again_what_it_names_and_nothing_else(first, later, damage):
    data = blocks_file(*first).encode()
    note = mf.read_whole(data).note
    appended = "".join(format_block(r, c, "2026-04-20T18:35:04") for r, c in later).encode()
    grown = damaged(data + appended, damage)  # damage anywhere, in what was noted too
    whole = mf.read_whole(grown, note)
    assert_read_whole_as_parsed(grown, whole)
    assert whole == mf.read_whole(grown)  # what a check of the whole file finds


def test_common_memories_are_read_whole():
    data = blocks_file(
        ("User", "### Step 1\nplain text — with a dash"),
        ("Agent", {"tool_calls": [{"id": "c1"}]}),
        ("Tool", "naïve ✓ 中文 🙂\n\n- a list\n--- not a separator"),
    ).encode()
    whole = mf.read_whole(data)
    assert (whole.header, whole.messages) == (parse(data).header, 3)
    assert mf.read_whole(data.replace(b"\n--- not", b"\n---\nnot")) is None  # a separator
    assert mf.read_whole(data + b"### User \xe2\x80\x94 t\n\ntorn") is None
    assert mf.read_whole(format_header("t").encode()) is None  # no message: parsed at once


def test_a_note_names_the_bytes_it_was_made_of():
    data = blocks_file(("User", "one"), ("Agent", "two")).encode()
    note = mf.read_whole(data).note
    same_size = data.replace(b"one", b"0ne")
    assert mf.read_whole(same_size, note).note == mf.read_whole(same_size).note != note
    torn = data.replace(b"two\n\n---", b"two\n\n-+-")
    assert mf.read_whole(torn, note) is None
    others = [b"", b"whole-1", b"whole-1 x y z", b"\xff", b"whole-1 999 0 2", b"whole-2" + note[7:]]
    for other in others:  # not notes of this file: it is checked whole
        assert mf.read_whole(data, other) == mf.read_whole(data)


def test_a_resumed_memory_is_noted_and_checked_again_only_where_it_grew(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "one", "t"))
    data, whole = memory.read_whole()
    assert whole.messages == 1 and data == memory.path.read_bytes()
    assert os.getxattr(memory.path, mf.WHOLE_NOTE) == whole.note
    memory.append(format_block("Agent", "two", "t"))
    assert memory.read_whole()[1].messages == 2
    assert os.getxattr(memory.path, mf.WHOLE_NOTE) == mf.read_whole(memory.path.read_bytes()).note
    edited = memory.path.read_bytes().replace(b"one", b"One")
    with open(memory.path, "r+b") as file:  # an edit in place, the size unchanged
        file.write(edited)
    assert memory.read_whole() == (edited, mf.read_whole(edited))
    with open(memory.path, "ab") as file:
        file.write(b"### User \xe2\x80\x94 t\n\ntorn")
    assert memory.read_whole()[1] is None
