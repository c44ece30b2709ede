"""Following up a passage recall found: the messages said around it, and those said in a span
of time, across MEMORY.md and the archives."""

from __future__ import annotations

import pytest

from nbmemory import Agent
from nbmemory.memory import conversation
from nbmemory.memory.preload import SUMMARY_MARKER
from nbmemory.recall import find
from nbmemory.recall.follow_up import around, between
from nbmemory.recall.text import described
from nbmemory.tokens import TokenCounter

FIRST_DAY = [
    ("User", "My sister Ines moved to Porto last spring."),
    ("Scout", "Porto suits a musician."),
    ("User", "The weather was grey all week."),
    ("Scout", "Grey weeks pass."),
    ("User", "She repairs violins in a workshop by the river."),
    ("Scout", "A fine trade."),
]
SECOND_DAY = [
    ("User", "We booked the night train to Lyon."),
    ("Scout", "Safe travels."),
]


def dated_memory(monkeypatch: pytest.MonkeyPatch) -> Agent:
    """Scout's memory: the first day's messages archived by a compaction (its summary keeps
    none of them), then the second day's in MEMORY.md, each a minute after the last."""
    now = ["2026-03-01T09:00:00"]
    monkeypatch.setattr(conversation, "now_iso", lambda: now[0])
    agent = Agent(agent_name="Scout", persistent_memory=True, embedding_model="none")
    for minute, (role, text) in enumerate(FIRST_DAY):
        now[0] = f"2026-03-01T09:{minute:02}:00"
        agent.short_memory.add(role, text)
    now[0] = "2026-03-02T08:00:00"
    agent.compact(f"{SUMMARY_MARKER}\nScout and the user talked about family.")
    for minute, (role, text) in enumerate(SECOND_DAY):
        now[0] = f"2026-03-02T10:{minute:02}:00"
        agent.short_memory.add(role, text)
    now[0] = "2026-03-03T12:00:00"
    return agent


def test_the_messages_around_a_cited_archived_message_come_in_the_order_said(monkeypatch):
    docs = dated_memory(monkeypatch).short_memory.docs
    best = find(docs, "sister Ines Porto", 1, None).passages[0]
    assert best.source.startswith("history_") and best.text == FIRST_DAY[0][1]
    answer = around(docs, best.source, best.index + 1, before=1, after=4)
    said = described(answer)
    assert [p.text for p in said] == [text for _, text in FIRST_DAY[:5]]
    assert [p.role for p in said] == [role for role, _ in FIRST_DAY[:5]]
    assert said[0].timestamp == "2026-03-01T09:00:00"
    assert f"[1*] User at 2026-03-01T09:00:00 ({best.source}, message 1):" in answer
    assert around(docs, f"archive/{best.source}", 1, after=4) == answer  # as the folder names it


def test_what_recall_never_returns_is_stepped_over(monkeypatch):
    agent = dated_memory(monkeypatch)
    agent.run("Where does Ines live?")  # the offline model recalls: a call and its result
    docs = agent.short_memory.docs
    said = described(around(docs, "MEMORY.md", 3, before=5, after=5))
    texts = [p.text for p in said]
    assert texts[: len(SECOND_DAY)] == [text for _, text in SECOND_DAY]
    assert "Where does Ines live?" in texts
    assert not any("passage" in text for text in texts)  # no recall result
    assert not any("talked about family" in text for text in texts)  # no summary


@pytest.mark.parametrize(
    ("source", "message", "said"),
    [
        ("history_nope.md", 1, "no file 'history_nope.md'"),
        ("MEMORY.md", 0, "MEMORY.md holds messages 1 to"),
        ("MEMORY.md", 99, "MEMORY.md holds messages 1 to"),
    ],
)
def test_an_unknown_source_or_number_is_said_in_one_line(monkeypatch, source, message, said):
    docs = dated_memory(monkeypatch).short_memory.docs
    answer = around(docs, source, message)
    assert said in answer and "\n" not in answer and answer.startswith("Error:")


def test_a_day_gives_what_was_said_that_day_archived_or_not(monkeypatch):
    docs = dated_memory(monkeypatch).short_memory.docs
    first = described(between(docs, "2026-03-01"))
    assert [p.text for p in first] == [text for _, text in FIRST_DAY]
    assert all(p.source.startswith("history_") for p in first)
    second = described(between(docs, "2026-03-02", "2026-03-02"))
    assert [(p.source, p.text) for p in second] == [("MEMORY.md", t) for _, t in SECOND_DAY]
    both = described(between(docs, "2026-03-01T09:04", "2026-03-02T10:00:00"))
    assert [p.text for p in both] == [FIRST_DAY[4][1], FIRST_DAY[5][1], SECOND_DAY[0][1]]
    assert between(docs, "2026-03-05").startswith("Nothing was said")
    empty = Agent(agent_name="Empty", persistent_memory=True).short_memory.docs
    assert between(empty, "2026-03-01") == (
        "Nothing was said from 2026-03-01T00:00:00 to 2026-03-01T23:59:59 in this agent's "
        "memory or archives."
    )
    assert around(empty, "MEMORY.md", 1).startswith("Error: no file 'MEMORY.md'")


@pytest.mark.parametrize(
    ("start", "end"), [("March 1", ""), ("2026-03-01", "tomorrow"), ("2026-03-02", "2026-03-01")]
)
def test_a_bad_span_says_the_format_expected(monkeypatch, start, end):
    docs = dated_memory(monkeypatch).short_memory.docs
    answer = between(docs, start, end)
    assert answer.startswith("Error:") and "\n" not in answer
    assert "YYYY-MM-DD" in answer or "before" in answer


def test_answers_hold_their_budget_nearest_first(monkeypatch):
    docs = dated_memory(monkeypatch).short_memory.docs
    count = TokenCounter().count
    best = find(docs, "violins workshop river", 1, None).passages[0]
    tight = around(docs, best.source, best.index + 1, budget=150, count=count)
    assert count(tight) <= 150
    kept = [p.text for p in described(tight)]
    assert FIRST_DAY[4][1] in kept and FIRST_DAY[0][1] not in kept  # the farthest go first
    day = between(docs, "2026-03-01", budget=150, count=count)
    assert count(day) <= 150 and described(day)[0].text == FIRST_DAY[0][1]
    assert "more messages" in day
