"""The people look-alike families (training_data/relations_people.py): other people's tastes and meals, reported
what-ifs, others' pressure, kept constraints, questions and said-before repeats, all unrelated to the user's state
(said-before: duplicate); they follow the first ``n`` dialogues without changing them."""

from __future__ import annotations

import json
import random
import re

from evaluation.phrasing import CASES_FILE
from training_data import relations_people as rp
from training_data.relations_synthetic import synthetic_dialogues


def test_people_dialogues_follow_the_others_and_carry_their_labels() -> None:
    base = synthetic_dialogues(40, 0, lookalikes=True)
    more = synthetic_dialogues(40, 0, lookalikes=True, people=21)
    assert [d.session.model_dump() for d in more[:40]] == [d.session.model_dump() for d in base]
    extra = more[40:]
    assert {d.family for d in extra} == set(rp.PEOPLE_FAMILIES)
    for d in extra:
        (later, earlier), label = next(iter(d.relations.items()))
        assert later > earlier and d.session.turns[later].role == "user"
        assert label == ("duplicate" if d.family == "said_before" else "unrelated")


def test_another_persons_meal_names_the_person_and_the_users_limit() -> None:
    turns, rel = rp.people_turns(random.Random(3), "other_eats", "jazz", "techno")
    assert rel == {(1, 0): "unrelated"}
    assert any(p.lower() in turns[1].lower() for p in rp.PEOPLE)
    assert any(x in turns[0].lower() for x, _ in rp.LIMITS)


def _words(s: str) -> list[str]:
    return re.sub(r"[^a-z' ]", " ", s.lower()).split()


def test_no_template_sentence_shares_five_words_in_a_row_with_a_phrasing_set_turn() -> None:
    grams = set()
    for line in CASES_FILE.read_text().splitlines():
        if line.strip():
            for sess in json.loads(line)["sessions"]:
                for t in sess["turns"]:
                    w = _words(t["text"])
                    grams |= {tuple(w[i:i + 5]) for i in range(len(w) - 4)}
    assert grams
    mine = [rp._fill(t, a="jazz", b="techno", p=p, x=x, d=d)
            for group in (rp.LIKE, rp.OTHER_TASTE, rp.LIMIT, rp.OTHER_EATS, rp.WHATIF, rp.PUSH, rp.KEPT,
                          rp.QUESTION_LIMIT, rp.QUESTION_LIKE, rp.SAID_BEFORE)
            for t in group for p in rp.PEOPLE[:2] for x, d in rp.LIMITS]
    hits = [m for m in mine if any(tuple(_words(m)[i:i + 5]) in grams for i in range(len(_words(m)) - 4))]
    assert not hits, hits
