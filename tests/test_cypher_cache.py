"""The sandbox reads a user's snapshot only when the user's version token moved (issue 45).

A query of an unchanged user costs one token read, not a snapshot load that grows with the history;
a commit, an undo, a purge or a replace between two queries is seen by the second; one user's cached
copy never answers another user's query. On both backends.
"""

from __future__ import annotations

from typing import Any

from cypher_attack import USERS, canary, seed_two_users
from graph.cypher.sandbox import sandbox_for
from graph.models import Fact, Turn
from graph.snapshot import ChangeSet

FACTS = "MATCH (f:Fact) RETURN f.statement AS s ORDER BY s"


def _statements(store: Any, user: str) -> list[str]:
    return [r["s"] for r in store.run_readonly_cypher(user, FACTS)]


def _add_fact(store: Any, user: str, text: str) -> None:
    v = store.load_snapshot(user).version
    turn = Turn(turn_id=f"t:{text}", user_id=user, session_id="s2", seq=0, role="user", text=text)
    fact = Fact(fact_id=f"{user}::f::{text}", user_id=user, statement=text, source_turn_ids=(turn.turn_id,),
                session_id="s2")
    store.commit(ChangeSet(user_id=user, expected_version=v, new_version=v + 1, facts_create=[fact],
                           turns_create=[turn], derived_from_add=[(fact.fact_id, turn.turn_id)],
                           contains_add=[(f"{user}::c::kid", fact.fact_id)], embeddings={fact.fact_id: [0.5] * 16}))


def test_repeated_queries_read_no_snapshot(store: Any) -> None:
    seed_two_users(store)
    sb = sandbox_for(store)
    first = _statements(store, "maya")
    loads = sb.snapshot_loads
    for _ in range(5):
        assert _statements(store, "maya") == first
    assert sb.snapshot_loads == loads  # five queries, no snapshot read: the token did not move
    assert len(first) == 2 and all(canary("maya") in s for s in first)


def test_a_write_between_two_queries_is_seen(store: Any) -> None:
    seed_two_users(store)
    sb = sandbox_for(store)
    assert len(_statements(store, "maya")) == 2
    loads = sb.snapshot_loads
    _add_fact(store, "maya", "zqnew moved to lisbon")
    assert "zqnew moved to lisbon" in _statements(store, "maya")
    assert sb.snapshot_loads == loads + 1
    # leo's copy is untouched by maya's write, and maya's new fact never reaches leo
    assert all("zqnew" not in s and canary("leo") in s for s in _statements(store, "leo"))


def test_undo_purge_and_replace_are_seen(store: Any, embedder: Any) -> None:
    from graph.edits import AttachFact, CreateConcept, EditBatch
    from memcore.memory import Memory

    mem = Memory(store, embedder)
    u = "ana"
    mem.apply(EditBatch(user_id=u, session_id="s1", edits=[CreateConcept(concept_id=f"{u}:c", name="home")]))
    f = Fact(fact_id=f"{u}:f1", user_id=u, statement="zqana lives in porto")
    _, cs = mem.apply(EditBatch(user_id=u, session_id="s2", edits=[AttachFact(fact=f, concept_id=f"{u}:c")]))
    assert _statements(store, u) == ["zqana lives in porto"]
    last = max(store.load_snapshot(u).edits.values(), key=lambda e: e.seq)
    mem.undo(u, last.edit_id)
    assert _statements(store, u) == []  # the undone attach is gone from the copy
    store.purge_user(u)
    assert _statements(store, u) == [] and store.run_readonly_cypher(u, "MATCH (c:Concept) RETURN c.name AS n") == []
    # replace_user: the same version number as before, other content
    g = Fact(fact_id=f"{u}:f2", user_id=u, statement="zqana lives in braga")
    mem.apply(EditBatch(user_id=u, session_id="s1", edits=[CreateConcept(concept_id=f"{u}:c", name="home")]))
    mem.apply(EditBatch(user_id=u, session_id="s2", edits=[AttachFact(fact=g, concept_id=f"{u}:c")]))
    assert _statements(store, u) == ["zqana lives in braga"]
    snap = store.load_snapshot(u)
    swapped = snap.facts[g.fact_id].model_copy(update={"statement": "zqana lives in faro"})
    store.replace_user(ChangeSet(user_id=u, expected_version=0, new_version=snap.version,
                                 concepts_upsert=list(snap.concepts.values()),
                                 parent_add=list((p, c) for c, p in snap.parent.items()),
                                 contains_add=[(f"{u}:c", g.fact_id)], facts_create=[swapped]))
    assert _statements(store, u) == ["zqana lives in faro"]


def test_one_users_copy_never_answers_another(store: Any) -> None:
    seed_two_users(store)
    for _ in range(2):  # the second round is served from the cache
        for u in USERS:
            other = canary(USERS[1 - USERS.index(u)])
            rows = _statements(store, u)
            assert rows and all(canary(u) in s and other not in s for s in rows)
    # a user unknown to the store gets an empty answer, not a cached copy of anyone
    assert _statements(store, "nobody") == []
