"""The GraphStore contract, run unchanged against both backends (the ``store`` fixture)."""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Any

import pytest

from graph.edits import (AttachFact, Conflict, CreateConcept, EditBatch, EditRejected, MergeConcepts, Retract,
                         SplitChild, SplitConcept, Supersede, apply_batch, undo)
from graph.models import Fact, Turn
from retrieval.render import render_context
from retrieval.retrieve import RetrievalConfig, retrieve
from graph.store import ConcurrentModification, ReadOnlyViolation, StoreError
from graph.cypher.errors import CypherRefused
from llmclients.embeddings import HashEmbedder

EMB = HashEmbedder(16)
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)


def fact(user: str, key: str, text: str, kind: str = "preference", **kw: Any) -> Fact:
    return Fact(fact_id=f"{user}:{key}", user_id=user, statement=text, kind=kind, observed_at=T0, **kw)


def attach(f: Fact, concept: str) -> AttachFact:
    return AttachFact(fact=f, concept_id=concept, embedding=tuple(float(x) for x in EMB.embed([f.statement])[0]))


def commit(store: Any, batch: EditBatch) -> None:
    _, cs = apply_batch(store.load_snapshot(batch.user_id), batch, T0)
    store.commit(cs)


def vacation_user(store: Any, u: str = "maya") -> None:
    turns = [Turn(turn_id=f"{u}-t{i}", user_id=u, session_id="s1", seq=i, role="user", text=t, at=T0)
             for i, t in enumerate(["I enjoy hiking", "I now prefer beach trips", "I hurt my knee"])]
    commit(store, EditBatch(user_id=u, session_id="s1", session_hash="h1", turns=turns, edits=[
        CreateConcept(concept_id=f"{u}:travel", name="travel"),
        CreateConcept(concept_id=f"{u}:health", name="health"),
        attach(fact(u, "hiking", "Enjoys hiking trips in the mountains", source_turn_ids=(f"{u}-t0",)), f"{u}:travel"),
        attach(fact(u, "beach", "Prefers beach trips for holidays", source_turn_ids=(f"{u}-t1",)), f"{u}:travel"),
        attach(fact(u, "knee", "Has a knee injury, no strenuous activity", "constraint", source_turn_ids=(f"{u}-t2",)), f"{u}:health"),
        attach(fact(u, "sushi", "Loves sushi restaurants"), f"{u}:travel"),
        Supersede(new_fact_id=f"{u}:beach", old_fact_id=f"{u}:hiking", reason="now prefers beach"),
    ]))


def dump(store: Any, user: str) -> dict[str, Any]:
    """Everything observable about a user, for byte-for-byte comparisons."""
    s = store.load_snapshot(user)
    return {"version": s.version, "concepts": s.concepts, "parent": s.parent, "fact_concept": s.fact_concept,
            "facts": s.facts, "relations": s.relations, "edits": s.edits, "turns": s.turn_ids, "sessions": s.sessions,
            "counts": store.counts(user), "all_counts": store.counts()}


def test_roundtrip_snapshot(store: Any) -> None:
    vacation_user(store)
    s = store.load_snapshot("maya")
    assert s.version == 1 and len(s.facts) == 4 and len(s.edits) == 7
    assert s.facts["maya:knee"].kind == "constraint"
    assert s.facts["maya:hiking"].observed_at == T0
    assert s.facts["maya:hiking"].source_turn_ids == ("maya-t0",)
    assert s.sessions == {"s1": "h1"}
    assert s.turn_ids == {"maya-t0", "maya-t1", "maya-t2"}
    assert store.counts("maya")["DERIVED_FROM"] == 3
    assert [t.text for t in store.turns("maya", ["maya-t1"])] == ["I now prefer beach trips"]
    assert store.users() == ["maya"]


def test_facts_without_vectors_commit_and_stay_out_of_vector_search(store: Any) -> None:
    """A batch whose facts have no embedding (a direct store caller) commits on both backends; mixed with
    embedded facts, only those are found by vector search and both are in the snapshot."""
    bare = AttachFact(fact=fact("zoe", "bare", "Keeps bees"), concept_id="zoe:c")
    commit(store, EditBatch(user_id="zoe", edits=[CreateConcept(concept_id="zoe:c", name="c"), bare]))
    assert set(store.load_snapshot("zoe").facts) == {"zoe:bare"}
    assert store.vector_search("zoe", EMB.embed(["Keeps bees"])[0], 5) == []
    commit(store, EditBatch(user_id="zoe", edits=[
        attach(fact("zoe", "tea", "Drinks green tea"), "zoe:c"),
        AttachFact(fact=fact("zoe", "bare2", "Plays chess"), concept_id="zoe:c")]))
    assert set(store.load_snapshot("zoe").facts) == {"zoe:bare", "zoe:tea", "zoe:bare2"}
    assert [fid for fid, _ in store.vector_search("zoe", EMB.embed(["Drinks green tea"])[0], 5)] == ["zoe:tea"]


def test_retrieval_pairs_update_with_its_counterpart(store: Any) -> None:
    vacation_user(store)
    q = "beach holidays"
    b = retrieve(store, "maya", q, EMB.embed([q])[0].tolist(), RetrievalConfig(k=1, dense_candidates=1, text_candidates=1))
    ids = [i.fact.fact_id for i in b.items]
    assert b.explain.seeds[0].fact_id == "maya:beach"
    assert set(ids) == {"maya:beach", "maya:hiking"}  # the superseded version travels with its update
    assert b.explain.added_by_traversal == ["maya:hiking"]
    states = {i.fact.fact_id: i.state for i in b.items}
    assert states["maya:hiking"].validity == "superseded" and states["maya:beach"].validity == "current"
    assert states["maya:beach"].concept_path == ("memory", "travel")
    # ablation: without traversal only the seed comes back
    b2 = retrieve(store, "maya", q, EMB.embed([q])[0].tolist(),
                  RetrievalConfig(k=1, dense_candidates=1, text_candidates=1, traverse=False))
    assert [i.fact.fact_id for i in b2.items] == ["maya:beach"]


def test_an_update_arrives_with_its_whole_turn(store: Any) -> None:
    """A change said over two sentences: the update's turn-mate comes with it (and the turn-mate of a fact
    that updates nothing does not), on the store path and on the route-index path alike."""
    from retrieval.seeds.index import RouteIndexCache

    vacation_user(store)
    u = "maya"
    commit(store, EditBatch(user_id=u, edits=[
        attach(fact(u, "sea", "Finds the sea calmer than any trail", source_turn_ids=(f"{u}-t1",)), f"{u}:travel"),
        attach(fact(u, "rest", "Was told to rest for a month", "circumstance", source_turn_ids=(f"{u}-t2",)), f"{u}:health"),
    ]))
    assert store.turn_facts(u, [f"{u}-t1"]) == [f"{u}:beach", f"{u}:sea"]
    assert store.turn_facts(u, []) == [] and store.turn_facts("nobody", [f"{u}-t1"]) == []
    q = "hiking trips in the mountains"
    qv = EMB.embed([q])[0].tolist()
    # one seed and no turn window, so every other fact in the bundle came by traversal or the update's turn
    cfg = RetrievalConfig(k=1, dense_candidates=1, text_candidates=1, route_candidates=1, routes=("fact_dense",))
    cache = RouteIndexCache(lambda texts: EMB.embed(texts))
    for index in (None, cache.get(store, u)):
        b = retrieve(store, u, q, qv, cfg, index=index)
        assert b.explain.seeds[0].fact_id == f"{u}:hiking"
        assert {i.fact.fact_id for i in b.items} == {f"{u}:hiking", f"{u}:beach", f"{u}:sea"}
        assert b.explain.added_by_update_turn == [f"{u}:sea"]
        assert {i.fact.fact_id: i.state.validity for i in b.items}[f"{u}:sea"] == "current"
        off = retrieve(store, u, q, qv, cfg.model_copy(update={"update_turns": False}), index=index)
        assert {i.fact.fact_id for i in off.items} == {f"{u}:hiking", f"{u}:beach"}
        hidden = retrieve(store, u, q, qv, cfg, index=index, allowed_ids=frozenset({f"{u}:hiking", f"{u}:beach"}))
        assert {i.fact.fact_id for i in hidden.items} == {f"{u}:hiking", f"{u}:beach"}
    knee = retrieve(store, u, "knee injury", EMB.embed(["knee injury"])[0].tolist(), cfg)
    assert f"{u}:rest" not in {i.fact.fact_id for i in knee.items}  # an injury replaces nothing


def test_retrieval_restricted_to_allowed_ids(store: Any) -> None:
    """Time travel: with ``allowed_ids`` the update made later is invisible to seeds, traversal and
    the state of the fact it replaced (which is then current again)."""
    vacation_user(store)
    q = "beach holidays hiking trips"
    allowed = frozenset({"maya:hiking", "maya:knee", "maya:sushi"})
    b = retrieve(store, "maya", q, EMB.embed([q])[0].tolist(), RetrievalConfig(k=4), allowed_ids=allowed)
    ids = {i.fact.fact_id for i in b.items}
    assert ids and ids <= allowed and "maya:hiking" in ids
    assert {i.fact.fact_id: i.state for i in b.items}["maya:hiking"].validity == "current"
    full = retrieve(store, "maya", q, EMB.embed([q])[0].tolist(), RetrievalConfig(k=4))
    assert {i.fact.fact_id: i.state for i in full.items}["maya:hiking"].validity == "superseded"


def test_renderer_keeps_pairs_whole(store: Any) -> None:
    vacation_user(store)
    q = "beach holidays hiking"
    b = retrieve(store, "maya", q, EMB.embed([q])[0].tolist(), RetrievalConfig(k=4))
    full = render_context(b)
    assert "[superseded by " in full.text  # compact: one marker for the pair, on the replaced fact
    verbose = render_context(b, style="full")
    assert "replaced by" in verbose.text and "replaces" in verbose.text
    pair_cost = sum(len(line.split()) for line in full.text.splitlines() if "hiking" in line.lower() or "beach" in line.lower())
    for budget in range(1, full.tokens + 1):
        ctx = render_context(b, budget)
        assert ctx.tokens <= budget
        seen = set(ctx.included) | set(ctx.referenced)  # a history partner is named by the group's marker
        assert ("maya:beach" in seen) == ("maya:hiking" in seen)
    assert render_context(b, pair_cost).tokens <= pair_cost


def test_atomic_rejection_leaves_store_unchanged(store: Any) -> None:
    vacation_user(store)
    vacation_user(store, "other")
    before = dump(store, "maya")
    bad = EditBatch(user_id="maya", edits=[
        CreateConcept(concept_id="maya:new", name="new"),
        attach(fact("maya", "x", "A new fact"), "maya:new"),
        Supersede(new_fact_id="maya:x", old_fact_id="maya:knee"),  # preference cannot supersede? it can: constraint ok
        Supersede(new_fact_id="maya:hiking", old_fact_id="maya:beach"),  # closes a cycle: invalid last edit
    ])
    with pytest.raises(EditRejected) as ei:
        commit(store, bad)
    assert ei.value.rule == "supersedes_cycle"
    assert dump(store, "maya") == before


def test_failed_commit_rolls_back(store: Any) -> None:
    """A ChangeSet that fails inside the transaction (id taken by another user) leaves nothing behind."""
    vacation_user(store, "alice")
    vacation_user(store, "bob")
    before = dump(store, "bob")
    # bob's batch reuses alice's fact id: invisible to bob's snapshot, caught by the store's uniqueness
    clash = EditBatch(user_id="bob", edits=[CreateConcept(concept_id="bob:c9", name="c9"),
                                            attach(fact("bob", "zz", "zz").model_copy(update={"fact_id": "alice:knee"}), "bob:c9")])
    with pytest.raises(Exception):
        commit(store, clash)
    assert dump(store, "bob") == before
    assert store.load_snapshot("alice").facts["alice:knee"].user_id == "alice"


def test_version_conflict_is_detected(store: Any) -> None:
    vacation_user(store)
    snap = store.load_snapshot("maya")
    _, cs1 = apply_batch(snap, EditBatch(user_id="maya", edits=[Retract(fact_id="maya:sushi")]))
    _, cs2 = apply_batch(snap, EditBatch(user_id="maya", edits=[Conflict(a="maya:sushi", b="maya:beach")]))
    store.commit(cs1)
    with pytest.raises(ConcurrentModification):
        store.commit(cs2)
    s = store.load_snapshot("maya")
    assert ("CONFLICTS_WITH", "maya:sushi", "maya:beach") not in s.relations and s.version == 2


def test_concurrent_writers_serialize(store: Any) -> None:
    vacation_user(store)
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        for _ in range(20):
            try:
                commit(store, EditBatch(user_id="maya", edits=[
                    CreateConcept(concept_id=f"maya:w{i}", name=f"w{i}"),
                    attach(fact("maya", f"w{i}", f"writer {i} fact"), f"maya:w{i}")]))
                return
            except ConcurrentModification:
                continue
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)
                return

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    s = store.load_snapshot("maya")
    assert {f"maya:w{i}" for i in range(4)} <= set(s.facts)
    assert s.version == 5 and len({e.seq for e in s.edits.values()}) == len(s.edits)


def test_merge_split_undo_persist(store: Any) -> None:
    vacation_user(store)
    commit(store, EditBatch(user_id="maya", edits=[MergeConcepts(source_id="maya:health", target_id="maya:travel")]))
    s = store.load_snapshot("maya")
    assert s.fact_concept["maya:knee"] == "maya:travel" and s.concepts["maya:health"].retired_at is not None
    commit(store, EditBatch(user_id="maya", edits=[SplitConcept(concept_id="maya:travel", children=(
        SplitChild(concept_id="maya:beachy", name="beach", fact_ids=("maya:beach", "maya:hiking")),))]))
    s = store.load_snapshot("maya")
    assert s.fact_concept["maya:beach"] == "maya:beachy" and s.parent["maya:beachy"] == "maya:travel"
    for _ in range(2):
        s = store.load_snapshot("maya")
        last = max((e for e in s.edits.values() if e.op != "UNDO" and e.undone_at is None), key=lambda e: e.seq)
        _, cs = undo(s, last.edit_id)
        store.commit(cs)
    s = store.load_snapshot("maya")
    assert s.fact_concept["maya:knee"] == "maya:health" and s.concepts["maya:health"].retired_at is None
    assert "maya:beachy" not in s.concepts
    assert [e.op for e in sorted(store.edits("maya"), key=lambda e: e.seq)][-2:] == ["UNDO", "UNDO"]


NEAR_TWINS = [("alice", "Prefers window seats on long flights"), ("bob", "Prefers window seats on long flights!")]


def test_two_users_are_isolated(store: Any) -> None:
    for u, text in NEAR_TWINS:
        commit(store, EditBatch(user_id=u, edits=[CreateConcept(concept_id=f"{u}:c", name="travel"),
                                                  attach(fact(u, "seat", text), f"{u}:c"),
                                                  attach(fact(u, "seat2", text + " and aisle later"), f"{u}:c"),
                                                  Conflict(a=f"{u}:seat", b=f"{u}:seat2")]))
    q = "window seats on flights"
    for u, _ in NEAR_TWINS:
        b = retrieve(store, u, q, EMB.embed([q])[0].tolist(), RetrievalConfig(k=10))
        assert b.items and {i.fact.user_id for i in b.items} == {u}
        assert all(fid.startswith(f"{u}:") for fid in store.expand(u, [f"{u}:seat"], 5))
        assert store.expand(u, ["alice:seat" if u == "bob" else "bob:seat"], 5) == set()
        assert store.fetch(u, ["alice:seat", "bob:seat"]).facts.keys() == {f"{u}:seat"}
        rows = store.run_readonly_cypher(u, "MATCH (f:Fact) RETURN f.user_id AS owner, f.statement AS s")
        assert rows and {r["owner"] for r in rows} == {u}
        rows = store.run_readonly_cypher(u, "MATCH (a)-[r]->(b) RETURN a.user_id AS x, b.user_id AS y")
        assert rows and {(r["x"], r["y"]) for r in rows} == {(u, u)}
        assert store.counts(u)["Fact"] == 2


INJECTIONS = ["x' OR 1=1 //", "alice' }) MATCH (n) DETACH DELETE n //", "\") RETURN 1 UNION MATCH (n) RETURN n //",
              "*:* OR statement:*", "a\\\"b", "$u", "{user_id: 'bob'}", "` MATCH (n) DETACH DELETE n `", "\x00"]


@pytest.mark.parametrize("evil", INJECTIONS)
def test_injection_through_every_string_parameter_is_inert(store: Any, evil: str) -> None:
    vacation_user(store, "alice")
    before = store.counts()
    emb = EMB.embed(["x"])[0].tolist()
    assert store.vector_search(evil, emb, 5) == []
    assert store.text_search(evil, "hiking", 5) == []
    assert all(fid.startswith("alice:") for fid, _ in store.text_search("alice", evil, 5))
    assert store.expand(evil, ["alice:hiking"], 3) == set() and store.expand("alice", [evil], 3) == set()
    assert store.fetch(evil, ["alice:hiking"]).facts == {}
    assert store.turns(evil, ["alice-t0"]) == [] and store.edits(evil) == []
    assert store.run_readonly_cypher(evil, "MATCH (f:Fact) RETURN f.statement AS s") == []
    assert store.run_readonly_cypher("alice", "MATCH (f:Fact) WHERE f.statement = $q RETURN f.statement AS s",
                                     {"q": evil}) == []
    # an edit batch carrying the string as ids and text commits as plain data
    commit(store, EditBatch(user_id="alice", edits=[CreateConcept(concept_id=f"alice:{evil}", name=evil),
                                                    attach(fact("alice", evil, f"says {evil}"), f"alice:{evil}")]))
    s = store.load_snapshot("alice")
    assert s.facts[f"alice:{evil}"].statement == f"says {evil}" and s.concepts[f"alice:{evil}"].name == evil
    assert store.purge_user(evil) == 0
    after = store.counts()
    assert after["Fact"] == before["Fact"] + 1 and after["Concept"] == before["Concept"] + 1


def test_readonly_cypher_refuses_writes(store: Any) -> None:
    vacation_user(store)
    before = store.counts()
    with pytest.raises(CypherRefused):
        store.run_readonly_cypher("maya", "MATCH (f:Fact) SET f.statement = 'x' RETURN f")
    with pytest.raises(CypherRefused):
        store.run_readonly_cypher("maya", "CREATE (n:Fact {user_id: 'maya'}) RETURN n")
    assert store.counts() == before
    rows = store.run_readonly_cypher("maya", "MATCH (c:Concept)-[:CONTAINS]->(f:Fact) RETURN c.name AS c, f.statement AS s")
    assert len(rows) == 4 and {r["c"] for r in rows} == {"travel", "health"}


def test_readonly_transaction_is_the_last_line(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even if a write slipped past the parser, the sandbox transaction is read-only, and the sandbox
    is a copy: the store itself never sees user Cypher."""
    from graph.cypher import sandbox
    from graph.cypher.serialize import UID_PARAM, Compiled

    vacation_user(store)
    before = store.counts()
    # simulate a parser bug: pass the query through unchanged
    monkeypatch.setattr(sandbox, "compile_query", lambda q, p, u: Compiled(q, {UID_PARAM: u}, ["s"]))
    with pytest.raises((ReadOnlyViolation, StoreError)):
        store.run_readonly_cypher("maya", "MATCH (f:Fact) SET f.statement = 'pwned' RETURN f.statement AS s")
    monkeypatch.undo()
    assert all(f.statement != "pwned" for f in store.load_snapshot("maya").facts.values())
    assert store.counts() == before
    rows = store.run_readonly_cypher("maya", "MATCH (f:Fact) RETURN f.statement AS s")
    assert rows and all(r["s"] != "pwned" for r in rows)


def test_traversal_closure_on_long_chain_and_clique(store: Any) -> None:
    u = "chain"
    n = 30
    edits: list[Any] = [CreateConcept(concept_id=f"{u}:c", name="c")]
    edits += [attach(fact(u, f"v{i}", f"version {i} of the plan", "plan"), f"{u}:c") for i in range(n)]
    edits += [Supersede(new_fact_id=f"{u}:v{i + 1}", old_fact_id=f"{u}:v{i}") for i in range(n - 1)]
    edits += [attach(fact(u, f"k{i}", f"claim {i}", "belief"), f"{u}:c") for i in range(8)]
    edits += [Conflict(a=f"{u}:k{i}", b=f"{u}:k{j}") for i in range(8) for j in range(i + 1, 8)]
    commit(store, EditBatch(user_id=u, edits=edits))
    from retrieval.retrieve import traverse

    sub, rounds, capped = traverse(store, u, [f"{u}:v0"], RetrievalConfig(max_hops=4))
    assert set(sub.facts) == {f"{u}:v{i}" for i in range(n)} and not capped and rounds >= 2
    sub, _, _ = traverse(store, u, [f"{u}:k3"], RetrievalConfig(max_hops=6))
    assert set(sub.facts) == {f"{u}:k{i}" for i in range(8)}
    sub, _, capped = traverse(store, u, [f"{u}:v0"], RetrievalConfig(max_hops=2, max_facts=5))
    assert capped


def test_purge_user_removes_everything(store: Any) -> None:
    vacation_user(store, "alice")
    vacation_user(store, "bob")
    bob_before = store.counts("bob")
    n = store.purge_user("alice")
    assert n > 0 and all(v == 0 for v in store.counts("alice").values())
    assert store.counts("bob") == bob_before
    assert "alice" not in store.users()
    q = "hiking"
    assert retrieve(store, "alice", q, EMB.embed([q])[0].tolist()).items == []


def test_purged_then_recreated_user_never_sees_old_vectors(store: Any, request: pytest.FixtureRequest) -> None:
    """A second process's cache must not serve a purged user's fact ids after the user is recreated."""
    readers = [store]
    if store.name == "neo4j":
        from graph.neo4j import Neo4jStore

        readers.append(Neo4jStore(request.getfixturevalue("neo4j_uri"), embedding_dim=16))  # "another process"
    vacation_user(store, "zed")
    emb = EMB.embed(["beach"])[0].tolist()
    for r in readers:
        assert r.vector_search("zed", emb, 10)  # caches warm
    store.purge_user("zed")
    commit(store, EditBatch(user_id="zed", edits=[CreateConcept(concept_id="zed:n", name="n"),
                                                  attach(fact("zed", "new", "A brand new fact about beaches"), "zed:n")]))
    for r in readers:
        assert [fid for fid, _ in r.vector_search("zed", emb, 10)] == ["zed:new"]
    for r in readers[1:]:
        r.close()
