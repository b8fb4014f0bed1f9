"""The request path fuses routes with ``IndexFusion`` (numpy over the route index's rows, issue 45); it must
give exactly what ``fuse_routes`` gives: the same seeds in the same order, scores to the bit, the same
per-route ranks. Random route lists over a real index, with tied ranks (a turn's facts share one), a
context route (not discounted for its turn), holder factors and a content prior."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graph.edits import apply_batch
from graph.embedded import EmbeddedStore
from retrieval.fusion import IndexFusion, fuse_routes
from retrieval.retrieve import RetrievalConfig, holder_factors
from retrieval.seeds.index import RouteIndexCache
from test_retrieval_identity import DIM, _build


def test_index_fusion_equals_fuse_routes(tmp_path: Path) -> None:
    batch, _ = _build("fz")
    store = EmbeddedStore(tmp_path / "store")
    store.setup()
    _, cs = apply_batch(store.load_snapshot("fz"), batch)
    store.commit(cs)
    cache = RouteIndexCache(lambda texts: np.ones((len(texts), DIM), dtype=np.float32))
    try:
        index = cache.get(store, "fz")
    finally:
        cache.close()
        store.close()
    rng = np.random.default_rng(11)
    ids = index.ids
    compared = 0
    for trial in range(60):
        hits: dict[str, list[tuple[str, float, int]]] = {}
        for name in ("fact_dense", "fact_bm25", "turn_dense", "context", "instruction", "neighbour")[: 2 + trial % 5]:
            rows = rng.choice(len(ids), size=int(rng.integers(1, 40)), replace=False)
            ranks = np.sort(rng.integers(1, 12, size=len(rows))) if name.startswith("turn") else np.arange(1, len(rows) + 1)
            # coarse scores, so the fact-dense tie-break and the fact-id tie-break both get exercised
            hits[name] = [(ids[r], float(rng.integers(0, 4)) / 4, int(k)) for r, k in zip(rows, ranks)]
        cfg = RetrievalConfig(k=int(rng.integers(1, 15)), route_weights={"fact_bm25": 0.5} if trial % 3 else {},
                              question_weight=0.5 if trial % 2 else 1.0, turn_redundancy=0.5 if trial % 4 else 1.0,
                              session_redundancy=0.7 if trial % 5 == 0 else 1.0)
        holder_of = {f: index.facts[f].holder for lst in hits.values() for f, _, _ in lst}
        prior = {f: 0.5 for f in holder_of if index.facts[f].statement.endswith("u")} if trial % 2 else {}
        want = fuse_routes(hits, cfg, holder_of, index.facts, prior)
        fusion = IndexFusion(index)
        for name, lst in hits.items():
            fusion.add(name, lst)
        got = fusion.fuse(cfg, cfg.k, lambda fids: {f: prior[f] for f in fids if f in prior}, holder_factors(index, cfg))
        assert [s.model_dump() for s in got] == [s.model_dump() for s in want], f"trial {trial}"
        compared += len(want)
    assert compared > 200
