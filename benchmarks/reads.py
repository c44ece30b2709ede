"""Bounded reads: the compactions endpoint under concurrent reads, and recall after a big message.

    python benchmarks/reads.py [--runs N]

Compactions: each run makes two agents whose one compaction archived a 3.6 MB tool result with
no record beside it (as an nbmemory older than its records left it), and a ``jupyter server``
of its own (see server.py) answers:

- ``GET /agents/NAME/compactions`` alone, the first time (the archive never read) and again;
- seven of them at once for the other agent, with an unrelated ``GET /agents/NAME?limit=1``
  sent once they are under way: how long that one took, and the slowest of the seven.

Recall and search: a MEMORY.md holding one 8 MB message (200,000 distinct words), then a recall
and a keyword search (``ReadModel.search``, what every view's search box asks) after each of
several appends, and one recall with a 100,000-character query.

Each figure is the median over ``--runs`` runs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from run import print_table, show  # noqa: E402
from server import get, jupyter_server  # noqa: E402

CONCURRENT = 7
API = "/nbmemory/api/agents"

GOALS = {
    "compactions: first read, 3.6 MB archive without a record (s)": "",
    "compactions: read again (s)": "<= 0.1 s",
    f"compactions: unrelated page while {CONCURRENT} are read (s)": "<= 0.1 s",
    f"compactions: slowest of {CONCURRENT} at once (s)": "",
    "compactions: answer (KB)": "",
    "recall after an append, 8 MB message in memory (s)": "<= 20 ms",
    "recall, 100,000-character query (s)": "<= 20 ms",
    "search after an append, 8 MB message in memory (s)": "<= 20 ms",
}


def tool_result(seed: int) -> str:
    """About 3.6 MB of a tool's JSON: invoices with numbers, dates, names and identifiers."""
    rng = random.Random(seed)
    rows = []
    while sum(map(len, rows)) < 3_600_000:
        n = len(rows)
        rows.append(
            f'{{"id": "INV-{seed}-{n:06d}", "customer": "Client{rng.randrange(5000)}", '
            f'"amount": {rng.randrange(10**6) / 100}, "date": "2025-{1 + n % 12:02d}-'
            f'{1 + n % 28:02d}", "owner": "Mx {rng.choice(["Dupont", "Okafor", "Lindqvist"])}"}}'
        )
    return "[" + ",\n".join(rows) + "]"


def unrecorded_agent(workspace, name: str, seed: int) -> None:
    """An agent whose one compaction archived a big tool result, with no record of it."""
    from nbmemory import Conversation

    convo = Conversation(name=name, memory_md_path=workspace.memory_path(name), workspace=workspace)
    convo.add("User", "List this year's invoices.")
    convo.add("Tool", tool_result(seed))
    convo.add(name, "Here are the invoices.")
    archive = convo.compact("The invoices of the year were listed.")
    for record in archive.parent.glob(f"{archive.stem}.json"):
        record.unlink()  # as an nbmemory older than its records left it
    convo.add("User", "Thanks.")


def heavy(port: int, token: str, times: list[float]) -> None:
    """One read of the crowded agent's compactions; its time is added to ``times``."""
    began = time.perf_counter()
    assert get(port, token, f"{API}/Crowded/compactions")[0] == 200
    times.append(time.perf_counter() - began)


def compactions_figures(runs: int) -> dict[str, list[float]]:
    from nbmemory import Workspace

    figures: dict[str, list[float]] = {name: [] for name in list(GOALS)[:5]}
    for run in range(runs):
        with tempfile.TemporaryDirectory(prefix="nbmemory-bench-reads-") as tmp:
            root = Path(tmp)
            workspace = Workspace(root / "agent_workspace")
            unrecorded_agent(workspace, "Alone", run)
            unrecorded_agent(workspace, "Crowded", run + 1000)
            with jupyter_server(root, workspace.root) as (port, token):
                started = time.perf_counter()
                status, _, body = get(port, token, f"{API}/Alone/compactions")
                cold = time.perf_counter() - started
                assert status == 200, status
                started = time.perf_counter()
                get(port, token, f"{API}/Alone/compactions")
                warm = time.perf_counter() - started

                slowest: list[float] = []
                threads = [
                    threading.Thread(target=heavy, args=(port, token, slowest))
                    for _ in range(CONCURRENT)
                ]
                for thread in threads:
                    thread.start()
                time.sleep(0.2)  # the seven are under way
                started = time.perf_counter()
                assert get(port, token, f"{API}/Alone?limit=1")[0] == 200
                unrelated = time.perf_counter() - started
                for thread in threads:
                    thread.join()
            values = [cold, warm, unrelated, max(slowest), len(body) / 1024]
            for name, value in zip(figures, values, strict=True):
                figures[name].append(value)
    return figures


def recall_figures(runs: int) -> dict[str, list[float]]:
    from nbmemory import Conversation, Workspace
    from nbmemory.recall import recall
    from nbmemory.views.read_model import ReadModel

    rng = random.Random(7)
    vocabulary = [f"w{n}x" for n in range(200_000)]
    big = " ".join(rng.choice(vocabulary) for _ in range(1_300_000))[: 8 * 2**20]
    query = " ".join(rng.choice(vocabulary) for _ in range(20_000))[:100_000]
    appended, long_query, searched = [], [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="nbmemory-bench-recall-") as tmp:
            workspace = Workspace(Path(tmp))
            convo = Conversation(
                name="Big", memory_md_path=workspace.memory_path("Big"), workspace=workspace
            )
            convo.add("User", "The budget is 40k EUR.")
            convo.add("Tool", big)
            docs = workspace.agent("Big")
            model = ReadModel(workspace)
            recall(docs, "budget")  # the first recall and search index the file
            model.search("Big", "budget")
            times, search_times = [], []
            for n in range(5):
                convo.add("User", f"Note {n} about the budget.")
                started = time.perf_counter()
                recall(docs, "budget")
                times.append(time.perf_counter() - started)
                started = time.perf_counter()
                model.search("Big", "budget")
                search_times.append(time.perf_counter() - started)
            appended.append(statistics.median(times))
            searched.append(statistics.median(search_times))
            started = time.perf_counter()
            recall(docs, query)
            long_query.append(time.perf_counter() - started)
    return {
        "recall after an append, 8 MB message in memory (s)": appended,
        "recall, 100,000-character query (s)": long_query,
        "search after an append, 8 MB message in memory (s)": searched,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    figures = {**compactions_figures(args.runs), **recall_figures(args.runs)}
    rows = [["workload", "nbmemory", "goal"]]
    for name, values in figures.items():
        unit = "(KB)" if name.endswith("(KB)") else "(s)"  # "MB" in a name is no unit here
        rows.append([name, show(statistics.median(values), unit), GOALS[name]])
    print_table(rows)


if __name__ == "__main__":
    main()
