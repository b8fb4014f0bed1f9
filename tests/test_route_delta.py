"""The route index extended by each commit's ChangeSet ranks exactly as one rebuilt from the snapshot
(retrieval/seeds/delta.py), and what it cannot extend (a delete, a purge) is rebuilt."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from graph.bm25 import BM25
from graph.edits import AttachFact, Conflict, CreateConcept, EditBatch, Retract, Supersede
from graph.embedded.store import EmbeddedStore
from graph.models import Fact, Turn
from retrieval.retrieve import RetrievalConfig, retrieve
from retrieval.seeds.index import RouteIndex, RouteIndexCache
from retrieval.seeds.rank import ROUTES
from retrieval.seeds.textindex import TextIndex
from graph.store import PurgeSet
from llmclients.embeddings import HashEmbedder
from memcore.memory import Memory

EMB = HashEmbedder(24)
WORDS = "beach hiking knee sushi cello piano tax budget dog cat Paris Berlin coffee tea yoga run".split()
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def _session(u: str, s: int, rng: random.Random, known: list[str]) -> EditBatch:
    """A session of 6 turns (user and assistant, some undated) and their facts: repeated statements
    (ties), named holders, a standing instruction, supersedes and conflicts with earlier facts, and a
    retraction (a fact update)."""
    at = None if s % 3 == 2 else T0 + timedelta(days=7 * s)
    turns = [Turn(turn_id=f"{u}-s{s}-t{i}", user_id=u, session_id=f"s{s:02d}", seq=i, role=("user", "assistant")[i % 2],
                  text=" ".join(rng.choices(WORDS, k=5)), at=at) for i in range(6)]
    edits: list[object] = [CreateConcept(concept_id=f"{u}:c{s}", name=f"topic {s % 4}")] if s < 4 else []
    new: list[str] = []
    for i, t in enumerate(turns):
        for j in range(1 + i % 2):
            text = "Likes " + " ".join(rng.choices(WORDS[:6], k=2))  # few words: equal scores happen
            if i == 4 and j == 0:
                text = "Always answer in French when I ask about " + rng.choice(WORDS)
            fid = f"{u}:s{s}f{i}{j}"
            holder = "assistant" if t.role == "assistant" else rng.choice(["user", "user", "Caroline"])
            edits.append(AttachFact(fact=Fact(fact_id=fid, user_id=u, statement=text, holder=holder,
                                              source_turn_ids=(t.turn_id,), observed_at=at),
                                    concept_id=f"{u}:c{min(s, 3)}"))
            new.append(fid)
    if len(known) >= 3:  # each earlier fact takes part in one relation or retraction at most
        edits.append(Supersede(new_fact_id=new[0], old_fact_id=known.pop(rng.randrange(len(known))), reason="changed"))
        edits.append(Conflict(a=new[1], b=known.pop(rng.randrange(len(known))), reason="clash"))
        edits.append(Retract(fact_id=known.pop(rng.randrange(len(known))), reason="forget it"))
    known.extend(new[2:])
    return EditBatch(user_id=u, session_id=f"s{s:02d}", session_hash=f"h{s}", turns=turns, edits=edits)  # type: ignore[arg-type]


def _same(a: RouteIndex, b: RouteIndex, store: EmbeddedStore, u: str, queries: list[str]) -> None:
    """Every route ranks alike (the concept and gist routes too: both read the live tree, whose touched
    concepts the extension recomputes), and so does retrieval end to end, with and without a
    time-travel restriction."""
    cfg = RetrievalConfig(k=8, routes=ROUTES, routes_off_for={})  # the concept route for every request
    hidden = frozenset(sorted(a.facts)[::3])
    for q in queries:
        qv = EMB.embed([q])[0].tolist()
        for allowed in (None, hidden):
            x = retrieve(store, u, q, qv, cfg, allowed_ids=allowed, index=a, now=T0)
            y = retrieve(store, u, q, qv, cfg, allowed_ids=allowed, index=b, now=T0)
            assert [(s.fact_id, s.score, s.window, s.routes) for s in x.explain.seeds] == \
                   [(s.fact_id, s.score, s.window, s.routes) for s in y.explain.seeds], q
            assert [(i.fact, i.state, i.seed, i.group) for i in x.items] == [(i.fact, i.state, i.seed, i.group) for i in y.items]
        assert a.fbm25.sparse_scores(q) == {a.row[b.ids[r]]: v for r, v in b.fbm25.sparse_scores(q).items()}


def test_an_extended_index_ranks_as_a_rebuilt_one(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    mem = Memory(store, EMB)
    rng, known = random.Random(7), list[str]()
    mem.apply(_session("ada", 0, rng, known))
    first = mem.routes.get(store, "ada")
    queries = ["what does Caroline like about beach and sushi?", "what did you recommend for the knee?",
               "for the situation we discussed, what should I do?", "what happened last week", "dog cat Paris",
               "summarize everything about budget and tax"]
    prev = first
    for s in range(1, 9):
        mem.apply(_session("ada", s, rng, known))
        inc = mem.routes.get(store, "ada")
        assert inc.fbm25.lens is prev.fbm25.lens and inc.version == s + 1  # extended, not rebuilt
        full = RouteIndexCache(EMB.embed).get(store, "ada")
        assert sorted(inc.ids) == full.ids and inc.latest == full.latest
        assert {t: inc.turn_recency[k] for t, k in inc.turn_index.items()} == \
               {t: full.turn_recency[k] for t, k in full.turn_index.items()}
        assert dict(inc.concept_paths) == dict(full.concept_paths)
        assert inc.concept_ids == full.concept_ids and inc.cmat is not None and full.cmat is not None
        assert {c: sorted(inc.ids[r] for r in rows) for c, rows in inc.concept_rows.items()} == \
               {c: sorted(full.ids[r] for r in rows) for c, rows in full.concept_rows.items()}
        assert np.allclose(inc.cmat, full.cmat, atol=1e-6)
        _same(inc, full, store, "ada", queries)
        prev = inc
    def last_edit() -> str:
        return max(store.load_snapshot("ada").edits.values(), key=lambda e: e.seq).edit_id

    # undoing a retraction is a fact update: extended
    mem.undo("ada", last_edit())
    inc = mem.routes.get(store, "ada")
    assert inc.fbm25.lens is prev.fbm25.lens
    _same(inc, RouteIndexCache(EMB.embed).get(store, "ada"), store, "ada", queries)
    # undoing an attach deletes the fact: the next index is a rebuild (nothing shared with the last one)
    mem.apply(EditBatch(user_id="ada", edits=[AttachFact(fact=Fact(fact_id="ada:late", user_id="ada", statement="Likes tea"),
                                                         concept_id="ada:c3")]))
    assert "ada:late" in mem.routes.get(store, "ada").facts
    mem.undo("ada", last_edit())
    again = mem.routes.get(store, "ada")
    assert again.fbm25.lens is not inc.fbm25.lens and sorted(again.ids) == sorted(store.load_snapshot("ada").facts)
    assert "ada:late" not in again.facts
    # a purge likewise; the purged fact is gone from the next request
    gone = again.ids[0]
    store.purge_items(PurgeSet(user_id="ada", expected_version=store.load_snapshot("ada").version, fact_ids=(gone,)))
    assert gone not in mem.routes.get(store, "ada").facts
    mem.close()


def test_an_older_version_keeps_reading_its_own_rows(tmp_path: Path) -> None:
    """A request still reading the previous version (its arrays share buffers with the new one) sees
    exactly the rows it had."""
    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    mem = Memory(store, EMB)
    rng, known = random.Random(3), list[str]()
    mem.apply(_session("bo", 0, rng, known))
    old = mem.routes.get(store, "bo")
    before = (old.fmat.copy() if old.fmat is not None else None, old.fbm25.sparse_scores("beach sushi"), len(old.ids))
    for s in range(1, 4):
        mem.apply(_session("bo", s, rng, known))
        mem.routes.get(store, "bo")
    assert old.fmat is not None and before[0] is not None and np.array_equal(old.fmat, before[0])
    assert old.fbm25.sparse_scores("beach sushi") == before[1] and len(old.ids) == before[2]
    mem.close()


@pytest.mark.parametrize("seed", range(5))
def test_text_index_scores_are_bm25s_to_the_bit(seed: int) -> None:
    rng = random.Random(seed)
    docs = [" ".join(rng.choices(WORDS + ["the", "running", "runs"], k=rng.randint(0, 9))) for _ in range(60)]
    ix: TextIndex | None = TextIndex(docs[:10])
    for cut in (25, 26, 60):  # extended in steps
        assert ix is not None
        ix = ix.extend(docs[len(ix.lens.view(ix.n)):cut])
        assert ix is not None
        ref = BM25(docs[:cut])
        for q in ("beach running", "the knee knee", "Paris tax dog cello", "nothing"):
            assert ix.sparse_scores(q) == {i: s for i, s in ref.sparse_scores(q).items()}
        assert dict(ix.idf) == ref.idf
    assert ix is not None and TextIndex(docs[:5]).extend(["x"]) is not None
    older = TextIndex(docs[:5])
    assert older.extend(["a"]) is not None and older.extend(["b"]) is None  # only the newest version extends


def test_tie_order_values_sort_as_the_keys_whatever_the_append_order() -> None:
    """``Order``: rows appended in any key order get values that sort as their keys; a run of keys into
    one gap (here 80 halvings) renumbers instead of colliding."""
    from retrieval.seeds.model import Order

    rng = random.Random(1)
    keys = [f"f{rng.randrange(10**6):06d}" for _ in range(50)]
    order = Order(keys[:10])
    for cut in range(12, 51, 2):
        order = order.add(keys[cut - 2:cut], keys[:cut])  # in row order, not key order
        vals = order.values
        assert len(vals) == cut and sorted(range(cut), key=lambda r: vals[r]) == sorted(range(cut), key=lambda r: keys[r])
    squeeze = ["a", "b"] + ["a" + "0" * k + "1" for k in range(80, 0, -1)]  # each new key just above "a"
    grown = Order(squeeze[:2])
    for k in range(2, len(squeeze)):
        grown = grown.add([squeeze[k]], squeeze[:k + 1])
    assert sorted(range(len(squeeze)), key=lambda r: grown.values[r]) == sorted(range(len(squeeze)), key=lambda r: squeeze[r])


def test_states_kept_per_version_are_the_ones_derived_at_each_request(tmp_path: Path) -> None:
    """Retrieval keeps a fact's relational state on its index version (retrieval/retrieve.py: _state);
    every state it hands out equals ``derive_state`` over the fact's relations in the snapshot, and a
    fact that expires is derived at each request's instant, never kept."""
    from graph.rules import derive_state

    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    mem = Memory(store, EMB)
    rng, known = random.Random(5), list[str]()
    for s in range(5):
        mem.apply(_session("cy", s, rng, known))
    trip = Fact(fact_id="cy:trip", user_id="cy", statement="Likes beach hiking in Paris", expired_at=T0 + timedelta(days=30))
    mem.apply(EditBatch(user_id="cy", edits=[AttachFact(fact=trip, concept_id="cy:c3")]))
    idx = mem.routes.get(store, "cy")
    snap = store.load_snapshot("cy")
    cfg = RetrievalConfig(k=8)
    seen: dict[object, str] = {}
    for now in (T0, T0 + timedelta(days=60), T0):
        for q in ["beach hiking Paris", "what does Caroline like about sushi?", "knee cello tax", "Likes dog"]:
            got = retrieve(store, "cy", q, EMB.embed([q])[0].tolist(), cfg, index=idx, now=now)
            for it in got.items:
                f = it.fact
                rels = [r for r in snap.relations.values() if f.fact_id in (r.src, r.dst)]
                cid = snap.fact_concept.get(f.fact_id)
                assert it.state == derive_state(f, rels, snap.facts, snap.concept_path(cid) if cid else (), now)
                if f.fact_id == "cy:trip":
                    seen[now] = it.state.validity
    assert seen == {T0: "current", T0 + timedelta(days=60): "expired"}
    assert idx.states and "cy:trip" not in idx.states  # kept for the others, derived each time for the expiring one
    assert any(s.relations for s in idx.states.values())
    mem.close()
