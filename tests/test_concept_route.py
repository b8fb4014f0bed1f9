"""The concept route on the live concept tree, the gist route for requests that want a topic's arc, and
the time order their context is written in (retrieval/seeds/concepts.py, rank.py, render.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from graph.edits import CreateConcept, EditBatch
from graph.embedded.store import EmbeddedStore
from graph.models import Fact
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
    assert "gist" in ROUTES and "concept" not in ROUTES  # selectable, off by default: it did not pay


def test_a_gist_request_is_written_in_time_order(tmp_path: Path) -> None:
    store = _store(tmp_path)
    idx = _index(store)
    q = "Summarize how the dog, the cello and the garden tomatoes went over time"
    b = retrieve(store, "ada", q, EMB.embed([q])[0].tolist(), RetrievalConfig(k=6), index=idx)
    text = render_context(b, 600).text
    dates = [ln.split(") ", 1)[0].split(" (", 1)[1] for ln in text.splitlines() if ln.startswith("[F")]
    assert len(dates) >= 4 and dates == sorted(dates)
    narrow = "Which food do I buy for the dog?"
    nb = retrieve(store, "ada", narrow, EMB.embed([narrow])[0].tolist(), RetrievalConfig(k=6), index=idx)
    seeds = sorted((it for it in nb.items if it.seed), key=lambda it: -(it.score or 0))
    first = render_context(nb, 600).text.splitlines()[0]
    assert first.startswith(f"[{seeds[0].alias}]")  # any other request: best seed first, as before


@pytest.mark.parametrize("query, expected", [
    # written for this test, outside every benchmark: one per class, and near misses
    ("Give me a rundown in chronological order of the kitchen renovation.", True),  # span of the conversation
    ("How has my marathon training changed since the knee surgery?", True),  # change across time
    ("How did the apprentice's confidence grow over the season?", True),
    ("How have the neighbours' complaints evolved?", True),
    ("How did you fix the leaking tap?", False),
    ("How does the heat pump work?", False),
    ("What changed in the lease?", False),  # one change, not an arc
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
    assert RetrievalConfig().for_request("Which food do I buy for the dog?").routes == ROUTES
