"""Listing thousands of agents on files and on PostgreSQL, and one memory of hundreds of MB.

    python benchmarks/many_agents.py [--agents N] [--repeats N] [--big-mb MB] [--no-kept-counts]

Builds ``--agents`` agents of six messages each (every tenth with pinned notes, recorded
settings and an archive) as files, imports them into a private PostgreSQL server on 127.0.0.1
(as benchmarks/store.py does), and resumes each agent once through nbmemory on each store, as
a kernel running it would: its token counts are then kept beside its memory
(``.token-counts.json``; ``--no-kept-counts`` leaves that out, as for memories written by
swarms or by hand). Then it measures on each store, as medians of ``--repeats`` runs:

- ``nbmemory ls`` in a new process (what a person waits for: nothing read before), with its
  CPU time (what it costs whatever else the machine runs), and in this process again
  (``cli.main``: the memories already followed);
- ``GET /nbmemory/api/agents`` on a real Jupyter server (benchmarks/server.py): its first
  answer with no warm-up (everything read and counted then), 2 s after the server answers (as
  a JupyterLab page loads before its panel asks: the server's warm-up, ``NbMemoryServer.warm_up``,
  has read the agents), and as soon as it answers (the warm-up still reading); then the answer
  after one agent changed, and an unchanged poll (``If-None-Match``, a 304);
- what that poll checks, ``ReadModel.version()``, in this process.

Then one agent whose ``MEMORY.md`` is ``--big-mb`` MB: ``nbmemory import`` of it (the size
limit raised) and ``nbmemory ls``, each in a new process, with that process's peak memory.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE), str(HERE.parent / "tests")]

from pg_server import new_database, postgres_server  # noqa: E402
from run import print_table  # noqa: E402
from server import AGENTS, get, jupyter_server  # noqa: E402
from workloads import memory_file_text, with_bytecode  # noqa: E402

GOAL = "<= 1 s"
PEAK = (  # VmHWM: ru_maxrss would count the memory of this process, which the child forked from
    "import re, sys\n"
    "from nbmemory.cli import ONLY_READ, leave, main\n"
    "code = main(sys.argv[1:])\n"
    "status = open('/proc/self/status').read()\n"
    "print(re.search(r'VmHWM:\\s*(\\d+)', status)[1], file=sys.stderr)\n"
    "leave(code) if sys.argv[1] in ONLY_READ else sys.exit(code)  # as the command ends\n"
)


def build(agents: Path, count: int) -> None:
    """``count`` agents as files: six messages each; every tenth has notes, settings and an
    archive."""
    from nbmemory.memory.notes import render
    from nbmemory.memory.run_settings import RunSettings

    settings = json.dumps(asdict(RunSettings("gpt-4o", 128_000, 0.8, "o200k_base")))
    for i in range(count):
        name = f"agent-{i:04d}"
        folder = agents / name
        folder.mkdir(parents=True)
        (folder / "MEMORY.md").write_text(memory_file_text(6, name), encoding="utf-8")
        if i % 10 == 0:
            (folder / "NOTES.md").write_text(render([f"Budget of {name}: 40k EUR."]))
            (folder / "settings.json").write_text(settings)
            (folder / "archive").mkdir()
            archive = folder / "archive" / "history_2026-04-20_14-30-00.md"
            # not the start of MEMORY.md, which a resumed agent would take for a compaction
            # that did not finish
            archive.write_text(memory_file_text(4, f"{name}, earlier"), encoding="utf-8")


def keep_counts(place) -> None:
    """Resume every agent of workspace ``place`` once, with its own model, and count its
    memory, as an agent's first request does: the counts are kept beside the memory."""
    from nbmemory import Conversation
    from nbmemory.views.read_model import ReadModel

    reader = ReadModel(place)
    for name in place.agents():
        model = reader.settings(name)[0].model
        convo = Conversation(
            name=name,
            memory_md_path=place.memory_path(name),
            workspace=place,
            tokenizer_model_name=model,
        )
        convo.context_tokens()
        convo.close()


def big_memory(path: Path, megabytes: int) -> None:
    """A ``MEMORY.md`` of about ``megabytes`` MB, in messages of 2,000 characters."""
    path.parent.mkdir(parents=True)
    chunk = memory_file_text(1000, "big").encode()
    head, _, blocks = chunk.partition(b"\n### ")
    with path.open("wb") as out:
        out.write(head + b"\n### ")
        while out.tell() < megabytes * 1_000_000:
            out.write(blocks.replace(b"x" * 150, b"memory and latency " * 8 + b"x" * 2))
            out.write(b"\n### " if out.tell() < megabytes * 1_000_000 else b"")


def run_cli(args: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Seconds, peak memory (MB) and CPU seconds (user and system) of ``nbmemory ARGS`` in a
    new process: on a busy machine its CPU time says more than its wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return elapsed, int(done.stderr.split()[-1]) / 1024, cpu


def median_of(repeats: int, run) -> float:
    return statistics.median(run() for _ in range(repeats))


def timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def measure(root: Path, url: str | None, repeats: int) -> dict[str, float]:
    """The listing figures of the workspace at ``root`` on the database at ``url`` (else
    files)."""
    from nbmemory import Conversation, Workspace, cli
    from nbmemory.views.read_model import ReadModel

    env = {"WORKSPACE_DIR": str(root), "NBMEMORY_STORE": url or ""}
    place = Workspace(root, url)
    results = {}
    runs = [run_cli(["ls"], env) for _ in range(repeats)]
    results["nbmemory ls, new process"] = statistics.median(run[0] for run in runs)
    results["nbmemory ls, new process: its CPU time"] = statistics.median(run[2] for run in runs)

    def ls_in_process() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli.main(["--workspace", str(root), "ls"]) == 0

    with contextlib.ExitStack() as stack:
        if url:
            os.environ["NBMEMORY_STORE"] = url
            stack.callback(os.environ.pop, "NBMEMORY_STORE")
        ls_in_process()  # the first run follows every memory
        results["nbmemory ls, in process again"] = median_of(repeats, lambda: timed(ls_in_process))
        reader = ReadModel(place)
        reader.agents()
        results["unchanged poll: ReadModel.version()"] = median_of(
            repeats * 4, lambda: timed(reader.version)
        )
        changing = Conversation(
            name="agent-0001", memory_md_path=place.memory_path("agent-0001"), workspace=place
        )
        lab = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-lab-"))
        for label, wait, options in (
            ("GET /agents, first, no warm-up", 0, ["--NbMemoryServer.warm_up=False"]),
            ("GET /agents, first, 2 s after the server answers", 2, []),
        ):
            with jupyter_server(Path(lab), root, *options) as (port, token):
                time.sleep(wait)  # as a JupyterLab page loads before its panel asks
                start = time.perf_counter()
                status, _, _ = get(port, token, AGENTS)
                results[label] = time.perf_counter() - start
                assert status == 200
        with jupyter_server(Path(lab), root) as (port, token):
            start = time.perf_counter()
            status, headers, _ = get(port, token, AGENTS)
            results["GET /agents, first, as soon as the server answers"] = (
                time.perf_counter() - start
            )
            assert status == 200

            def changed() -> float:
                changing.add("User", "one more message")
                start = time.perf_counter()
                status, _, _ = get(port, token, AGENTS, headers["ETag"])
                assert status == 200
                return time.perf_counter() - start

            results["GET /agents, one agent changed"] = median_of(repeats, changed)
            status, headers, _ = get(port, token, AGENTS)

            def unchanged() -> float:
                start = time.perf_counter()
                status, _, _ = get(port, token, AGENTS, headers["ETag"])
                assert status == 304
                return time.perf_counter() - start

            results["GET /agents, unchanged poll (304)"] = median_of(repeats * 4, unchanged)
    return results


def big(tmp: Path, url: str, megabytes: int) -> dict[str, str]:
    """Import of one ``megabytes`` MB memory, and ``nbmemory ls`` of it on files and on the
    database: seconds and peak MB of each process."""
    source = tmp / "big-source"
    big_memory(source / "agents" / "Big" / "MEMORY.md", megabytes)
    results = {}
    on_files = {"WORKSPACE_DIR": str(source), "NBMEMORY_STORE": ""}
    on_database = {"WORKSPACE_DIR": str(tmp / "big-database"), "NBMEMORY_STORE": url}
    limit = ["--max-document-mb", str(megabytes * 2)]
    for label, args, env in (
        (
            f"nbmemory import, {megabytes} MB MEMORY.md",
            ["import", str(source), *limit],
            on_database,
        ),
        (f"nbmemory ls, {megabytes} MB MEMORY.md, files", ["ls"], on_files),
        (f"nbmemory ls, {megabytes} MB MEMORY.md, PostgreSQL", ["ls"], on_database),
    ):
        seconds, peak, _ = run_cli(args, env)
        results[label] = f"{seconds:.1f} s, peak {peak:,.0f} MB"
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--big-mb", type=int, default=200, help="0: leave the big memory out")
    parser.add_argument(
        "--no-kept-counts", action="store_true", help="measure memories with no counts kept"
    )
    args = parser.parse_args()
    with_bytecode()
    from nbmemory import Workspace
    from nbmemory.store.layout import import_layout
    from nbmemory.store.workspace import database_at

    with tempfile.TemporaryDirectory(prefix="bench-many-") as name, postgres_server() as server:
        tmp = Path(name)
        build(tmp / "files" / "agents", args.agents)
        url = new_database(server, "many")
        try:
            import_layout(tmp / "files", Workspace(tmp / "database", url))
            if not args.no_kept_counts:
                for place in (Workspace(tmp / "files"), Workspace(tmp / "database", url)):
                    keep_counts(place)
            on_files = measure(tmp / "files", None, args.repeats)
            on_database = measure(tmp / "database", url, args.repeats)
            kept = "no counts kept" if args.no_kept_counts else "counts kept"
            rows = [[f"{args.agents:,} agents ({kept})", "files", "PostgreSQL", "goal"]]
            for label, seconds in on_files.items():
                figures = [f"{value * 1e3:,.1f} ms" for value in (seconds, on_database[label])]
                rows.append([label, *figures, GOAL if "first" not in label else ""])
            print_table(rows)
            if args.big_mb:
                print()
                print_table(
                    [["one big memory", "time, peak memory"]]
                    + [[label, figures] for label, figures in big(tmp, url, args.big_mb).items()]
                )
        finally:
            database_at(url).close()


if __name__ == "__main__":
    main()
