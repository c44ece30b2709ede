"""A short tour of a persistent memory: write, reload as a restarted process would, compact,
then ask an agent (on the offline model unless ``$NBMEMORY_MODEL`` says otherwise)."""

from __future__ import annotations

from pathlib import Path

from nbmemory.agent.agent import Agent
from nbmemory.memory.conversation import Conversation
from nbmemory.store import Workspace
from nbmemory.store.folders import MEMORY_FILE
from nbmemory.wording import counted

AGENT = "demo-agent"
TURNS = [
    ("User", "Our team picked ClickHouse for the analytics warehouse."),
    (AGENT, "Noted: the analytics warehouse is ClickHouse."),
    ("User", "Latency budget for dashboards is 200 ms at the 95th percentile."),
    (AGENT, "Noted: dashboards must answer within 200 ms (p95)."),
]


def run(workspace: Workspace) -> Path:
    """Run the tour in ``workspace`` (``Workspace.from_env()`` for ``$WORKSPACE_DIR``)."""
    path = workspace.memory_path(AGENT)
    print(f"Memory file: {path}")

    first = Conversation(
        name=AGENT,
        system_prompt="You are a helpful analyst.",
        memory_md_path=path,
        workspace=workspace,
    )
    print(f"1. Started with {counted(len(first.preloaded_messages), 'remembered message')}.")
    for role, content in TURNS:
        first.add(role, content)
    print(f"   Wrote {len(TURNS)} messages through to MEMORY.md.")
    first.close()

    second = Conversation(
        name=AGENT,
        system_prompt="You are a helpful analyst.",
        memory_md_path=path,
        workspace=workspace,
    )
    print(f"2. A fresh Conversation preloads {counted(len(second.preloaded_messages), 'message')}:")
    for message in second.preloaded_messages[-len(TURNS) :]:
        print(f"   {message['role']}: {message['content']}")
    hits = second.search_memory("clickhouse")
    print(f"   search_memory('clickhouse') finds {counted(len(hits), 'message')}.")

    before = second.count_history_tokens()
    archive = second.compact(
        "The analytics warehouse is ClickHouse; dashboards must answer within 200 ms (p95)."
    )
    after = second.count_history_tokens()
    print(f"3. Compacted: {before} -> {after} tokens; raw transcript archived to {archive}")
    print(f"   Archives so far: {len(second.archives())}")
    second.close()

    agent = Agent(agent_name=AGENT, persistent_memory=True, workspace=workspace)
    question = "Which warehouse did we pick?"
    print(f"4. An agent on {agent.model_name}, started afresh, is asked: {question}")
    answer = agent.run(question)
    print("\n".join(f"   {line}" for line in answer.splitlines()))
    agent.short_memory.close()

    print("\nMEMORY.md now reads:\n")
    print(workspace.agent(AGENT).read(MEMORY_FILE).decode("utf-8"))
    return path
