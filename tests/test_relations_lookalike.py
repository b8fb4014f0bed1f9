"""The look-alike families of the synthetic relation data (training_data/relations_lookalike.py)."""

from __future__ import annotations

import json
import random
import re

from evaluation.phrasing import CASES_FILE
from training_data import relations_lookalike as la
from training_data.relations_synthetic import FAMILIES, synthetic_dialogues


def test_the_lookalike_families_join_only_when_asked_and_carry_their_labels() -> None:
    plain = synthetic_dialogues(60, 0)
    assert {d.family for d in plain} <= set(FAMILIES)
    both = synthetic_dialogues(240, 0, lookalikes=True)
    fams = {d.family for d in both}
    assert set(la.LOOKALIKE_FAMILIES) <= fams
    want = {"habit_change": "supersedes", "refusal": "supersedes", "repeat": "duplicate"}
    for d in both:
        if d.family in la.LOOKALIKE_FAMILIES:
            (later, earlier), label = next(iter(d.relations.items()))
            assert later > earlier and d.session.turns[later].role == "user"
            assert label == want.get(d.family, "unrelated"), d.family


def test_a_one_off_differs_from_a_lasting_change_of_the_same_habit() -> None:
    rng = random.Random(1)
    for fam, label in (("one_off", "unrelated"), ("habit_change", "supersedes"), ("question", "unrelated")):
        turns, rel = la.lookalike_turns(rng, fam, "jazz", "techno")
        assert len(turns) == 2 and rel == {(1, 0): label}
    turns, _ = la.lookalike_turns(random.Random(0), "question", "jazz", "techno")
    assert "techno" in turns[1].lower()


def _norm(s: str) -> str:
    return re.sub(r"[^a-z ]", "", s.lower()).strip()


def test_no_template_sentence_is_a_phrasing_set_turn() -> None:
    """The phrasing set's test half is only scored: no template may copy one of its turns (or the tuning half's)."""
    turns = {_norm(t["text"]) for line in CASES_FILE.read_text().splitlines() if line.strip()
             for s in json.loads(line)["sessions"] for t in s["turns"]}
    mine = [x for h in la.HABITS for x in h]
    for group in (la.OTHER_CHANGE, la.HYPOTHETICAL, la.QUESTION, la.ADVICE, la.ELABORATE, la.FIRST_TIME, la.REFUSAL,
                  la.REPEAT, la.LIKE):
        mine += [la._fill(t, "jazz", "techno", "My sister") for t in group]
    assert turns and not [m for m in mine if _norm(m) in turns]
