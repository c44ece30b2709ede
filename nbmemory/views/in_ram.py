"""The read model's answers for a memory kept in RAM only, with no file to read.

An ``Agent`` with ``persistent_memory`` off, or a bare ``Conversation``, has the same figures
and words in every view as an agent on disk: they are read from the objects themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbmemory.agent.request_parts import next_request_parts
from nbmemory.views.answers import AgentInfo, Usage
from nbmemory.wording import PARTS


def usage_in_ram(memory: Any, agent: Any = None) -> Usage:
    """How full the next request on a memory kept in RAM only is, part by part.

    Args:
        memory: The ``Conversation``.
        agent: The ``Agent`` that owns it, if any: its notes, tools, reply room and threshold
            count too.

    Returns:
        The same figures and words as an agent's on disk; the whole memory is "this session".
    """
    static, rules = memory.static_tokens(), memory.rules_tokens()
    history = memory.context_tokens() - static
    if agent is None:
        return Usage(
            tokens=static + history,
            context_length=memory.context_length,
            threshold=None,
            model="",
            encoding=memory.encoding_name,
            recorded=True,
            parts=tuple(zip(PARTS, (static - rules, rules, 0, 0, history, 0, 0), strict=True)),
        )
    settings = agent.run_settings()
    parts = next_request_parts(agent, history, settings)
    return Usage.of_request(settings, parts, encoding=settings.encoding, recorded=True)


def agent_in_ram(name: str, memory: Any, agent: Any = None) -> AgentInfo:
    """An agent whose memory is kept in RAM only, at a glance.

    Args:
        name: The agent's name.
        memory: Its ``Conversation``.
        agent: The ``Agent``, if any (see :func:`usage_in_ram`).

    Returns:
        The same figures as an agent on disk, with no file: ``path`` is empty, and there is no
        size, archive or problem.
    """
    history = memory.conversation_history
    last = history[-1].get("timestamp") if history else None
    return AgentInfo(
        name=name,
        path=Path(),
        messages=len(history),
        size=0,
        archives=0,
        last_activity=str(last) if last else None,
        usage=usage_in_ram(memory, agent),
    )
