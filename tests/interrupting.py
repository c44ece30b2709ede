"""Interrupt an agent's memory at every point where Python could deliver a Ctrl-C: a test seam.

Run as a script in a new process (``python interrupting.py OP START STOP STEP``), on the store
that ``$WORKSPACE_DIR`` and ``$NBMEMORY_STORE`` name. For each N of ``range(START, STOP, STEP)`` it
runs OP (``add``, ``compact`` or ``read``: a view's calls to the read model) with
``KeyboardInterrupt`` raised at the N-th point where CPython checks for signals in the main
thread: a Python function starting, a call returning, a loop going round (CPython 3.11-3.13 run
a signal handler at exactly these points; a blocking call that a signal interrupts raises at the
call's return too). Library code counts: psycopg's and psycopg_pool's points are N's like ours.

After each N it checks what the issue asks for: the memory parses without damage, every message
whose ``add()`` returned is in MEMORY.md or an archive (once), and a next ``add()`` works. And
what a person would meet next: the folder's lock free for another process, the conversation's
messages the ones stored (an interrupted ``add()`` whose block was stored has its message in the
history too), no file or folder left open, and no warning when the memory is next opened or
added to (what its own interrupt left, it cleared up itself). It prints one JSON line per N,
then exits, interrupted once more on its way out if asked (``--exit-interrupted``): the test
checks that it got there ("exiting") and that the process ended cleanly.

The seam is ``sys.settrace``, enabled only in this process and only around OP: nbmemory itself
holds no hook, so it costs nothing when not tested. N is deterministic: the same code path gives
the same points, whatever the machine's load.
"""

from __future__ import annotations

import contextlib
import dis
import fcntl
import json
import logging
import os
import shutil
import sys
import warnings
from typing import Any

from nbmemory import Conversation, Workspace
from nbmemory.errors import MemoryWarning
from nbmemory.store.memory_format import parse
from nbmemory.views.read_model import ReadModel

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


_set_aside: list[str] = []
"""The tags of archives taken out of the agent's folder (see :func:`set_archives_aside`)."""


def stored_tags(workspace: Workspace) -> tuple[list[str], list[str]]:
    """The first lines of the memory's and archives' messages (those set aside included), and
    any damage found."""
    docs = workspace.agent(NAME)
    tags, problems = list(_set_aside), []
    for path in [*docs.archives(), docs.path("MEMORY.md")]:
        parsed = parse(docs.read(path))
        problems += [f"{path.name}: {p}" for p in parsed.problems]
        tags += [str(m["content"]).split("\n", 1)[0] for m in parsed.messages]
    return tags, problems


def set_archives_aside(workspace: Workspace) -> None:
    """Move a memory file's archives out of its folder, keeping their tags: each archive
    costs a compaction points of its own, so without this every compaction that an interrupt
    let reach the disk would move the later points, and the plan might never reach the end."""
    docs = workspace.agent(NAME)
    archives = docs.archives()
    if workspace.database is None and archives:
        tags, _ = stored_tags(workspace)
        _set_aside[:] = tags[: len(tags) - len(parse(docs.read(docs.path("MEMORY.md"))).messages)]
        aside = workspace.root / "set-aside"
        aside.mkdir(exist_ok=True)
        for path in archives:
            path.rename(aside / f"{len(os.listdir(aside))}-{path.name}")


def lock_free(workspace: Workspace) -> bool:
    """Whether another process could take the agent folder's lock now (files only)."""
    fd = os.open(workspace.agent(NAME).folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # lets go of the lock too
    return True


def open_files() -> int:
    """How many files and folders this process holds open (sockets, pipes and the like
    aside: a database pool opens and closes its connections as it goes)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, gone now
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("/")
    return count


def agrees_with_disk(convo: Conversation, workspace: Workspace) -> bool:
    """Whether the conversation's own messages are the last ones of MEMORY.md, and both or
    neither begin with the summary of a compaction."""
    session = [m["content"] for m in convo.conversation_history[convo._session_start or 0 :]]
    docs = workspace.agent(NAME)
    disk = [m["content"] for m in parse(docs.read(docs.path("MEMORY.md"))).messages]
    compacted = [bool(x) and str(x[0]).startswith("summary ") for x in (session, disk)]
    if any(compacted):
        return session == disk
    return disk[len(disk) - len(session) :] == session


class Logged(logging.Handler):
    """Warnings libraries log (psycopg_pool's among them): with no logging set up, as in a
    kernel, Python prints them on stderr, under the cell that was interrupted."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


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
    on_files = workspace.database is None
    reader = ReadModel(workspace)
    reader.messages(NAME)
    if op != "add":
        add("to be compacted")
    held = open_files()
    logged = Logged()
    logging.getLogger().addHandler(logged)
    for n in range(start, stop, step):
        logged.messages.clear()
        interrupter = Interrupter(n)
        try:
            run(interrupter)
            outcome = "finished"
        except KeyboardInterrupt:
            outcome = "interrupted"
        tags, problems = stored_tags(workspace)
        lost = [t for t in acked if t not in tags]
        free = lock_free(workspace) if on_files else True
        agrees = agrees_with_disk(convo, workspace)
        with warnings.catch_warnings(record=True) as warned_on_open:
            warnings.simplefilter("always", MemoryWarning)
            if free:  # else it would wait for the lock for ever
                Conversation(name=NAME, memory_md_path=workspace.memory_path(NAME)).close()
        # What was put aside is kept for people; cleared here so that each N meets the same
        # state (a free name there is looked for one by one, which would add points).
        shutil.rmtree(workspace.agent(NAME).folder / "quarantine", ignore_errors=True)
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always", MemoryWarning)
            add("after")  # a pool that lost every connection would fail it (PoolTimeout)
        tags_after, _ = stored_tags(workspace)
        left_open = open_files() - held  # the conversation's own are open again after an add
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
                    "lock_free": free,
                    "agrees_with_disk": agrees,
                    "left_open": left_open,
                    "next_open_warnings": [str(w.message) for w in warned_on_open],
                    "next_add_warnings": [str(w.message) for w in warned],
                    "logged": list(logged.messages),
                }
            ),
            flush=True,
        )
        if outcome == "finished":
            break
        set_archives_aside(workspace)
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
