"""What the Jupyter AI persona adds around each model call, by the size of the agent's memory.

    python benchmarks/persona.py [--repeats N]

Before each answer the persona asks the read model for the memory's version (a few ``stat``
calls); when another writer changed the memory since its last answer (a notebook, another
chat) it builds the agent again, which reads MEMORY.md (token counts from the cache the agent
keeps); after each answer it reads the usage for Jupyter AI's gauge. Prints medians, in ms.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE)]

from run import print_table  # noqa: E402
from workloads import median_of, memory_file_text  # noqa: E402

SIZES = (100, 1_000, 10_000)


def measure(messages: int, repeats: int) -> list[str]:
    """The three costs for an agent ``chat`` whose memory holds ``messages`` messages."""
    from nbmemory import Agent, Workspace
    from nbmemory.views.read_model import ReadModel

    root = Path(tempfile.mkdtemp(prefix="bench-persona-"))
    folder = root / "agents" / "chat"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text(memory_file_text(messages, "chat"), encoding="utf-8")
    workspace = Workspace(root)
    reader = ReadModel(workspace)

    def build() -> Agent:
        return Agent(agent_name="chat", persistent_memory=True, workspace=workspace)

    build().short_memory.close()  # counts the memory once and keeps the counts, as a run does

    def timed(action) -> float:
        start = time.perf_counter()
        result = action()
        elapsed = (time.perf_counter() - start) * 1000
        if isinstance(result, Agent):
            result.short_memory.close()
        return elapsed

    version = median_of(repeats, lambda: timed(lambda: reader.version("chat")))
    rebuild = median_of(repeats, lambda: timed(build))
    usage = median_of(repeats, lambda: timed(lambda: ReadModel(workspace).usage("chat")))
    return [f"{messages:,}", f"{version:.2f}", f"{rebuild:.1f}", f"{usage:.1f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    os.environ.pop("NBMEMORY_STORE", None)
    rows = [["messages", "version check", "agent built again", "usage for the gauge"]]
    rows += [measure(size, args.repeats) for size in SIZES]
    print_table(rows)


if __name__ == "__main__":
    main()
