"""The conflict families of the synthetic relation data (training_data/relations_conflicts.py)."""

from __future__ import annotations

import json
import random
import re

from evaluation.phrasing import CASES_FILE
from induction.reading.change import reverses
from training_data import relations_conflicts as rc
from training_data.relations_synthetic import FAMILIES, synthetic_dialogues

NEGATION = re.compile(r"\b(?:not|never|no|none|nothing)\b|n't\b", re.I)


def test_the_conflict_families_join_with_the_lookalikes_and_carry_their_labels() -> None:
    assert not {d.family for d in synthetic_dialogues(60, 0)} - set(FAMILIES)
    ds = synthetic_dialogues(680, 0, lookalikes=True)
    assert set(rc.CONFLICT_FAMILIES) <= {d.family for d in ds}
    broken = {"trait_broken", "bio_broken", "taste_flipped", "record_belief", "myth_free"}
    for d in ds:
        if d.family in rc.CONFLICT_FAMILIES:
            (later, earlier), label = next(iter(d.relations.items()))
            assert later > earlier
            assert label == ("conflicts_with" if d.family in broken else "unrelated"), d.family
            roles = {d.session.turns[later].role, d.session.turns[earlier].role}
            # a person against their own statement, or against a record / evidence the assistant quotes
            assert roles == ({"user", "assistant"} if d.family.startswith(("record", "myth", "fact")) else {"user"})


def test_a_contradiction_is_said_without_negation_or_a_change_cue() -> None:
    """The later side of a person's own contradiction says what they did or have, with no "not"/"never" and no
    word of change (a change would be an update, not a conflict)."""
    later = [b for _, b, _ in rc.TRAITS] + [b for _, b, _ in rc.BIO]
    later += [t.format(a="board games", A="Board games") for t in rc.TASTE_LIKE + rc.TASTE_HATE_ALWAYS]
    for s in later:
        assert not NEGATION.search(s), s
        assert not reverses([s]), s


def test_each_contradiction_has_a_look_alike_on_the_same_thing() -> None:
    rng = random.Random(3)
    for fam, label in (("trait_broken", "conflicts_with"), ("trait_kept", "unrelated"), ("record_agreed", "unrelated"),
                       ("myth_free", "conflicts_with"), ("fact_free", "unrelated")):
        turns, rel = rc.conflict_turns(rng, fam, "board games")
        assert len(turns) == 2 and rel == {(1, 0): label}
    assert len({t[0] for t in rc.TRAITS}) == len(rc.TRAITS) and all(len(t) == 3 for t in rc.TRAITS + rc.BIO + rc.RECORDS)


def _words(s: str) -> list[str]:
    return re.sub(r"[^a-z0-9 ]", " ", s.lower()).split()


def test_no_template_sentence_shares_five_words_in_a_row_with_a_phrasing_set_turn() -> None:
    """The phrasing set's test half is only scored: no template may copy a run of five words of any of its turns."""
    grams = set()
    for line in CASES_FILE.read_text().splitlines():
        if line.strip():
            for sess in json.loads(line)["sessions"]:
                for t in sess["turns"]:
                    w = _words(t["text"])
                    grams |= {tuple(w[i:i + 5]) for i in range(len(w) - 4)}
    mine = [x for group in (rc.TRAITS, rc.BIO, rc.RECORDS, rc.MYTHS, rc.TRUTHS) for row in group for x in row]
    mine += [t.format(a="board games", A="Board games") for t in rc.TASTE_LIKE + rc.TASTE_HATE + rc.TASTE_HATE_ALWAYS
             + rc.TASTE_KEPT]
    mine += [t.format(b="it is", B="It is", c="it is", C="It is", e="it is", E="It is")
             for t in rc.RECORD_LATER + rc.CLAIM + rc.EVIDENCE]
    assert grams
    hits = [m for m in mine if any(tuple(_words(m)[i:i + 5]) in grams for i in range(len(_words(m)) - 4))]
    assert not hits, hits
