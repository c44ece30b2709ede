"""Recall's words with the model: questions split into what they ask, answers written out and
read back."""

from __future__ import annotations

from nbmemory.recall.text import Passage, describe, described, sub_queries


def test_a_question_about_several_things_is_asked_one_thing_at_a_time():
    assert sub_queries("What did Maya and Tomas plant?") == [
        "What did Maya plant?",
        "What did Tomas plant?",
    ]
    assert sub_queries("Where did Maya, Tomas and Ines go?") == [
        "Where did Maya go?",
        "Where did Tomas go?",
        "Where did Ines go?",
    ]
    assert sub_queries("What do Maya and Tomas both play?") == [
        "What do Maya play?",
        "What do Tomas play?",
    ]
    assert sub_queries("What is the budget and when is the deadline?") == [
        "What is the budget?",
        "when is the deadline?",
    ]
    assert sub_queries("Which warehouse did we pick?") == ["Which warehouse did we pick?"]


def test_the_answer_reads_back_as_the_passages_it_describes():
    passages = [
        Passage("history_1.md", 4, "User", "2026-04-20T14:30:45", "Budget: 40k EUR.", 2.5),
        Passage("MEMORY.md", 0, "Scout", "", "Two lines\n\n[2] not a passage header", 1.0),
        Passage("history_2.md", 9, "Tool", "2026-04-21T09:00:00", "ok", 0.5),
        Passage(
            "history_2.md",
            12,
            "Tomas",
            "2026-04-21T09:01:00",
            "The cello.",
            0.4,
            (Passage("history_2.md", 11, "Maya", "2026-04-21T09:00:30", "Which one?", 0.0),),
        ),
    ]
    read = described(describe("budget", passages))
    assert [(p.source, p.index, p.role, p.timestamp, p.text, p.beside) for p in read] == [
        (p.source, p.index, p.role, p.timestamp, p.text, p.beside) for p in passages
    ]
    assert described(describe("zeppelin", [])) == []
