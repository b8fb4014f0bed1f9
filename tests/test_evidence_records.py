"""A record of the user's own, quoted by the assistant, is evidence (induction/evidence.py RECORD; issue 44 item 5).

Sentences written here, from no benchmark: each fails to become a fact without the class (its score was <= 0, so
not even the one-sentence fallback kept it)."""

from __future__ import annotations

import pytest

from induction.evidence import evidence_score, select_evidence
from induction.offline import OfflineExtractor, sentences
from induction.session import Session

RECORDS = [
    "The invoice you emailed lists a due date of the third.",
    "The warranty card you photographed says two years of cover.",
    "the rota you pasted puts you on the late shift on Friday",
    "The pharmacy label in your photo says one tablet at night with water.",
    "Your booking confirmation states a pick-up at the north gate.",
    "The lease you've uploaded sets the notice period at two months.",
]
# addressing the user without quoting a record of theirs stays conversation
NOT_RECORDS = [
    "You sent me a lovely message, thank you so much for that.",
    "I hope you can relax a bit this weekend after all of that.",
]


@pytest.mark.parametrize("s", RECORDS)
def test_a_quoted_record_of_the_user_is_evidence(s: str) -> None:
    assert evidence_score(s) >= 2.0
    picked = select_evidence(s, sentences(s), "assistant", 2, 6, 2.0, fallback=False)
    assert len(picked) == 1


@pytest.mark.parametrize("s", NOT_RECORDS)
def test_addressing_the_user_is_no_record(s: str) -> None:
    assert evidence_score(s) <= 0.0


def test_a_belief_about_ones_own_booking_meets_the_record_in_one_session() -> None:
    sess = Session.model_validate({"session_id": "s1", "user_id": "u1", "turns": [
        {"role": "user", "text": "My ferry back is on Sunday evening."},
        {"role": "assistant", "text": "The ticket you forwarded shows the return crossing on Saturday at 18:40."}]})
    facts = OfflineExtractor().extract(sess).facts
    assert {f.holder for f in facts} == {"user", "assistant"}
