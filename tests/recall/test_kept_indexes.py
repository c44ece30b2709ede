"""Recall's persistent index: each archive indexed once, by the first recall that reads it, and
kept beside the memory for every later process; rebuilt when it cannot be trusted, with one
warning if it was damaged or tampered with; never read or written through a link."""

from __future__ import annotations

import json
import os
import shutil
import warnings
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from nbmemory import Agent, Conversation, cli
from nbmemory.errors import MemoryWarning
from nbmemory.recall import (
    RecallSession,
    corpus,
    kept_indexes,
    recall,
    recall_tool,
    stored_index,
)
from nbmemory.recall.kept_indexes import MEMORY_INDEX, index_size
from nbmemory.recall.speakers import speaker_words
from nbmemory.recall.text import Passage, described
from nbmemory.store import follow, memory_path
from nbmemory.store.folders import RECALL_INDEX_DIR
from nbmemory.tokens import TokenCounter
from nbmemory.wording import byte_size
from support import agent_docs, run_python

FACT = "The code name of project Falcon is BLUEFIN-7."
QUERY = "What is the code name of project Falcon?"

RECALL_IN_A_NEW_PROCESS = """
import json, sys
from nbmemory import Workspace
from nbmemory.store.follow import follow
from nbmemory.recall import corpus, file_index, recall
built, kept = [], []
build, keep = corpus.built_archive, file_index.keep_memory
corpus.built_archive = lambda docs, path: built.append(path.name) or build(docs, path)
file_index.keep_memory = lambda *args: kept.append(1) or keep(*args)
docs = Workspace.from_env().agent("Keeper")
found = recall(docs, sys.argv[1])
index = follow(docs.path("MEMORY.md"), docs).grown["recall"]
print(json.dumps({
    "built": built,
    "memory kept again": bool(kept),
    "memory indexed": len(index.tail.messages) if hasattr(index, "tail") else None,
    "found": [[p.source, p.index, p.text] for p in found],
}))
"""


def seed(compactions: int = 3) -> Conversation:
    """Agent ``Keeper``: the fact, then small talk over ``compactions`` compactions."""
    convo = Conversation(name="Keeper", memory_md_path=memory_path("Keeper"))
    convo.add("User", FACT)
    for n in range(compactions):
        convo.add("User", f"Session {n}: the weather was mild and lunch ran long.")
        convo.add("Keeper", f"Noted, session {n}: mild weather, a long lunch.")
        convo.compact(f"Session {n}: small talk.")
    convo.add("User", "Anything about project Falcon yet?")
    return convo


def kept() -> dict[str, bytes]:
    """The archive indexes kept for ``Keeper``, by name, as its store holds them."""
    docs = agent_docs("Keeper")
    if docs.is_database:
        with docs.db.statement("read the indexes") as conn:
            rows = conn.execute(
                "SELECT source, data FROM nbmemory_recall_index WHERE agent = %s", (docs.name,)
            ).fetchall()
        return {source: bytes(data) for source, data in rows}
    folder = docs.folder / RECALL_INDEX_DIR
    return {path.name: path.read_bytes() for path in folder.iterdir()} if folder.exists() else {}


def originals() -> dict[str, bytes]:
    """``Keeper``'s MEMORY.md and archives, byte for byte."""
    docs = agent_docs("Keeper")
    return {path.name: docs.read(path) for path in [*docs.archives(), memory_path("Keeper")]}


def found(query: str = QUERY) -> list[tuple[str, int, str]]:
    return [(p.source, p.index, p.text) for p in recall(agent_docs("Keeper"), query)]


def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The archives recall indexes from their text from now on, by name."""
    built: list[str] = []
    build = corpus.built_archive
    monkeypatch.setattr(
        corpus, "built_archive", lambda docs, path: built.append(path.name) or build(docs, path)
    )
    return built


def as_new_process() -> None:
    """Forget the indexes this process read and the memory it followed, as a restart does."""
    kept_indexes._kept.clear()
    follow._followed.clear()


def test_each_archive_is_indexed_once_and_a_new_process_reads_the_kept_index(on_store):
    seed()
    before = originals()
    assert not kept() and index_size(agent_docs("Keeper")) == 0
    first = found()
    assert first[0][2] == FACT and first[0][1] == 0
    archives = [path.name for path in agent_docs("Keeper").archives()]
    assert sorted(kept()) == sorted([MEMORY_INDEX, *(f"{name}.idx" for name in archives)])
    indexes = kept()
    answer = json.loads(run_python(RECALL_IN_A_NEW_PROCESS, QUERY).stdout)
    assert answer["built"] == []  # every archive's index read, none made again
    assert not answer["memory kept again"] and answer["memory indexed"] == 0
    assert [tuple(item) for item in answer["found"]] == first
    assert kept() == indexes and originals() == before


def test_a_new_process_indexes_only_what_was_appended_to_the_memory_since(on_store):
    convo = seed()
    found()
    indexes = kept()
    convo.add("User", "Project Falcon ships in May.")
    convo.add("Keeper", "Noted: Falcon ships in May.")
    answer = json.loads(run_python(RECALL_IN_A_NEW_PROCESS, "When does Falcon ship?").stdout)
    assert answer["built"] == [] and not answer["memory kept again"]
    assert answer["memory indexed"] == 2  # the two messages appended, alone
    assert kept() == indexes
    damage(MEMORY_INDEX, "deleted")
    as_new_process()
    whole = found("When does Falcon ship?")  # the memory indexed whole: the same ranking
    assert [tuple(item) for item in answer["found"]] == whole
    assert "Falcon ships in May." in whole[0][2]


def test_a_compaction_indexes_only_the_new_archive_and_an_append_none(on_store, monkeypatch):
    convo = seed()
    found()
    indexes = kept()
    built = builds(monkeypatch)
    convo.add("User", "Project Falcon ships in May.")
    assert found("When does project Falcon ship?")[0][2] == "Project Falcon ships in May."
    assert built == []  # an append: MEMORY.md's index in RAM is extended
    convo.compact("Falcon ships in May.")
    as_new_process()
    assert found()[0][2] == FACT
    newest = agent_docs("Keeper").archives()[-1].name
    assert built == [newest]
    archived = {name: data for name, data in indexes.items() if name != MEMORY_INDEX}
    assert {name: data for name, data in kept().items() if name in archived} == archived
    assert f"{newest}.idx" in kept()
    assert kept()[MEMORY_INDEX] != indexes[MEMORY_INDEX]  # the new memory's


def damage(name: str, how: str) -> None:
    """Damage the index kept as ``name``: ``deleted``, ``flipped`` (a byte in its postings),
    ``cut`` (its end), or ``stale`` (another archive's index in its place)."""
    docs = agent_docs("Keeper")
    indexes = kept()
    data = indexes[name]
    if how == "flipped":
        at = len(data) // 3
        data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]
    elif how == "cut":
        data = data[: len(data) // 2]
    elif how == "stale":
        data = next(other for key, other in indexes.items() if key != name)
    elif how == "older":
        data = b"nbmemory recall index 2\n" + data.removeprefix(stored_index.MAGIC)
    if docs.is_database:
        with docs.db.statement("damage an index") as conn:
            if how == "deleted":
                conn.execute("DELETE FROM nbmemory_recall_index WHERE source = %s", (name,))
            elif how == "stale":  # another archive's row, whole
                conn.execute(
                    "UPDATE nbmemory_recall_index SET data = %s, head = %s WHERE source = %s",
                    (data, stored_index.head_size(data), name),
                )
            else:
                conn.execute(
                    "UPDATE nbmemory_recall_index SET data = %s WHERE source = %s", (data, name)
                )
    elif how == "deleted":
        (docs.folder / RECALL_INDEX_DIR / name).unlink()
    else:
        (docs.folder / RECALL_INDEX_DIR / name).write_bytes(data)


def warned(run: Callable[[], Any]) -> tuple[Any, list[str]]:
    """What ``run()`` answers, and the ``MemoryWarning`` lines it gave (any other warning
    fails the test)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answer = run()
    assert all(issubclass(w.category, MemoryWarning) for w in caught), caught
    return answer, [str(w.message) for w in caught]


@pytest.mark.parametrize(
    ("which", "how"),
    [
        ("archive", "deleted"),
        ("archive", "flipped"),
        ("archive", "cut"),
        ("archive", "stale"),
        ("archive", "older"),
        ("memory", "flipped"),
        ("memory", "stale"),
    ],
)
def test_an_index_that_cannot_be_trusted_is_rebuilt_with_a_warning_if_damaged(
    on_store, monkeypatch, which, how
):
    seed()
    first = found()
    before, indexes = originals(), kept()
    [name] = [key for key in indexes if key.startswith(first[0][0])]
    if which == "memory":
        name = MEMORY_INDEX
    damage(name, how)
    as_new_process()
    built = builds(monkeypatch)
    answer, said = warned(found)
    assert answer == first
    if how in ("flipped", "cut"):  # an index of another version, or of another file, is no harm
        [line] = said
        assert name in line and "a damaged recall index" in line and "\n" not in line
    else:
        assert said == []
    assert built == ([name.removesuffix(".idx")] if which == "archive" else [])
    assert kept() == indexes  # made again, the same bytes
    assert originals() == before
    as_new_process()
    assert warned(found) == (first, [])  # once: the index made again is whole


def tampered(data: bytes, change: Callable[[dict[str, Any], bytearray], None]) -> bytes:
    """An index whose header and body ``change(head, body)`` changed, its checksums made
    again to match: what no checksum catches."""
    end = data.index(b"\n", len(stored_index.MAGIC))
    head = json.loads(data[len(stored_index.MAGIC) : end])
    start = end + 1 + -(end + 1) % 8
    body = bytearray(data[start:])
    change(head, body)
    lazy = min(head["lazy_from"], len(body))
    head["crc32"], head["crc32_rest"] = zlib.crc32(body[:lazy]), zlib.crc32(body[lazy:])
    line = json.dumps(head).encode() + b"\n"
    line += bytes(-(len(stored_index.MAGIC) + len(line)) % 8)
    return stored_index.MAGIC + line + bytes(body)


def replace_index(name: str, data: bytes) -> None:
    """Put ``data`` in place of the index kept as ``name``, as someone with the folder (or
    the table) could."""
    docs = agent_docs("Keeper")
    if not docs.is_database:
        (docs.folder / RECALL_INDEX_DIR / name).write_bytes(data)
        return
    with docs.db.statement("tamper with an index") as conn:
        conn.execute(
            "UPDATE nbmemory_recall_index SET data = %s, head = %s WHERE source = %s",
            (data, min(len(data), 2**31 - 1), name),
        )


def postings_past_the_messages(head: dict[str, Any], body: bytearray) -> None:
    at, size = head["sections"]["post_docs"]
    body[at : at + size] = b"\xff" * size  # each the largest its type holds


def a_huge_offset(head: dict[str, Any], body: bytearray) -> None:
    head["lazy_from"] = 2**60


@pytest.mark.parametrize("change", [postings_past_the_messages, a_huge_offset])
def test_a_tampered_index_with_valid_checksums_is_rebuilt_once_with_a_warning(
    on_store, monkeypatch, change
):
    seed()
    first = found()
    before, indexes = originals(), kept()
    [name] = [key for key in indexes if key.startswith(first[0][0])]
    replace_index(name, tampered(indexes[name], change))
    as_new_process()
    built = builds(monkeypatch)
    answer, said = warned(found)
    assert answer == first
    [line] = said
    assert name in line and "a damaged recall index" in line
    assert built == [name.removesuffix(".idx")]
    assert kept() == indexes and originals() == before  # made again, the same bytes
    assert warned(found) == (first, [])  # in this process
    as_new_process()
    assert warned(found) == (first, []) and built == [name.removesuffix(".idx")]


def test_the_index_of_an_archive_deleted_goes_at_the_next_recall(on_store):
    seed()
    found()
    docs = agent_docs("Keeper")
    gone, *left = docs.archives()
    assert f"{gone.name}.idx" in kept()
    docs.remove(gone)
    found()  # in the same process
    assert sorted(kept()) == sorted([MEMORY_INDEX, *(f"{a.name}.idx" for a in left)])
    docs.remove(left[0])
    as_new_process()
    found()  # and in a new one
    assert sorted(kept()) == sorted([MEMORY_INDEX, *(f"{a.name}.idx" for a in left[1:])])


@pytest.mark.files("a link planted in an agent's folder")
def test_an_index_folder_planted_as_a_link_is_neither_followed_nor_written_through(tmp_path):
    seed()
    first = found()
    docs = agent_docs("Keeper")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name in kept():
        (elsewhere / name).write_bytes(b"theirs")
    shutil.rmtree(docs.folder / RECALL_INDEX_DIR)
    (docs.folder / RECALL_INDEX_DIR).symlink_to(elsewhere)
    outside = {path.name: path.read_bytes() for path in elsewhere.iterdir()}
    for _ in range(2):
        as_new_process()
        assert found() == first  # from indexes made in RAM
    assert index_size(docs) == 0
    assert {path.name: path.read_bytes() for path in elsewhere.iterdir()} == outside
    assert (docs.folder / RECALL_INDEX_DIR).is_symlink()


@pytest.mark.files("an archive changed by hand on disk, its mtime set back")
def test_an_archive_changed_in_place_is_indexed_again_even_with_its_old_mtime(monkeypatch):
    seed()
    found()
    archive = agent_docs("Keeper").archives()[0]
    st = os.stat(archive)
    archive.write_bytes(archive.read_bytes().replace(b"BLUEFIN-7", b"REDFISH-7"))
    os.utime(archive, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime
    as_new_process()
    assert found()[0][2] == FACT.replace("BLUEFIN", "REDFISH")


@pytest.mark.files("a copy of a workspace: the files' inodes and times change, not their bytes")
def test_a_copied_workspace_reuses_the_indexes_it_holds(tmp_path, monkeypatch):
    import shutil

    seed()
    first = found()
    copy = tmp_path / "copy"
    shutil.copytree(os.environ["WORKSPACE_DIR"], copy)
    monkeypatch.setenv("WORKSPACE_DIR", str(copy))
    built = builds(monkeypatch)
    assert found() == first and built == []


def test_nbmemory_ls_shows_the_size_of_the_index(on_store, capsys):
    seed()
    assert cli.main(["ls"]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert header.endswith("recall index") and row.endswith(" -")
    found()
    size = index_size(agent_docs("Keeper"))
    assert size == sum(len(data) for data in kept().values()) > 0
    assert cli.main(["ls"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith(f" {byte_size(size)}")


def test_the_tools_answer_stays_within_its_budget_and_says_what_more_matched(on_store):
    convo = Conversation(name="Keeper", memory_md_path=memory_path("Keeper"))
    for n in range(40):
        convo.add("User", f"Falcon note {n}: " + "the falcon flew over the ridge again. " * 12)
        if n % 10 == 9:
            convo.compact(f"Falcon notes up to {n}.")
    counter = TokenCounter("gpt-4o")
    for budget in (800, 300, 120):
        session = RecallSession(lambda b=budget: b, counter.count)
        tool = recall_tool(lambda: agent_docs("Keeper"), session=session)
        answer = tool("ridge")  # in every note, not in the summaries
        assert counter.count(answer) <= budget, (budget, answer)
        shown = described(answer)
        assert "more messages matched" in answer
        matched = int(answer.split(" more messages matched")[0].rsplit("\n", 1)[-1])
        assert matched + len(shown) == 40
        for passage in shown:  # the list of what was not shown is no passage's text
            assert "more messages matched" not in passage.text
        if budget == 800:  # four long notes fit, not five: the next best are listed
            assert len(shown) == 4 and "next best:\n- history_" in answer
    with pytest.raises(ValueError, match="recall_budget"):
        Agent(agent_name="Keeper", persistent_memory=True, recall_budget=0)
    assert Agent(agent_name="Keeper", persistent_memory=True).recall_budget == 800


def test_archived_passages_keep_their_cell_through_the_kept_index(on_store):
    from nbmemory.memory.provenance import Provenance

    convo = Conversation(name="Keeper", memory_md_path=memory_path("Keeper"))
    convo.provenance = Provenance("work/analysis.ipynb", "cell-a", 12, "kernel-1")
    convo.add("User", "Dashboards warehouse: ClickHouse, latency target 200 ms, region eu.")
    convo.provenance = Provenance("work/analysis.ipynb", "cell-a", 15, "kernel-1")
    convo.add("User", "Dashboards warehouse: Snowflake.")
    before = recall(agent_docs("Keeper"), "dashboards warehouse latency", limit=1, semantic=None)
    convo.provenance = None
    convo.compact("Warehouses were discussed.")
    as_new_process()
    found()  # the archive indexed and kept
    as_new_process()
    after = recall(agent_docs("Keeper"), "dashboards warehouse latency", limit=1, semantic=None)

    def cells(found: list[Passage]) -> list[tuple[str, str | None]]:
        return [(p.text, p.cell) for passage in found for p in (passage, *passage.beside)]

    assert sorted(cells(after)) == sorted(cells(before))
    assert after[0].source.startswith("history_")
    assert dict(cells(after)) == {
        "Dashboards warehouse: ClickHouse, latency target 200 ms, region eu.": (
            "cell [12] of analysis.ipynb, superseded by cell [15]"
        ),
        "Dashboards warehouse: Snowflake.": "cell [15] of analysis.ipynb",
    }


@pytest.mark.files("the texts of a file's index are checked when a query first reads them")
def test_damaged_texts_are_found_when_read_and_the_index_rebuilt(monkeypatch):
    seed()
    first = found()
    indexes = kept()
    [name] = [key for key in indexes if key.startswith(first[0][0])]
    path = agent_docs("Keeper").folder / RECALL_INDEX_DIR / name
    data = bytearray(indexes[name])
    data[-len(FACT)] ^= 0x01  # in the texts and times, read only for passages
    path.write_bytes(bytes(data))
    as_new_process()
    built = builds(monkeypatch)
    answer, said = warned(found)
    assert answer == first and len(said) == 1 and name in said[0]
    assert built == [name.removesuffix(".idx")] and kept() == indexes


@pytest.mark.files("the texts of a file's index are checked when a follow-up first reads them")
def test_a_follow_up_finds_a_damaged_index_and_answers_from_one_made_again(monkeypatch):
    from nbmemory.recall.follow_up import around

    seed()
    [(source, index, _), *_] = found()
    indexes = kept()
    [name] = [key for key in indexes if key.startswith(source)]
    path = agent_docs("Keeper").folder / RECALL_INDEX_DIR / name
    data = bytearray(indexes[name])
    data[-len(FACT)] ^= 0x01  # in the texts, read only when a message is shown
    path.write_bytes(bytes(data))
    as_new_process()
    built = builds(monkeypatch)
    answer, said = warned(lambda: around(agent_docs("Keeper"), source, index + 1))
    assert FACT in answer and len(said) == 1 and name in said[0]
    assert built == [name.removesuffix(".idx")] and kept() == indexes


def test_numbers_too_large_for_a_narrow_type_are_kept_in_a_wider_one(on_store):
    # A word said 300 times (no byte holds its count), a message of 70,000 characters (no
    # 16-bit number holds its length): each section is as wide as its largest number needs.
    convo = Conversation(name="Keeper", memory_md_path=memory_path("Keeper"))
    convo.add("User", "zeppelin " * 300 + "budget")
    convo.add("User", "The zeppelin budget is 40,000 euros. " + "Details follow. " * 4_400)
    convo.add("User", FACT)
    convo.compact("Budgets and code names.")
    first = found("zeppelin budget"), found()
    assert first[1][0][2] == FACT
    as_new_process()
    assert (found("zeppelin budget"), found()) == first
    [archived] = [data for name, data in kept().items() if name != MEMORY_INDEX]
    index = stored_index.StoredIndex(archived, speaker_words)
    assert index.chars(1) > 70_000 and index.asked(0, ["zeppelin"]) == {"zeppelin": 300}
