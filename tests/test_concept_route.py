"""The concept route on the live concept tree, the gist route for requests that want a topic's arc, and
the time order their context is written in (retrieval/seeds/concepts.py, rank.py, render.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from graph.edits import CreateConcept, EditBatch
from graph.embedded.store import EmbeddedStore
from graph.models import Fact, Turn
from retrieval.render import render_context
from retrieval.retrieve import RetrievalConfig, retrieve
from retrieval.seeds.breadth import GIST_CLASSES, asks_for_gist
from retrieval.seeds.index import RouteIndex, RouteIndexCache
from retrieval.seeds.rank import ROUTES, RouteContext
from tests.test_contract import EMB, attach, commit

T0 = datetime(2025, 3, 1, tzinfo=timezone.utc)
PETS = ["Walks the dog Rex every morning", "Bought grain free dog food for Rex", "Took Rex the dog to the vet",
        "Rex the dog learned to fetch"]
MUSIC = ["Practises cello scales daily", "Started cello lessons with a teacher", "Played cello at the spring recital"]
GARDEN = ["Planted tomatoes in the garden beds", "Garden tomatoes got blight"]


def _store(tmp_path: Path) -> EmbeddedStore:
    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    edits: list[object] = [CreateConcept(concept_id=f"ada:{c}", name=c) for c in ("pets", "music", "garden", "misc")]
    day = 0
    for c, texts in (("pets", PETS), ("music", MUSIC), ("garden", GARDEN), ("misc", ["Likes rainy days"])):
        for n, t in enumerate(texts):
            day += 1
            edits.append(attach(Fact(fact_id=f"ada:{c}{n}", user_id="ada", statement=t,
                                     observed_at=T0 + timedelta(days=(7 * day) % 60)), f"ada:{c}"))
    commit(store, EditBatch(user_id="ada", edits=edits))  # type: ignore[arg-type]
    return store


def _index(store: EmbeddedStore) -> RouteIndex:
    return RouteIndexCache(EMB.embed).get(store, "ada")


def _ctx(idx: RouteIndex, query: str) -> RouteContext:
    return RouteContext(idx, query, EMB.embed([query])[0], None, 50)


def test_the_index_holds_the_live_tree_concepts_with_their_members(tmp_path: Path) -> None:
    idx = _index(_store(tmp_path))
    assert idx.concept_ids == ["ada:garden", "ada:music", "ada:pets"]  # a one-fact concept is no route target
    assert {c: sorted(idx.ids[r] for r in rows) for c, rows in idx.concept_rows.items()} == {
        "ada:pets": [f"ada:pets{n}" for n in range(4)], "ada:music": [f"ada:music{n}" for n in range(3)],
        "ada:garden": ["ada:garden0", "ada:garden1"], "ada:misc": ["ada:misc0"]}
    assert idx.cmat is not None and idx.fmat is not None
    members = idx.fmat[idx.concept_rows["ada:pets"]]
    want = members.mean(axis=0) / np.linalg.norm(members.mean(axis=0))
    assert np.allclose(idx.cmat[idx.concept_ids.index("ada:pets")], want, atol=1e-6)


def test_a_request_near_a_concept_reads_that_concepts_members(tmp_path: Path) -> None:
    idx = _index(_store(tmp_path))
    hits = _ctx(idx, "dog Rex").concept(top_concepts=1)
    assert sorted(f for f, _, _ in hits) == [f"ada:pets{n}" for n in range(4)]
    assert [r for _, _, r in hits] == [1, 2, 3, 4]


def test_the_gist_route_reads_one_line_per_concept_round_by_round(tmp_path: Path) -> None:
    idx = _index(_store(tmp_path))
    hits = _ctx(idx, "Summarize how the dog, the cello and the garden tomatoes went over time").gist()
    concept = {f: idx.concept_of[f] for f, _, _ in hits}
    first = [concept[f] for f, _, _ in hits[:3]]
    assert sorted(first) == ["ada:garden", "ada:music", "ada:pets"]  # every concept's best line before any second
    assert len(hits) == 9 and "ada:misc0" not in concept and [r for _, _, r in hits] == list(range(1, 10))
    assert _ctx(idx, "Which food do I buy for the dog?").gist() == []  # a narrow request: silent
    assert "gist" in ROUTES and "concept" in ROUTES  # concept: for requests that ask for several things only
    assert RetrievalConfig().routes_off_for == {"gist": ("concept",), "narrow": ("concept",), "several": ()}


def test_a_gist_request_is_written_in_time_order(tmp_path: Path) -> None:
    store = _store(tmp_path)
    idx = _index(store)
    q = "Summarize how the dog, the cello and the garden tomatoes went over time"
    b = retrieve(store, "ada", q, EMB.embed([q])[0].tolist(), RetrievalConfig(k=6), index=idx)
    text = render_context(b, 600).text
    # each day once, as a heading over its lines (not on every line), the days in order
    dates = [ln.strip("()") for ln in text.splitlines() if ln.startswith("(")]
    assert len(dates) >= 4 and dates == sorted(dates) and len(set(dates)) == len(dates)
    assert all(ln.startswith(("[F", "(", "↳")) for ln in text.splitlines())
    assert not any(ln.startswith("[F") and " (2025-" in ln for ln in text.splitlines())
    narrow = "Which food do I buy for the dog?"
    nb = retrieve(store, "ada", narrow, EMB.embed([narrow])[0].tolist(), RetrievalConfig(k=6), index=idx)
    seeds = sorted((it for it in nb.items if it.seed), key=lambda it: -(it.score or 0))
    first = render_context(nb, 600).text.splitlines()[0]
    assert first.startswith(f"[{seeds[0].alias}]")  # any other request: best seed first, as before


def test_an_arc_takes_one_line_per_turn_until_every_turn_has_one(tmp_path: Path) -> None:
    """Two facts from one turn: an arc's context writes the turn once and spends the words on another turn."""
    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    one = ("ada-s1-t0",)
    facts = [Fact(fact_id="ada:a", user_id="ada", statement="Rex the dog learned to fetch", source_turn_ids=one,
                  observed_at=T0),
             Fact(fact_id="ada:b", user_id="ada", statement="Rex the dog fetches sticks now", source_turn_ids=one,
                  observed_at=T0),
             Fact(fact_id="ada:c", user_id="ada", statement="Rex the dog hates the vet", source_turn_ids=("ada-s2-t0",),
                  observed_at=T0 + timedelta(days=9))]
    turns = [Turn(turn_id=f"ada-s{s}-t0", user_id="ada", session_id=f"s{s}", seq=0, role="user", text="about Rex",
                  at=T0) for s in (1, 2)]
    commit(store, EditBatch(user_id="ada", turns=turns,  # type: ignore[arg-type]
                            edits=[CreateConcept(concept_id="ada:pets", name="pets"), *(attach(f, "ada:pets") for f in facts)]))
    idx = _index(store)
    for q, arc in (("Summarize how things went with Rex the dog over time", True), ("What does Rex the dog do?", False)):
        b = retrieve(store, "ada", q, EMB.embed([q])[0].tolist(), RetrievalConfig(k=6), index=idx)
        ctx = render_context(b, 600)
        assert "ada:c" in ctx.included
        assert len({"ada:a", "ada:b"} & set(ctx.included)) == (1 if arc else 2), q


@pytest.mark.parametrize("query, expected", [
    # written for this test, outside every benchmark: one per class, and near misses
    ("Give me a rundown in chronological order of the kitchen renovation.", True),  # span of the conversation
    ("How has my marathon training changed since the knee surgery?", True),  # change across time
    ("How did the apprentice's confidence grow over the season?", True),
    ("How have the neighbours' complaints evolved?", True),
    ("How did you fix the leaking tap?", False),
    ("How does the heat pump work?", False),
    ("What changed in the lease?", False),  # one change, not an arc
    ("What did the coach say about Lina's progress on the violin?", False),  # "progress" the noun: one point
    ("Give me a rundown of how the allotment progressed this year.", True),  # "progressed" the verb: an arc
])
def test_gist_classes(query: str, expected: bool) -> None:
    assert asks_for_gist(query) is expected
    assert len(GIST_CLASSES) == 2


def test_routes_can_be_left_out_per_kind_of_request() -> None:
    cfg = RetrievalConfig(routes=(*ROUTES, "concept"), routes_off_for={"narrow": ("concept",), "gist": ("time",)})
    narrow = cfg.for_request("Which food do I buy for the dog?")
    gist = cfg.for_request("How has the dog's diet changed since spring?")
    assert "concept" not in narrow.routes and "time" in narrow.routes and "gist" in narrow.routes
    assert "concept" in gist.routes and "time" not in gist.routes
    assert RetrievalConfig().for_request("Which food do I buy for the dog?").routes == tuple(r for r in ROUTES if r != "concept")
    assert RetrievalConfig().for_request("Which toys has the dog chewed up?").routes == ROUTES  # the default gate
    # a request for several things is 'several' where that kind has an entry, else it is read as 'narrow'
    assert "concept" not in cfg.for_request("Which toys has the dog chewed up?").routes
    several = cfg.model_copy(update={"routes_off_for": {"narrow": ("concept",), "several": ()}})
    assert "concept" in several.for_request("Which toys has the dog chewed up?").routes
    assert "concept" not in several.for_request("Which toy did the dog chew up?").routes


def test_an_arc_reads_moments_whole_exchanges_and_what_the_user_raised_alone(tmp_path: Path) -> None:
    """The gist route's unit is an exchange (a user turn and its reply, retrieval/seeds/arc.py): one line per
    turn, the reply right after its user turn; a request about what the user raised reads the user's turns."""
    from retrieval.seeds.arc import exchanges

    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    said = [("user", "I started a vegetable garden with tomatoes"), ("assistant", "Tomatoes need six hours of sun"),
            ("user", "My tomatoes got blight in July"), ("assistant", "Copper spray slows tomato blight"),
            ("user", "I adopted a dog named Rex"), ("assistant", "Rex will enjoy a daily walk")]
    turns = [Turn(turn_id=f"ada-s{n // 4}-t{n % 4}", user_id="ada", session_id=f"s{n // 4}", seq=n % 4, role=role,
                  text=text, at=T0 + timedelta(days=30 * (n // 4))) for n, (role, text) in enumerate(said)]
    facts = [Fact(fact_id=f"ada:f{n}", user_id="ada", statement=text, source_turn_ids=(turns[n].turn_id,),
                  holder="assistant" if role == "assistant" else "user", observed_at=turns[n].at)
             for n, (role, text) in enumerate(said)]
    commit(store, EditBatch(user_id="ada", turns=turns,  # type: ignore[arg-type]
                            edits=[CreateConcept(concept_id="ada:c", name="c"), *(attach(f, "ada:c") for f in facts)]))
    idx = _index(store)
    assert [[idx.turn_ids[k] for k in ex] for ex in exchanges(idx)] == [
        ["ada-s0-t0", "ada-s0-t1"], ["ada-s0-t2", "ada-s0-t3"], ["ada-s1-t0", "ada-s1-t1"]]
    hits = _ctx(idx, "Summarize how my tomato garden went over time").gist()
    got = [f for f, _, _ in hits]
    assert sorted(got) == [f"ada:f{n}" for n in range(6)] and [r for _, _, r in hits] == list(range(1, 7))
    for user_line in ("ada:f0", "ada:f2", "ada:f4"):  # each reply right after its user turn
        reply = f"ada:f{int(user_line[-1]) + 1}"
        assert got.index(reply) == got.index(user_line) + 1
    assert set(got[:4]) == {"ada:f0", "ada:f1", "ada:f2", "ada:f3"}  # the tomato exchanges before the dog's
    raised = [f for f, _, _ in _ctx(idx, "Walk me through the order in which I brought up the garden and the dog.").gist()]
    assert sorted(raised) == ["ada:f0", "ada:f2", "ada:f4"]
