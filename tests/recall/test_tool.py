"""The recall tools an agent's model calls, several in one answer: recall, then what was said
around a passage or in a span of time, the next passages of the same query, all within one
budget per run."""

from __future__ import annotations

import re

from nbmemory import Agent, Conversation
from nbmemory.recall.text import AROUND_TOOL, BETWEEN_TOOL, RECALL_TOOLS, TOOL_NAME
from nbmemory.recall.tool import RUN_BUDGET_CALLS, SPENT
from nbmemory.store import memory_path
from nbmemory.tokens import TokenCounter
from support import http_agent

FACT_A = "My sister Ines moved to Porto last spring."
FACT_B = "She repairs violins in a workshop by the river."
CITED = re.compile(r"\((?P<source>history_[^,]+), message (?P<message>\d+)\)")


def two_facts(name: str) -> None:
    """A conversation where fact B is said three messages after fact A, in words a query for
    A's does not find, archived by a compaction that keeps neither."""
    convo = Conversation(name=name, memory_md_path=memory_path(name))
    for role, text in [
        ("User", FACT_A),
        (name, "Porto suits a musician."),
        ("User", "The weather was grey all week."),
        ("User", FACT_B),
        (name, "A fine trade."),
    ]:
        convo.add(role, text)
    convo.compact("Family news was shared.")
    convo.close()


def test_a_scripted_model_answers_a_two_fact_question_in_two_recall_calls(openai_server):
    two_facts("Worker")
    openai_server.reply(tool_calls=[{"name": TOOL_NAME, "arguments": {"query": "sister Ines"}}])

    def follow_up(request: dict) -> dict:
        found = request["messages"][-1]["content"]  # the first tool result
        cited = CITED.search(found)
        arguments = {"source": cited["source"], "message": int(cited["message"])}
        return {"tool_calls": [{"name": AROUND_TOOL, "arguments": arguments}]}

    openai_server.reply_with(follow_up)
    openai_server.reply("Ines moved to Porto and repairs violins there.")
    agent = http_agent(openai_server, embedding_model="none")
    assert agent.run("What does my sister do in her new city?").startswith("Ines moved")

    first, second, third = openai_server.requests
    for request in (first, second, third):
        names = [tool["function"]["name"] for tool in request["tools"]]
        assert set(names) >= {TOOL_NAME, AROUND_TOOL, BETWEEN_TOOL}
    recalled = second["messages"][-1]["content"]
    assert FACT_A in recalled and FACT_B not in recalled
    assert "message 1)" in recalled  # cited from 1, as every view counts
    around = third["messages"][-1]
    assert around["role"] == "tool" and FACT_B in around["content"]
    assert third["messages"][-2]["tool_calls"][0]["function"]["name"] == AROUND_TOOL


def test_a_runs_recall_answers_share_a_budget_until_it_is_spent(openai_server):
    two_facts("Worker")
    openai_server.reply(tool_calls=[{"name": TOOL_NAME, "arguments": {"query": "sister Ines"}}])
    span = {"start": "2000-01-01", "end": "2100-01-01"}

    def more(request: dict) -> dict:
        cited = CITED.search(request["messages"][-1]["content"])
        around = {"source": cited["source"], "message": int(cited["message"])}
        asked = [
            (AROUND_TOOL, around),
            (BETWEEN_TOOL, span),
            (TOOL_NAME, {"query": "violins"}),
            (TOOL_NAME, {"query": "weather"}),
            (AROUND_TOOL, {**around, "after": 1}),
        ]
        return {"tool_calls": [{"name": name, "arguments": given} for name, given in asked]}

    openai_server.reply_with(more)
    openai_server.reply("Done.")
    openai_server.reply(tool_calls=[{"name": TOOL_NAME, "arguments": {"query": "violins"}}])
    openai_server.reply("Again.")
    budget = 150
    agent = http_agent(openai_server, embedding_model="none", recall_budget=budget)
    agent.run("What do you remember?")
    first = openai_server.requests[1]["messages"][-1]["content"]
    results = [first, *(m["content"] for m in openai_server.requests[2]["messages"][-5:])]
    spent = results.index(SPENT)  # once spent, one line for every later call
    assert spent >= RUN_BUDGET_CALLS and results[spent:] == [SPENT] * (len(results) - spent)
    count = TokenCounter(agent.model_name).count
    assert all(count(result) <= budget for result in results[:spent])
    assert sum(count(result) for result in results[:spent]) <= RUN_BUDGET_CALLS * budget
    assert "[1*]" in results[1]  # fact A, and what was said after it
    agent.run("And now?")  # a new run, a new budget
    assert FACT_B in openai_server.requests[4]["messages"][-1]["content"]


def test_the_tool_shows_five_passages_when_they_fit_its_budget():
    from nbmemory.recall.text import described

    convo = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    for n in range(24):
        convo.add("User" if n % 2 else "Scout", f"Budget review {n}: line {n} was revised.")
    convo.close()
    agent = Agent(agent_name="Scout", persistent_memory=True, embedding_model="none")
    answer = agent.tools.call(TOOL_NAME, {"query": "budget review"})
    assert len(described(answer)) == 5 and "next best:\n- " in answer
    assert TokenCounter().count(answer) <= agent.recall_budget


def test_the_same_query_again_gives_the_next_best_passages():
    convo = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    for n in range(12):
        convo.add("User", f"Budget review {n}: the figures for line {n} were revised.")
    convo.close()
    agent = Agent(agent_name="Scout", persistent_memory=True, embedding_model="none")
    agent.recall_session.start()
    first = agent.tools.call(TOOL_NAME, {"query": "budget review"})
    again = agent.tools.call(TOOL_NAME, {"query": "Budget review?"})
    shown = set(re.findall(r"message (\d+)\):", first))
    assert shown and not shown & set(re.findall(r"message (\d+)\):", again))
    assert "call recall_memory again with the same query" in first
    agent.recall_session.start()  # a new run shows the best again
    assert agent.tools.call(TOOL_NAME, {"query": "budget review"}) == first


def test_every_recall_tool_is_a_memory_tool_whose_results_are_not_said():
    from nbmemory.agent.agent import MEMORY_TOOLS
    from nbmemory.recall.speakers import recallable

    assert RECALL_TOOLS == {TOOL_NAME, AROUND_TOOL, BETWEEN_TOOL} <= set(MEMORY_TOOLS)
    for name in RECALL_TOOLS:
        result = {"tool_call_id": "1", "name": name, "content": FACT_A}
        assert recallable({"role": "Tool", "content": result}) is None
