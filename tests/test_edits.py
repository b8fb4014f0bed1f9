"""Ontology edits on an in-memory snapshot: every op, every rejection rule, and undo."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from graph.edits import (AttachFact, Conflict, CreateConcept, EditBatch, EditRejected, MergeConcepts, Resolve, Retract,
                         SplitChild, SplitConcept, Supersede, apply_batch, check_invariants, undo)
from graph.models import Fact, Turn
from graph.snapshot import Snapshot

U = "u1"
T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def F(i: int, kind: str = "preference", user: str = U, turns: tuple[str, ...] = ()) -> Fact:
    return Fact(fact_id=f"f{i}", user_id=user, statement=f"fact {i}", kind=kind, source_turn_ids=turns)  # type: ignore[arg-type]


def base() -> Snapshot:
    s, _ = apply_batch(Snapshot(user_id=U), EditBatch(user_id=U, edits=[
        CreateConcept(concept_id="c1", name="travel"),
        CreateConcept(concept_id="c2", name="trips", parent_id="c1"),
        CreateConcept(concept_id="c3", name="food"),
        AttachFact(fact=F(1), concept_id="c2"),
        AttachFact(fact=F(2), concept_id="c2"),
        AttachFact(fact=F(3, "constraint"), concept_id="c3"),
        AttachFact(fact=F(4, "event"), concept_id="c3"),
    ]), T0)
    return s


def test_batch_builds_tree_and_changeset() -> None:
    s = base()
    assert s.parent == {"c1": s.root_id, "c2": "c1", "c3": s.root_id}
    assert s.fact_concept == {"f1": "c2", "f2": "c2", "f3": "c3", "f4": "c3"}
    assert s.concept_path("c2") == ("memory", "travel", "trips")
    assert len(s.edits) == 7 and sorted(e.seq for e in s.edits.values()) == list(range(7))
    assert s.version == 1
    assert s.facts["f1"].recorded_at == T0  # stamped at commit time


REJECTIONS = [
    ("unknown concept", [CreateConcept(concept_id="x", name="x", parent_id="nope")], "dangling_id", ["nope"]),
    ("duplicate concept", [CreateConcept(concept_id="c1", name="x")], "duplicate_id", ["c1"]),
    ("duplicate fact", [AttachFact(fact=F(1), concept_id="c1")], "duplicate_id", ["f1"]),
    ("fact of another user", [AttachFact(fact=F(9, user="u2"), concept_id="c1")], "cross_user", ["f9"]),
    ("dangling turn", [AttachFact(fact=F(9, turns=("t9",)), concept_id="c1")], "dangling_id", ["t9"]),
    ("supersede unknown", [Supersede(new_fact_id="f1", old_fact_id="zz")], "dangling_id", ["zz"]),
    ("self supersede", [Supersede(new_fact_id="f1", old_fact_id="f1")], "self_relation", ["f1"]),
    ("incompatible kinds", [Supersede(new_fact_id="f4", old_fact_id="f1")], "incompatible_kinds", ["f4", "f1"]),
    ("supersede cycle", [Supersede(new_fact_id="f2", old_fact_id="f1"), Supersede(new_fact_id="f1", old_fact_id="f2")],
     "supersedes_cycle", None),
    ("duplicate supersede", [Supersede(new_fact_id="f2", old_fact_id="f1"), Supersede(new_fact_id="f2", old_fact_id="f1")],
     "duplicate_relation", ["f2", "f1"]),
    ("duplicate conflict reversed", [Conflict(a="f1", b="f2"), Conflict(a="f2", b="f1")], "duplicate_relation", None),
    ("resolve without conflict", [Resolve(a="f1", b="f2")], "dangling_id", ["f1", "f2"]),
    ("retract twice", [Retract(fact_id="f1"), Retract(fact_id="f1")], "already_retracted", ["f1"]),
    ("merge into itself", [MergeConcepts(source_id="c1", target_id="c1")], "invalid_merge", None),
    ("merge ancestor into descendant", [MergeConcepts(source_id="c1", target_id="c2")], "invalid_merge", None),
    ("merge into retired", [MergeConcepts(source_id="c3", target_id="c1"), MergeConcepts(source_id="c2", target_id="c3")],
     "retired_concept", ["c3"]),
    ("split foreign fact", [SplitConcept(concept_id="c2", children=(SplitChild(concept_id="k", name="k", fact_ids=("f3",)),))],
     "split_fact_not_in_concept", ["f3", "c2"]),
    ("split fact twice", [SplitConcept(concept_id="c2", children=(
        SplitChild(concept_id="k1", name="k", fact_ids=("f1",)), SplitChild(concept_id="k2", name="k", fact_ids=("f1",))))],
     "split_fact_twice", ["f1"]),
]


@pytest.mark.parametrize("name,edits,rule,ids", REJECTIONS, ids=[r[0] for r in REJECTIONS])
def test_rejections_name_rule_and_ids(name: str, edits: list, rule: str, ids: list | None) -> None:
    s = base()
    before = s.clone()
    with pytest.raises(EditRejected) as ei:
        apply_batch(s, EditBatch(user_id=U, edits=edits))
    assert ei.value.rule == rule
    if ids is not None:
        assert ei.value.ids == ids
    assert s == before  # the input snapshot is never mutated


def test_batch_for_other_user_rejected() -> None:
    with pytest.raises(EditRejected) as ei:
        apply_batch(base(), EditBatch(user_id="u2", edits=[]))
    assert ei.value.rule == "cross_user"


def test_merge_moves_facts_and_children_and_records_them() -> None:
    s = base()
    s2, cs = apply_batch(s, EditBatch(user_id=U, edits=[MergeConcepts(source_id="c1", target_id="c3")]))
    assert s2.concepts["c1"].retired_at is not None
    assert s2.parent["c2"] == "c3"  # child moved
    payload = next(e.payload for e in s2.edits.values() if e.op == "MERGE")
    assert payload["moved_children"] == ["c2"] and payload["source_id"] == "c1"
    check_invariants(s2)
    # a fact directly in the merged concept moves too
    s3, _ = apply_batch(s2, EditBatch(user_id=U, edits=[
        CreateConcept(concept_id="c4", name="x"), AttachFact(fact=F(5), concept_id="c4"),
        MergeConcepts(source_id="c4", target_id="c2")]))
    assert s3.fact_concept["f5"] == "c2"


def test_split_moves_named_facts_into_new_children() -> None:
    s2, cs = apply_batch(base(), EditBatch(user_id=U, edits=[SplitConcept(concept_id="c2", children=(
        SplitChild(concept_id="c2a", name="beach", fact_ids=("f1",)),))]))
    assert s2.fact_concept["f1"] == "c2a" and s2.fact_concept["f2"] == "c2"
    assert s2.parent["c2a"] == "c2"
    assert ("c2", "f1") in cs.contains_remove and ("c2a", "f1") in cs.contains_add


def test_resolve_and_retract() -> None:
    s2, _ = apply_batch(base(), EditBatch(user_id=U, edits=[Conflict(a="f1", b="f3"), Resolve(a="f3", b="f1", reason="ok"),
                                                            Retract(fact_id="f2")]))
    r = s2.relations[("CONFLICTS_WITH", "f1", "f3")]
    assert r.resolved_at is not None and r.reason == "ok"
    assert s2.facts["f2"].retracted_at is not None
    assert s2.facts["f2"].statement == "fact 2"  # never rewritten


def test_turns_are_added_and_cited() -> None:
    t = Turn(turn_id="t1", user_id=U, session_id="s", seq=0, role="user", text="hi")
    s2, cs = apply_batch(base(), EditBatch(user_id=U, turns=[t], edits=[AttachFact(fact=F(7, turns=("t1",)), concept_id="c1")]))
    assert cs.turns_create == [t] and cs.derived_from_add == [("f7", "t1")]
    with pytest.raises(EditRejected, match="turn belongs"):
        apply_batch(base(), EditBatch(user_id=U, turns=[t.model_copy(update={"user_id": "u2"})]))


UNDO_CASES = [
    [CreateConcept(concept_id="c9", name="new")],
    [MergeConcepts(source_id="c1", target_id="c3")],
    [SplitConcept(concept_id="c2", children=(SplitChild(concept_id="k", name="k", fact_ids=("f1", "f2")),))],
    [AttachFact(fact=F(8), concept_id="c1")],
    [Supersede(new_fact_id="f2", old_fact_id="f1")],
    [Conflict(a="f1", b="f3")],
    [Retract(fact_id="f1")],
]


@pytest.mark.parametrize("edits", UNDO_CASES, ids=lambda e: e[0].op)
def test_undo_restores_previous_ontology(edits: list) -> None:
    s = base()
    s2, _ = apply_batch(s, EditBatch(user_id=U, edits=edits))
    last = max(s2.edits.values(), key=lambda e: e.seq)
    s3, _ = undo(s2, last.edit_id)
    for attr in ("concepts", "parent", "fact_concept", "facts", "relations", "turn_ids"):
        assert getattr(s3, attr) == getattr(s, attr), attr
    assert s3.edits[last.edit_id].undone_at is not None
    assert any(e.op == "UNDO" for e in s3.edits.values())


def test_undo_resolve_and_order_rules() -> None:
    s, _ = apply_batch(base(), EditBatch(user_id=U, edits=[Conflict(a="f1", b="f3", reason="r0")]))
    s2, _ = apply_batch(s, EditBatch(user_id=U, edits=[Resolve(a="f1", b="f3", reason="r1")]))
    first = next(e for e in s2.edits.values() if e.op == "CONFLICT")
    with pytest.raises(EditRejected) as ei:
        undo(s2, first.edit_id)
    assert ei.value.rule == "undo_not_last"
    last = max(s2.edits.values(), key=lambda e: e.seq)
    s3, _ = undo(s2, last.edit_id)
    assert s3.relations[("CONFLICTS_WITH", "f1", "f3")].resolved_at is None
    assert s3.relations[("CONFLICTS_WITH", "f1", "f3")].reason == "r0"
    with pytest.raises(EditRejected) as ei:
        undo(s3, last.edit_id)
    assert ei.value.rule == "already_undone"
    # the undo stack continues downward
    s4, _ = undo(s3, first.edit_id)
    assert ("CONFLICTS_WITH", "f1", "f3") not in s4.relations


def test_undo_create_refused_when_concept_in_use() -> None:
    s, _ = apply_batch(base(), EditBatch(user_id=U, edits=[CreateConcept(concept_id="c9", name="n")]))
    s2, _ = apply_batch(s, EditBatch(user_id=U, edits=[AttachFact(fact=F(9), concept_id="c9")]))
    # undo ATTACH first, then CREATE works
    attach = max(s2.edits.values(), key=lambda e: e.seq)
    s3, _ = undo(s2, attach.edit_id)
    create = next(e for e in s3.edits.values() if e.op == "CREATE" and e.payload["concept_id"] == "c9")
    s4, _ = undo(s3, create.edit_id)
    assert "c9" not in s4.concepts
