"""Retrieval benchmark: seeds + traversal latency per backend against an exact numpy floor.

Builds a store of U users x F facts (384-d random unit embeddings, statements from a fixed vocabulary),
with SUPERSEDES chains and CONFLICTS_WITH pairs, then times ``retrieve()`` (embedding excluded: the
query vector is given) on each backend, in wall time and in the calling thread's CPU time, and in the same run an exact numpy brute-force top-K over
that user's facts: the floor no database can beat. Prints p50/p95, the ratio to the floor, where the
time goes per stage and per seed route, and the bulk-load rate. Retrieval runs as ``Memory.retrieve``
does: all seed routes over the per-user RouteIndex (built on each user's first query: "cold"), the
retrieval vectors looked up from the generated ones (no model). "first query" is reported both ways: the
build inside the request ("cold"), and after the index was built at open as ``evomem serve`` does
(``RouteIndexCache.warm_users``). ``--routes store`` times the old
two-list seed search on the store's own indexes instead.

    python bench/retrieval_speed.py                                  # embedded, 100 users x 1000 facts
    python bench/retrieval_speed.py --backends embedded neo4j        # + Neo4j (EVOMEM_NEO4J_URI or started here)
    python bench/retrieval_speed.py --users 10 --facts 200 --json    # quick
    python bench/retrieval_speed.py --save out.json ; python bench/retrieval_speed.py --baseline out.json
"""

from __future__ import annotations

import argparse
import json
import os
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

from graph.edits import AttachFact, Conflict, CreateConcept, EditBatch, Supersede, apply_batch  # noqa: E402
from graph.models import Fact, Turn  # noqa: E402
from retrieval.retrieve import RetrievalConfig, retrieve  # noqa: E402
from retrieval.seeds.index import RouteIndexCache  # noqa: E402
from retrieval.seeds.rank import ROUTES  # noqa: E402

VOCAB = ("hiking beach knee coffee tea sushi flight window seat aisle vegan allergy peanut running swim berlin paris "
         "tokyo dog cat piano guitar novel jazz opera tennis yoga cooking garden bike train hotel museum concert "
         "budget salary manager sister brother doctor dentist gym diet sleep").split()


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p)) if xs else float("nan")


def build_user(rng: np.random.Generator, u: str, n_facts: int, dim: int) -> tuple[EditBatch, np.ndarray, list[str]]:
    emb = rng.normal(size=(n_facts, dim)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    n_concepts = max(1, n_facts // 50)
    edits: list[Any] = [CreateConcept(concept_id=f"{u}:c{i}", name=f"topic {i}") for i in range(n_concepts)]
    ids = [f"{u}:f{i}" for i in range(n_facts)]
    turns = []
    for i in range(n_facts):
        words = " ".join(rng.choice(VOCAB, size=6))
        turns.append(Turn(turn_id=f"{u}:t{i}", user_id=u, session_id="s1", seq=i, role="user", text=f"{words} {i}"))
        f = Fact(fact_id=ids[i], user_id=u, statement=f"{words} {i}", kind="preference", source_turn_ids=(f"{u}:t{i}",))
        edits.append(AttachFact(fact=f, concept_id=f"{u}:c{i % n_concepts}", embedding=tuple(emb[i].tolist())))
    # ~10% of facts in SUPERSEDES chains of length 4, ~4% in conflict pairs
    for start in range(0, n_facts // 10 * 4 - 3, 4):
        for k in range(3):
            edits.append(Supersede(new_fact_id=ids[start + k + 1], old_fact_id=ids[start + k]))
    base = n_facts // 10 * 4
    for k in range(base, min(n_facts - 1, base + n_facts // 25 * 2), 2):
        edits.append(Conflict(a=ids[k], b=ids[k + 1]))
    return EditBatch(user_id=u, session_id="s1", session_hash=f"h-{u}", turns=turns, edits=edits), emb, ids


def open_backend(name: str, tmp: Path, dim: int) -> tuple[Any, Any]:
    if name == "embedded":
        from graph.embedded import EmbeddedStore

        s = EmbeddedStore(tmp / "store")
        s.setup()
        return s, None
    from graph.neo4j import Neo4jStore

    uri, stop = os.environ.get("EVOMEM_NEO4J_URI"), None
    if not uri:
        from neo4j_server import start_neo4j  # type: ignore[import-not-found]  # tests/ is on sys.path

        uri, stop = start_neo4j()
    n4 = Neo4jStore(uri, embedding_dim=dim)
    n4.setup()
    n4.wipe()
    return n4, stop


def run_backend(name: str, args: argparse.Namespace, users: list[tuple[str, EditBatch, np.ndarray, list[str]]],
                queries: list[tuple[int, np.ndarray, str]]) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"evomem-bench-{name}-"))
    store, stop = open_backend(name, tmp, args.dim)
    cache: RouteIndexCache | None = None
    try:
        t0 = time.perf_counter()
        for u, batch, _, _ in users:
            _, cs = apply_batch(store.load_snapshot(u), batch)
            store.commit(cs)
        load_s = time.perf_counter() - t0
        cfg = RetrievalConfig(k=args.k)
        # Retrieval vectors: the generated ones, looked up by text (turn texts are the statements).
        vec = {f.statement: e for _, b, m, _ in users for f, e in
               zip((x.fact for x in b.edits if isinstance(x, AttachFact)), m)}
        cache = rc = RouteIndexCache(lambda texts: np.stack([vec[t.split(": ", 1)[-1]] for t in texts]))
        use_routes = args.routes == "all"

        def one(ui: int, qv: np.ndarray, qt: str) -> Any:
            u = users[ui][0]
            if not use_routes:
                return retrieve(store, u, qt, qv.tolist(), cfg)
            if args.serial_version:  # the version read first, then the routes (before the overlap)
                return retrieve(store, u, qt, qv.tolist(), cfg, index=rc.get(store, u))
            # as Memory.retrieve: the routes run on the cached index while the version read is in flight
            return rc.use(store, u, lambda index: retrieve(store, u, qt, qv.tolist(), cfg, index=index))

        # warm-up: one query per user (the per-user search cache and route index are built here)
        cold, cold_cpu = [], []
        for ui, qv, qt in queries[: len(users)]:
            t, c = time.perf_counter(), time.thread_time()
            one(ui, qv, qt)
            cold.append((time.perf_counter() - t) * 1e3)
            cold_cpu.append((time.thread_time() - c) * 1e3)
        # The same first queries once more, on a second cache warmed as a server warms it at start
        # (RouteIndexCache.warm_users, serving/server.py): the build runs before the request, not in it.
        rc2 = RouteIndexCache(rc.embed)
        t = time.perf_counter()
        for fut in rc2.warm_users(store, [u for u, _, _, _ in users]):
            fut.result()
        warm_open_s = time.perf_counter() - t
        first_warm, first_warm_cpu = [], []
        for ui, qv, qt in queries[: len(users)]:
            u = users[ui][0]
            t, c = time.perf_counter(), time.thread_time()
            rc2.use(store, u, lambda index: retrieve(store, u, qt, qv.tolist(), cfg, index=index))
            first_warm.append((time.perf_counter() - t) * 1e3)
            first_warm_cpu.append((time.thread_time() - c) * 1e3)
        rc2.close()
        # A freshly started Neo4j JVM spends ~20 ms of server CPU on the first version reads and a few ms
        # after thousands (JIT; /tmp probe, load 24): --warm-server-reads times a server that has served
        # that many requests (the hot path's one round trip), as a long-running server has.
        t = time.perf_counter()
        for i in range(args.warm_server_reads if name == "neo4j" else 0):
            store.version_token(users[i % len(users)][0])
        server_warm_s = time.perf_counter() - t
        total: list[float] = []
        cpu: list[float] = []
        stages: dict[str, list[float]] = {"seeds": [], "traverse": [], "assemble": []}
        stages.update({f"route_{r}": [] for r in (ROUTES if use_routes else ())})
        added = []
        for ui, qv, qt in queries:
            t, c = time.perf_counter(), time.thread_time()
            b = one(ui, qv, qt)
            total.append((time.perf_counter() - t) * 1e3)
            cpu.append((time.thread_time() - c) * 1e3)
            for k in stages:
                # a route off for this request's kind (RetrievalConfig.routes_off_for: concept) did not run
                stages[k].append(b.explain.timings_ms.get(k, 0.0))
            added.append(len(b.explain.added_by_traversal))
        n_facts = sum(len(ids) for _, _, _, ids in users)
        return {"backend": name, "load_s": load_s, "load_facts_per_s": n_facts / load_s,
                "p50_ms": pct(total, 50), "p95_ms": pct(total, 95), "cold_p50_ms": pct(cold, 50),
                "cpu_p50_ms": pct(cpu, 50), "cold_cpu_p50_ms": pct(cold_cpu, 50), "loadavg": os.getloadavg(),
                "first_after_warm_p50_ms": pct(first_warm, 50), "first_after_warm_cpu_p50_ms": pct(first_warm_cpu, 50),
                "warm_at_open_s_per_user": warm_open_s / len(users),
                "server_warm_reads": args.warm_server_reads if name == "neo4j" else 0, "server_warm_s": server_warm_s,
                "stages_p50_ms": {k: pct(v, 50) for k, v in stages.items()},
                "traversal_added_mean": statistics.fmean(added), "n_queries": len(queries)}
    finally:
        if cache is not None:
            cache.close()
        store.close()
        if stop:
            stop()


def floor(users: list[tuple[str, EditBatch, np.ndarray, list[str]]], queries: list[tuple[int, np.ndarray, str]],
          k: int) -> dict[str, Any]:
    """Exact brute-force top-K over one user's in-memory matrix: no database, no traversal."""
    times = []
    for ui, qv, _ in queries:
        m = users[ui][2]
        t = time.perf_counter()
        sims = m @ qv
        top = np.argpartition(-sims, k - 1)[:k]
        top[np.argsort(-sims[top])]
        times.append((time.perf_counter() - t) * 1e3)
    return {"backend": "numpy-floor", "p50_ms": pct(times, 50), "p95_ms": pct(times, 95)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--facts", type=int, default=1000, help="facts per user")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--backends", nargs="+", default=["embedded"], choices=["embedded", "neo4j"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--routes", choices=["all", "store"], default="all",
                    help="all = every seed route over the RouteIndex (what Memory.retrieve runs); store = the "
                         "store's own vector + text search only")
    ap.add_argument("--serial-version", action="store_true",
                    help="read the version token before the routes instead of overlapping them (the old path)")
    ap.add_argument("--warm-server-reads", type=int, default=0,
                    help="Neo4j: this many version reads before the timed queries (a server past its JVM warm-up; "
                         "0 = time a freshly started server's first requests)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--save", help="write results JSON here")
    ap.add_argument("--baseline", help="a results JSON from an earlier run to compare against")
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    users = []
    for i in range(args.users):
        u = f"user{i:04d}"
        batch, emb, ids = build_user(rng, u, args.facts, args.dim)
        users.append((u, batch, emb, ids))
    queries = []
    for qi in range(max(args.queries, args.users)):
        ui = qi % args.users
        target = users[ui][2][rng.integers(args.facts)]
        qv = target + rng.normal(scale=0.5 / np.sqrt(args.dim), size=args.dim).astype(np.float32)
        queries.append((ui, (qv / np.linalg.norm(qv)).astype(np.float32), " ".join(rng.choice(VOCAB, size=3))))

    results = {"config": {k: getattr(args, k) for k in ("users", "facts", "dim", "k", "queries", "seed", "routes",
                                                          "serial_version", "warm_server_reads")},
               "floor": floor(users, queries, args.k), "backends": {}}
    for name in args.backends:
        results["backends"][name] = r = run_backend(name, args, users, queries)
        r["ratio_to_floor_p50"] = r["p50_ms"] / results["floor"]["p50_ms"]
    if args.baseline:
        base = json.loads(Path(args.baseline).read_text())
        results["vs_baseline"] = {n: {"p50_ms": r["p50_ms"], "baseline_p50_ms": base["backends"].get(n, {}).get("p50_ms"),
                                      "speedup": (base["backends"][n]["p50_ms"] / r["p50_ms"]) if n in base["backends"] else None}
                                  for n, r in results["backends"].items()}
    if args.save:
        Path(args.save).write_text(json.dumps(results, indent=2))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    c = results["config"]
    print(f"retrieve() over {c['users']} users x {c['facts']} facts, {c['dim']}-d, K={c['k']}, {len(queries)} queries")
    print(f"{'backend':<12}{'p50 ms':>9}{'p95 ms':>9}{'x floor':>9}{'cold p50':>10}{'seeds':>8}{'trav':>8}{'asm':>8}"
          f"{'load f/s':>10}{'cpu p50':>9}{'cold cpu':>10}")
    fl = results["floor"]
    print(f"{'numpy-floor':<12}{fl['p50_ms']:>9.3f}{fl['p95_ms']:>9.3f}{1:>9.1f}")
    for n, r in results["backends"].items():
        s = r["stages_p50_ms"]
        print(f"{n:<12}{r['p50_ms']:>9.2f}{r['p95_ms']:>9.2f}{r['ratio_to_floor_p50']:>9.0f}{r['cold_p50_ms']:>10.1f}"
              f"{s['seeds']:>8.2f}{s['traverse']:>8.2f}{s['assemble']:>8.2f}{r['load_facts_per_s']:>10.0f}"
              f"{r['cpu_p50_ms']:>9.2f}{r['cold_cpu_p50_ms']:>10.1f}")
    print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; cpu = this thread's CPU "
          "time per request (time.thread_time: on a loaded box wall time also counts waiting for a core)")
    for n, r in results["backends"].items():
        print(f"{n} first query of a user after the index was built at open (warm_users, as evomem serve does): "
              f"p50 {r['first_after_warm_p50_ms']:.1f} ms wall, {r['first_after_warm_cpu_p50_ms']:.1f} ms cpu "
              f"(the build at open: {r['warm_at_open_s_per_user'] * 1e3:.0f} ms per user, in the background); "
              f"'cold' above = the build inside the first request")
    for n, r in results["backends"].items():
        if r["server_warm_reads"]:
            print(f"{n}: timed after {r['server_warm_reads']} version reads ({r['server_warm_s']:.1f} s) warmed the server")
    for n, r in results["backends"].items():
        per_route = {k[6:]: round(v, 3) for k, v in r["stages_p50_ms"].items() if k.startswith("route_")}
        if per_route:
            print(f"{n} per-route p50 ms: {per_route}")
    for n, v in results.get("vs_baseline", {}).items():
        print(f"vs baseline {n}: p50 {v['p50_ms']:.2f} ms (was {v['baseline_p50_ms']}) speedup {v['speedup']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
