"""induction/timeexpr.py: the end of a dated plan or a time-bounded state, one case per pattern class.

Every sentence here was written for this table (no benchmark's wording). The reference date is a
Wednesday, 2025-11-12, unless a case gives its own.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from induction.timeexpr import PATTERNS, find_end, find_ends, valid_to_for

REF = datetime(2025, 11, 12, 15, 30, tzinfo=timezone.utc)


def d(y: int, m: int, day: int) -> datetime:
    return datetime(y, m, day, tzinfo=timezone.utc)


# (class, sentence, reference, expected end)
CASES: list[tuple[str, str, datetime, datetime]] = [
    ("until_end_of", "My cousin is crashing on our sofa until the end of the semester.", REF, d(2026, 1, 1)),
    ("until_end_of", "The gym is closed till the end of the month for repairs.", REF, d(2025, 12, 1)),
    ("until_end_of", "I'm on crutches through the end of the year.", REF, d(2026, 1, 1)),
    ("rest_of", "I'm working from my parents' place for the rest of the week.", REF, d(2025, 11, 17)),
    ("this_term", "I only have morning lectures this semester.", d(2026, 2, 10), d(2026, 6, 1)),
    ("for_next", "I'm off sugar for the next three months, doctor's orders.", REF, d(2026, 2, 13)),
    ("for_next", "Over the coming two weeks I can only answer emails at night.", REF, d(2025, 11, 27)),
    ("for_duration", "The physio said no running for a few months.", REF, d(2026, 2, 13)),
    ("for_duration", "We're renting a van for ten days.", REF, d(2025, 11, 23)),
    ("until_month", "I'm staying with my aunt until March.", REF, d(2026, 3, 1)),
    ("until_month", "Our office is in a temporary building until June 2027.", REF, d(2027, 6, 1)),
    ("until_weekday", "The kids are at their grandma's until Friday.", REF, d(2025, 11, 15)),
    ("season_year", "I'm planning to move to Porto in spring 2026.", REF, d(2026, 6, 1)),
    ("season_year", "We hope to finish the cabin by the summer of 2027.", REF, d(2027, 9, 1)),
    ("month_year", "My sister wants to visit in March 2026.", REF, d(2026, 4, 1)),
    ("date", "The exam is on 3 December, so I'm skipping the party.", REF, d(2025, 12, 4)),
    ("date", "I have to hand in the thesis by January 9, 2026.", REF, d(2026, 1, 10)),
    ("season_deictic", "We're thinking of a road trip next summer.", REF, d(2026, 9, 1)),
    ("season_deictic", "I'll repaint the fence this spring.", d(2026, 1, 20), d(2026, 6, 1)),
    ("season_deictic", "This winter I'm going to learn to ski.", REF, d(2026, 3, 1)),
    ("by_month", "I want the kitchen redone by March.", REF, d(2026, 4, 1)),
    ("rel_unit", "I'm going to try the new climbing gym next week.", REF, d(2025, 11, 24)),
    ("rel_unit", "This weekend I'm helping a friend move flats.", REF, d(2025, 11, 17)),
    ("rel_unit", "I plan to read more next year.", REF, d(2027, 1, 1)),
    ("in_n", "I fly to Nairobi in three weeks.", REF, d(2025, 12, 4)),
    ("weekday", "I'm seeing the dentist on Thursday.", REF, d(2025, 11, 14)),
    ("weekday", "Next Wednesday I'm hosting the book club.", REF, d(2025, 11, 20)),
    ("day_word", "I'm going to bake bread tomorrow.", REF, d(2025, 11, 14)),
    ("year", "I'd like to run a marathon in 2027.", REF, d(2028, 1, 1)),
]


@pytest.mark.parametrize("cls,text,ref,end", CASES, ids=[f"{c[0]}:{c[1][:30]}" for c in CASES])
def test_each_case_resolves_to_its_end(cls: str, text: str, ref: datetime, end: datetime) -> None:
    b = find_end(text, ref)
    assert b is not None, text
    assert (b.cls, b.end) == (cls, end), (text, b)


def test_every_pattern_class_has_a_case() -> None:
    assert {p.cls for p in PATTERNS} == {c[0] for c in CASES}
    assert all(p.covers for p in PATTERNS)


@pytest.mark.parametrize("text", [
    "I've been vegetarian for three years now.",          # how long it has lasted, not when it ends
    "I may go, I may not.",                               # the modal 'may' is no month
    "Honestly these days I prefer beach trips.",
])
def test_no_bound_where_none_is_said(text: str) -> None:
    bounds = [b for b in find_ends(text, REF) if b.bounding]
    assert bounds == [], bounds


def test_no_reference_date_no_end() -> None:
    assert find_ends("I'm moving to Porto in spring 2026.", None) == []


def test_valid_to_for_kinds() -> None:
    said = d(2025, 11, 2)
    plan = valid_to_for("plan", "I'm planning to move to Porto in spring 2026.", said)
    assert plan is not None and plan.end == d(2026, 6, 1)
    # a plan whose date is already over when said gets no end from it
    assert valid_to_for("plan", "I was going to go in March 2024.", said) is None
    # a stated state needs a bounding expression; a bare date does not end a preference
    assert valid_to_for("preference", "I love the market in spring 2026.", said) is None
    knee = valid_to_for("constraint", "The doctor said no strenuous activity for a few months.", said)
    assert knee is not None and knee.end == d(2026, 2, 3)
    assert valid_to_for("constraint", "I've been gluten-free for three years now.", said) is None
    # what happened and what someone believes do not expire by a date
    assert valid_to_for("event", "We went hiking next to the lake this spring.", said) is None
    assert valid_to_for("belief", "I think prices will drop by March.", said) is None
