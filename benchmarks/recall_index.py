"""Recall after a restart: cold and warm, over 100,000 archived messages, files and PostgreSQL.

    python benchmarks/recall_index.py [--runs 5] [--postgres URL]

An agent with ten archives of 10,000 messages each (the messages of ``workloads.py``) and a
small ``MEMORY.md``. The first recall ever builds and keeps the archives' indexes; then each
run starts a new Python process (the OS cache warm: the files were just read), imports
``nbmemory.recall``, and times its first recall (cold) and the median of 20 more (warm).
Figures are medians over the runs; on a loaded machine they are noisy. Without ``--postgres``
the PostgreSQL column uses a throwaway server as the tests do (``tests/pg_server.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from workloads import memory_file_text, text  # noqa: E402

from nbmemory.store.memory_format import format_block  # noqa: E402

ARCHIVES = 10
MESSAGES = 10_000
MEMORY_MESSAGES = 1_000
"""A memory of about 60,000 tokens: a large context window's worth."""
QUERY = "which budgets mention a zeppelin?"
GOALS = {
    "first recall ever: archives indexed (s)": "once per archive",
    "recall after a restart, cold (s)": "<= 100 ms",
    "recall, warm (s)": "<= 10 ms",
    "index size (MB)": "",
}

MEASURE = """
import json, statistics, sys, time
from nbmemory.recall import recall
from nbmemory.store import Workspace
docs = Workspace(sys.argv[1], sys.argv[2] or None).agent("archived")
if sys.argv[2]:
    docs.stamp("MEMORY.md")  # connected, as a kernel that resumed the agent is
start = time.perf_counter()
found = recall(docs, sys.argv[3])
cold = time.perf_counter() - start
assert found and "zeppelin" in found[0].text, found
warm = []
for _ in range(20):
    start = time.perf_counter()
    recall(docs, sys.argv[3])
    warm.append(time.perf_counter() - start)
print(json.dumps({"cold": cold, "warm": statistics.median(warm)}))
"""


def seed(root: Path, store: str) -> None:
    """The agent ``archived``: ten archives and a MEMORY.md of ``MEMORY_MESSAGES``."""
    from nbmemory.store import Workspace

    docs = Workspace(root, store or None).agent("archived")
    chunk = memory_file_text(MESSAGES, "archived").encode()
    for n in range(ARCHIVES):
        docs.write(f"archive/history_2026-04-20_14-30-{n:02d}.md", chunk)
    memory = docs.open_memory("archived")
    memory.ensure()
    for i in range(MEMORY_MESSAGES):
        memory.append(format_block("User" if i % 2 else "archived", text(i), "2026-04-21T09:00:00"))


def measure(root: Path, store: str, runs: int) -> dict[str, float]:
    from nbmemory.recall import index_size
    from nbmemory.store import Workspace

    def child() -> dict[str, float]:
        out = subprocess.run(
            [sys.executable, "-c", MEASURE, str(root), store, QUERY],
            check=True,
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )
        return json.loads(out.stdout)

    first = child()["cold"]  # nothing kept yet: every archive is indexed and kept
    figures = [child() for _ in range(runs)]
    size = index_size(Workspace(root, store or None).agent("archived"))
    return {
        "first recall ever: archives indexed (s)": first,
        "recall after a restart, cold (s)": statistics.median(f["cold"] for f in figures),
        "recall, warm (s)": statistics.median(f["warm"] for f in figures),
        "index size (MB)": size / 1e6,
    }


def shown(name: str, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if name.endswith("(MB)") else f"{value * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--postgres", default="", help="a PostgreSQL URL (default: a throwaway)")
    args = parser.parse_args()
    columns: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="nbmemory-bench-index-") as tmp:
        seed(Path(tmp) / "files", "")
        columns["files"] = measure(Path(tmp) / "files", "", args.runs)
        with contextlib.ExitStack() as stack:
            url = args.postgres
            if not url:
                sys.path.insert(0, str(ROOT / "tests"))
                from pg_server import new_database, postgres_server

                url = new_database(stack.enter_context(postgres_server()), "bench_recall")
            seed(Path(tmp) / "db", url)
            columns["PostgreSQL"] = measure(Path(tmp) / "db", url, args.runs)
    names = list(columns)
    header = ["figure", *names, "goal"]
    rows = [
        [name, *(shown(name, columns[c].get(name)) for c in names), goal]
        for name, goal in GOALS.items()
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print(
        f"{ARCHIVES * MESSAGES:,} archived messages in {ARCHIVES} archives; "
        f"medians of {args.runs} new processes\n"
    )
    for row in [header, ["-" * w for w in widths], *rows]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
