"""Measure the memory engine and print a table; ``--vs-swarms`` measures swarms 16.0.3 alongside.

    python benchmarks/run.py [--repeats N] [--vs-swarms]

swarms is installed (once) into benchmarks/.swarms-venv, apart from nbmemory's environment.
Each figure is the median of several runs; the ratio is swarms' time over nbmemory's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
SWARMS = "swarms==16.0.3"
SWARMS_VENV = HERE / ".swarms-venv"

GOALS = {
    "add, per message (persistent)": "<= 10 us",
    "token-budget check at 10,000 messages": "< 10 us",
    "keyword search, 10,000 messages": "<= 2 ms",
    "resume over a 10,000-message MEMORY.md": "<= 25 ms",
    "search 100,000 messages in archives, warm": "<= 50 ms",
    "recall over 100,000 archived messages, warm": "<= 20 ms",
    "import nbmemory": "<= 100 ms",
    "%load_ext nbmemory, fresh kernel": "<= 150 ms",
    "widget: state sent for 10,000 messages (KB)": "a page, not the history",
    "widget: first page, 10,000 messages (cold)": "<= 0.3 s",
    "widget: first page + token figures, 10,000 messages (cold)": "<= 0.3 s",
    "widget: first render, 10,000 messages (read model warm)": "<= 0.3 s",
}


def load_ext_time(repeats: int) -> float:
    """Median time of ``%load_ext nbmemory`` in a fresh kernel, measured inside the kernel."""
    import statistics

    from jupyter_client.manager import start_new_kernel

    code = (
        "import time; t = time.perf_counter()\n"
        "get_ipython().run_line_magic('load_ext', 'nbmemory')\n"
        "print(time.perf_counter() - t)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    for _ in range(repeats):
        manager, client = start_new_kernel(kernel_name="python3", env=env)
        try:
            out: list[str] = []

            def collect(message: dict, out: list[str] = out) -> None:
                if message["header"]["msg_type"] == "stream":
                    out.append(message["content"]["text"])

            client.execute_interactive(code, output_hook=collect, timeout=60)
            times.append(float("".join(out).split()[-1]))
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    return statistics.median(times)


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
        check=True,
    )
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
    args = parser.parse_args()

    ours = measure(sys.executable, "nbmemory", args.repeats)
    ours["%load_ext nbmemory, fresh kernel"] = load_ext_time(args.repeats)
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
