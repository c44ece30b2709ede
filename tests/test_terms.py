"""Words for ranking, questions, and the salient terms a summary must not lose silently."""

from nbmemory.terms import is_question, missing_terms, salient_terms, words


def test_words_meet_across_forms():
    assert words("The Documents were picked") == ["document", "pick"]
    assert words("code-named") == words("code name")


def test_a_question_only_asks():
    assert is_question("What is the budget?") and is_question("who owns it")
    assert not is_question("The code is QX-1. Can you confirm?")  # it also tells
    assert not is_question("Our office is in Lyon.")


def test_salient_terms_are_names_numbers_dates_and_identifiers():
    text = (
        "User: Our contact at Acme is Priya Shah; the budget is 9,000 euros by 2026-05-03.\n"
        "Scout: Noted. The code name is BLUEFIN-7, on NbMemory v0.2."
    )
    assert salient_terms(text) == [
        "Acme",
        "Priya",
        "Shah",
        "9,000",
        "2026-05-03",
        "BLUEFIN-7",
        "NbMemory",
        "v0.2",
    ]
    assert missing_terms(text, "priya owns a 9,000 euro budget") == [
        "Acme",
        "Shah",
        "2026-05-03",
        "BLUEFIN-7",
        "NbMemory",
        "v0.2",
    ]


def test_speaker_labels_are_never_dropped_terms():
    transcript = "User: Book the Lyon office.\nResearchAgent: Booked Lyon for the team."
    # Without the speakers, the agent's own name (a line label) reads as a dropped name.
    assert missing_terms(transcript, "An office is booked.") == ["Lyon", "ResearchAgent"]
    kept = missing_terms(transcript, "An office is booked.", ignore=["user", "researchagent"])
    assert kept == ["Lyon"]
