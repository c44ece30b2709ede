"""What recording each message's notebook cell costs: ``add()`` with and without provenance,
on files and on PostgreSQL, and the read model's newest page of a memory whose every message
has one; then ``add()`` with provenance after 100 and after 10,000 earlier provenance lines
(written whole, or appended one by one), which should cost the same: an append adds a line,
it does not rewrite the others.

    python benchmarks/provenance.py [--repeats N]

Starts a private PostgreSQL server as benchmarks/store.py does. Prints tables of medians.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from pg_server import new_database, postgres_server  # noqa: E402
from run import print_table  # noqa: E402
from workloads import median_of, text  # noqa: E402

ADDS = 1_000
EARLIER = (100, 10_000)
"""How many provenance lines an agent has before the adds that :func:`measure_growth` times."""
GROWTH_ADDS = 200


def measure(root: Path, url: str | None, repeats: int) -> dict[str, float]:
    """The workloads on a workspace in ``root``, on the database at ``url`` (else files)."""
    from nbmemory import Conversation, Workspace
    from nbmemory.memory.provenance import Provenance
    from nbmemory.views.read_model import ReadModel

    workspace = Workspace(root / "workspace", url)
    where = Provenance("reports/analysis.ipynb", "0b6c3f5e-cell", 12, "4f1c-kernel-session")
    names: dict[bool, str] = {}

    def add_per_message(recorded: bool) -> float:
        name = f"add-{time.perf_counter_ns()}"
        names[recorded] = name
        convo = Conversation(
            name=name, memory_md_path=workspace.memory_path(name), workspace=workspace
        )
        convo.provenance = where if recorded else None
        contents = [text(i) for i in range(ADDS)]
        start = time.perf_counter()
        for content in contents:
            convo.add("User", content)
        return (time.perf_counter() - start) / ADDS

    results = {
        "add, per message, no provenance": median_of(repeats, lambda: add_per_message(False)),
        "add, per message, with provenance": median_of(repeats, lambda: add_per_message(True)),
    }
    reader = ReadModel(workspace)

    def newest_page(recorded: bool) -> float:
        start = time.perf_counter()
        page = reader.messages(names[recorded], 0, 20)
        elapsed = time.perf_counter() - start
        assert (page.items[0].cell is not None) == recorded
        return elapsed

    for recorded, said in ((False, "no provenance"), (True, "with provenance")):
        newest_page(recorded)  # the first reading: the page is read and followed
        results[f"read model: newest page of {ADDS:,}, {said}, warm"] = median_of(
            repeats * 4, lambda recorded=recorded: newest_page(recorded)
        )
    return results


def measure_growth(root: Path, url: str | None, repeats: int) -> dict[tuple[str, int], float]:
    """Seconds per ``add()`` with provenance for an agent with each of :data:`EARLIER` earlier
    provenance lines, keyed by how they were written ("whole": one write, as an older store or
    an import leaves them; "appended": one append each, as messages add them)."""
    from nbmemory import Conversation, Workspace
    from nbmemory.memory.provenance import PROVENANCE_FILE, Provenance

    workspace = Workspace(root / "workspace", url)
    where = Provenance("reports/analysis.ipynb", "0b6c3f5e-cell", 12, "4f1c-kernel-session")
    line = json.dumps({"key": "0" * 32, **where.to_json()}).encode() + b"\n"

    def seeded(earlier: int, how: str) -> Conversation:
        name = f"grown-{how}-{earlier}-{time.perf_counter_ns()}"
        convo = Conversation(
            name=name, memory_md_path=workspace.memory_path(name), workspace=workspace
        )
        convo.add("User", "first")
        docs = workspace.agent(name)
        if how == "whole":
            docs.write(PROVENANCE_FILE, line * earlier)
        else:
            for _ in range(earlier):
                docs.append(PROVENANCE_FILE, line)
        convo.provenance = where
        return convo

    results: dict[tuple[str, int], float] = {}
    for how in ("whole", "appended"):
        for earlier in EARLIER:
            convos = [seeded(earlier, how) for _ in range(repeats)]

            def per_add(convos: list[Conversation] = convos) -> float:
                convo = convos.pop()
                contents = [text(i) for i in range(GROWTH_ADDS)]
                start = time.perf_counter()
                for content in contents:
                    convo.add("User", content)
                return (time.perf_counter() - start) / GROWTH_ADDS

            results[(how, earlier)] = median_of(repeats, per_add)
    return results


def show(value: float, name: str) -> str:
    if "per message" in name:
        return f"{value * 1e6:,.0f} us"
    return f"{value * 1e3:,.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-provenance-") as tmp:
        on_files = measure(Path(tmp) / "files", None, args.repeats)
        grown_files = measure_growth(Path(tmp) / "files-grown", None, args.repeats)
        with postgres_server() as server:
            url = new_database(server, "bench_provenance")
            try:
                on_database = measure(Path(tmp) / "database", url, args.repeats)
                grown_database = measure_growth(Path(tmp) / "database-grown", url, args.repeats)
            finally:
                from nbmemory.store.workspace import database_at

                database_at(url).close()
    rows = [["workload", "files", "PostgreSQL"]]
    for name, value in on_files.items():
        rows.append([name, show(value, name), show(on_database[name], name)])
    print_table(rows)
    print()
    rows = [["add with provenance, per message, after", "files", "PostgreSQL"]]
    for key, value in grown_files.items():
        how, earlier = key
        name = f"{earlier:,} earlier lines, {how}"
        rows.append([name, f"{value * 1e6:,.0f} us", f"{grown_database[key] * 1e6:,.0f} us"])
    print_table(rows)


if __name__ == "__main__":
    main()
