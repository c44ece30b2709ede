"""Measure the memory engine and print a table; ``--vs-swarms`` measures swarms 16.0.3 alongside.

    python benchmarks/run.py [--repeats N] [--vs-swarms] [--kernels [--before CHECKOUT]]

swarms is installed (once) into benchmarks/.swarms-venv, apart from nbmemory's environment.
Each figure is the median of several runs; the ratio is swarms' time over nbmemory's.
``--kernels`` measures only the figures of fresh kernels: ``%load_ext`` and the first answer
after a restart, on the offline model and on an OpenAI-compatible server on 127.0.0.1 (the
tests' fake one), right after ``%load_ext`` and a few seconds after it; ``--before`` measures
another checkout of nbmemory (a folder holding ``nbmemory/``) in turns with this one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
ROOT = HERE.parent
SWARMS = "swarms==16.0.3"
SWARMS_VENV = HERE / ".swarms-venv"
PAUSE = 3.0  # seconds between %load_ext and the first %%agent cell: a person reading
FIRST_ANSWER_OFFLINE = "first answer after a restart, fresh kernel (offline model)"
FIRST_ANSWER_SERVER = "first answer after a restart (loopback OpenAI server)"
FIRST_ANSWER_SERVER_PAUSED = f"first answer, {PAUSE:g} s after %load_ext (loopback server)"
RESUMED = "Scout"
RESUMED_MESSAGES = 500
QUESTION = "Which warehouse did we pick?"

GOALS = {
    "add, per message (persistent)": "<= 5 us",
    "token-budget check at 10,000 messages": "< 10 us",
    "token-budget check right after an add": "<= 10 us",
    "keyword search, 10,000 messages": "2x faster than swarms",
    "keyword search right after an add": "2x faster than swarms",
    "resume over a 10,000-message MEMORY.md": "ahead of swarms",
    "search 100,000 messages in archives, warm": "<= 50 ms",
    "recall by words alone, 100,000 archived messages, cold": "<= 100 ms",
    "recall by words alone, 100,000 archived messages, warm": "<= 10 ms",
    "recall by words and word vectors (the default), 100,000 archived, cold": "<= 100 ms",
    "recall by words and word vectors (the default), 100,000 archived, warm": "<= 10 ms",
    "recall over a megabyte run of one letter (y), index built": "<= 1 s (was 62 s)",
    "recall per question, 600-turn memory, default ranking (warm)": "<= 5 ms",
    "recall per question, 600-turn memory, default ranking (cold)": "<= 100 ms",
    "import nbmemory": "<= 60 ms",
    "%load_ext nbmemory, fresh kernel": "<= 150 ms",
    FIRST_ANSWER_OFFLINE: "<= 1 s",
    "widget: state sent for 10,000 messages (KB)": "a page, not the history",
    "widget: first page, 10,000 messages (cold)": "<= 0.3 s",
    "widget: first page + token figures, 10,000 messages (cold)": "<= 0.3 s",
    "widget: first render, 10,000 messages (read model warm)": "<= 0.3 s",
    "first token figure, 10,000 messages, new process (counts kept)": "<= 50 ms",
}


@contextmanager
def fresh_kernel(
    env: dict[str, str] | None = None, cwd: Path | None = None, checkout: Path = ROOT
) -> Iterator[Any]:
    """A client of a new kernel that sees the nbmemory of ``checkout``; shut down afterwards."""
    from jupyter_client.manager import start_new_kernel

    env = {**os.environ, **(env or {}), "PYTHONPATH": str(checkout)}
    manager, client = start_new_kernel(kernel_name="python3", env=env, cwd=str(cwd or HERE))
    try:
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def execute(client: Any, code: str) -> str:
    """Run ``code`` in the kernel; what it printed or showed, and fails on an error."""
    out: list[str] = []

    def collect(message: dict[str, Any]) -> None:
        content = message["content"]
        if message["header"]["msg_type"] == "stream":
            out.append(content["text"])
        elif "data" in content:
            out.append(content["data"].get("text/markdown") or content["data"]["text/plain"])
        elif message["header"]["msg_type"] == "error":
            out.append(f"{content['ename']}: {content['evalue']}")

    reply = client.execute_interactive(code, output_hook=collect, timeout=120)
    shown = "".join(out)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"the kernel failed on {code!r}: {shown}")
    return shown


def load_ext_time(repeats: int, checkout: Path = ROOT) -> float:
    """Median time of ``%load_ext nbmemory`` in a fresh kernel, measured inside the kernel."""
    code = (
        "import time; t = time.perf_counter()\n"
        "get_ipython().run_line_magic('load_ext', 'nbmemory')\n"
        "print(time.perf_counter() - t)"
    )
    times = []
    for _ in range(repeats):
        with fresh_kernel(checkout=checkout) as client:
            times.append(float(execute(client, code).split()[-1]))
    return statistics.median(times)


def _resumed_workspace(root: Path, checkout: Path) -> None:
    """Agent ``RESUMED``'s memory on disk in ``root``: ``RESUMED_MESSAGES`` messages about a
    project, one of which answers ``QUESTION``, written as a kernel before the restart did."""
    code = (
        "from nbmemory import Conversation\n"
        "from nbmemory.store import memory_path\n"
        f"c = Conversation(name={RESUMED!r}, memory_md_path=memory_path({RESUMED!r}))\n"
        f"for i in range({RESUMED_MESSAGES} // 2 - 1):\n"
        "    c.add('User', f'Item {i}: the dashboard for team {i} refreshes every {i} minutes.')\n"
        f"    c.add({RESUMED!r}, f'Noted: team {{i}} gets a refresh every {{i}} minutes.')\n"
        "c.add('User', 'Our warehouse is ClickHouse.')\n"
        f"c.add({RESUMED!r}, 'Noted: ClickHouse it is.')\n"
        "c.close()\n"
    )
    with fresh_kernel({"WORKSPACE_DIR": str(root)}, root, checkout) as client:
        execute(client, code)


def first_answer_time(
    repeats: int, server: Any = None, pause: float = 0.0, checkout: Path = ROOT
) -> float:
    """Median time of the first ``%%agent`` answer in a fresh kernel, on a resumed agent: from
    the cell's execute_request to its reply (its output shown), ``pause`` seconds after
    ``%load_ext nbmemory``. On the offline model, else on ``server`` (an OpenAI-compatible
    server: the tests' ``FakeOpenAI``) as the default model."""
    times = []
    with tempfile.TemporaryDirectory(prefix="bench-first-answer-") as folder:
        root = Path(folder)
        _resumed_workspace(root, checkout)
        env = {"WORKSPACE_DIR": str(root), "OPENAI_API_KEY": "test-key"}
        for _ in range(repeats):
            with fresh_kernel(env, root, checkout) as client:
                execute(client, "%load_ext nbmemory")
                if server is not None:
                    execute(client, f"%config NbMemoryMagics.api_base = {server.url!r}")
                    execute(client, "%config NbMemoryMagics.default_model = 'openai/test-model'")
                time.sleep(pause)
                start = time.perf_counter()
                shown = execute(client, f"%%agent {RESUMED}\n{QUESTION}")
                times.append(time.perf_counter() - start)
                expected = "ClickHouse" if server is None else "ok"
                if expected not in shown:
                    raise RuntimeError(f"unexpected answer: {shown!r}")
    return statistics.median(times)


def kernel_figures(repeats: int, checkout: Path = ROOT) -> dict[str, float]:
    """The figures of fresh kernels running ``checkout``'s nbmemory: ``%load_ext`` and the
    first answer after a restart."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from fake_openai import FakeOpenAI

    figures = {"%load_ext nbmemory, fresh kernel": load_ext_time(repeats, checkout)}
    figures[FIRST_ANSWER_OFFLINE] = first_answer_time(repeats, checkout=checkout)
    with FakeOpenAI() as server:
        figures[FIRST_ANSWER_SERVER] = first_answer_time(repeats, server, checkout=checkout)
        figures[FIRST_ANSWER_SERVER_PAUSED] = first_answer_time(
            repeats, server, PAUSE, checkout=checkout
        )
    return figures


def interleaved(repeats: int, before: Path | None) -> tuple[dict[str, float], dict[str, float]]:
    """The fresh-kernel figures of this checkout and of ``before`` (if given), measured in
    turns so that both see the same load; medians."""
    checkouts = [ROOT] + ([before] if before else [])
    runs: dict[Path, list[dict[str, float]]] = {checkout: [] for checkout in checkouts}
    for _ in range(repeats):
        for checkout in checkouts:
            runs[checkout].append(kernel_figures(1, checkout))
    medians = [
        {name: statistics.median(run[name] for run in runs[checkout]) for name in runs[ROOT][0]}
        for checkout in checkouts
    ]
    return medians[0], medians[1] if before else {}


def swarms_python() -> Path:
    python = SWARMS_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(SWARMS_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", SWARMS], check=True)
    return python


def measure(python: Path | str, library: str, repeats: int) -> dict[str, float | None]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run(
        [str(python), str(HERE / "workloads.py"), library, str(repeats)],
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode:
        sys.exit(f"{library}'s workloads failed (exit {out.returncode}):\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def show(value: float | None, name: str) -> str:
    if value is None:
        return "n/a"
    if "MB" in name or "KB" in name:
        return f"{value:.2f}"
    if "(tokens)" in name:
        return f"{value:,.0f}"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale or unit == "us":
            return f"{value / scale:.3g} {unit}"
    raise AssertionError


def print_table(rows: list[list[str]]) -> None:
    """Print ``rows`` (the first is the header) as a Markdown-like table."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print(" | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        if i == 0:
            print("-|-".join("-" * width for width in widths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--vs-swarms", action="store_true")
    parser.add_argument("--kernels", action="store_true", help="only the fresh-kernel figures")
    parser.add_argument(
        "--before",
        type=Path,
        metavar="CHECKOUT",
        help="with --kernels: the same figures of another checkout, side by side",
    )
    args = parser.parse_args()

    if args.kernels:
        figures, before = interleaved(args.repeats, args.before)
        rows = [["workload", "nbmemory", "goal"] + (["before", "before / now"] if before else [])]
        for name, value in figures.items():
            row = [name, show(value, name), GOALS.get(name, "")]
            if before:
                row += [show(before[name], name), f"{before[name] / value:.1f}x"]
            rows.append(row)
        print_table(rows)
        return
    ours = measure(sys.executable, "nbmemory", args.repeats)
    ours |= kernel_figures(args.repeats)
    theirs = measure(swarms_python(), "swarms", args.repeats) if args.vs_swarms else {}
    theirs["import nbmemory"] = theirs.pop("import swarms", None)

    rows = [["workload", "nbmemory", "goal"]]
    if args.vs_swarms:
        rows[0] += [SWARMS.replace("==", " "), "swarms / nbmemory"]
    for name, value in ours.items():
        label = "import (nbmemory vs swarms)" if name == "import nbmemory" else name
        row = [label, show(value, name), GOALS.get(name, "")]
        if args.vs_swarms:
            other = theirs.get(name)
            ratio = f"{other / value:.1f}x" if other and value and "B)" not in name else ""
            row += [show(other, name), ratio]
        rows.append(row)
    print_table(rows)


if __name__ == "__main__":
    main()
