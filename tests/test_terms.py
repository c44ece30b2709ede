"""Words for ranking, questions, and the salient terms a summary must not lose silently."""

import json

from nbmemory import terms
from nbmemory.memory.preload import SUMMARY_MARKER
from nbmemory.terms import LONGEST_STEMMED, is_question, missing_terms, salient_terms, words
from support import run_python

STEMS_IN_A_NEW_PROCESS = """
import json, sys
from nbmemory.terms import words
found = words(sys.argv[1])
loaded = sorted(name for name in sys.modules if name.endswith("_stemmer"))
import snowballstemmer
english = snowballstemmer.stemmer("english")
print(json.dumps({"found": found, "loaded": loaded,
                  "snowball": [english.stemWord(w) for w in sys.argv[1].lower().split()]}))
"""


def test_words_meet_across_forms():
    assert words("The Documents were picked") == ["document", "pick"]
    assert words("code-named") == words("code name")


def test_a_possessive_is_its_name_and_a_typographic_apostrophe_is_an_apostrophe():
    assert words("Nicolas's cat") == words("Nicolas cat") == ["nicola", "cat"]
    assert words("Kevin's") == words("Kevin")
    # Phones and word processors write a typographic apostrophe (U+2019): no stray "s" or "t".
    typed = "Paola\u2019s plan, don\u2019t"
    assert words(typed) == words("Paola's plan, don't") == ["paola", "plan", "dont"]


def test_words_are_stemmed_as_snowball_stems_them_without_its_other_languages():
    text = "studies studying running generously organizational relational fairly"
    answer = json.loads(run_python(STEMS_IN_A_NEW_PROCESS, text).stdout)
    assert answer["found"] == answer["snowball"]
    assert not any("french" in name or "arabic" in name for name in answer["loaded"])


def test_a_word_too_long_for_any_language_is_a_term_as_it_is_never_stemmed(monkeypatch):
    stemmed: list[str] = []
    stem = terms._stem
    monkeypatch.setattr(terms, "_stems", {})  # none remembered from an earlier test
    monkeypatch.setattr(terms, "_stem", lambda word: stemmed.append(word) or stem(word))
    longest, over = "y" * LONGEST_STEMMED, "y" * (LONGEST_STEMMED + 1)
    run = "y" * 1_000_000  # Snowball took a minute over it
    assert words(f"{longest} {over} {run} studies") == [stem(longest), over, run, "studi"]
    assert stemmed == [longest, "studies"]


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


def test_a_quoted_sentence_opens_with_no_name():
    # A tool result's JSON: "Nothing" opens the quoted sentence, it is no name a summary drops.
    result = '{"content": "Nothing matches. Ask Priya."}'
    assert salient_terms(result) == ["Priya"]
    assert salient_terms('She said: "Maybe later." (Sure, we met Chiara.)') == ["Chiara"]
    assert salient_terms('my cat "Miso" sleeps') == ["Miso"]


def test_the_summary_marker_common_words_and_single_digits_are_no_terms():
    transcript = (
        f"{SUMMARY_MARKER}\nThe Lyon move was planned with Priya Shah.\n"
        "User: Plan for the move:\n"
        "- After the audit, call Margot about the 12 desks.\n"
        "- **Bold** rows need ticket QX-7781 (See tab 3, Step 2 of 4).\n"
        "1. Book room B4 before 2026-05-03.\n"
        "Assistant: Noted. Next, I will write to Acme."
    )
    assert salient_terms(transcript) == [
        "Lyon",
        "Priya",
        "Shah",
        "Margot",
        "12",
        "QX-7781",
        "B4",
        "2026-05-03",
        "Acme",
    ]
    assert missing_terms(transcript, "Priya and Margot plan the move.") == [
        "Lyon",
        "Shah",
        "12",
        "QX-7781",
        "B4",
        "2026-05-03",
        "Acme",
    ]
