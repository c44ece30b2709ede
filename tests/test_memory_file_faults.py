"""Faults a user or a machine inflicts on an agent folder, played with real processes.

The folder deleted under running writers and a compactor, a disk that fills up, a file size
limit: every acknowledged message stays exactly once, and a refused one is nowhere.
"""

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from nbmemory.memory_file import archive_files, parse
from nbmemory.store import agent_dir
from support import ROOT

pytestmark = pytest.mark.files(
    "faults of an agent folder (deleted, full disk, size limit, special files)"
)

WRITER = """
import random, resource, sys, time
from nbmemory import Conversation
from nbmemory.errors import MemoryWriteError
from nbmemory.store import memory_path
tag, count, compact_every, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
pause = float(sys.argv[5])
rng = random.Random(tag)
convo = Conversation(name="Shared", memory_md_path=memory_path("Shared"))
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
for i in range(count):
    text = f"{tag}-{i}\\n" + "y" * rng.choice([10, 200, 2000, 8000])
    began = time.time()
    try:
        convo.add("User", text)
        print(f"ack {tag}-{i} {began} {len(text)}", flush=True)
    except MemoryWriteError as exc:
        assert str(memory_path("Shared")) in str(exc) and "not added" in str(exc), exc
        print(f"refused {tag}-{i}", flush=True)
    if compact_every and i % compact_every == compact_every - 1:
        try:
            convo.compact(f"summary after {tag}-{i}")
        except OSError:
            print("compaction failed", flush=True)
    time.sleep(pause)
"""


def start(tag, count, compact_every=0, limit=0, workspace=None, pause=0.0):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if workspace is not None:
        env["WORKSPACE_DIR"] = str(workspace)
    args = [tag, str(count), str(compact_every), str(limit), str(pause)]
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, *args], env=env, stdout=subprocess.PIPE, text=True
    )


def stored(folder: Path) -> tuple[Counter, dict[str, str]]:
    """How often each message tag is in MEMORY.md and the archives shown, and the texts."""
    counts, texts = Counter(), {}
    for path in [folder / "MEMORY.md", *archive_files(folder)]:
        if not path.exists():
            continue
        for message in parse(path.read_bytes()).messages:
            content = message["content"]
            if message["role"] != "User":  # not summaries, not what a fault cut short
                continue
            tag = content.split("\n", 1)[0]
            counts[tag] += 1
            texts[tag] = content
    return counts, texts


def test_deleting_the_agent_folder_under_writers_and_a_compactor_loses_nothing_after(workspace):
    folder = agent_dir("Shared")
    writers = [start(f"w{n}", 600, pause=0.003) for n in range(4)]
    writers.append(start("c", 300, compact_every=10, pause=0.006))
    acks: list[tuple[str, float]] = []
    first = writers[0].stdout.readline()
    acks.append((first.split()[1], float(first.split()[2])))
    time.sleep(0.3)
    while True:  # writers may recreate files while the tree is removed: try again
        with contextlib.suppress(FileNotFoundError, OSError):
            shutil.rmtree(folder)
            break
    deleted = time.time()
    for writer in writers:
        out, _ = writer.communicate(timeout=300)
        assert writer.returncode == 0
        acks += [
            (line.split()[1], float(line.split()[2])) for line in out.splitlines() if "ack" in line
        ]
    counts, _ = stored(folder)
    after = [tag for tag, began in acks if began > deleted]
    assert len(after) > 500, "the deletion came too late to show anything"
    assert [tag for tag in after if counts[tag] != 1] == []
    assert max(counts.values()) == 1


@pytest.mark.parametrize("fault", ["file size limit", "full disk"])
def test_a_full_disk_keeps_acknowledged_messages_and_no_refused_one(tmp_path, fault):
    workspace = tmp_path / "workspace"
    limit = 0
    if fault == "full disk":
        workspace.mkdir()
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(workspace)],
            capture_output=True,
        )
        if mounted.returncode:
            pytest.skip("mounting a tmpfs needs root; the file size limit case covers it")
    else:
        limit = 48 * 1024
    try:
        writers = [
            start(f"f{n}", 300, compact_every=10, limit=limit, workspace=workspace)
            for n in range(2)
        ]
        lines = []
        for writer in writers:
            out, _ = writer.communicate(timeout=300)
            assert writer.returncode == 0
            lines += out.splitlines()
        folder = workspace / "agents" / "Shared"
        counts, texts = stored(folder)
        acked = {line.split()[1]: int(line.split()[3]) for line in lines if line.startswith("ack")}
        refused = {line.split()[1] for line in lines if line.startswith("refused")}
        assert refused and len(acked) > 100, (len(refused), len(acked))
        assert {tag: counts[tag] for tag in acked if counts[tag] != 1} == {}
        assert all(len(texts[tag]) == size for tag, size in acked.items())  # none changed
        on_disk = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
        assert [tag for tag in refused if f"\n\n{tag}\n".encode() in on_disk] == []
    finally:
        if fault == "full disk":
            subprocess.run(["umount", str(workspace)], check=False)


def make_special(path: Path, kind: str) -> None:
    if kind == "folder":
        path.mkdir()
    elif kind == "FIFO":
        os.mkfifo(path)
    elif kind == "dangling link":
        path.symlink_to(path.parent / "nowhere")
    else:
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # like /dev/null


@pytest.mark.parametrize("kind", ["folder", "FIFO", "dangling link", "device"])
def test_a_special_file_as_memory_is_refused_and_every_other_agent_still_shows(workspace, kind):
    from nbmemory import Conversation
    from nbmemory.errors import UnsafeFileError
    from nbmemory.read_model import ReadModel
    from nbmemory.store import memory_path
    from support import snapshot

    Conversation(name="Fine", memory_md_path=memory_path("Fine")).add("User", "hello")
    agent_dir("Odd").mkdir()
    make_special(memory_path("Odd"), kind)
    before = snapshot(agent_dir("Odd"))
    with pytest.raises(UnsafeFileError, match="not a regular file"):
        Conversation(name="Odd", memory_md_path=memory_path("Odd"))
    assert snapshot(agent_dir("Odd")) == before
    reader = ReadModel()
    agents = {info.name: info for info in reader.agents()}
    assert agents["Fine"].messages == 1
    if "Odd" in agents:
        assert agents["Odd"].messages == 0 and "not a regular file" in agents["Odd"].problems[0]
    listing = subprocess.run(
        [sys.executable, "-m", "nbmemory", "ls"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listing.returncode == 0 and "Fine" in listing.stdout
