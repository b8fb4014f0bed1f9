"""Forgetting on both backends: retract (tombstone), purge of given turns, purge of a user, and the canary
test — purged text can no longer come out of retrieval, explain, read-only Cypher, history or a dump."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memcore.memory import Memory
from graph.edits import check_invariants
from retrieval.render import render_context
from retrieval.retrieve import retrieve
from induction.forget import ForgetError, plan_purge_turns, purge, purge_turns, request_text, retract
from induction.history import fact_history
from induction.offline import OfflineExtractor
from induction.pipeline import Ingestor
from induction.session import Session

CANARY = "ZX-CANARY-4417"


@pytest.fixture
def mem(mem: Memory) -> Memory:
    """conftest's empty Memory, holding two sessions of maya's with a canary in both."""
    m = mem
    ing = Ingestor(m, OfflineExtractor())
    for sid, at, texts in (
        ("s1", "2025-08-10T18:00:00Z", ["I really enjoy hiking in the mountains on weekends.", "Nice!",
                                        f"My gym locker code is {CANARY} and I am vegetarian."]),
        ("s2", "2025-10-12T09:30:00Z", ["These days I no longer enjoy hiking in the mountains on weekends.",
                                        f"Please remember {CANARY} for the gym locker code at work."]),
    ):
        ing.ingest(Session.model_validate({"session_id": sid, "user_id": "maya", "started_at": at,
                                           "turns": [{"role": "assistant" if t == "Nice!" else "user", "text": t}
                                                     for t in texts]}))
    return m


def _q(m: Memory, text: str) -> list[float]:
    return m.embedder.embed([text])[0].tolist()


def test_request_text() -> None:
    assert request_text("Please forget that I'm vegetarian.") == "I'm vegetarian."
    assert request_text("can you delete the fact that my code is 12") == "my code is 12"
    assert request_text("I moved to Oslo") == "I moved to Oslo"


def test_retract_by_request_leaves_a_tombstone(mem: Memory) -> None:
    snap = mem.store.load_snapshot("maya")
    rep = retract(mem, "maya", request="forget that I really enjoy hiking in the mountains on weekends")
    (r,) = rep.retracted
    assert r.similarity is not None and r.similarity >= 0.55 and "hiking" in r.statement
    after = mem.store.load_snapshot("maya")
    assert r.fact_id in after.facts and after.facts[r.fact_id].retracted_at is not None  # kept for history
    assert len(after.facts) == len(snap.facts) and after.edits.keys() > snap.edits.keys()
    b = retrieve(mem.store, "maya", "hiking mountains", _q(mem, "hiking mountains"))
    item = next(i for i in b.items if i.fact.fact_id == r.fact_id)
    assert item.state.validity == "retracted"
    assert "never rely on this" in render_context(b).text
    with pytest.raises(ForgetError, match="already retracted"):
        retract(mem, "maya", fact_id=r.fact_id)


def test_retract_refuses_weak_or_unknown_matches(mem: Memory) -> None:
    with pytest.raises(ForgetError, match="no fact matches") as e:
        retract(mem, "maya", request="forget my favourite football team")
    assert e.value.candidates  # the closest facts are shown, nothing retracted
    assert not any(f.retracted_at for f in mem.store.load_snapshot("maya").facts.values())
    with pytest.raises(ForgetError, match="has no fact"):
        retract(mem, "maya", fact_id="maya::f::nope")
    with pytest.raises(ValueError):
        retract(mem, "maya")


def _dump_all(m: Memory, user: str) -> str:
    """Every way the text could come back out: retrieval + explain, Cypher, turns, edits, history, snapshot."""
    parts: list[Any] = []
    for q in (CANARY, "gym locker code", "vegetarian hiking"):
        b = retrieve(m.store, user, q, _q(m, q))
        # the query string itself is echoed in the bundle; everything else must be canary-free
        parts += [b.model_dump(mode="json", exclude={"query": True, "explain": {"query"}}), render_context(b).text]
    parts += [m.store.text_search(user, CANARY, 50), m.store.vector_search(user, _q(m, CANARY), 50)]
    for query in ("MATCH (n:Fact) RETURN n.statement AS s, n.evidence AS e", "MATCH (t:Turn) RETURN t.text AS t",
                  "MATCH (e:Edit) RETURN e.payload AS p", "MATCH (c:Concept) RETURN c.name AS n"):
        parts.append(m.store.run_readonly_cypher(user, query))
    snap = m.store.load_snapshot(user)
    parts += [m.store.turns(user, sorted(snap.turn_ids)), m.store.edits(user)]
    parts += [fact_history(m.store, user, f).model_dump(mode="json") for f in snap.facts]
    parts += [[f.model_dump(mode="json") for f in snap.facts.values()], [c.model_dump(mode="json") for c in snap.concepts.values()]]
    return json.dumps(parts, default=str)


def test_purge_turns_canary(mem: Memory) -> None:
    # Retract one canary fact first, with a reason quoting the canary: the edit must go too.
    hit = next(f for f in mem.store.load_snapshot("maya").facts.values() if CANARY in f.statement)
    retract(mem, "maya", fact_id=hit.fact_id, reason=f"user asked to forget {CANARY}")
    assert CANARY in _dump_all(mem, "maya")  # the canary really was reachable before
    rep = purge_turns(mem, "maya", ["s1:2", "s2:1", "s9:9"])
    assert rep.deleted["Turn"] == 2 and rep.deleted["Fact"] >= 2 and rep.unknown_turn_ids == ["s9:9"]
    assert CANARY not in _dump_all(mem, "maya")
    snap = mem.store.load_snapshot("maya")
    check_invariants(snap)
    assert snap.turn_ids == {"s1:0", "s1:1", "s2:0"} and set(snap.sessions) == {"s1", "s2"}
    sup = [r for r in snap.relations.values() if r.type == "SUPERSEDES"]
    assert len(sup) == 1  # the hiking update survives: it came from turns that were not purged
    again = Ingestor(mem, OfflineExtractor()).ingest(Session.model_validate(
        {"session_id": "s3", "user_id": "maya", "turns": [{"role": "user", "text": "I am learning to cook Thai food."}]}))
    assert again.status == "committed"  # the user's memory keeps working after a purge


def test_purge_whole_session_removes_its_session_record(mem: Memory) -> None:
    rep = purge_turns(mem, "maya", ["s2:0", "s2:1"])
    assert rep.deleted["Session"] == 1
    snap = mem.store.load_snapshot("maya")
    assert set(snap.sessions) == {"s1"} and not snap.relations


def test_purge_plan_is_pure_and_spares_shared_concepts(mem: Memory) -> None:
    snap = mem.store.load_snapshot("maya")
    turns = {t.turn_id: t.session_id for t in mem.store.turns("maya", sorted(snap.turn_ids))}
    plan = plan_purge_turns(snap, ["s1:0"], turns)
    assert plan.turn_ids == ("s1:0",) and plan.session_ids == () and plan.expected_version == snap.version
    remaining_concepts = {snap.fact_concept[f] for f in snap.facts if f not in plan.fact_ids}
    assert not set(plan.concept_ids) & remaining_concepts and snap.root_id not in plan.concept_ids
    assert mem.store.load_snapshot("maya").version == snap.version  # planning wrote nothing


def test_purge_user(mem: Memory) -> None:
    rep = purge(mem, "maya")
    assert rep.deleted["nodes"] > 0
    assert "maya" not in mem.store.users() and all(v == 0 for v in mem.store.counts("maya").values())
    assert CANARY not in _dump_all(mem, "maya")
