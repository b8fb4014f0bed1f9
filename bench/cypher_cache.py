"""Per-query cost of user Cypher as a user's history grows: the sandbox's snapshot cache (issue 45).

    python bench/cypher_cache.py                                   # embedded, 1k and 5k facts
    python bench/cypher_cache.py --facts 1000 5000 --backends embedded neo4j --queries 50

For each size, one user of that many facts (bench/retrieval_speed.py's generator: concepts, turns,
SUPERSEDES chains, conflicts) and a few small read queries, timed two ways in the same run:

- ``baseline``: the cache emptied before every query, i.e. what every query did before the cache:
  read the user's whole snapshot and digest it (the worker still holds the copy, as before);
- ``cached``: the sandbox as shipped: one version-token read, then the worker's copy.

Also: the first query (the worker builds the copy) and the first query after a one-fact commit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from graph.cypher.sandbox import sandbox_for  # noqa: E402
from graph.edits import AttachFact, EditBatch, apply_batch  # noqa: E402
from graph.models import Fact  # noqa: E402
from retrieval_speed import build_user, open_backend  # noqa: E402

QUERIES = [
    "MATCH (f:Fact) WHERE f.statement CONTAINS 'coffee' RETURN f.statement AS s LIMIT 5",
    "MATCH (c:Concept)-[:CONTAINS]->(f:Fact) RETURN c.name AS c, count(f) AS n ORDER BY n DESC LIMIT 3",
    "MATCH (a:Fact)-[:SUPERSEDES]->(b:Fact) RETURN count(*) AS n",
    "MATCH (f:Fact {fact_id: $id}) RETURN f.statement AS s",
]


def _ms(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def one_size(backend: str, n_facts: int, queries: int, dim: int) -> dict[str, Any]:
    rng = np.random.default_rng(n_facts)
    u = f"bench{n_facts}"
    batch, _, ids = build_user(rng, u, n_facts, dim)
    tmp = Path(tempfile.mkdtemp(prefix=f"evomem-cypher-cache-{backend}-"))
    store, stop = open_backend(backend, tmp, dim)
    try:
        _, cs = apply_batch(store.load_snapshot(u), batch)
        store.commit(cs)
        sb = sandbox_for(store)

        def q(i: int) -> None:
            store.run_readonly_cypher(u, QUERIES[i % len(QUERIES)], {"id": ids[i % len(ids)]})

        first = _ms(lambda: q(0))
        for i in range(4):  # warm both paths once
            q(i)
        base, cached = [], []
        for i in range(queries):  # interleaved, so load drifts hit both alike
            sb._copies.clear()  # the old path: read and digest the whole snapshot on this query
            base.append(_ms(lambda: q(i)))
            cached.append(_ms(lambda: q(i)))
        snap = store.load_snapshot(u)
        f = Fact(fact_id=f"{u}:extra", user_id=u, statement="extra fact after the timing", kind="preference")
        _, cs = apply_batch(snap, EditBatch(user_id=u, session_id="s2", edits=[
            AttachFact(fact=f, concept_id=f"{u}:c0", embedding=tuple([0.0] * (dim - 1) + [1.0]))]))
        store.commit(cs)
        after_commit = _ms(lambda: q(0))
        loads = sb.snapshot_loads
        return {"backend": backend, "facts": n_facts, "queries": queries, "first_query_ms": round(first, 1),
                "baseline_p50_ms": round(statistics.median(base), 2), "cached_p50_ms": round(statistics.median(cached), 2),
                "baseline_p95_ms": round(float(np.percentile(base, 95)), 2),
                "cached_p95_ms": round(float(np.percentile(cached, 95)), 2),
                "speedup_p50": round(statistics.median(base) / statistics.median(cached), 1),
                "first_after_commit_ms": round(after_commit, 1), "snapshot_loads": loads}
    finally:
        store.close()
        if stop is not None:
            stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, nargs="+", default=[1000, 5000])
    ap.add_argument("--backends", nargs="+", default=["embedded"], choices=["embedded", "neo4j"])
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = [one_size(b, n, args.queries, args.dim) for b in args.backends for n in args.facts]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'backend':9} {'facts':>6} {'first':>8} {'baseline p50':>13} {'cached p50':>11} {'x':>6} "
          f"{'base p95':>9} {'cached p95':>11} {'after commit':>13}")
    for r in rows:
        print(f"{r['backend']:9} {r['facts']:>6} {r['first_query_ms']:>8} {r['baseline_p50_ms']:>13} "
              f"{r['cached_p50_ms']:>11} {r['speedup_p50']:>6} {r['baseline_p95_ms']:>9} {r['cached_p95_ms']:>11} "
              f"{r['first_after_commit_ms']:>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
