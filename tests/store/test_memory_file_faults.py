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
from collections import Counter
from pathlib import Path

import pytest

from nbmemory.store import agent_dir
from nbmemory.store.archives import archive_files
from nbmemory.store.memory_format import parse
from support import ROOT

pytestmark = pytest.mark.files(
    "faults of an agent folder (deleted, full disk, size limit, special files)"
)

WRITER = """
import os, random, resource, sys, time
from nbmemory import Conversation
from nbmemory.errors import MemoryWriteError
from nbmemory.store import memory_path
tag, count, compact_every, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
pause, oversize, deleted, after = float(sys.argv[5]), int(sys.argv[6]), *sys.argv[7:9]
after = int(after)
rng = random.Random(tag)
convo = Conversation(name="Shared", memory_md_path=memory_path("Shared"))
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
i = 0
while i < count:
    if deleted and after and os.path.exists(deleted):
        print(f"deleted before {tag}-{i}", flush=True)  # this message and the next ones begin after
        count, after = i + after, 0
    text = f"{tag}-{i}\\n" + "y" * rng.choice([10, 200, 2000, 8000])
    if oversize and i % 50 == 25:  # more than the limit or the disk can take: always refused
        text = f"{tag}-{i}\\n" + "y" * oversize
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
    i += 1
"""


def start(
    tag,
    count,
    compact_every=0,
    limit=0,
    workspace=None,
    pause=0.0,
    oversize=0,
    deleted=None,
    after=0,
):
    """A writer process adding ``count`` messages tagged ``tag`` (every 50th, from the 26th,
    of ``oversize`` bytes when it is given), compacting every ``compact_every``, under a file
    size ``limit``. Given the path ``deleted``, it stops once it has added ``after`` messages
    begun after that path appeared (saying from which one: ``deleted before TAG-N``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if workspace is not None:
        env["WORKSPACE_DIR"] = str(workspace)
    args = [tag, str(count), str(compact_every), str(limit), str(pause), str(oversize)]
    args += [str(deleted or ""), str(after)]
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


def test_deleting_the_agent_folder_under_writers_and_a_compactor_loses_nothing_after(
    workspace, tmp_path
):
    """Four writers and a compactor are running when the folder is deleted (each has added
    20 messages, the compactor compacted, and none stops before it is told of the deletion);
    told, each adds 100 more. Those 500 are all acknowledged and stored once, nothing twice."""
    folder, deleted = agent_dir("Shared"), tmp_path / "deleted"
    writers = [start(f"w{n}", 10**6, pause=0.003, deleted=deleted, after=100) for n in range(4)]
    writers.append(start("c", 10**6, compact_every=10, pause=0.006, deleted=deleted, after=100))
    outputs = [""] * len(writers)
    try:
        for n, writer in enumerate(writers):
            while outputs[n].count("\nack ") < 20:
                line = writer.stdout.readline()
                assert line, "a writer stopped before the deletion"
                outputs[n] += "\n" + line
        while True:  # writers may recreate files while the tree is removed: try again
            with contextlib.suppress(OSError):
                shutil.rmtree(folder)
                break
        deleted.touch()  # the folder was gone: what is begun from now on is after the deletion
        for n, writer in enumerate(writers):
            outputs[n] += writer.communicate(timeout=300)[0]
            assert writer.returncode == 0
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
    after: list[str] = []
    for out in outputs:
        [first] = [line.split()[-1] for line in out.splitlines() if line.startswith("deleted ")]
        tag, number = first.rsplit("-", 1)
        begun_after = [f"{tag}-{i}" for i in range(int(number), int(number) + 100)]
        acked = {line.split()[1] for line in out.splitlines() if line.startswith("ack ")}
        assert set(begun_after) <= acked, "every message begun after the deletion was added"
        after += begun_after
    counts, _ = stored(folder)
    assert [tag for tag in after if counts[tag] != 1] == []
    assert max(counts.values()) == 1


@pytest.mark.parametrize("fault", ["file size limit", "full disk"])
def test_a_full_disk_keeps_acknowledged_messages_and_no_refused_one(tmp_path, fault):
    """Each writer adds messages larger than the limit or the disk (the 26th, the 76th…): the
    fault happens whatever the order in which the writers and their compactions interleave."""
    workspace = tmp_path / "workspace"
    limit, oversize = 0, 2**20 + 1
    if fault == "full disk":
        workspace.mkdir()
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(workspace)],
            capture_output=True,
        )
        if mounted.returncode:
            pytest.skip("mounting a tmpfs needs root; the file size limit case covers it")
    else:
        limit = oversize = 48 * 1024
    try:
        writers = [
            start(f"f{n}", 300, 10, limit, workspace, oversize=oversize + 1) for n in range(2)
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
        oversized = {f"f{n}-{i}" for n in range(2) for i in range(25, 300, 50)}
        assert oversized <= refused, "the fault happened: every oversized message was refused"
        assert len(acked) > 100, (len(refused), len(acked))
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
    from nbmemory.store import memory_path
    from nbmemory.views.read_model import ReadModel
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
