"""Ctrl-C at every point of an append, a compaction and a view's read, on files and PostgreSQL.

Each case runs ``tests/interrupting.py`` in new processes, which raises ``KeyboardInterrupt`` at
the N-th point where Python could run a signal handler, for N over every point of the operation
(psycopg's and psycopg_pool's included), or over points spread evenly through it where it has
too many to try them all. Nothing depends on timing: the points are counted, not waited for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT

SCRIPT = Path(__file__).parent / "interrupting.py"
# (operation, every how many points, how many points a process tries before it exits):
# appends and compactions in one process each (a new process would meet more archives, and
# points with them), a view's read, which has about a million points, in processes of four.
PLANS = {
    "add": (1, 100_000),
    "compact": (1, 100_000),
    "read": (100_003, 4),
}
DATABASE_STEPS = {"compact": 7}  # about 1,500 points there: every seventh


def interrupt_everywhere(op: str, step: int, per_process: int) -> list[dict]:
    """Run the plan in as many processes as it takes; each must exit promptly, interrupted."""
    results: list[dict] = []
    start = 1
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(SCRIPT.parent)])}
    while not results or results[-1]["outcome"] != "finished":
        stop = start + step * per_process
        args = [sys.executable, str(SCRIPT), op, str(start), str(stop), str(step)]
        process = subprocess.run(
            [*args, "--exit-interrupted"], env=env, capture_output=True, text=True, timeout=300
        )
        assert process.returncode == 0, process.stderr[-3000:]
        lines = process.stdout.splitlines()
        assert lines[-1] == "exiting", process.stderr[-3000:]
        results += [json.loads(line) for line in lines[:-1]]
        start = stop
    return results


def check(results: list[dict]) -> None:
    interrupted = [r for r in results if r["outcome"] == "interrupted"]
    assert interrupted and results[-1]["outcome"] == "finished"
    for r in results:
        where = f"interrupted at point {r['n']} ({r['where']})"
        assert r["problems"] == [], where
        assert r["lost"] == [], where
        assert r["twice"] == [], where
        assert not r["next_add_lost"], where
        assert r["lock_free"], where
        assert r["agrees_with_disk"], where
        assert r["left_open"] == 0, where
        assert r["next_open_warnings"] == [], where
        assert r["next_add_warnings"] == [], where
        assert r["logged"] == [], where


@pytest.mark.files("a folder's lock, its file descriptors and its archives")
@pytest.mark.parametrize("op", list(PLANS))
def test_an_interrupt_anywhere_leaves_a_memory_file_whole(op: str):
    check(interrupt_everywhere(op, *PLANS[op]))


@pytest.mark.parametrize("op", list(PLANS))
def test_an_interrupt_anywhere_leaves_a_database_memory_whole(op: str, database: str):
    step, per_process = PLANS[op]
    check(interrupt_everywhere(op, DATABASE_STEPS.get(op, step), per_process))
