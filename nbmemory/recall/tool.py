"""The agent's recall tool: the line its prompt gets, and the function the model calls."""

from __future__ import annotations

from collections.abc import Callable

from nbmemory.recall.ranking import SemanticIndex, find
from nbmemory.recall.text import (
    DEFAULT_BUDGET,
    LISTED,
    TOOL_NAME,
    describe,
)
from nbmemory.store.docs import AgentDocs
from nbmemory.tokens import TokenCounter

PROMPT_LINE = (
    f"Earlier sessions are archived, not lost: when a question needs something that is not in "
    f"this conversation (a name, a number, a date, a decision), call {TOOL_NAME} before you "
    "answer."
)


def recall_tool(
    folder: Callable[[], AgentDocs | None],
    semantic: Callable[[], SemanticIndex | None] = lambda: None,
    budget: Callable[[], int] = lambda: DEFAULT_BUDGET,
    count: Callable[[str], int] | None = None,
) -> Callable[[str], str]:
    """The recall tool for the agent whose documents ``folder()`` returns (``None``: no
    memory), ranking by meaning too when ``semantic()`` gives its embeddings; its answer takes
    at most ``budget()`` tokens as ``count`` counts them (default: the ``cl100k_base``
    encoding, as ``tokens.TokenCounter`` counts for an unknown model)."""
    if count is None:
        count = TokenCounter().count

    def recall_memory(query: str) -> str:
        """Search everything said in this agent's earlier sessions, archived ones included.
        Call it once per fact when a question needs several ("X and Y?": one call for X, one
        for Y), and again in other words if a search misses.

        Use it when the conversation does not hold what a question needs: a name, a number,
        a date, a decision. Returns the best matching passages with who said them and when.

        Args:
            query: Up to 24 words, such as names, numbers or topics.
        """
        where = folder()
        if where is None:
            return "This agent keeps no memory on disk: there is nothing earlier to search."
        found = find(where, query, LISTED, semantic())
        return describe(query, found.passages, matched=found.matched, budget=budget(), count=count)

    recall_memory.__name__ = TOOL_NAME
    return recall_memory
