"""ChangeSet.edits_new: the edit-log rows a commit adds, which the Neo4j store CREATEs instead of MERGEs
(issue 45, bulk load). Only new ids are in it (an undo's updated edit is an upsert), and a new edit with
another user's id is still refused on both backends, nothing written."""

from __future__ import annotations

from typing import Any

import pytest
from test_tenancy import T0, attach, commit, seed, state

from graph.edits import CreateConcept, EditBatch, EditRejected, apply_batch, undo
from graph.models import Edit
from graph.neo4j.rows import write_rows
from graph.snapshot import ChangeSet, Snapshot


def test_edits_new_holds_only_the_ids_the_snapshot_lacked() -> None:
    batch = EditBatch(user_id="ann", edits=[CreateConcept(concept_id="ann::c::a", name="a"),
                                            attach("ann", "ann::f::1", "ann::c::a", "Likes tea")])
    snap, cs = apply_batch(Snapshot(user_id="ann"), batch, T0)
    assert cs.edits_new == {e.edit_id for e in cs.edits_upsert} and len(cs.edits_new) == 2
    rows = write_rows(cs)
    assert len(rows["edits_create"]) == 2 and rows["edits"] == []
    snap.version = cs.new_version
    target = next(e for e in snap.edits.values() if e.op == "ATTACH").edit_id
    _, cs2 = undo(snap, target, T0)
    changed = {e.edit_id for e in cs2.edits_upsert}
    assert target in changed and target not in cs2.edits_new  # the undone edit is updated, not created
    assert len(cs2.edits_new) == 1  # the UNDO entry itself
    rows2 = write_rows(cs2)
    assert {r["edit_id"] for r in rows2["edits_create"]} == cs2.edits_new
    assert {r["edit_id"] for r in rows2["edits"]} == changed - cs2.edits_new


def test_undo_after_created_edits_round_trips(store: Any) -> None:
    commit(store, EditBatch(user_id="ann", edits=[CreateConcept(concept_id="ann::c::a", name="a"),
                                                  attach("ann", "ann::f::1", "ann::c::a", "Likes tea")]))
    snap = store.load_snapshot("ann")
    target = next(e for e in snap.edits.values() if e.op == "ATTACH").edit_id
    after, cs = undo(snap, target, T0)
    store.commit(cs)
    again = store.load_snapshot("ann")
    assert again.edits == after.edits and again.edits[target].undone_at is not None
    assert "ann::f::1" not in again.facts


def test_a_new_edit_with_another_users_id_is_refused(store: Any) -> None:
    seed(store)
    leo_id = next(iter(store.load_snapshot("leo").edits))
    before = {u: state(store, u) for u in ("leo", "maya")}
    v = before["maya"]["version"]
    cs = ChangeSet(user_id="maya", expected_version=v, new_version=v + 1,
                   edits_upsert=[Edit(edit_id=leo_id, user_id="maya", seq=99, op="CREATE", at=T0)], edits_new={leo_id})
    with pytest.raises(EditRejected) as info:
        store.commit(cs)
    assert info.value.rule == "id_taken" and leo_id not in str(info.value)
    assert {u: state(store, u) for u in ("leo", "maya")} == before
