"""CREATE and SPLIT are decided by the fact vectors (size, cohesion, cohesion gain), and named afterwards
(induction/ontology.py): a concept the namer cannot name is made all the same and shown as "unnamed (…)",
a display state that RENAME replaces once the namer can name it. The sentences are from no benchmark."""

from __future__ import annotations

from typing import Any

import numpy as np

from graph.edits import AttachFact, CreateConcept, EditBatch, OntologyEdit, RenameConcept, SplitConcept, apply_batch
from graph.models import Fact
from graph.snapshot import Snapshot
from induction.config import LivingConceptsConfig
from induction.naming import concept_name, is_unnamed, unnamed_label
from induction.ontology import INDUCED, living_edits
from memcore.memory import Memory

U = "noor"
ANCHOR = f"{U}::c::life"
CFG = LivingConceptsConfig(min_cluster=3, radius=0.6, assign_sim=0.6, merge_sim=0.95, split_min=6, split_child_min=3)
# members that refer to someone only by a pronoun: nothing in them names a topic, the namer gives no name
VAGUE = ["she said it went better than last time", "they told me all about it on the phone",
         "he wants to try it again soon", "she called to say it was fine after all"]
DOG = ["I walk my dog in the park every morning", "my dog chases the ball in the park", "the dog park was muddy today",
       "my dog loves the long park walks"]
WORK = ["my boss moved the meeting to friday", "the office printer broke again", "I finished the quarterly report at work"]


def _vec(axis: int, wobble: int, dim: int = 16) -> tuple[float, ...]:
    v = np.zeros(dim, dtype=np.float32)
    v[axis] = 1.0
    v[(axis + 1 + wobble) % dim] = 0.15
    return tuple(float(x) for x in v / np.linalg.norm(v))


def _attach(fid: str, text: str, vec: tuple[float, ...]) -> AttachFact:
    return AttachFact(fact=Fact(fact_id=f"{U}::f::{fid}", user_id=U, statement=text), concept_id=ANCHOR, embedding=vec)


def _induced(edits: list[OntologyEdit]) -> list[CreateConcept]:
    return [e for e in edits if isinstance(e, CreateConcept) and INDUCED in e.concept_id]


def test_the_premise_the_namer_gives_these_members_no_name() -> None:
    assert concept_name(VAGUE[:3], VAGUE + DOG) == ""


def test_a_cluster_the_namer_cannot_name_is_created_and_shown_unnamed() -> None:
    snap = Snapshot(user_id=U)
    edits: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="life")]
    edits += [_attach(f"v{i}", t, _vec(0, i)) for i, t in enumerate(VAGUE[:3])]
    out = living_edits(snap, edits, {}, CFG)
    made = _induced(out)
    assert len(made) == 1 and is_unnamed(made[0].name) and made[0].parent_id == ANCHOR
    s1, _ = apply_batch(snap, EditBatch(user_id=U, edits=out))
    assert {s1.fact_concept[f"{U}::f::v{i}"] for i in range(3)} == {made[0].concept_id}


def test_a_loose_cluster_is_not_created_even_when_it_names_well() -> None:
    """Three facts on three orthogonal directions end up in one leader cluster (none of the three alone is
    big enough), but their mean cosine to the centre (0.58) is below the joining radius (0.6): no concept,
    however well "dog and park" would name them."""
    snap = Snapshot(user_id=U)
    edits: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="life")]
    edits += [_attach(f"d{i}", t, _vec(3 * i, 0)) for i, t in enumerate(DOG[:3])]
    out = living_edits(snap, edits, {}, CFG)
    assert not _induced(out)
    s1, _ = apply_batch(snap, EditBatch(user_id=U, edits=out))
    assert all(s1.fact_concept[f"{U}::f::d{i}"] == ANCHOR for i in range(3))  # kept on the topic, never lost


def test_a_split_is_made_when_its_halves_get_no_names() -> None:
    """Eight facts on the topic fall into two tight halves; nothing names either half. The split is made
    (two children, all eight facts kept), its halves shown unnamed."""
    snap = Snapshot(user_id=U)
    edits: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="life")]
    edits += [_attach(f"a{i}", t, _vec(0, i)) for i, t in enumerate(VAGUE)]
    edits += [_attach(f"b{i}", t, _vec(8, i)) for i, t in enumerate(reversed(VAGUE))]
    cfg = CFG.model_copy(update={"min_cluster": 9, "split_min": 8})  # no CREATE: all eight stay on the topic
    out = living_edits(snap, edits, {}, cfg)
    splits = [e for e in out if isinstance(e, SplitConcept)]
    assert len(splits) == 1 and splits[0].concept_id == ANCHOR
    kids = splits[0].children
    assert len({k.concept_id for k in kids}) == 2 and all(is_unnamed(k.name) for k in kids)
    assert sorted(f for k in kids for f in k.fact_ids) == sorted(e.fact.fact_id for e in edits if isinstance(e, AttachFact))
    s1, _ = apply_batch(snap, EditBatch(user_id=U, edits=out))
    assert {s1.fact_concept[f"{U}::f::a{i}"] for i in range(4)} != {s1.fact_concept[f"{U}::f::b{i}"] for i in range(4)}


def test_an_unnamed_concept_is_renamed_once_the_namer_can_name_it() -> None:
    snap = Snapshot(user_id=U)
    first: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="life")]
    first += [_attach(f"v{i}", t, _vec(0, i)) for i, t in enumerate(VAGUE[:3])]
    first += [_attach(f"w{i}", t, _vec(8, i)) for i, t in enumerate(WORK)]  # the user's other facts
    s1, _ = apply_batch(snap, EditBatch(user_id=U, edits=living_edits(snap, first, {}, CFG)))
    cid = s1.fact_concept[f"{U}::f::v0"]
    assert is_unnamed(s1.concepts[cid].name)
    stored = {e.fact.fact_id: e.embedding for e in first if isinstance(e, AttachFact) and e.embedding}
    # four dog facts join it (same direction): now most members share "dog" and the namer names it
    out = living_edits(s1, [_attach(f"d{i}", t, _vec(0, i + 4)) for i, t in enumerate(DOG)], stored, CFG)
    ren = [e for e in out if isinstance(e, RenameConcept)]
    assert [e.concept_id for e in ren] == [cid] and not is_unnamed(ren[0].name) and "dog" in ren[0].name
    s2, _ = apply_batch(s1, EditBatch(user_id=U, edits=out))
    assert s2.concepts[cid].name == ren[0].name and cid in s2.concepts  # the id stays


def test_an_unnamed_concept_is_not_renamed_to_another_unnamed_label() -> None:
    snap = Snapshot(user_id=U)
    first: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="life")]
    first += [_attach(f"v{i}", t, _vec(0, i)) for i, t in enumerate(VAGUE[:3])]
    s1, _ = apply_batch(snap, EditBatch(user_id=U, edits=living_edits(snap, first, {}, CFG)))
    stored = {e.fact.fact_id: e.embedding for e in first if isinstance(e, AttachFact) and e.embedding}
    out = living_edits(s1, [_attach("v3", VAGUE[3], _vec(0, 5))], stored, CFG)
    assert not [e for e in out if isinstance(e, RenameConcept)]


def test_the_unnamed_label_is_marked_and_carries_the_characteristic_terms() -> None:
    assert unnamed_label([("garden", 2.0), ("tomatoes", 1.5), ("soil", 1.0)]) == "unnamed (garden, tomatoes)"
    assert is_unnamed("unnamed") and is_unnamed("unnamed (garden, tomatoes)")
    assert not is_unnamed("garden and tomatoes") and not is_unnamed("unnamed things")


def test_undo_of_an_unnamed_create_and_split_restores_the_snapshot_exactly(mem: Memory) -> None:
    """Both backends (the ``mem`` fixture runs on Neo4j too): the data-made, unnamed edits undo exactly."""
    def tree(s: Snapshot) -> tuple[Any, ...]:
        return (s.concepts, s.parent, s.fact_concept, s.facts, s.relations)

    edits: list[OntologyEdit] = [CreateConcept(concept_id=ANCHOR, name="life")]
    edits += [_attach(f"a{i}", t, _vec(0, i)) for i, t in enumerate(VAGUE)]
    edits += [_attach(f"b{i}", t, _vec(8, i)) for i, t in enumerate(reversed(VAGUE))]
    out = living_edits(Snapshot(user_id=U), edits, {}, CFG.model_copy(update={"min_cluster": 9, "split_min": 8}))
    assert isinstance(out[-1], SplitConcept) and all(is_unnamed(k.name) for k in out[-1].children)
    mem.apply(EditBatch(user_id=U, session_id="s1", edits=out[:-1]))
    before = mem.store.load_snapshot(U)
    mem.apply(EditBatch(user_id=U, session_id="s1-split", edits=out[-1:]))
    after = mem.store.load_snapshot(U)
    assert tree(after) != tree(before)
    mem.undo(U, max(after.edits.values(), key=lambda e: e.seq).edit_id)
    assert tree(mem.store.load_snapshot(U)) == tree(before)
    # an unnamed CREATE with its facts, undone edit by edit (undo is a stack)
    base = mem.store.load_snapshot(U)
    more = living_edits(base, [_attach(f"n{i}", t, _vec(4, i)) for i, t in enumerate(VAGUE[:3])],
                        mem.store.embeddings(U), CFG)
    assert len(_induced(more)) == 1 and is_unnamed(_induced(more)[0].name)
    mem.apply(EditBatch(user_id=U, session_id="s2", edits=more))
    grown = mem.store.load_snapshot(U)
    assert _induced(more)[0].concept_id in grown.concepts
    new = sorted((e for e in grown.edits.values() if e.edit_id not in base.edits), key=lambda e: -e.seq)
    assert [e.op for e in new][-1] == "CREATE"
    for e in new:
        mem.undo(U, e.edit_id)
    assert tree(mem.store.load_snapshot(U)) == tree(base)
