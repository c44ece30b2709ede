"""Recall on conversations people wrote: how many of the turns that answer a question it finds.

    python benchmarks/human_recall.py DATA [--limit-conversations N]
        [--library | --ablate | --follow-up | --tool]

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

With ``--follow-up``, one table instead: what a second call adds to the first 5 passages,
as a model recalling in two steps makes it: ``recall_around`` the best passage (3 messages
either side, as the tool gives them), or the same query again for the next passages, taken
until they hold as many messages as ``recall_around`` added; the share of evidence found.

With ``--tool``, one table instead: what reaches the model through the recall tool, whose
answer shows as many passages as fit its budget (``DEFAULT_BUDGET`` tokens), at most 3, 5 (its
default) or 8 (``CAPS``), and lists where the next are kept: the share of evidence in the
passages shown, how many are shown, and the answer's tokens, on average.

With ``--ablate``, one table instead: the evidence found with all of recall's ranking rules,
then with each rule off in turn (``RULES``), each conversation fed once and asked under each.
A rule is switched off from outside the package, for the while: its weight set to its
neutral value in every module that reads it, recall's function of it made a neutral one, or
no word vectors (``semantic=None``); a rule read as an index is made (who a line says is its
speaker) or kept with an archive's figures (which messages go together) is asked of a copy of
the memory, indexed anew. Recall's caches hold none of what is switched: a weight is read at
each query.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from retrieval import KS, Dialogue, Library, Question, kind_rows, ours, said, write  # noqa: E402
from run import print_table  # noqa: E402

KINDS = {1: "multi-hop", 2: "temporal", 3: "commonsense"}
"""REALTALK's categories of question, by number."""
FIRST = 5
"""Passages of the first call, with ``--follow-up``."""
SECOND = {"first": f"{FIRST} passages", "around": "+ recall_around", "next": "+ next passages"}
"""The columns of ``--follow-up``: the first call, and each second call after it."""
CAPS = (3, 5, 8)
"""The most passages the tool's answer shows, compared with ``--tool``; 5 is its default."""
TOOL_FIGURES = ("share", "shown", "tokens")
"""What ``--tool`` tallies of each answer: the share of evidence shown, passages, tokens."""
HELD_OUT = "locomo"
"""The folder name of the held-out set's copy in REALTALK's repository."""
_EVIDENCE = re.compile(r"D?\s*(\d+):(\d+)(?:\s*-\s*D?\s*(\d+):(\d+))?")


@dataclasses.dataclass(frozen=True)
class Rule:
    """One of recall's ranking rules and how to switch it off: ``off`` sets names of
    ``nbmemory.recall``'s modules (``"module", "name"``, a dotted name for a class's) to
    neutral values; ``reindexed``: read as an index is made or kept with an archive's
    figures, so asked of a fresh copy;
    ``vectors``: ``False`` for the ranking by meaning, off as ``semantic=None``."""

    name: str
    off: tuple[tuple[str, str, Any], ...] = ()
    reindexed: bool = False
    vectors: bool = True


def _as_said(role: str, text: str | None) -> tuple[str, str | None]:
    return role, text


RULES = (
    Rule(
        "said by a person named (SAID_BY_NAMED_GAIN)",
        tuple((m, "SAID_BY_NAMED_GAIN", 0.0) for m in ("exchanges", "corpus", "ranking")),
    ),
    Rule(
        "another exchange's (OTHER_EXCHANGE_WEIGHT)",
        tuple((m, "OTHER_EXCHANGE_WEIGHT", 1.0) for m in ("exchanges", "corpus")),
    ),
    Rule("says when (DATED)", (("ranking", "DATED", 0.0),)),
    Rule("said on the day asked about (ON_THE_DAY)", (("ranking", "ON_THE_DAY", 0.0),)),
    Rule(
        "question and answer paired (_answered)",
        (("exchanges", "_answered", lambda *_: None),),
        reindexed=True,
    ),
    Rule(
        "a person's next message beside (_continued)",
        (("exchanges", "_continued", lambda *_: None),),
        reindexed=True,
    ),
    Rule(
        "a line's name is its speaker (teller_and_text)",
        (("file_index", "teller_and_text", _as_said), ("corpus", "teller_and_text", _as_said)),
        reindexed=True,
    ),
    Rule("the message beside counts (BESIDE)", (("ranking", "BESIDE", 0.0),)),
    Rule("a name spelled otherwise (SPELLING)", (("speakers", "SPELLING", 2.0),)),
    Rule("word pieces' vectors (PIECES)", (("word_vectors", "PIECES", 0.0),)),
    Rule("word vectors fused (FUSION_K)", vectors=False),
)
"""The ranking rules ``--ablate`` switches off, one at a time."""
ALL_RULES = Rule("all rules")


@contextlib.contextmanager
def without(rule: Rule, docs: Any, spare: Path) -> Iterator[Any]:
    """The documents to ask with ``rule`` off (``docs``, or a copy of them in ``spare``
    indexed anew), its names set back after."""
    from nbmemory.store.docs import FileDocs
    from nbmemory.store.folders import RECALL_INDEX_DIR

    changed: list[tuple[Any, str, Any]] = []
    try:
        for module, name, value in rule.off:
            *owners, last = name.split(".")
            target: Any = importlib.import_module(f"nbmemory.recall.{module}")
            for owner in owners:
                target = getattr(target, owner)
            changed.append((target, last, getattr(target, last)))
            setattr(target, last, value)
        if rule.reindexed:
            copy = spare / docs.folder.name  # the folder's name is the agent's
            shutil.copytree(docs.folder, copy, ignore=shutil.ignore_patterns(RECALL_INDEX_DIR))
            docs = FileDocs(copy)
        yield docs
    finally:
        for target, name, value in reversed(changed):
            setattr(target, name, value)


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
    parser.add_argument("--ablate", action="store_true", help="each ranking rule off in turn")
    parser.add_argument("--follow-up", action="store_true", help="what a second call adds")
    parser.add_argument("--tool", action="store_true", help="what the tool's answer shows")
    args = parser.parse_args()
    if args.library + args.ablate + args.follow_up + args.tool > 1:
        parser.error("--library, --ablate, --follow-up and --tool print their own table: one")
    files = conversation_files(args.data)[: args.limit_conversations]
    os.environ["NBMEMORY_MODEL"] = "nbmemory/offline"
    os.environ.pop("NBMEMORY_EMBEDDING_MODEL", None)
    from nbmemory.recall import find

    def search(docs, question: str, limit: int):
        return find(docs, question, limit).passages

    def words_only(docs, question: str, limit: int):
        return find(docs, question, limit, semantic=None).passages

    tally: dict[tuple[str, str, int], list[float]] = {}
    turns = questions = dropped = unanswered = 0
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
            questions += len(made.questions)
            dropped += missing
            unanswered += skipped
            began = time.perf_counter()
            docs = write(made, Path(tmp) / f"c{c}", "Listener", run=True)
            feeding += time.perf_counter() - began
            library = Library(made) if args.library else None
            told = said_when(made)
            if args.ablate:  # the memory is the same whatever ranks it: fed once, asked under each
                for n, rule in enumerate((ALL_RULES, *RULES)):
                    with without(rule, docs, Path(tmp) / f"c{c}-{n}") as asked:
                        ask = search if rule.vectors else words_only
                        began = time.perf_counter()
                        for q in made.questions:
                            count(q, rule.name, ours(asked, made, q.text, max(KS), ask))
                        asking += time.perf_counter() - began
                continue
            for q in made.questions:
                began = time.perf_counter()
                ranked = ours(docs, made, q.text, max(KS), search)
                asking += time.perf_counter() - began
                if args.tool:
                    for cap, (shown, tokens) in shown_by_tool(docs, made, q.text).items():
                        held = {n for passage in shown for n in passage}
                        share = sum(a in held for a in q.answers) / len(q.answers)
                        figures = zip(TOOL_FIGURES, (share, len(shown), tokens), strict=True)
                        for what, value in figures:
                            for row in ("all questions", q.kind):
                                tally.setdefault((row, what, cap), []).append(value)
                    continue
                if args.follow_up:
                    for who, held in followed_up(docs, told, q.text, ranked).items():
                        share = sum(a in held for a in q.answers) / len(q.answers)
                        for row in ("all questions", q.kind):
                            tally.setdefault((row, who, FIRST), []).append(share)
                    continue
                count(q, "recall", ranked)
                if library is not None:
                    count(q, "library", library.ranked(q.text, max(KS)))

    print(
        f"\n{len(files)} REALTALK conversations, {turns:,} messages, {questions} questions "
        f"({unanswered} with no evidence message left, {dropped} evidence ids naming none); "
        + (
            "share of evidence messages in k passages (%), each ranking rule off in turn, and "
            "the difference it makes at 5 (points)\n"
            if args.ablate
            else f"share of evidence messages in {FIRST} passages, and after a second call\n"
            if args.follow_up
            else "what the recall tool's answer shows within its budget, by the most it shows\n"
            if args.tool
            else "share of evidence messages in k passages, and of questions with all of it\n"
        )
    )
    if args.follow_up:
        print_table(second_calls(tally))
    elif args.tool:
        print_table(tool_table(tally))
    else:
        print_table(ablation(tally) if args.ablate else kinds(tally, whos))
    askings = questions * (1 + len(RULES) if args.ablate else 1)
    print(f"\nfed in {feeding:.1f} s; recall {1000 * asking / max(askings, 1):.1f} ms per question")


def said_when(made: Dialogue) -> dict[str, list[tuple[int, tuple[str, str]]]]:
    """The turns of ``made`` by their time: each one's number and its text, alone and as fed
    (``retrieval.said``)."""
    told: dict[str, list[tuple[int, tuple[str, str]]]] = {}
    for n, (who, text, stamp) in enumerate(made.turns):
        told.setdefault(stamp, []).append((n, (text, said(who, text))))
    return told


def followed_up(
    docs: Any, told: dict[str, list[tuple[int, tuple[str, str]]]], question: str, ranked: list
) -> dict[str, set[int]]:
    """The turns held after the first ``FIRST`` passages of ``ranked`` (recall's ``max(KS)``,
    as ``ours`` numbers them), and after each second call (``SECOND``); ``told``: the
    conversation's turns by time (``said_when``)."""
    from nbmemory.recall import find
    from nbmemory.recall.follow_up import around
    from nbmemory.recall.text import described

    first = {n for passage in ranked[:FIRST] for n in passage}
    near = set(first)
    best = find(docs, question, max(KS)).passages[:1]  # the first of ``ranked``
    if best:
        for shown in described(around(docs, best[0].source, best[0].index + 1)):
            head = shown.text[:40]  # a long text is shown cut
            near |= {
                n
                for n, texts in told.get(shown.timestamp, [])
                if any(text.startswith(head) for text in texts)
            }
    following = set(first)
    for passage in ranked[FIRST:]:
        if len(following) >= len(near):
            break
        following |= set(passage)
    return {"first": first, "around": near, "next": following}


def shown_by_tool(docs: Any, made: Dialogue, question: str) -> dict[int, tuple[list, int]]:
    """For each of ``CAPS``: the turns of the passages the recall tool's answer shows (as
    ``ours`` numbers them) when it shows that many at most, and the answer's tokens."""
    from nbmemory.recall import DEFAULT_BUDGET, DEFAULT_PASSAGES, LISTED, describe, find
    from nbmemory.recall.text import described
    from nbmemory.tokens import TokenCounter

    count = TokenCounter().count
    shown = {}
    for cap in CAPS:
        asked = cap + LISTED - DEFAULT_PASSAGES  # as the tool asks: some more, to list
        found = find(docs, question, asked)
        ranked = ours(docs, made, question, asked, lambda *_, f=found: f.passages)
        answer = describe(
            question,
            found.passages,
            matched=found.matched,
            budget=DEFAULT_BUDGET,
            count=count,
            shown=cap,
        )
        shown[cap] = (ranked[: len(described(answer))], count(answer))
    return shown


def tool_table(tally: dict[tuple[str, str, int], list[float]]) -> list[list[str]]:
    """The ``--tool`` table: by kind of question and the most passages shown, the share of
    evidence in what the answer shows, the passages it shows and its tokens, on average."""
    rows = [["kind", "questions"]]
    for cap in CAPS:
        rows[0] += [f"evidence shown, ≤ {cap}", f"passages, ≤ {cap}", f"tokens, ≤ {cap}"]
    for kind in ("all questions", *KINDS.values()):
        if (kind, "share", CAPS[0]) in tally:
            row = [kind, str(len(tally[(kind, "share", CAPS[0])]))]
            for cap in CAPS:
                share, shown, tokens = (tally[(kind, what, cap)] for what in TOOL_FIGURES)
                mean = sum(shown) / len(shown), sum(tokens) / len(tokens)
                row += [f"{_share(share):.1f} %", f"{mean[0]:.1f}", f"{mean[1]:.0f}"]
            rows.append(row)
    return rows


def second_calls(tally: dict[tuple[str, str, int], list[float]]) -> list[list[str]]:
    """The ``--follow-up`` table: by kind of question, the share of evidence found by the first
    call and after each second call."""
    rows = [["kind", "questions", *SECOND.values()]]
    for kind in ("all questions", *KINDS.values()):
        if (kind, "first", FIRST) in tally:
            shares = [tally[(kind, who, FIRST)] for who in SECOND]
            rows.append([kind, str(len(shares[0])), *(f"{_share(s):.1f} %" for s in shares)])
    return rows


def _share(shares: list[float]) -> float:
    return 100 * sum(shares) / len(shares)


def kinds(tally: dict[tuple[str, str, int], list[float]], whos: tuple[str, ...]) -> list[list[str]]:
    """The table by kind of question: each ranker's share at each k."""
    titles = {"recall": "evidence found", "whole": "all of it", "library": "BM25 library"}
    order = ["all questions", *KINDS.values(), "one evidence message", "two or more"]
    order += sorted({kind for kind, _, _ in tally} - set(order))
    return kind_rows(tally, order, {who: titles[who] for who in whos})


def ablation(tally: dict[tuple[str, str, int], list[float]]) -> list[list[str]]:
    """The ablation table: all rules, then each rule off; the share at each k for all questions
    and each kind, and the difference each rule's absence makes at 5 passages."""
    groups = [
        "all questions",
        *(kind for kind in KINDS.values() if (kind, ALL_RULES.name, 5) in tally),
    ]
    rows = [
        [
            "ranking",
            *(f"{group}, {k}" for group in groups for k in KS),
            *(f"Δ {group}, 5" for group in groups),
        ]
    ]
    for rule in (ALL_RULES, *RULES):
        row = [rule.name if rule is ALL_RULES else f"without {rule.name}"]
        row += [f"{_share(tally[(group, rule.name, k)]):.1f}" for group in groups for k in KS]
        for group in groups:
            lost = _share(tally[(group, rule.name, 5)]) - _share(tally[(group, ALL_RULES.name, 5)])
            row.append(f"{lost:+.1f}")
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
