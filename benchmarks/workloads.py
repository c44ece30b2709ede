"""The memory workloads, runnable against nbmemory or swarms (same Conversation API).

Usage: python workloads.py nbmemory|swarms REPEATS
Prints one JSON object: workload name -> median seconds (per message where the name says so).
Run by run.py, once in this environment and once in the swarms venv.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MESSAGES = 10_000
CHARS = 200
ARCHIVES = 10


def text(i: int) -> str:
    """A 200-character message; every 1000th mentions a rare keyword."""
    word = "zeppelin" if i % 1000 == 7 else "latency"
    return f"message {i} about {word} budgets ".ljust(CHARS, "x")


def memory_file_text(n: int, conversation: str) -> str:
    from nbmemory.store.memory_format import format_block, format_header

    blocks = (
        format_block("User" if i % 2 else conversation, text(i), "2026-04-20T18:35:04")
        for i in range(n)
    )
    return format_header(conversation, "2026-04-20T18:33:12") + "".join(blocks)


def median_of(repeats: int, run) -> float:
    return statistics.median(run() for _ in range(repeats))


def bench(library: str, repeats: int) -> dict[str, float | None]:
    if library == "nbmemory":
        with_bytecode()
    if library == "swarms":
        from swarms.structs.conversation import Conversation
    else:
        from nbmemory import Conversation

    results: dict[str, float | None] = {}
    root = Path(tempfile.mkdtemp(prefix=f"bench-{library}-"))

    def add_per_message() -> float:
        path = root / "agents" / f"add-{time.perf_counter_ns()}" / "MEMORY.md"
        convo = Conversation(name="bench", memory_md_path=str(path))
        contents = [text(i) for i in range(MESSAGES)]
        start = time.perf_counter()
        for content in contents:
            convo.add("User", content)
        return (time.perf_counter() - start) / MESSAGES

    results["add, per message (persistent)"] = median_of(repeats, add_per_message)

    def add_long_message() -> float:
        """A long tool result: 100,000 characters, appended 200 times."""
        path = root / "agents" / f"long-{time.perf_counter_ns()}" / "MEMORY.md"
        convo = Conversation(name="bench", memory_md_path=str(path))
        content = "".join(text(i) for i in range(500))
        start = time.perf_counter()
        for _ in range(200):
            convo.add("Tool", content)
        return (time.perf_counter() - start) / 200

    results["add, a 100,000-character message"] = median_of(repeats, add_long_message)

    convo = Conversation(name="bench", tokenizer_model_name="gpt-4o")
    for i in range(MESSAGES):
        convo.add("User", text(i))
    convo.count_history_tokens()

    def budget_check() -> float:
        start = time.perf_counter()
        convo.count_history_tokens()
        return time.perf_counter() - start

    results["token-budget check at 10,000 messages"] = median_of(repeats * 20, budget_check)

    def search() -> float:
        start = time.perf_counter()
        found = convo.search("zeppelin")
        elapsed = time.perf_counter() - start
        assert len(found) == MESSAGES // 1000
        return elapsed

    results["keyword search, 10,000 messages"] = median_of(repeats * 4, search)

    more = itertools.count(MESSAGES)

    def check_after_add() -> float:
        """As an agent's loop asks: a message, then the figure (that message counted)."""
        convo.add("User", text(next(more)))
        start = time.perf_counter()
        convo.count_history_tokens()
        return time.perf_counter() - start

    results["token-budget check right after an add"] = median_of(repeats * 20, check_after_add)

    def search_after_add() -> float:
        convo.add("User", text(next(more)))
        start = time.perf_counter()
        convo.search("zeppelin")
        return time.perf_counter() - start

    results["keyword search right after an add"] = median_of(repeats * 4, search_after_add)
    results["an agent's token figure right after an add (MEMORY.md blocks)"] = (
        figure_after_add(root, repeats) if library == "nbmemory" else None
    )

    resume_path = root / "agents" / "resume" / "MEMORY.md"
    resume_path.parent.mkdir(parents=True)
    resume_path.write_text(memory_file_text(MESSAGES, "resume"), encoding="utf-8")

    def resume() -> float:
        start = time.perf_counter()
        Conversation(name="resume", memory_md_path=str(resume_path))
        return time.perf_counter() - start

    results["resume over a 10,000-message MEMORY.md"] = median_of(repeats * 4, resume)

    def resume_and_read() -> float:
        start = time.perf_counter()
        convo = Conversation(name="resume", memory_md_path=str(resume_path))
        assert len(convo.preloaded_messages) == MESSAGES  # nbmemory parses them on first use
        return time.perf_counter() - start

    results["resume + first use of its 10,000 messages"] = (
        median_of(repeats, resume_and_read) if library == "nbmemory" else None
    )
    results["MEMORY.md size (MB)"] = resume_path.stat().st_size / 1e6

    results["search 100,000 messages in archives, warm"] = None
    results["search 100,000 messages in archives, cold"] = None
    if library == "nbmemory":
        results.update(archive_search(root, repeats, Conversation))
        results.update(long_run_recall(root, repeats, Conversation))
        results.update(conversation_recall(root, repeats))
        results.update(widget_figures(repeats))
        results.update(first_token_figure(repeats))

    results[f"import {library}"] = median_of(repeats, lambda: import_time(library))
    return results


def figure_after_add(root: Path, repeats: int) -> float:
    """``Conversation.context_tokens`` after each add to a 10,000-message memory: the figure an
    agent checks against its threshold, counted as MEMORY.md holds each block."""
    from nbmemory import Conversation

    path = root / "agents" / "figure" / "MEMORY.md"
    convo = Conversation(name="figure", memory_md_path=str(path), tokenizer_model_name="gpt-4o")
    for i in range(MESSAGES):
        convo.add("User", text(i))
    convo.context_tokens()

    def figure() -> float:
        convo.add("User", text(len(convo)))
        start = time.perf_counter()
        convo.context_tokens()
        return time.perf_counter() - start

    return median_of(repeats * 20, figure)


def archive_search(root: Path, repeats: int, conversation_class) -> dict[str, float]:
    from nbmemory.store import follow

    folder = root / "agents" / "archived"
    (folder / "archive").mkdir(parents=True)
    chunk = memory_file_text(MESSAGES, "archived")
    for n in range(ARCHIVES):
        (folder / "archive" / f"history_2026-04-20_14-30-{n:02d}.md").write_text(chunk)
    convo = conversation_class(name="archived", memory_md_path=str(folder / "MEMORY.md"))

    def search(cold: bool) -> float:
        if cold:
            follow._followed.clear()  # as in a new process: files read and indexed again
        start = time.perf_counter()
        hits = convo.search_memory("ZEPPELIN", archives=True)
        elapsed = time.perf_counter() - start
        assert len(hits) == ARCHIVES * MESSAGES // 1000
        return elapsed

    def recall(cold: bool) -> float:
        from nbmemory.recall import kept_indexes
        from nbmemory.recall import recall as recall_passages
        from nbmemory.store.docs import FileDocs

        if cold:  # as after a restart: the indexes recall kept beside the memory are read again
            follow._followed.clear()
            kept_indexes._kept.clear()
        start = time.perf_counter()
        passages = recall_passages(
            FileDocs(folder), "which budgets mention a zeppelin?", semantic=None
        )
        elapsed = time.perf_counter() - start
        assert passages and "zeppelin" in passages[0].text
        return elapsed

    def by_meaning(cold: bool) -> float:
        from nbmemory.recall import embeddings, kept_indexes, piece_vectors, word_vectors
        from nbmemory.recall import recall as recall_passages
        from nbmemory.store.docs import FileDocs

        if cold:  # a new process: indexes read again, the word vectors loaded and applied again
            follow._followed.clear()
            kept_indexes._kept.clear()
            word_vectors._loaded = None
            piece_vectors._loaded = None
            embeddings._shared.clear()
        start = time.perf_counter()
        passages = recall_passages(FileDocs(folder), "which budgets mention a zeppelin?")
        elapsed = time.perf_counter() - start
        assert passages and "zeppelin" in passages[0].text
        return elapsed

    cold_by_meaning = median_of(repeats, lambda: by_meaning(True))
    by_meaning(False)  # a warm recall follows one that gave the messages vectors
    return {
        "search 100,000 messages in archives, cold": median_of(repeats, lambda: search(True)),
        "search 100,000 messages in archives, warm": median_of(repeats * 4, lambda: search(False)),
        "recall by words alone, 100,000 archived messages, cold": median_of(
            repeats, lambda: recall(True)
        ),
        "recall by words alone, 100,000 archived messages, warm": median_of(
            repeats * 4, lambda: recall(False)
        ),
        "recall by words and word vectors (the default), 100,000 archived, cold": cold_by_meaning,
        "recall by words and word vectors (the default), 100,000 archived, warm": median_of(
            repeats * 4, lambda: by_meaning(False)
        ),
        **memory_tool_tokens(root),
    }


LONG_RUN = "y" * 1_000_000
"""A megabyte of one letter: "y", on which the Snowball stemmer's time grows with the square
of a word's length."""


def long_run_recall(root: Path, repeats: int, conversation_class) -> dict[str, float]:
    """Recall over a memory that holds a 1 MB run of one letter, as in a new process whose
    first recall indexes the memory (the run's word met for the first time)."""
    from nbmemory import terms
    from nbmemory.recall import kept_indexes
    from nbmemory.recall import recall as recall_passages
    from nbmemory.store import follow
    from nbmemory.store.docs import FileDocs
    from nbmemory.store.folders import RECALL_INDEX_DIR

    folder = root / "agents" / "long-run"
    convo = conversation_class(name="long-run", memory_md_path=str(folder / "MEMORY.md"))
    convo.add("User", f"{LONG_RUN} and the zeppelin budget is 40k")
    convo.add("User", LONG_RUN)

    def recall() -> float:
        shutil.rmtree(folder / RECALL_INDEX_DIR, ignore_errors=True)
        follow._followed.clear()
        kept_indexes._kept.clear()
        terms._stems.clear()
        start = time.perf_counter()
        passages = recall_passages(FileDocs(folder), "zeppelin budget", semantic=None)
        elapsed = time.perf_counter() - start
        assert passages and passages[0].text.endswith("zeppelin budget is 40k")
        return elapsed

    return {"recall over a megabyte run of one letter (y), index built": median_of(repeats, recall)}


TURNS = 600
"""Turns of the conversation whose memory ``conversation_recall`` asks questions of."""


def conversation_recall(root: Path, repeats: int) -> dict[str, float]:
    """Recall per question, as an agent's recall tool ranks by default (words fused with the
    offline word vectors), over the memory of a 600-turn conversation between two people:
    ``retrieval.py``'s, written as it writes it (compacted after each session, so MEMORY.md
    and a few dozen archives). Warm: an agent that has recalled once, asked every question
    about the two people in turn; cold: the first question in a new process state."""
    import retrieval

    from nbmemory.memory import conversation
    from nbmemory.recall import corpus, embeddings, kept_indexes, piece_vectors, word_vectors
    from nbmemory.recall import recall as recall_passages
    from nbmemory.store import follow

    made = retrieval.dialogue(1000, 34, 18)
    assert len(made.turns) >= TURNS
    made.turns = made.turns[:TURNS]
    clock = conversation.now_iso  # retrieval.write sets each turn's time through it
    try:
        docs = retrieval.write(made, root / "conversation", "Listener")
    finally:
        conversation.now_iso = clock
    assert len(docs.archives()) > 10
    questions = []
    for topic in retrieval.TOPICS:
        for person in made.people:
            asked = (topic.direct, topic.other_words, topic.when, topic.now)
            questions += [question.format(p=person) for question in asked if question]
        if topic.both:
            questions.append(topic.both.format(a=made.people[0], b=made.people[1]))

    def ask(question: str) -> float:
        start = time.perf_counter()
        passages = recall_passages(docs, question)
        elapsed = time.perf_counter() - start
        assert passages
        return elapsed

    def cold(question: str) -> float:
        follow._followed.clear()  # as in a new process: read, indexed and embedded again
        kept_indexes._kept.clear()
        corpus._archive_lists.clear()
        corpus._archived_kept.clear()
        word_vectors._loaded = None
        piece_vectors._loaded = None
        embeddings._shared.clear()
        return ask(question)

    first = statistics.median(cold(questions[n % len(questions)]) for n in range(repeats))
    ask("warming up")
    warm = [ask(question) for _ in range(repeats) for question in questions]
    return {
        "recall per question, 600-turn memory, default ranking (warm)": statistics.median(warm),
        "recall per question, 600-turn memory, default ranking (cold)": first,
    }


def memory_tool_tokens(root: Path) -> dict[str, float]:
    """What recall and pinned notes add to every request, in tokens (gpt-4o's tokenizer)."""
    from nbmemory import Agent

    def cost(name: str, **options: bool) -> int:
        agent = Agent(
            agent_name=name,
            model_name="gpt-4o",
            persistent_memory=True,
            workspace_dir=root,
            **options,
        )
        return agent.next_request_tokens()

    bare = cost("bare", recall=False, pinned_notes=False)
    tools = cost("tools") - bare
    noted = Agent(
        agent_name="noted", model_name="gpt-4o", persistent_memory=True, workspace_dir=root
    )
    empty = noted.next_request_tokens()
    noted.notes.add("The user's name is Ada; budgets are in EUR; answer in French.")
    return {
        "per request: recall + notes tools and prompt lines (tokens)": tools,
        "per request: a pinned note of 16 words (tokens)": noted.next_request_tokens() - empty,
    }


def widget_figures(repeats: int) -> dict[str, float]:
    """The widget at 10,000 messages: first render, cost per add(), what it sends to the browser.

    First render is construction until the first page and the figures are set, cold (the read
    model has not read the file yet: ``nbmemory.store.follow``'s cache is emptied before each
    run) and warm (the read model already follows the file, as after ``%memory`` or the sidebar).
    """
    from nbmemory import Conversation
    from nbmemory.jupyter.widget import MemoryWidget
    from nbmemory.store import follow

    folder = Path(tempfile.mkdtemp(prefix="bench-widget-"))
    path = folder / "agents" / "bench" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    path.write_text(memory_file_text(MESSAGES, "bench"), encoding="utf-8")

    def settled(widget: MemoryWidget) -> None:
        while widget.counting:  # the token figure comes from the widget's thread
            time.sleep(0.001)

    def first_render(cold: bool) -> tuple[float, float]:
        if cold:
            follow._followed.clear()
        start = time.perf_counter()
        widget = MemoryWidget("bench", workspace=folder)
        page = time.perf_counter() - start
        settled(widget)
        figures = time.perf_counter() - start
        assert len(widget.messages) == 20 and widget.info["tokens"] > 0
        widget.close()
        return page, figures

    first_render(True)  # loads the tokenizer once, as any earlier count in a kernel would
    cold = [first_render(True) for _ in range(repeats)]
    warm = [first_render(False) for _ in range(repeats)]

    convo = Conversation(name="bench", memory_md_path=path)
    widget = MemoryWidget(convo)
    settled(widget)

    def one_add() -> float:
        start = time.perf_counter()
        convo.add("User", "x" * 200)
        return time.perf_counter() - start

    results = {
        "widget: first page, 10,000 messages (cold)": statistics.median(p for p, _ in cold),
        "widget: first page + token figures, 10,000 messages (cold)": statistics.median(
            f for _, f in cold
        ),
        "widget: first render, 10,000 messages (read model warm)": statistics.median(
            f for _, f in warm
        ),
        "widget: add() until its traits are updated": statistics.median(
            one_add() for _ in range(repeats * 40)
        ),
        "widget: state sent for 10,000 messages (KB)": len(
            json.dumps(widget.get_state(key=[k for k in widget.keys if k not in ("_esm", "_css")]))
        )
        / 1000,
        "widget: its module, sent once per view (KB)": len(widget._esm) / 1000,
        "widget: its words, sent once per kernel (KB)": len(
            json.dumps(widget.vocabulary.get_state())
        )
        / 1000,
    }
    widget.close()
    return results


FIRST_FIGURE = (
    "import sys, time\n"
    "from nbmemory import Workspace\n"
    "from nbmemory.views.read_model import ReadModel\n"
    "start = time.perf_counter()\n"
    "tokens = ReadModel(Workspace(sys.argv[1])).usage('bench').tokens\n"
    "print(time.perf_counter() - start, tokens)\n"
)


def first_token_figure(repeats: int) -> dict[str, float]:
    """The first token figure of a 10,000-message memory in a new process, once its modules
    are imported: with no counts kept (every block counted), then with the counts a resumed
    agent kept beside the memory (the figure must be the same)."""
    from nbmemory import Conversation, Workspace
    from nbmemory.models import llm

    root = Path(tempfile.mkdtemp(prefix="bench-first-"))
    place = Workspace(root)
    path = place.memory_path("bench")
    path.parent.mkdir(parents=True)
    path.write_text(memory_file_text(MESSAGES, "bench"), encoding="utf-8")
    figures: list[str] = []

    def first() -> float:
        out = subprocess.run(
            [sys.executable, "-c", FIRST_FIGURE, str(root)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "NBMEMORY_STORE": ""},
        )
        seconds, tokens = out.stdout.split()
        figures.append(tokens)
        return float(seconds)

    counted = median_of(repeats, first)
    model = llm.default_model()  # the model views assume for an agent with no settings
    convo = Conversation(
        name="bench", memory_md_path=path, workspace=place, tokenizer_model_name=model
    )
    convo.context_tokens()  # an agent's first figure after resuming: its counts are kept
    convo.close()
    kept = median_of(repeats, first)
    assert len(set(figures)) == 1, figures
    return {
        "first token figure, 10,000 messages, new process (no counts kept)": counted,
        "first token figure, 10,000 messages, new process (counts kept)": kept,
    }


def import_time(library: str) -> float:
    """Seconds to import the library in a fresh interpreter, measured inside it."""
    module = "swarms" if library == "swarms" else "nbmemory"
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    with tempfile.TemporaryDirectory() as cwd:
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "WORKSPACE_DIR": cwd},
        )
    return float(out.stdout.strip().splitlines()[-1])


def with_bytecode() -> None:
    """Compile nbmemory's modules, as installing a package does: new processes then load
    bytecode, as swarms' do from its install (a checkout under ``PYTHONDONTWRITEBYTECODE``
    would compile every module in every new process)."""
    import compileall

    compileall.compile_dir(Path(__file__).resolve().parent.parent / "nbmemory", quiet=1)


if __name__ == "__main__":
    print(json.dumps(bench(sys.argv[1], int(sys.argv[2]))))
