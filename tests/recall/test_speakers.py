"""Who said a message: the name a transcript's line opens with is its speaker's."""

import pytest

from nbmemory.recall.speakers import teller_and_text


@pytest.mark.parametrize(
    ("text", "teller", "said"),
    [
        ("Maya: I play the cello.", "Maya", "I play the cello."),
        ("Fahim Khan: I went running.", "Fahim Khan", "I went running."),
        ("[8 May 2023] Maya: Hello.", "Maya", "[8 May 2023] Hello."),
        # Chat exports write some names in lower case.
        ("elise: I made salmon fillet today.", "elise", "I made salmon fillet today."),
        ("[13:09] elise: Wow!", "elise", "[13:09] Wow!"),
    ],
)
def test_a_line_opening_with_a_name_is_that_persons(text, teller, said):
    assert teller_and_text("User", text) == (teller, said)


@pytest.mark.parametrize(
    "text",
    [
        "Decision: we rent the harp.",  # a heading
        "note: call the bank.",  # a heading, in lower case too
        "ps: bring the charger.",
        "ok: fine",  # too short for a name
        "https://example.org: the link",  # no space after the colon
        "the plan: rent the harp",  # two words in lower case are a phrase
        "I said: rent the harp",
    ],
)
def test_a_line_opening_otherwise_is_its_roles(text):
    assert teller_and_text("User", text) == ("User", text)
