"""Recall's words with the model: questions split into what they ask, answers written out and
read back."""

from __future__ import annotations

from nbmemory.recall.text import Passage, describe, described, listed_answer, sub_queries


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


def test_a_name_of_several_words_is_asked_whole():
    assert sub_queries("What games do Fahim Khan and Akib play together?") == [
        "What games do Fahim Khan play together?",
        "What games do Akib play together?",
    ]
    assert sub_queries("What did Maya Lopez and Tomas Berg plant?") == [
        "What did Maya Lopez plant?",
        "What did Tomas Berg plant?",
    ]


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


def test_messages_are_cited_from_1_as_every_view_numbers_them():
    first = Passage("MEMORY.md", 0, "User", "2026-04-20T14:30:45", "Budget: 40k EUR.", 1.0)
    answer = describe("budget", [first])
    assert "(MEMORY.md, message 1):" in answer and "message 0" not in answer
    assert described(answer)[0].index == 0  # read back as stored: counted from 0


def test_counts_are_worded_in_the_singular_and_the_plural():
    passages = [
        Passage("MEMORY.md", n, "User", "2026-04-20T14:30:45", f"Budget line {n}.", 1.0)
        for n in range(4)
    ]
    one = describe("budget", passages[:1], matched=2)
    assert one.startswith("1 passage from") and "1 more message matched" in one
    two = describe("budget", passages[:2], matched=5)
    assert two.startswith("2 passages from") and "3 more messages matched" in two
    assert "(s)" not in one + two


def test_a_message_asked_about_is_marked_and_read_back_in_the_order_said():
    said = [
        Passage("history_1.md", n, "User", "2026-04-20T14:30:45", f"Line {n}.", 0.0)
        for n in (3, 4, 5)
    ]
    answer = listed_answer("Around history_1.md, message 5:", said, asked=1)
    assert "[2*] User at 2026-04-20T14:30:45 (history_1.md, message 5):\nLine 4." in answer
    assert [(p.index, p.text) for p in described(answer)] == [
        (3, "Line 3."),
        (4, "Line 4."),
        (5, "Line 5."),
    ]
