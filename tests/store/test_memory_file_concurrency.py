"""Real processes sharing one agent's memory: parallel appends, compaction races, SIGKILL."""

import random
import signal
import time
from collections import Counter

import pytest

from nbmemory import Conversation
from nbmemory.store import agent_dir, memory_path
from nbmemory.store.archives import archive_files, unfinished_archive
from nbmemory.store.memory_format import parse
from nbmemory.views.read_model import ReadModel
from support import start_writer

pytestmark = pytest.mark.files(
    "memory_file.py's locking among processes sharing a folder "
    "(test_postgresql.py races and kills writers on the database)"
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
    """Each writer waits at its 250th message until the others are there too: they append
    while the others are running, whatever order the machine runs them in."""
    meet = {f"p{n}": 249 for n in range(4)}
    writers = [start_writer(f"p{n}", 500, meet=meet) for n in range(4)]
    for writer in writers:
        writer.communicate(timeout=300)
        assert writer.returncode == 0
    parsed = parse(all_files()[0].read_bytes())
    assert parsed.problems == []
    assert len(parsed.messages) == 2000
    first = Counter(m["content"].split("-", 1)[0] for m in parsed.messages[:1000])
    assert first == {tag: 250 for tag in meet}, "the writers met halfway"
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
    """The appenders' first 500 messages each are stored before the compactor's 201st (they
    meet there), so its next compaction archives them while the appenders still run."""
    meet = {"a0": 499, "a1": 499, "a2": 499, "c": 199}
    appenders = [start_writer(f"a{n}", 1000, meet=meet) for n in range(3)]
    compactor = start_writer("c", 400, compact_every=20, meet=meet)
    for writer in [*appenders, compactor]:
        writer.communicate(timeout=300)
        assert writer.returncode == 0
    archived = Counter()
    for path in all_files()[1:]:
        archived += file_tags(path)
    assert {f"a{n}-{i}" for n in range(3) for i in range(500)} <= set(archived)
    tags = stored_tags()
    expected = {f"a{n}-{i}" for n in range(3) for i in range(1000)} | {f"c-{i}" for i in range(400)}
    assert set(tags) == expected
    assert set(tags.values()) == {1}
    assert len(all_files()) > 10


COMPACTION_STEPS = 22
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
    # A compaction first: every writer's first compaction then finds the archive folder there,
    # and makes the same system calls, whatever the writers killed at random left.
    first = Conversation(name="Shared", memory_md_path=memory_path("Shared"))
    first.add("User", "before\n" + "x" * 40)
    first.compact("summary before")
    first.close()
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
        assert writer.returncode == -signal.SIGKILL, f"round {round_}: it was not running"
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
        if step:  # the kills at random moments may hit a compaction too: not counted
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
