"""The parts of an agent's next request (``wording.PARTS``), worked out in one place.

The gauge of every view shows them, and the compressor asks whether the fixed ones alone fill
the threshold (``run_settings.compaction_floor``): both take them from here, so the part a
view says fills the window is the one the compressor refuses to compact over.
"""

from __future__ import annotations

from typing import Any

from nbmemory.memory.run_settings import RunSettings
from nbmemory.wording import PARTS


def request_parts(
    settings: RunSettings, notes: int, earlier: int = 0, this_session: int = 0
) -> tuple[tuple[str, int], ...]:
    """The parts of a request made with ``settings``, by name in request order; they add up
    to the request's tokens.

    Args:
        settings: What the agent runs (or last ran) with: its system prompt and rules, tool
            schemas and reply room.
        notes: The tokens of its pinned notes.
        earlier: The memory's tokens that its running process preloaded.
        this_session: The memory's tokens that process added since.

    Returns:
        ``(name, tokens)`` for each of ``wording.PARTS``.
    """
    tools = settings.tool_tokens
    sizes = (
        settings.static_tokens - settings.rules_tokens,
        settings.rules_tokens,
        notes,
        earlier,
        this_session,
        tools,
        settings.overhead_tokens - tools,
    )
    return tuple(zip(PARTS, sizes, strict=True))


def next_request_parts(
    agent: Any, history: int = 0, settings: RunSettings | None = None
) -> tuple[tuple[str, int], ...]:
    """The parts of ``agent``'s next request as it runs now (:func:`request_parts`).

    Args:
        agent: An nbmemory ``Agent`` (its settings, pinned notes, tools and reply room).
        history: Its memory's tokens, all of them "this session" (a memory kept in RAM; 0
            when only the fixed parts matter).
        settings: ``agent.run_settings()``, when the caller has them already.

    Returns:
        ``(name, tokens)`` for each of ``wording.PARTS``.
    """
    notes = agent.notes.tokens() if getattr(agent, "notes", None) is not None else 0
    return request_parts(settings or agent.run_settings(), notes, this_session=history)
