"""The agent's recall tools: the line its prompt gets, the functions the model calls, and what
they share across the calls of one run (``RecallSession``).

``recall_memory`` finds the passages that best match a query; ``recall_around`` and
``recall_between`` follow one up (``follow_up``): what was said around it, or in a span of time.
A question that needs two facts is answered in two calls: recall finds the first, and the
second is often said a few messages later, in other words recall does not look for.
"""

from __future__ import annotations

from collections.abc import Callable

from nbmemory.recall.follow_up import around, between
from nbmemory.recall.ranking import SemanticIndex, find
from nbmemory.recall.text import (
    AROUND_TOOL,
    BETWEEN_TOOL,
    DEFAULT_BUDGET,
    LISTED,
    TOOL_NAME,
    describe,
    described,
)
from nbmemory.store.docs import AgentDocs
from nbmemory.terms import words
from nbmemory.tokens import TokenCounter

PROMPT_LINE = (
    f"Earlier sessions are archived, not lost: when a question needs something that is not in "
    f"this conversation (a name, a number, a date, a decision), call {TOOL_NAME} before you "
    "answer."
)
RUN_BUDGET_CALLS = 3
"""The recall answers of one run take at most this many times the budget of one."""
SPENT = (
    "The recall budget of this answer is spent: answer from what was found, or say what is missing."
)
NO_MEMORY = "This agent keeps no memory on disk: there is nothing earlier to search."


class RecallSession:
    """What an agent's recall tools share across the calls of one run: the tokens their
    answers took (all of them together take at most ``RUN_BUDGET_CALLS`` times ``budget()``;
    a call gets what is left, up to ``budget()``), and the passages each query has shown, so
    that the same query again shows the next ones. Outside a run (:meth:`start` to
    :meth:`end`), each call has ``budget()`` and nothing is remembered."""

    def __init__(
        self,
        budget: Callable[[], int] = lambda: DEFAULT_BUDGET,
        count: Callable[[str], int] | None = None,
    ) -> None:
        self.budget = budget
        self.count = count or TokenCounter().count
        self.running = False
        self.spent = 0
        self.shown: dict[tuple[str, ...], set[tuple[str, int]]] = {}

    def start(self) -> None:
        """A run begins: its budget is whole, and no passage was shown yet."""
        self.running, self.spent, self.shown = True, 0, {}

    def end(self) -> None:
        self.running, self.spent, self.shown = False, 0, {}

    def answer(self, write: Callable[[int], str]) -> str:
        """``write(budget)``, the answer of one call, charged to the run; :data:`SPENT` once
        what is left cannot hold an answer that shows a message."""
        per_call = self.budget()
        if not self.running:
            return write(per_call)
        left = RUN_BUDGET_CALLS * per_call - self.spent
        if left <= 0:
            return SPENT
        answer = write(min(per_call, left))
        tokens = self.count(answer)
        if tokens > left or (left < per_call and not described(answer)):  # no message fits
            self.spent = RUN_BUDGET_CALLS * per_call
            return SPENT
        self.spent += tokens
        return answer


def recall_tool(
    folder: Callable[[], AgentDocs | None],
    semantic: Callable[[], SemanticIndex | None] = lambda: None,
    session: RecallSession | None = None,
) -> Callable[[str], str]:
    """The recall tool for the agent whose documents ``folder()`` returns (``None``: no
    memory), ranking by meaning too when ``semantic()`` gives its embeddings; its answers
    within the budget of ``session`` (default: ``DEFAULT_BUDGET`` tokens of the
    ``cl100k_base`` encoding, per call)."""
    session = session or RecallSession()

    def recall_memory(query: str) -> str:
        """Search everything said in this agent's earlier sessions, archived ones included.
        Call it once per fact when a question needs several ("X and Y?": one call for X, one
        for Y), and again in other words if a search misses; the same query again gives the
        next passages.

        Use it when the conversation does not hold what a question needs: a name, a number,
        a date, a decision. Returns the best matching passages with who said them, when, and
        where (the file and message to give recall_around).

        Args:
            query: Up to 24 words, such as names, numbers or topics.
        """
        where = folder()
        if where is None:
            return NO_MEMORY
        asked = tuple(words(query))
        seen = session.shown.setdefault(asked, set()) if session.running else set()
        found = find(where, query, LISTED + len(seen), semantic())
        fresh = [
            p
            for p in found.passages
            if not seen.intersection((q.source, q.index) for q in (p, *p.beside))
        ]
        if seen and not fresh:
            return f"Nothing more matches {query!r} than the passages already shown."

        def write(budget: int) -> str:
            matched = max(len(fresh), found.matched - len(seen))
            return describe(
                query,
                fresh,
                matched=matched,
                budget=budget,
                count=session.count,
                again=session.running,
            )

        answer = session.answer(write)
        for passage in described(answer):
            seen.update((p.source, p.index) for p in (passage, *passage.beside))
        return answer

    recall_memory.__name__ = TOOL_NAME
    return recall_memory


def follow_up_tools(
    folder: Callable[[], AgentDocs | None], session: RecallSession
) -> list[Callable[..., str]]:
    """``recall_around`` and ``recall_between`` for the agent whose documents ``folder()``
    returns, their answers within the budget of ``session``."""

    def recall_around(source: str, message: int, before: int = 3, after: int = 3) -> str:
        """Messages said just before and after one recall cited, in order.

        Args:
            source: The file, as cited.
            message: The message number, as cited.
        """
        where = folder()
        if where is None:
            return NO_MEMORY
        return session.answer(
            lambda budget: around(
                where, source, message, before, after, budget=budget, count=session.count
            )
        )

    def recall_between(start: str, end: str = "") -> str:
        """Messages said in a span of time, oldest first.

        Args:
            start: YYYY-MM-DD (a whole day) or YYYY-MM-DDTHH:MM:SS.
            end: The same; empty: the day of start.
        """
        where = folder()
        if where is None:
            return NO_MEMORY
        return session.answer(
            lambda budget: between(where, start, end, budget=budget, count=session.count)
        )

    recall_around.__name__, recall_between.__name__ = AROUND_TOOL, BETWEEN_TOOL
    return [recall_around, recall_between]
