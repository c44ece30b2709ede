"""Ctrl-C at random moments of appends, as Jupyter's interrupt button sends it to a kernel.

    python benchmarks/interrupts.py [--runs 30] [--seed 7] [--vs-swarms]

For each store (nbmemory on files, nbmemory on a throwaway PostgreSQL server as the tests start
one, and with ``--vs-swarms`` swarms 16.0.3 on files, from the venv ``run.py`` uses), ``--runs``
processes in turn each open an agent of their own and append to it in a loop (messages of 10,
1,000 or 100,000 characters), until SIGINT arrives from outside at a random moment. Each
process prints how many of its ``add()`` calls returned.

Printed per store: how many processes hung (none may take over 30 s to exit), their exit times
after the signal, and what the memories hold, parsed with nbmemory's parser: messages whole,
messages damaged (cut or merged: not exactly as added), acknowledged messages missing, and the
interrupted adds kept whole (an append is all or nothing: kept whole, or not at all). No figure
is asserted; ``tests/test_interrupts.py`` is the deterministic test.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE), str(ROOT / "tests")]

from pg_server import new_database, postgres_server  # noqa: E402
from run import SWARMS, print_table, swarms_python  # noqa: E402

from nbmemory.store import Workspace  # noqa: E402
from nbmemory.store.memory_format import parse  # noqa: E402

EXIT_LIMIT = 30.0
CHILD = """
import random, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as a kernel: even if run in background
if sys.argv[1] == "swarms":
    from swarms.structs.conversation import Conversation
else:
    from nbmemory import Conversation
run, path = int(sys.argv[2]), sys.argv[3]
convo = Conversation(name=f"Interrupted{run}", memory_md_path=path)
rng = random.Random(run)
print("ready", flush=True)
added = 0
try:
    while True:
        convo.add("User", f"run {run} message {added} " + "x" * rng.choice((10, 1000, 100_000)))
        added += 1
except KeyboardInterrupt:
    print(added, flush=True)
"""
WHOLE = re.compile(r"run (\d+) message (\d+) x+")


def interrupt_runs(
    python: str, library: str, workspace: Path, env: dict[str, str], runs: int, seed: int
) -> tuple[list[float], int, dict[int, int]]:
    """Exit times after SIGINT, processes that hung, and each run's acknowledged adds."""
    rng = random.Random(seed)
    exits, hung, acknowledged = [], 0, {}
    for run in range(runs):
        child = subprocess.Popen(
            [python, "-c", CHILD, library, str(run), str(memory_path(workspace, run))],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise SystemExit(f"{library}: the appending process did not start")
        time.sleep(rng.uniform(0.0, 0.8))
        child.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:
            out, _ = child.communicate(timeout=EXIT_LIMIT)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            hung += 1
            continue
        exits.append(time.monotonic() - sent)
        with contextlib.suppress(ValueError, IndexError):
            acknowledged[run] = int(out.split()[-1])
    return exits, hung, acknowledged


def memory_path(workspace: Path, run: int) -> Path:
    return workspace / "agents" / f"Interrupted{run}" / "MEMORY.md"


def check(memories: list[bytes], acknowledged: dict[int, int]) -> dict[str, int]:
    """What the stored memories hold of what the processes added."""
    found: set[tuple[int, int]] = set()
    damaged = 0
    for data in memories:
        parsed = parse(data)
        damaged += len(parsed.problems)
        for message in parsed.messages:
            match = WHOLE.fullmatch(str(message["content"]))
            if match is None:
                damaged += 1
            else:
                found.add((int(match[1]), int(match[2])))
    missing = sum(1 for run, n in acknowledged.items() for i in range(n) if (run, i) not in found)
    kept = sum(1 for run, n in acknowledged.items() if (run, n) in found)
    return {"whole": len(found), "damaged": damaged, "missing": missing, "interrupted kept": kept}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--vs-swarms", action="store_true")
    args = parser.parse_args()
    base = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    base.pop("NBMEMORY_STORE", None)
    rows = [["store", "runs", "hung", "exit median", "exit max", "acknowledged", "whole",
             "damaged", "missing", "interrupted, kept whole"]]  # fmt: skip
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        url = new_database(stack.enter_context(postgres_server()), "bench_interrupts")
        stores = [("nbmemory, files", sys.executable, "nbmemory", "")]
        stores.append(("nbmemory, PostgreSQL", sys.executable, "nbmemory", url))
        if args.vs_swarms:
            swarms = str(swarms_python())
            stores.append((f"{SWARMS.replace('==', ' ')}, files", swarms, "swarms", ""))
        for n, (label, python, library, store) in enumerate(stores):
            workspace = folder / f"workspace-{n}"
            env = {**base, "WORKSPACE_DIR": str(workspace)}
            if store:
                env["NBMEMORY_STORE"] = store
            exits, hung, acknowledged = interrupt_runs(
                python, library, workspace, env, args.runs, args.seed
            )
            stored = Workspace(workspace, store)
            memories = [
                stored.agent(f"Interrupted{run}").read("MEMORY.md") for run in range(args.runs)
            ]
            found = check(memories, acknowledged)
            times = [f"{statistics.median(exits) * 1e3:.0f} ms", f"{max(exits) * 1e3:.0f} ms"]
            counts = [sum(acknowledged.values()), *found.values()]
            rows.append([label, str(args.runs), str(hung), *times, *map(str, counts)])
    print(f"SIGINT at a random moment of appends: {args.runs} processes a store, seed {args.seed}")
    print()
    print_table(rows)


if __name__ == "__main__":
    main()
