"""The writer of MEMORY.md: appends, compactions and archives that survive torn writes, files
changed behind its back, crashes and other writers."""

import datetime
import os
import re
import shutil
import warnings

import pytest

from nbmemory import MemoryWarning
from nbmemory.errors import InvalidTextError
from nbmemory.store import memory_file
from nbmemory.store.archives import unfinished_archive
from nbmemory.store.memory_file import WHOLE_NOTE, MemoryFile
from nbmemory.store.memory_format import (
    block_bytes,
    format_block,
    format_header,
    parse,
    read_messages,
    read_whole,
)


def blocks_file(*messages):
    return format_header("test") + "".join(
        format_block(r, c, "2026-04-20T18:35:04") for r, c in messages
    )


GOOD = blocks_file(("User", "first"), ("Agent", "second"))


TORN = "### User — 2026-04-20T18:36:00\n\n"


def test_damage_is_a_warning_and_the_file_is_left_alone(tmp_path):
    path = tmp_path / "MEMORY.md"
    path.write_bytes(b"\xff\xfe garbage\n" + GOOD.encode())
    with pytest.warns(MemoryWarning, match="invalid UTF-8"):
        messages = read_messages(path)
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
    archived = parse(archive.read_bytes())
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
    assert [m["content"] for m in read_messages(archive)] == ["one"]


def test_two_writers_of_one_file_take_turns_without_damage(tmp_path):
    first = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    second = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    for n in range(3):
        first.append(format_block("User", f"first {n}", "t"))
        second.append(block_bytes("Agent", f"second {n}", "t"))
    parsed = first.read()
    assert parsed.problems == []
    assert [m["content"] for m in parsed.messages] == [
        f"{who} {n}" for n in range(3) for who in ("first", "second")
    ]


@pytest.mark.parametrize("change", ["deleted", "renamed over", "folder deleted"])
def test_without_a_link_watch_every_append_asks_the_file(tmp_path, monkeypatch, change):
    monkeypatch.setattr(
        memory_file, "link_watch", lambda: None
    )  # as where inotify is not available
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
    assert unfinished_archive(memory.folder) == torn
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

    monkeypatch.setattr(memory_file, "write_atomic", disk_full)
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

    monkeypatch.setattr(datetime, "datetime", FrozenClock)
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
    assert [m["content"] for m in read_messages(memory.archives()[0])] == ["first"]
    assert [m["content"] for m in read_messages(memory.archives()[2])] == [
        "after second",
        "third",
    ]


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


def test_a_forgotten_memory_file_gives_its_descriptors_back(tmp_path):
    before = len(os.listdir("/proc/self/fd"))
    for n in range(50):
        MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent").append(format_block("User", n, "t"))
    assert len(os.listdir("/proc/self/fd")) <= before + 2


def test_text_that_is_not_valid_unicode_is_refused_before_anything_is_written(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "kept", "t"))
    before = memory.path.read_bytes()
    with pytest.raises(InvalidTextError, match="lone surrogate"):
        memory.append(format_block("User", "bad \udcff", "t"))
    with pytest.raises(InvalidTextError, match="lone surrogate"):
        block_bytes("User", "bad \udcff", "t")
    with pytest.raises(InvalidTextError, match="lone surrogate"):
        memory.compact(format_block("System", "bad \udcff", "t"))
    assert memory.path.read_bytes() == before and memory.archives() == []


def test_a_resumed_memory_is_noted_and_checked_again_only_where_it_grew(tmp_path):
    memory = MemoryFile(tmp_path / "agent" / "MEMORY.md", "agent")
    memory.append(format_block("User", "one", "t"))
    data, whole = memory.read_whole()
    assert whole.messages == 1 and data == memory.path.read_bytes()
    assert os.getxattr(memory.path, WHOLE_NOTE) == whole.note
    memory.append(format_block("Agent", "two", "t"))
    assert memory.read_whole()[1].messages == 2
    assert os.getxattr(memory.path, WHOLE_NOTE) == read_whole(memory.path.read_bytes()).note
    edited = memory.path.read_bytes().replace(b"one", b"One")
    with open(memory.path, "r+b") as file:  # an edit in place, the size unchanged
        file.write(edited)
    assert memory.read_whole() == (edited, read_whole(edited))
    with open(memory.path, "ab") as file:
        file.write(b"### User \xe2\x80\x94 t\n\ntorn")
    assert memory.read_whole()[1] is None
