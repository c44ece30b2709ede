"""Interrupt an agent's memory at every point where Python could deliver a Ctrl-C: a test seam.

Run as a script in a new process (``python interrupting.py OP START STOP STEP``), on the store
that ``$WORKSPACE_DIR`` and ``$NBMEMORY_STORE`` name. For each N of ``range(START, STOP, STEP)`` it
runs OP (``add``, ``compact`` or ``read``: a view's calls to the read model) with
``KeyboardInterrupt`` raised at the N-th point where CPython checks for signals in the main
thread: a Python function starting, a call returning, a loop going round (CPython 3.11-3.13 run
a signal handler at exactly these points; a blocking call that a signal interrupts raises at the
call's return too). Library code counts: psycopg's and psycopg_pool's points are N's like ours.

After each N it checks what the issue asks for: the memory parses without damage, every message
whose ``add()`` returned is in MEMORY.md or an archive (once), and a next ``add()`` works. It
prints one JSON line per N, then exits, interrupted once more on its way out if asked
(``--exit-interrupted``): the test times that exit.

The seam is ``sys.settrace``, enabled only in this process and only around OP: nbmemory itself
holds no hook, so it costs nothing when not tested. N is deterministic: the same code path gives
the same points, whatever the machine's load.
"""

from __future__ import annotations

import contextlib
import dis
import json
import shutil
import sys
import time
import warnings
from typing import Any

from nbmemory import Conversation, Workspace
from nbmemory.errors import MemoryWarning
from nbmemory.memory_file import parse
from nbmemory.read_model import ReadModel

NAME = "Interrupted"
_CALLS = ("CALL", "CALL_FUNCTION_EX", "CALL_KW")
_after_call: dict[Any, set[int]] = {}


def _offsets_after_calls(code: Any) -> set[int]:
    found = _after_call.get(code)
    if found is None:
        instructions = list(dis.get_instructions(code))
        found = {
            instructions[i + 1].offset
            for i in range(len(instructions) - 1)
            if instructions[i].opname in _CALLS
        }
        _after_call[code] = found
    return found


class Interrupter:
    """Raises ``KeyboardInterrupt`` at the N-th signal check of what runs while it is armed."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.points = 0
        self.where = ""

    def _point(self, frame: Any, kind: str) -> None:
        self.points += 1
        if self.points == self.n:
            code = frame.f_code
            self.where = f"{kind} {code.co_filename.rsplit('/', 2)[-1]}:{frame.f_lineno}"
            sys.settrace(None)
            raise KeyboardInterrupt

    def _global(self, frame: Any, event: str, arg: Any) -> Any:
        if event != "call":
            return None
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        self._point(frame, "start of")
        last = [-1]

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "opcode":
                offset = frame.f_lasti
                if offset in _offsets_after_calls(frame.f_code):
                    self._point(frame, "return to")
                elif offset < last[0]:
                    self._point(frame, "loop in")
                last[0] = offset
            return local

        return local

    def __enter__(self) -> Interrupter:
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc_info: object) -> None:
        sys.settrace(None)


def stored_tags(workspace: Workspace) -> tuple[list[str], list[str]]:
    """The first lines of the memory's and archives' messages, and any damage found."""
    docs = workspace.agent(NAME)
    tags, problems = [], []
    for path in [*docs.archives(), docs.path("MEMORY.md")]:
        parsed = parse(docs.read(path))
        problems += [f"{path.name}: {p}" for p in parsed.problems]
        tags += [str(m["content"]).split("\n", 1)[0] for m in parsed.messages]
    return tags, problems


def main(op: str, start: int, stop: int, step: int, exit_interrupted: bool) -> None:
    warnings.simplefilter("ignore", MemoryWarning)  # quarantined debris is reported, and fine
    workspace = Workspace.from_env()
    convo = Conversation(name=NAME, memory_md_path=workspace.memory_path(NAME))
    acked: list[str] = []
    count = 0

    def add(text: str) -> None:
        nonlocal count
        count += 1
        tag = f"t{start}.{count}"  # unique in the workspace, whichever process adds it
        convo.add("User", f"{tag}\n{text}")
        acked.append(tag)

    def run(interrupter: Interrupter) -> None:
        with interrupter:
            if op == "add":
                add("x" * 2000)
            elif op == "compact":
                convo.compact(f"summary {n}", record=False)
            else:  # what a view asks after a change, of a reader made before
                reader.agent(NAME)
                reader.messages(NAME)
                reader.archives(NAME)

    add("before")
    reader = ReadModel(workspace)
    reader.messages(NAME)
    if op != "add":
        add("to be compacted")
    for n in range(start, stop, step):
        interrupter = Interrupter(n)
        try:
            run(interrupter)
            outcome = "finished"
        except KeyboardInterrupt:
            outcome = "interrupted"
        tags, problems = stored_tags(workspace)
        lost = [t for t in acked if t not in tags]
        # What was put aside is kept for people; cleared here so that each N meets the same
        # state (a free name there is looked for one by one, which would add points).
        shutil.rmtree(workspace.agent(NAME).folder / "quarantine", ignore_errors=True)
        begun = time.monotonic()
        add("after")
        took = time.monotonic() - begun
        tags_after, _ = stored_tags(workspace)
        print(
            json.dumps(
                {
                    "n": n,
                    "outcome": outcome,
                    "where": interrupter.where,
                    "problems": problems,
                    "lost": lost,
                    "twice": sorted({t for t in tags if t.startswith("t") and tags.count(t) > 1}),
                    "next_add_lost": acked[-1] not in tags_after,
                    "next_add_seconds": round(took, 3),
                }
            ),
            flush=True,
        )
        if outcome == "finished":
            break
    if exit_interrupted:
        with contextlib.suppress(KeyboardInterrupt):
            run(Interrupter(max(1, start)))
    print("exiting", flush=True)


if __name__ == "__main__":
    main(
        sys.argv[1],
        int(sys.argv[2]),
        int(sys.argv[3]),
        int(sys.argv[4]),
        "--exit-interrupted" in sys.argv,
    )
