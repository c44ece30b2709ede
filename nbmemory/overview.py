"""What is in a workspace: one line of figures per agent, read from the files on disk."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path

from nbmemory import search, workspace
from nbmemory.memory_file import MemoryFile
from nbmemory.search import content_text
from nbmemory.tokens import TokenCounter

_token_cache: dict[tuple[Path, str], tuple[tuple[int, int], int]] = {}


@dataclass(frozen=True)
class AgentOverview:
    """One agent's memory at a glance."""

    name: str
    path: Path
    messages: int
    tokens: int
    size: int
    archives: int
    last_activity: str | None


def _tokens(path: Path, messages: list[dict], model: str | None) -> int:
    st = os.stat(path)
    key, stamp = (path, model or ""), (st.st_size, st.st_mtime_ns)
    cached = _token_cache.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    counter = TokenCounter(model)
    total = sum(counter.count(f"{m['role']}: {content_text(m['content'])}") for m in messages)
    _token_cache[key] = (stamp, total)
    return total


def agent_overview(
    name: str, workspace_dir: str | os.PathLike[str] | None = None, model: str | None = None
) -> AgentOverview:
    """The figures of agent ``name``; raises ``FileNotFoundError`` if it has no memory yet."""
    path = workspace.memory_path(name, workspace_dir)
    memory = MemoryFile(path, name)
    archives = memory.archives()
    if not path.exists():
        if not archives:
            raise FileNotFoundError(f"no agent named {name!r} in {path.parent.parent}")
        return AgentOverview(name, path, 0, 0, 0, len(archives), None)
    messages = search.file_index(path, lambda _path: memory.messages()).messages
    memory.close()
    last = messages[-1].get("timestamp") if messages else None
    if not last:
        last = datetime.datetime.fromtimestamp(path.stat().st_mtime).isoformat(timespec="seconds")
    return AgentOverview(
        name,
        path,
        len(messages),
        _tokens(path, list(messages), model),
        path.stat().st_size,
        len(archives),
        last,
    )


def workspace_overview(
    workspace_dir: str | os.PathLike[str] | None = None, model: str | None = None
) -> list[AgentOverview]:
    """The figures of every agent in the workspace, by name."""
    return [
        agent_overview(name, workspace_dir, model) for name in workspace.list_agents(workspace_dir)
    ]
