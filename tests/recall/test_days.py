"""The days a question names, for recall to count what was said on them more."""

from nbmemory.recall.days import named_days


def days(*written: str) -> frozenset[str]:
    """The days written, each with the day either side (``NEAR``)."""
    import datetime

    found = set()
    for day in written:
        date = datetime.date.fromisoformat(day)
        found |= {(date + datetime.timedelta(days=k)).isoformat() for k in (-1, 0, 1)}
    return frozenset(found)


def test_a_date_in_any_common_writing_names_its_day_and_the_days_either_side():
    assert named_days("What did Paola cook on 22.01.2024?") == days("2024-01-22")
    assert named_days("What happened on 2024-01-22?") == days("2024-01-22")
    assert named_days("What did Kate make on 29 Dec 2023?") == days("2023-12-29")
    assert named_days("What happened on the 17th of January, 2024?") == days("2024-01-17")
    assert named_days("How many naps on January 6 2024?") == days("2024-01-06")
    assert named_days("Any news since March 3rd, 2024 or on Sept. 2, 2024?") == days("2024-09-02")


def test_day_and_month_either_way_round_name_both_days():
    assert named_days("What was said on 03/04/2024?") == days("2024-04-03", "2024-03-04")
    assert named_days("What was said on 13.04.2024?") == days("2024-04-13")


def test_a_bound_of_a_span_or_no_real_day_names_none():
    assert named_days("Did Vanessa compete before January 1st, 2024?") == frozenset()
    assert named_days("What changed after 2024-01-22?") == frozenset()
    assert named_days("What was said on 31.02.2024?") == frozenset()
    assert named_days("Where was Elise in 2023?") == frozenset()
