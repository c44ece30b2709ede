"""Memory fidelity: how many facts, each said once, an agent can still answer after compactions.

    python benchmarks/fidelity.py [--facts 100] [--fillers 200] [--sessions 30] [--window 2000]

A seeded conversation (facts said once among repetitive filler) is told to one agent over many
sessions, each a new process as after a kernel restart, with a small context window so that
memory is compacted again and again. Each fact is said as "Please remember: ...": with pinned
notes on, the agent pins it until the notes budget is spent; with notes off it has no notes
tool. After 1, 5 and 20 compactions a copy of the workspace is measured in a new process: how
many facts said so far are in the next request, how many a search of memory and archives
finds, and how many questions the agent answers, with recall off and on. The model is the
offline one; it also writes the summaries, through nbmemory's compressor.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parent.parent
NAME = "Keeper"
CHECKPOINTS = (1, 5, 20)

SUBJECTS = (
    "amber azure coral crimson golden ivory jade olive onyx pearl ruby scarlet silver topaz "
    "violet cobalt copper emerald indigo saffron"
).split()
KINDS = "heron falcon otter badger lynx marten osprey walrus".split()
FACTS = [
    (
        "Please remember: the access code of the {s} vault is {k}.",
        "What is the access code of the {s} vault?",
    ),
    (
        "Please remember: our contact for the {s} account is called {k}.",
        "Who is our contact for the {s} account?",
    ),
    (
        "Please remember: the {s} shipment has tracking number {k}.",
        "What is the tracking number of the {s} shipment?",
    ),
    (
        "Please remember: the {s} project is code-named {k}.",
        "What is the code name of the {s} project?",
    ),
]
FILLERS = [
    "Let us keep the weekly sync short and talk about the roadmap again next time.",
    "The weather was mild today, and lunch ran long because the queue was slow.",
    "Please remind the team that the coffee machine on the second floor is fixed.",
    "I reread the notes from the planning meeting; nothing new came up there.",
    "We should tidy the shared folder before the quarterly review starts.",
    "The printer jammed again, so the handouts will be late this afternoon.",
]

SESSION = """
import json, sys
from nbmemory import Agent
agent = Agent(agent_name=%r, persistent_memory=True, context_length=int(sys.argv[1]),
              pinned_notes=sys.argv[3] == "on")
for turn in json.loads(sys.argv[2]):
    agent.run(turn)
"""

MEASURE = """
import json, sys
from nbmemory import Agent
from nbmemory.views.read_model import ReadModel
facts = json.loads(sys.argv[2])
agent = Agent(agent_name=%r, persistent_memory=True, context_length=int(sys.argv[1]),
              recall=sys.argv[3] == "on")
request = json.dumps(agent.request_messages())
reader = ReadModel()
result = {
    "in_request": sum(f["key"] in request for f in facts),
    "found": sum(reader.search(%r, f["key"], archives=True).total > 0 for f in facts),
    "answered": sum(f["key"] in agent.run(f["question"]) for f in facts),
}
print(json.dumps(result))
"""


def conversation(facts: int, fillers: int, seed: int) -> tuple[list[dict], list[str]]:
    """The facts (statement, question, key) and every turn in order, made from ``seed``."""
    rng = random.Random(seed)
    subjects = [f"{a} {b}" for a in SUBJECTS for b in KINDS]
    rng.shuffle(subjects)
    made = []
    for n in range(facts):
        statement, question = FACTS[n % len(FACTS)]
        key = f"{rng.choice('BCDFGHKMPRSTVZ')}{rng.choice('AEIOU')}{rng.randint(1000, 9999)}"
        subject = subjects[n]
        made.append(
            {
                "statement": statement.format(s=subject, k=key),
                "question": question.format(s=subject),
                "key": key,
            }
        )
    turns = [f["statement"] for f in made] + [rng.choice(FILLERS) for _ in range(fillers)]
    rng.shuffle(turns)
    return made, turns


def run(code: str, *args: str, workspace: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKSPACE_DIR": str(workspace)}
    env.pop("NBMEMORY_MODEL", None)
    result = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True
    )
    if result.returncode:
        raise SystemExit(f"a session failed:\n{result.stderr[-3000:]}")
    return result.stdout


def archives(workspace: Path) -> int:
    folder = workspace / "agents" / NAME / "archive"
    return len(list(folder.glob("history_*.md"))) if folder.is_dir() else 0


def measure(snapshot: Path, stated: list[dict], window: int, recall: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "workspace"
        shutil.copytree(snapshot, copy)
        out = run(MEASURE % (NAME, NAME), str(window), json.dumps(stated), recall, workspace=copy)
    return json.loads(out.splitlines()[-1])


def tell(turns: list[str], facts: list[dict], args: argparse.Namespace, notes: str, tmp: Path):
    """Tell the conversation over ``args.sessions`` processes; the workspace at each checkpoint
    (a copy) with the facts said by then."""
    statements = {f["statement"]: f for f in facts}
    per_session = -(-len(turns) // args.sessions)
    workspace = tmp / f"notes-{notes}"
    snapshots: dict[int | str, tuple[Path, list[dict]]] = {}
    said: list[dict] = []
    for start in range(0, len(turns), per_session):
        session = turns[start : start + per_session]
        run(SESSION % NAME, str(args.window), json.dumps(session), notes, workspace=workspace)
        said += [statements[t] for t in session if t in statements]
        for checkpoint in CHECKPOINTS:
            if checkpoint not in snapshots and archives(workspace) >= checkpoint:
                snapshot = tmp / f"notes-{notes}-after-{checkpoint}"
                shutil.copytree(workspace, snapshot)
                snapshots[checkpoint] = (snapshot, list(said))
    snapshots["end"] = (workspace, said)
    return snapshots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100)
    parser.add_argument("--fillers", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--window", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    facts, turns = conversation(args.facts, args.fillers, args.seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="nbmemory-fidelity-") as tmp:
        for notes in ("off", "on"):
            for label, (snapshot, stated) in tell(turns, facts, args, notes, Path(tmp)).items():
                pinned = snapshot / "agents" / NAME / "NOTES.md"
                kept = sum(f["key"] in pinned.read_text() for f in stated) if pinned.exists() else 0
                for recall in ("off", "on"):
                    figures = measure(snapshot, stated, args.window, recall)
                    rows.append(
                        (label, archives(snapshot), len(stated), notes, kept, recall, figures)
                    )
    print(
        f"\n{args.facts} facts said once among {args.fillers} fillers, {args.sessions} sessions "
        f"(one process each), context window {args.window}, offline model\n"
    )
    header = (
        "after",
        "compactions",
        "facts said",
        "notes",
        "pinned",
        "recall",
        "in next request",
        "found",
        "answered",
    )
    lines = [header]
    for label, compactions, stated, notes, kept, recall, figures in rows:
        total = f" / {stated}"
        lines.append(
            (
                str(label),
                str(compactions),
                str(stated),
                notes,
                str(kept),
                recall,
                f"{figures['in_request']}{total}",
                f"{figures['found']}{total}",
                f"{figures['answered']}{total}",
            )
        )
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    for row in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
