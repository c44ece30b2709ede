"""Real processes sharing one agent's memory: parallel appends, compaction races, SIGKILL."""

import random
import signal
import time
from collections import Counter

import pytest

from nbmemory.memory_file import archive_files, parse, unfinished_archive
from nbmemory.read_model import ReadModel
from nbmemory.store import agent_dir
from support import start_writer

pytestmark = pytest.mark.files(
    "memory_file.py's locking among processes sharing a folder "
    "(test_pg_store.py races and kills writers on the database)"
)


def all_files():
    """MEMORY.md and the archives search and the views show."""
    folder = agent_dir("Shared")
    return [folder / "MEMORY.md", *archive_files(folder)]


_archive_tags: dict[str, Counter] = {}


def file_tags(path):
    tags = Counter()
    for message in parse(path.read_bytes()).messages:
        if message["role"] == "User":
            tags[message["content"].split("\n", 1)[0]] += 1
    return tags


def stored_tags():
    """Every message tag found in MEMORY.md and the archives, with how often it occurs."""
    memory, *archives = all_files()
    tags = file_tags(memory)
    for path in archives:
        if path.name not in _archive_tags:  # archives never change once written
            _archive_tags[path.name] = file_tags(path)
        tags += _archive_tags[path.name]
    return tags


def test_four_processes_appending_at_once_lose_and_mix_nothing():
    start_at = time.time() + 2
    writers = [start_writer(f"p{n}", 500, start_at=start_at) for n in range(4)]
    for writer in writers:
        writer.communicate(timeout=300)
        assert writer.returncode == 0
    parsed = parse(all_files()[0].read_bytes())
    assert parsed.problems == []
    assert len(parsed.messages) == 2000
    for message in parsed.messages:
        tag, body = message["content"].split("\n", 1)
        assert body.startswith("x" * 40) and body.endswith(f"\n---\n### fake — {tag}")
    for n in range(4):
        mine = [
            m["content"].split("\n", 1)[0]
            for m in parsed.messages
            if m["content"].startswith(f"p{n}-")
        ]
        assert mine == [f"p{n}-{i}" for i in range(500)]


def test_compacting_while_others_append_keeps_every_message():
    start_at = time.time() + 2
    appenders = [start_writer(f"a{n}", 1000, start_at=start_at) for n in range(3)]
    compactor = start_writer("c", 400, compact_every=20, start_at=start_at)
    for writer in [*appenders, compactor]:
        writer.communicate(timeout=300)
        assert writer.returncode == 0
    tags = stored_tags()
    expected = {f"a{n}-{i}" for n in range(3) for i in range(1000)} | {f"c-{i}" for i in range(400)}
    assert set(tags) == expected
    assert set(tags.values()) == {1}
    assert len(all_files()) > 10


COMPACTION_STEPS = 21
"""System calls that change files in a compaction, up to the release of the lock (see
``support.start_writer``): locking, opening the archive and the new file, writing, fsyncing,
closing, renaming."""


def test_a_writer_killed_at_random_moments_never_loses_an_acknowledged_message():
    """Every other writer is killed after a chosen system call of its first compaction (each of
    them in turn: opens, writes, fsyncs, the rename, the lock), the others at a random moment
    of their appends, which may tear a block they were writing."""
    rng = random.Random(20261202)
    acked: set[str] = set()
    archives: dict[str, bytes] = {}
    interrupted = 0
    _archive_tags.clear()
    for round_ in range(1, 2 * COMPACTION_STEPS + 1):
        step = (round_ + 1) // 2 if round_ % 2 == 1 else 0
        writer = start_writer(
            f"r{round_}", 10_000, rng.choice([5, 15, 40]), big=300_000, pause_at=step
        )
        deadline = time.monotonic() + rng.uniform(0.05, 0.4)
        paused = ""
        for line in writer.stdout:
            if line.startswith("ack "):
                acked.add(line.split()[1])
            if line.startswith("paused after "):
                paused = line.split()[-1]
            if paused if step else time.monotonic() > deadline:
                break
        assert not step or paused, f"round {round_}: the writer did not stop at step {step}"
        writer.send_signal(signal.SIGKILL)
        rest, _ = writer.communicate(timeout=60)
        acked.update(line.split()[1] for line in rest.splitlines() if line.startswith("ack "))

        for name, data in archives.items():
            assert (agent_dir("Shared") / "archive" / name).read_bytes() == data
        archives = {p.name: p.read_bytes() for p in all_files()[1:]}
        tags = stored_tags()  # parses every file: none may fail
        missing = acked - set(tags)
        assert not missing, f"round {round_}: lost {sorted(missing)[:5]}"
        twice = [tag for tag, n in tags.items() if n > 1]
        assert not twice, f"round {round_}: shown twice {twice[:5]}"
        for path in all_files()[1:]:  # a block torn by a kill is put aside, never archived
            assert "unparsed" not in {m["role"] for m in parse(archives[path.name]).messages}
        # Archived but not yet replaced, or a half-written new file: the kill hit a compaction.
        folder = agent_dir("Shared")
        interrupted += unfinished_archive(folder) is not None or any(folder.glob(".*.tmp"))
    assert interrupted >= 10, "the steps between archive and rename left nothing to clear up"
    assert len(acked) > 200
    # What the views and search show: each archive once, no copy of a message twice.
    reader = ReadModel()
    shown = [info.name for info in reader.archives("Shared")]
    assert shown == [path.name for path in all_files()[1:]]
    for tag in sorted(acked)[:: max(1, len(acked) // 20)]:
        hits = reader.search("Shared", tag, archives=True, limit=50)
        assert sum(item.text.startswith(f"{tag}\n") for item in hits.items) == 1, tag
