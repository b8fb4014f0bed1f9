"""Tenant isolation of ids (issue 10, item 4) and the user-id pattern, on both backends.

Concept, fact and edit ids are global keys in both stores. A user may not create or name an id in
another owner's namespace ('leo::…'), and the store refuses, inside the commit transaction, an id
that another user already holds. Every refusal leaves both users' data unchanged, and no message
names the other user.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from graph.edits import (AttachFact, Conflict, CreateConcept, EditBatch, EditRejected, MergeConcepts, Resolve,
                         Retract, SplitChild, SplitConcept, Supersede, apply_batch)
from graph.ids import USER_ID_PATTERN, InvalidUserId, id_owner, validate_user_id
from graph.models import Concept, Edit, Fact
from graph.serialize import session_key, turn_key
from graph.snapshot import ChangeSet
from llmclients.embeddings import HashEmbedder

EMB = HashEmbedder(16)
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)


def attach(user: str, fid: str, concept: str, text: str) -> AttachFact:
    f = Fact(fact_id=fid, user_id=user, statement=text, kind="preference", observed_at=T0)
    return AttachFact(fact=f, concept_id=concept, embedding=tuple(float(x) for x in EMB.embed([text])[0]))


def commit(store: Any, batch: EditBatch) -> None:
    _, cs = apply_batch(store.load_snapshot(batch.user_id), batch, T0)
    store.commit(cs)


def seed(store: Any) -> None:
    """leo: namespaced ids (as induction makes them) and plain client-chosen ids; maya: her own."""
    commit(store, EditBatch(user_id="leo", edits=[
        CreateConcept(concept_id="leo::c::food", name="food"),
        CreateConcept(concept_id="c-private", name="private"),
        attach("leo", "leo::f::tea", "leo::c::food", "Drinks green tea every morning"),
        attach("leo", "leo::f::coffee", "leo::c::food", "Drinks coffee after lunch"),
        attach("leo", "f-private", "c-private", "Keeps a secret diary"),
        Conflict(a="leo::f::tea", b="leo::f::coffee"),
    ]))
    commit(store, EditBatch(user_id="maya", edits=[
        CreateConcept(concept_id="maya::c::travel", name="travel"),
        CreateConcept(concept_id="maya::c::misc", name="misc"),
        attach("maya", "maya::f::beach", "maya::c::travel", "Prefers beach trips"),
        attach("maya", "maya::f::hike", "maya::c::travel", "Enjoys hiking"),
    ]))


def state(store: Any, user: str) -> dict[str, Any]:
    s = store.load_snapshot(user)
    return {"version": s.version, "concepts": s.concepts, "parent": s.parent, "fact_concept": s.fact_concept,
            "facts": s.facts, "relations": s.relations, "edits": s.edits, "counts": store.counts(user)}


NEW = attach("maya", "maya::f::new", "maya::c::travel", "Likes sailing")
# (case, maya's edits, rule). 'X' stands for an id of leo's; the same edits with X replaced by an id
# nobody holds must give the same answer wherever the answer does not depend on leo's data.
CASES: list[tuple[str, str, list[Any], str]] = [
    # ids in leo's namespace: refused before any lookup, identical for real and made-up ids
    ("create", "leo::c::food", [CreateConcept(concept_id="X", name="drinks")], "foreign_namespace"),
    ("create-under", "leo::c::food", [CreateConcept(concept_id="maya::c::x", name="x", parent_id="X")],
     "foreign_namespace"),
    ("attach-id", "leo::f::tea", [attach("maya", "X", "maya::c::travel", "Likes tea")], "foreign_namespace"),
    ("attach-into", "leo::c::food", [attach("maya", "maya::f::t", "X", "Likes tea")], "foreign_namespace"),
    ("merge-src", "leo::c::food", [MergeConcepts(source_id="X", target_id="maya::c::travel")], "foreign_namespace"),
    ("merge-dst", "leo::c::food", [MergeConcepts(source_id="maya::c::misc", target_id="X")], "foreign_namespace"),
    ("split", "leo::c::food", [SplitConcept(concept_id="X", children=(
        SplitChild(concept_id="maya::c::s", name="s", fact_ids=("leo::f::tea",)),))], "foreign_namespace"),
    ("split-child", "leo::c::food/x", [SplitConcept(concept_id="maya::c::travel", children=(
        SplitChild(concept_id="X", name="s", fact_ids=("maya::f::beach",)),))], "foreign_namespace"),
    ("supersede", "leo::f::tea", [NEW, Supersede(new_fact_id="maya::f::new", old_fact_id="X")], "foreign_namespace"),
    ("conflict", "leo::f::tea", [NEW, Conflict(a="maya::f::new", b="X")], "foreign_namespace"),
    ("resolve", "leo::f::tea", [Resolve(a="X", b="leo::f::coffee")], "foreign_namespace"),
    ("retract", "leo::f::tea", [Retract(fact_id="X")], "foreign_namespace"),
    # plain ids leo holds: creating one is refused by the store; naming one is the unknown-id answer
    ("create-plain", "c-private", [CreateConcept(concept_id="X", name="private")], "id_taken"),
    ("split-child-plain", "c-private", [SplitConcept(concept_id="maya::c::travel", children=(
        SplitChild(concept_id="X", name="s", fact_ids=("maya::f::beach",)),))], "id_taken"),
    ("attach-plain", "f-private", [attach("maya", "X", "maya::c::travel", "Keeps a diary")], "id_taken"),
    ("attach-into-plain", "c-private", [attach("maya", "maya::f::d", "X", "Keeps a diary")], "dangling_id"),
    ("merge-plain", "c-private", [MergeConcepts(source_id="X", target_id="maya::c::travel")], "dangling_id"),
    ("split-plain", "c-private", [SplitConcept(concept_id="X", children=(
        SplitChild(concept_id="maya::c::s", name="s", fact_ids=("f-private",)),))], "dangling_id"),
    ("supersede-plain", "f-private", [NEW, Supersede(new_fact_id="maya::f::new", old_fact_id="X")], "dangling_id"),
    ("conflict-plain", "f-private", [NEW, Conflict(a="maya::f::new", b="X")], "dangling_id"),
    ("retract-plain", "f-private", [Retract(fact_id="X")], "dangling_id"),
]


def _with_id(edits: list[Any], x: str) -> list[Any]:
    """The edits with every 'X' (at any depth) replaced by ``x``."""
    def sub(v: Any) -> Any:
        if v == "X":
            return x
        if isinstance(v, tuple):
            return tuple(sub(i) for i in v)
        if hasattr(v, "model_copy"):
            return v.model_copy(update={k: sub(getattr(v, k)) for k in type(v).model_fields})
        return v
    return [sub(e) for e in edits]


def _refusal(store: Any, edits: list[Any]) -> EditRejected:
    with pytest.raises(EditRejected) as info:
        commit(store, EditBatch(user_id="maya", edits=edits))
    return info.value


@pytest.mark.parametrize("case,leo_id,edits,rule", CASES, ids=[c[0] for c in CASES])
def test_cross_user_ids_are_refused(store: Any, case: str, leo_id: str, edits: list[Any], rule: str) -> None:
    seed(store)
    before = {u: state(store, u) for u in ("leo", "maya")}
    err = _refusal(store, _with_id(edits, leo_id))
    assert err.rule == rule, str(err)
    assert "leo" not in str(err), str(err)
    if rule != "dangling_id":  # the unknown-id answer echoes the id the client sent; the others do not
        assert leo_id not in str(err), str(err)
    if rule != "id_taken":  # the answer does not depend on whether leo holds the id
        made_up = leo_id.replace("private", "nobody").replace("tea", "nothing")
        assert str(_refusal(store, _with_id(edits, made_up))) == str(err).replace(leo_id, made_up)
    assert {u: state(store, u) for u in ("leo", "maya")} == before
    # leo's memory still works: the reported attack made every later ingest of leo fail
    commit(store, EditBatch(user_id="leo", edits=[attach("leo", "leo::f::later", "leo::c::food", "Likes soup")]))
    commit(store, EditBatch(user_id="leo", edits=[attach("leo", "f-later", "c-private", "Likes jazz")]))


def _claim(user: str, version: int, label: str, item_id: str) -> ChangeSet:
    cs = ChangeSet(user_id=user, expected_version=version, new_version=version + 1)
    if label == "Concept":
        cs.concepts_upsert.append(Concept(concept_id=item_id, user_id=user, name="stolen", created_at=T0))
        cs.parent_add.append((f"{user}::root", item_id))
    elif label == "Fact":
        cs.facts_create.append(Fact(fact_id=item_id, user_id=user, statement="stolen", observed_at=T0))
    else:
        cs.edits_upsert.append(Edit(edit_id=item_id, user_id=user, seq=99, op="CREATE", at=T0))
    return cs


@pytest.mark.parametrize("label,leo_id", [("Concept", "leo::c::food"), ("Concept", "c-private"),
                                          ("Fact", "leo::f::tea"), ("Fact", "f-private"), ("Edit", None)])
def test_store_refuses_a_commit_that_takes_another_users_id(store: Any, label: str, leo_id: str | None) -> None:
    """The store enforces it on its own: a ChangeSet that skipped graph/edits.py (or raced it)."""
    seed(store)
    leo_id = leo_id or next(iter(store.load_snapshot("leo").edits))
    before = {u: state(store, u) for u in ("leo", "maya")}
    with pytest.raises(EditRejected) as info:
        store.commit(_claim("maya", before["maya"]["version"], label, leo_id))
    assert info.value.rule == "id_taken" and "leo" not in str(info.value) and leo_id not in str(info.value)
    assert {u: state(store, u) for u in ("leo", "maya")} == before


def test_racing_users_never_share_an_id(store: Any) -> None:
    """Two users create the same new plain concept id at once, 8 rounds: one wins, the other is refused
    with id_taken, and the concept belongs to the winner only."""
    for u in ("ann", "bob"):
        commit(store, EditBatch(user_id=u, edits=[CreateConcept(concept_id=f"{u}::c::home", name="home")]))
    for r in range(8):
        cid, results = f"shared-{r}", {}
        barrier = threading.Barrier(2)

        def go(u: str) -> None:
            batch = EditBatch(user_id=u, edits=[CreateConcept(concept_id=cid, name=u),
                                                attach(u, f"{u}-f{r}", cid, f"{u} fact {r}")])
            _, cs = apply_batch(store.load_snapshot(u), batch, T0)
            barrier.wait()
            try:
                store.commit(cs)
                results[u] = "ok"
            except EditRejected as e:
                results[u] = e.rule

        threads = [threading.Thread(target=go, args=(u,)) for u in ("ann", "bob")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(results.values()) == ["id_taken", "ok"], results
        winner = next(u for u, v in results.items() if v == "ok")
        loser = "bob" if winner == "ann" else "ann"
        w, lo = store.load_snapshot(winner), store.load_snapshot(loser)
        assert w.concepts[cid].user_id == winner and w.fact_concept[f"{winner}-f{r}"] == cid
        assert cid not in lo.concepts and f"{loser}-f{r}" not in lo.facts


# -- the user-id pattern --
VALID = ["maya", "a", "7", "Maya.K@example-1_x", "x" * 128, "conv-26", "personamem-0123456789abcdef"]
INVALID = ["", ".", "..", "a..b", "a%00b", "a\x00b", "a/b", "a:b", "leo::x", " a", "a b", "a\n", "-a", ".a", "_a",
           "x" * 129, "x" * 5000, "é", "a\\b", "a*b", None, 5]


@pytest.mark.parametrize("user_id", VALID)
def test_valid_user_ids(user_id: str) -> None:
    assert validate_user_id(user_id) == user_id
    assert EditBatch(user_id=user_id).user_id == user_id


@pytest.mark.parametrize("user_id", INVALID, ids=[repr(u)[:20] for u in INVALID])
def test_invalid_user_ids_are_refused(user_id: Any) -> None:
    with pytest.raises(InvalidUserId) as info:
        validate_user_id(user_id)
    assert str(info.value).startswith("invalid user id") and len(str(info.value)) < 120  # never echoes a huge id
    with pytest.raises(ValidationError):
        EditBatch(user_id=user_id)


USER_IDS = st.from_regex(USER_ID_PATTERN, fullmatch=True).filter(lambda u: ".." not in u)


@settings(max_examples=300, deadline=None)
@given(USER_IDS, USER_IDS, st.text(max_size=12), st.text(max_size=12))
def test_per_user_keys_never_collide(u1: str, u2: str, x: str, y: str) -> None:
    """With valid user ids, the stored turn/session keys and '{user}::…' ids of two users differ
    whatever ids the clients choose (a '/' or ':' in a user id is what could make them meet)."""
    if u1 == u2:
        return
    assert turn_key(u1, x) != turn_key(u2, y) and session_key(u1, x) != session_key(u2, y)
    assert id_owner(f"{u1}::f::{x}") == u1 != id_owner(f"{u2}::f::{y}")


def test_stores_refuse_invalid_user_ids(store: Any) -> None:
    """Writes check the pattern at the store too (a ChangeSet built without an EditBatch)."""
    for bad in ("a%00b", "..", "x" * 5000, "a/b"):
        with pytest.raises(InvalidUserId):
            store.commit(ChangeSet(user_id=bad, expected_version=0, new_version=1,
                                   concepts_upsert=[Concept(concept_id="c", user_id=bad, name="n")]))
    assert store.users() == []
