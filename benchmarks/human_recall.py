"""Recall on conversations people wrote: how many of the turns that answer a question it finds.

    python benchmarks/human_recall.py DATA [--limit-conversations N] [--library]

The development benchmark of human-written conversations. ``DATA`` is the ``data/`` folder of
REALTALK (Lee et al., "REALTALK: A 21-Day Real-World Dataset for Long-Term Conversation",
arXiv 2502.13270): ten conversations that pairs of people held in a messaging app, one
session a day for about three weeks (8,944 messages), with 728 questions about them, each
with the ids of the messages that hold its answer. Get it with
``git clone https://github.com/danny911kr/REALTALK`` (the data as of commit ``b903e06``).
Its repository states no licence: it is published by its authors for research; cite the
paper. Nothing of it is in this repository or the wheel. Only the ``Chat_*.json`` files
directly in ``DATA`` are read: the repository's ``data/locomo/`` holds a copy of the public set
recall's goal is measured on, which stays held out, and a path through a folder of that name
is refused.

Each conversation is given, message by message, to one agent with persistent memory, as a
user feeding a chat log would (``agent.run("Kevin: ...")``, each message keeping its own date
and time): the offline model (``nbmemory/offline``, whatever ``$NBMEMORY_MODEL`` says) answers
every line, and its compressor compacts the 8,000-token window when it fills, as
``benchmarks/retrieval.py --run`` does. The speakers' names and texts are fed as the data has
them (a name in lower case, the annotators' spelling of a name in a question): that mess is
what the benchmark is for; the images' machine-written captions are left out. Then each
question is asked of ``nbmemory.recall.find(docs, question, 10)``, as it ranks by default
(with the offline word vectors, whatever ``$NBMEMORY_EMBEDDING_MODEL`` says), and the first 3,
5 and 10 passages are counted as ``retrieval.py`` counts them (a message a passage carries
beside its match counts): the share of a question's evidence messages found, averaged over the
questions, and the share of questions whose evidence was all found.

Rows are REALTALK's kinds of question (its ``category``): 1, multi-hop (an answer that
gathers several facts, often from several sessions); 2, temporal ("When did ...?"); 3,
commonsense (an answer inferred from what was said: open-ended); and, across them, the
questions with one evidence message (single-fact) and with two or more. Evidence ids are read
as typed ("D3:5", "D12:3-D12:5", "D5:3."): ranges are expanded, an id that names no message
of the conversation is dropped, and a question left with no evidence is not asked (both
counted). With ``--library``, a plain BM25 library (``retrieval.Library``) ranks
the same messages beside it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from retrieval import KS, Dialogue, Library, Question, ours, write  # noqa: E402
from run import print_table  # noqa: E402

KINDS = {1: "multi-hop", 2: "temporal", 3: "commonsense"}
"""REALTALK's categories of question, by number."""
HELD_OUT = "locomo"
"""The folder name of the held-out set's copy in REALTALK's repository."""
_EVIDENCE = re.compile(r"D?\s*(\d+):(\d+)(?:\s*-\s*D?\s*(\d+):(\d+))?")


def conversation_files(data: Path) -> list[Path]:
    """The conversations of ``data`` (a folder of ``Chat_<n>_*.json``, or one such file), in
    the order of their numbers."""
    if HELD_OUT in (part.lower() for part in data.resolve().parts):
        raise SystemExit(f"{data}: the held-out set is not a development set (REALTALK's data/?)")
    files = [data] if data.is_file() else list(data.glob("Chat_*.json"))
    if not files:
        raise SystemExit(f"{data}: no Chat_*.json conversation here (REALTALK's data/ folder?)")
    return sorted(files, key=lambda f: int(re.findall(r"\d+", f.name)[0]))


def evidence_turns(evidence: list[str], turns: dict[str, int]) -> tuple[list[int], int]:
    """The turns the evidence ids name (``turns``: a message's id to its turn), in order, and
    how many ids (or ranges of ids) named none."""
    found: list[int] = []
    missing = 0
    for written in evidence:
        named = _EVIDENCE.findall(written)
        missing += not named
        for session, first, to_session, last in named:
            if to_session and to_session != session:  # a range across sessions: its two ends
                ends = [(session, first), (to_session, last)]
            else:
                ends = [(session, str(n)) for n in range(int(first), int(last or first) + 1)]
            held = [turns[f"D{s}:{n}"] for s, n in ends if f"D{s}:{n}" in turns]
            missing += not held
            found += [turn for turn in held if turn not in found]
    return found, missing


def conversation(path: Path) -> tuple[Dialogue, int, int]:
    """One REALTALK conversation: its turns and questions, the evidence ids that named no
    message, and the questions left with no evidence."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        names = data["name"]
        sessions = sorted(
            (int(key.rsplit("_", 1)[1]), key)
            for key, value in data.items()
            if re.fullmatch(r"session_\d+", key) and isinstance(value, list)
        )
        made = Dialogue((names["speaker_1"], names["speaker_2"]))
        ids: dict[str, int] = {}
        for _, key in sessions:
            for message in data[key]:
                when = datetime.datetime.strptime(message["date_time"], "%d.%m.%Y, %H:%M:%S")
                ids[message["dia_id"]] = len(made.turns)
                made.turns.append((message["speaker"], message["clean_text"], when.isoformat()))
        dropped = unanswered = 0
        for asked in data["qa"]:
            answers, missing = evidence_turns(asked["evidence"], ids)
            dropped += missing
            if not answers:
                unanswered += 1
                continue
            kind = KINDS.get(asked["category"], f"category {asked['category']}")
            made.questions.append(Question(kind, asked["question"], answers))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"{path}: not a REALTALK conversation ({exc!r})") from None
    return made, dropped, unanswered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="REALTALK's data/ folder (or one Chat_*.json)")
    parser.add_argument("--limit-conversations", type=int, metavar="N", help="the first N only")
    parser.add_argument("--library", action="store_true", help="a BM25 library beside recall")
    args = parser.parse_args()
    files = conversation_files(args.data)[: args.limit_conversations]
    os.environ["NBMEMORY_MODEL"] = "nbmemory/offline"
    os.environ.pop("NBMEMORY_EMBEDDING_MODEL", None)
    from nbmemory.recall import find

    def search(docs, question: str, limit: int):
        return find(docs, question, limit).passages

    tally: dict[tuple[str, str, int], list[float]] = {}
    turns = dropped = unanswered = 0
    feeding = asking = 0.0
    whos = ("recall", "whole", *(("library",) if args.library else ()))

    def count(q: Question, who: str, ranked: list[list[int]]) -> None:
        single = "one evidence message" if len(q.answers) == 1 else "two or more"
        for k in KS:
            held = {n for passage in ranked[:k] for n in passage}
            share = sum(a in held for a in q.answers) / len(q.answers)
            for row in ("all questions", q.kind, single):
                tally.setdefault((row, who, k), []).append(share)
                if who == "recall":
                    tally.setdefault((row, "whole", k), []).append(share == 1)

    with tempfile.TemporaryDirectory(prefix="nbmemory-human-recall-") as tmp:
        for c, path in enumerate(files):
            made, missing, skipped = conversation(path)
            turns += len(made.turns)
            dropped += missing
            unanswered += skipped
            began = time.perf_counter()
            docs = write(made, Path(tmp) / f"c{c}", "Listener", run=True)
            feeding += time.perf_counter() - began
            library = Library(made) if args.library else None
            for q in made.questions:
                began = time.perf_counter()
                ranked = ours(docs, made, q.text, max(KS), search)
                asking += time.perf_counter() - began
                count(q, "recall", ranked)
                if library is not None:
                    count(q, "library", library.ranked(q.text, max(KS)))

    titles = {"recall": "evidence found", "whole": "all of it", "library": "BM25 library"}
    rows = [["kind", "questions", *(f"{titles[who]}, {k}" for who in whos for k in KS)]]
    order = ["all questions", *KINDS.values(), "one evidence message", "two or more"]
    order += sorted({kind for kind, _, _ in tally} - set(order))
    for kind in order:
        if (kind, "recall", KS[0]) not in tally:
            continue
        row = [kind, str(len(tally[(kind, "recall", KS[0])]))]
        for who in whos:
            for k in KS:
                shares = tally[(kind, who, k)]
                row.append(f"{100 * sum(shares) / len(shares):.1f} %")
        rows.append(row)
    questions = len(tally[("all questions", "recall", KS[0])])
    print(
        f"\n{len(files)} REALTALK conversations, {turns:,} messages, {questions} questions "
        f"({unanswered} with no evidence message left, {dropped} evidence ids naming none); "
        "share of evidence messages in k passages, and of questions with all of it\n"
    )
    print_table(rows)
    print(
        f"\nfed in {feeding:.1f} s; recall {1000 * asking / max(questions, 1):.1f} ms per question"
    )


if __name__ == "__main__":
    main()
