"""Who said a message: the name a transcript's line opens with is its speaker's."""

import pytest

from nbmemory.recall.speakers import spelled_like, teller_and_text
from nbmemory.terms import words


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


def _name(word: str) -> str:
    [stem] = words(word)
    return stem


@pytest.mark.parametrize(
    ("asked", "speaker"),
    [("Aqib", "Akib"), ("Mohammed", "Muhhamed"), ("Muhammad", "Muhhamed"), ("Paula", "Paola")],
)
def test_a_name_spelled_another_way_is_the_speakers(asked, speaker):
    speakers = {_name(speaker), _name("Emi"), "user"}
    assert spelled_like(_name(asked), speakers) == _name(speaker)


@pytest.mark.parametrize(
    ("asked", "speakers"),
    [
        ("Kevin", ["Karen"]),  # alike, but not enough
        ("Vanessa", ["Nebraas"]),  # another first letter
        ("Jon", ["Joan", "John"]),  # as alike to two: neither is taken
    ],
)
def test_a_name_spelled_unlike_any_speakers_is_nobodys(asked, speakers):
    assert spelled_like(_name(asked), {_name(s) for s in speakers}) is None
