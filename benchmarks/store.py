"""The file store and the PostgreSQL store side by side, in one run, on the engine's workloads.

    python benchmarks/store.py [--repeats N]

Starts a private PostgreSQL server (as the tests do: Debian's, else pgserver's binaries) on
127.0.0.1, so the database figures include a loopback round trip and a durable commit per
change. Prints a table of medians with the engine's goals (benchmarks/run.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from pg_server import new_database, postgres_server  # noqa: E402
from run import GOALS, print_table  # noqa: E402
from workloads import ARCHIVES, MESSAGES, median_of, memory_file_text, text  # noqa: E402

ADDS = 2_000
DATABASE_GOALS = {"add, per message (persistent)": "<= 400 us"}


def measure(root: Path, url: str | None, repeats: int) -> dict[str, float]:
    """The workloads on a workspace in ``root``, on the database at ``url`` (else files)."""
    from nbmemory import Conversation, Workspace
    from nbmemory.store import follow
    from nbmemory.store.layout import import_layout
    from nbmemory.views.read_model import ReadModel

    workspace = Workspace(root / "workspace", url)
    agents = root / "workspace" / "agents"
    results: dict[str, float] = {}

    def add_per_message() -> float:
        name = f"add-{time.perf_counter_ns()}"
        convo = Conversation(
            name=name, memory_md_path=agents / name / "MEMORY.md", workspace=workspace
        )
        contents = [text(i) for i in range(ADDS)]
        start = time.perf_counter()
        for content in contents:
            convo.add("User", content)
        return (time.perf_counter() - start) / ADDS

    results["add, per message (persistent)"] = median_of(repeats, add_per_message)

    # The 10,000-message agent and the archives: written as files, imported into a database.
    on_database = workspace.database is not None
    tree = (root / "source" / "agents") if on_database else agents
    resume = tree / "resume" / "MEMORY.md"
    archived = tree / "archived"
    (archived / "archive").mkdir(parents=True)
    resume.parent.mkdir(parents=True)
    resume.write_text(memory_file_text(MESSAGES, "resume"), encoding="utf-8")
    chunk = memory_file_text(MESSAGES, "archived")
    for n in range(ARCHIVES):
        (archived / "archive" / f"history_2026-04-20_14-30-{n:02d}.md").write_text(chunk)
    (archived / "MEMORY.md").write_text(memory_file_text(0, "archived"), encoding="utf-8")
    if on_database:
        import_layout(tree.parent, workspace)

    def resume_agent() -> float:
        start = time.perf_counter()
        Conversation(
            name="resume", memory_md_path=agents / "resume" / "MEMORY.md", workspace=workspace
        )
        return time.perf_counter() - start

    results["resume over a 10,000-message MEMORY.md"] = median_of(repeats, resume_agent)

    convo = Conversation(
        name="archived", memory_md_path=agents / "archived" / "MEMORY.md", workspace=workspace
    )

    def archive_search(cold: bool) -> float:
        if cold:
            follow._followed.clear()  # as in a new process: read and indexed again
        start = time.perf_counter()
        hits = convo.search_memory("ZEPPELIN", archives=True)
        elapsed = time.perf_counter() - start
        assert len(hits) == ARCHIVES * MESSAGES // 1000
        return elapsed

    results["search 100,000 messages in archives, cold"] = median_of(
        repeats, lambda: archive_search(True)
    )
    results["search 100,000 messages in archives, warm"] = median_of(
        repeats * 4, lambda: archive_search(False)
    )

    reader = ReadModel(workspace)

    def first_page() -> float:
        start = time.perf_counter()
        page = reader.messages("resume", 0, 20)
        elapsed = time.perf_counter() - start
        assert page.total == MESSAGES
        return elapsed

    results["read model: newest page of 10,000 messages, warm"] = median_of(repeats * 4, first_page)
    return results


def floor(url: str, repeats: int) -> dict[str, float]:
    """What any durable change costs on this server, whatever nbmemory does: the median of a
    bare round trip and of a one-row INSERT committed durably, on one warm connection."""
    import statistics

    import psycopg

    results: dict[str, float] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET synchronous_commit TO on")
        conn.execute("CREATE TABLE floor (data bytea)")  # not TEMPORARY: those skip the WAL
        row = text(0).encode()
        work = {
            "SELECT 1": lambda: conn.execute("SELECT 1"),
            "INSERT, durable": lambda: conn.execute("INSERT INTO floor VALUES (%s)", (row,)),
        }
        for name, run in work.items():
            times = []
            for _ in range(ADDS * repeats // 10):
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
            results[name] = statistics.median(times)
        conn.execute("DROP TABLE floor")
    return results


def show(value: float, name: str) -> str:
    if "per message" in name:
        return f"{value * 1e6:,.0f} us"
    return f"{value * 1e3:,.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        on_files = measure(Path(tmp) / "files", None, args.repeats)
        with postgres_server() as server:
            url = new_database(server, "bench")
            try:
                on_database = measure(Path(tmp) / "database", url, args.repeats)
                bare = floor(url, args.repeats)
            finally:
                from nbmemory.store.workspace import database_at

                database_at(url).close()
    rows = [
        [
            "workload",
            "files",
            "PostgreSQL",
            "PostgreSQL / files",
            "goal (files)",
            "goal (PostgreSQL)",
        ]
    ]
    for name, value in on_files.items():
        other = on_database[name]
        rows.append(
            [
                name,
                show(value, name),
                show(other, name),
                f"{other / value:.1f}x",
                GOALS.get(name, ""),
                DATABASE_GOALS.get(name, ""),
            ]
        )
    print_table(rows)
    print(
        "PostgreSQL floor on this machine (median, one warm connection): "
        + ", ".join(f"{name} {value * 1e6:,.0f} us" for name, value in bare.items())
    )


if __name__ == "__main__":
    main()
