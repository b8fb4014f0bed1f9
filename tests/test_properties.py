"""Property-based tests on both backends: random edit sequences never break the invariants, rejected
batches change nothing, and traversal equals the connected component computed independently."""

from __future__ import annotations

import uuid
from collections import deque
from typing import Any

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.edits import (AttachFact, Conflict, CreateConcept, EditBatch, EditRejected, MergeConcepts, Resolve, Retract,
                         SplitChild, SplitConcept, Supersede, apply_batch, undo)
from graph.models import FACT_KINDS, Fact
from retrieval.retrieve import RetrievalConfig, traverse
from graph.snapshot import Snapshot

OPS = ["create"] + ["attach"] * 4 + ["supersede"] * 3 + ["conflict"] * 3 + ["resolve", "retract", "merge", "split", "undo"]
step = st.tuples(st.sampled_from(OPS), st.integers(0, 10_000), st.integers(0, 10_000), st.sampled_from(FACT_KINDS))
sequences = st.lists(st.lists(step, min_size=1, max_size=6), min_size=1, max_size=8)


def pick(xs: list[str], i: int) -> str | None:
    return sorted(xs)[i % len(xs)] if xs else None


def to_edit(s: Snapshot, op: str, i: int, j: int, kind: str, n: int) -> Any:
    """Turn an abstract step into a concrete edit against the current snapshot (may still be invalid)."""
    live = [c for c, v in s.concepts.items() if v.retired_at is None]
    facts = list(s.facts)
    u = s.user_id
    if op == "create":
        return CreateConcept(concept_id=f"{u}:c{n}", name=f"c{n}", parent_id=pick(live, i))
    if op == "attach" and live:
        return AttachFact(fact=Fact(fact_id=f"{u}:f{n}", user_id=u, statement=f"fact {n}", kind=kind),  # type: ignore[arg-type]
                          concept_id=pick(live, i), embedding=tuple(float((n * k) % 7) for k in range(1, 17)))
    if op in ("supersede", "conflict") and facts:
        a, b = pick(facts, i), pick(facts, j)
        return Supersede(new_fact_id=a, old_fact_id=b) if op == "supersede" else Conflict(a=a, b=b)
    if op == "resolve":
        conf = sorted(k for k in s.relations if k[0] == "CONFLICTS_WITH")
        if conf:
            _, a, b = conf[i % len(conf)]
            return Resolve(a=a, b=b)
    if op == "retract" and facts:
        return Retract(fact_id=pick(facts, i))
    if op == "merge" and len(live) > 1:
        return MergeConcepts(source_id=pick(live, i), target_id=pick(live, j))
    if op == "split" and live:
        c = pick(live, i)
        inside = sorted(f for f, cc in s.fact_concept.items() if cc == c)
        if inside:
            return SplitConcept(concept_id=c, children=(SplitChild(concept_id=f"{u}:s{n}", name="part",
                                                                   fact_ids=tuple(inside[: 1 + j % len(inside)])),))
    return None


def independent_invariants(s: Snapshot) -> None:
    """Re-derived from the stored data without graph.edits.check_invariants."""
    live = {c for c, v in s.concepts.items() if v.retired_at is None}
    roots = [c for c in live if c not in s.parent]
    assert len(roots) <= 1, roots
    for c in live - set(roots):
        assert s.parent.get(c) in live, (c, s.parent.get(c))
        seen, cur = set(), c
        while cur in s.parent:  # walks up to the root without looping
            assert cur not in seen
            seen.add(cur)
            cur = s.parent[cur]
    assert set(s.fact_concept) == set(s.facts)
    assert all(c in live for c in s.fact_concept.values())
    assert all(a in s.facts and b in s.facts for _, a, b in s.relations)
    # SUPERSEDES acyclic: Kahn's algorithm consumes every node
    sup = [(a, b) for t, a, b in s.relations if t == "SUPERSEDES"]
    indeg = {f: 0 for f in s.facts}
    for _, b in sup:
        indeg[b] += 1
    q = deque(f for f, d in indeg.items() if d == 0)
    done = 0
    while q:
        x = q.popleft()
        done += 1
        for a, b in sup:
            if a == x:
                indeg[b] -= 1
                if indeg[b] == 0:
                    q.append(b)
    assert done == len(s.facts)


def component(s: Snapshot, seeds: list[str]) -> set[str]:
    adj: dict[str, set[str]] = {f: set() for f in s.facts}
    for _, a, b in s.relations:
        adj[a].add(b)
        adj[b].add(a)
    out, q = set(seeds), deque(seeds)
    while q:
        for y in adj[q.popleft()]:
            if y not in out:
                out.add(y)
                q.append(y)
    return out


def run_sequence(store: Any, seqs: list[list[tuple[str, int, int, str]]]) -> None:
    u = "p" + uuid.uuid4().hex[:10]
    n = 0
    for batch_steps in seqs:
        snap = store.load_snapshot(u)
        edits: list[Any] = []
        sim = apply_batch(snap, EditBatch(user_id=u))[0]  # has the root concept
        undo_target = None
        for op, i, j, kind in batch_steps:
            n += 1
            if op == "undo":
                live_edits = [e for e in sim.edits.values() if e.op != "UNDO" and e.undone_at is None]
                undo_target = max(live_edits, key=lambda e: e.seq).edit_id if live_edits and not edits else None
                continue
            e = to_edit(sim, op, i, j, kind, n)
            if e is not None:
                try:  # keep the simulation current so later steps can refer to what this one made
                    sim = apply_batch(sim, EditBatch(user_id=u, edits=[e]))[0]
                    edits.append(e)
                except EditRejected:
                    if j % 4 == 0:  # keep some invalid edits: their whole batch must be rejected
                        edits.append(e)
        before = store.counts(u), store.load_snapshot(u)
        try:
            if undo_target:
                _, cs = undo(snap, undo_target)
            else:
                _, cs = apply_batch(snap, EditBatch(user_id=u, edits=edits))
        except EditRejected:
            after = store.counts(u), store.load_snapshot(u)
            assert after == before  # rejected: nothing changed
            continue
        store.commit(cs)
        s = store.load_snapshot(u)
        independent_invariants(s)
        for f in sorted(s.facts)[:3]:
            sub, _, capped = traverse(store, u, [f], RetrievalConfig(max_hops=2, max_facts=10_000))
            assert not capped and set(sub.facts) == component(s, [f])


def profile(n: int) -> settings:
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@profile(50)
@given(seqs=sequences)
def test_random_edit_sequences_embedded(tmp_path_factory: Any, seqs: Any) -> None:
    run_sequence(_embedded_store(tmp_path_factory), seqs)


_STORES: dict[str, Any] = {}


def _embedded_store(tmp_path_factory: Any) -> Any:
    """One store for all examples (each example uses a fresh user); opening a store per example is slow."""
    from graph.embedded import EmbeddedStore

    if "embedded" not in _STORES:
        _STORES["embedded"] = EmbeddedStore(tmp_path_factory.mktemp("prop") / "store")
        _STORES["embedded"].setup()
    return _STORES["embedded"]


@pytest.mark.neo4j
@profile(15)
@given(seqs=sequences)
def test_random_edit_sequences_neo4j(_neo4j_store: Any, seqs: Any) -> None:
    run_sequence(_neo4j_store, seqs)
