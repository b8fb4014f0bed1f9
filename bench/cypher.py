"""Bars of user Cypher (issue 10): pathological input, /health under slow queries, fuzz counts.

    python bench/cypher.py                         # embedded only
    python bench/cypher.py --neo4j                 # also the fuzz through the Neo4j store (starts a server)
    python bench/cypher.py --fuzz 5000 --seconds 20

1. 10,000-character pathological queries (and the same cut to the 4,000-character limit, so they
   are lexed and parsed): time to refuse or answer, in-process and over HTTP.
2. ``evomem serve`` (embedded, hash embedder) on 127.0.0.1; 8 clients loop on slow Cypher queries
   (each runs into the 2 s timeout) while /health is polled every 50 ms: p50/p95/max of /health and
   the statuses the slow queries got. Also: a 3rd concurrent query on one key gets 429.
3. The grammar fuzz of tests/cypher_attack.py against two canary users: queries, answered,
   cross-user rows (must be 0), file access (must be 0), per backend.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import httpx  # noqa: E402
from cypher_attack import fuzz, seed_two_users  # noqa: E402
from servers import free_port, start_process  # noqa: E402

from evomem.examples import history_batches, load_history  # noqa: E402
from graph.cypher import CypherRefused, compile_query  # noqa: E402

PATHOLOGICAL = {
    "nested parens": "RETURN " + "(" * 5000 + "1" + ")" * 4993,
    "long OR chain": "MATCH (a:Fact) WHERE " + " OR ".join(f"a.statement = 'x{i}'" for i in range(600)) + " RETURN a",
    "comment storm": "MATCH (a) " + "/**/" * 2495 + " RETURN a",
    "escaped quotes": "RETURN '" + "\\'" * 4995 + "'",
    "many patterns": "MATCH " + "(a)-[]-" * 1425 + "(b) RETURN b",
    "unterminated backtick": "`" + "x" * 9999,
}
SLOW = "UNWIND range(1, 10000) AS x UNWIND range(1, 10000) AS y UNWIND range(1, 10000) AS z RETURN sum(x + y + z)"


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def pathological(store: Any, chars: int) -> dict[str, Any]:
    out = {}
    for name, q in PATHOLOGICAL.items():
        q = q[:chars].ljust(chars)
        t = time.perf_counter()
        try:
            compile_query(q, None, "maya")
            outcome = "compiled"
        except CypherRefused as e:
            outcome = f"refused: {str(e)[:60]}"
        ms_compile = (time.perf_counter() - t) * 1e3
        t = time.perf_counter()
        try:
            store.run_readonly_cypher("maya", q)
        except CypherRefused:
            pass
        out[name] = {"chars": len(q), "compile_ms": round(ms_compile, 2),
                     "store_ms": round((time.perf_counter() - t) * 1e3, 2), "outcome": outcome}
    return out


def http_bars(work: Path, seconds: float, clients: int) -> dict[str, Any]:
    hist = load_history()
    users = [u["user_id"] for u in hist["users"]]
    keys = {f"c{i}": f"k-{secrets.token_hex(12)}" for i in range(clients)}
    admin = f"admin-{secrets.token_hex(12)}"
    keys_file = work / "keys.json"
    keys_file.write_text(json.dumps([{"key": admin, "name": "admin"}] + [{"key": k, "name": n, "users": users}
                                                                          for n, k in keys.items()]))
    port = free_port()
    api = start_process(["serve", "--host", "127.0.0.1", "--port", str(port), "--api-keys-file", str(keys_file),
                         "--embedder", "hash", "--log-level", "warning", "--store", "embedded",
                         "--store-path", str(work / "store")], work / "api.log", port, timeout_s=180)
    out: dict[str, Any] = {}
    try:
        with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {admin}"}, timeout=60,
                          trust_env=False) as c:
            for b in history_batches(hist):
                c.post(f"/v1/users/{b.user_id}/edits", json=b.model_dump(mode="json")).raise_for_status()
            big = {n: q[:10_000].ljust(10_000) for n, q in PATHOLOGICAL.items()}
            http = {}
            for n, q in big.items():
                t = time.perf_counter()
                r = c.post("/v1/users/maya/cypher", json={"query": q})
                http[n] = {"status": r.status_code, "ms": round((time.perf_counter() - t) * 1e3, 1)}
            out["pathological_http"] = http
            # 429: a third concurrent query on one key
            with ThreadPoolExecutor(3) as pool:
                st = list(pool.map(lambda _: httpx.post(f"{api.url}/v1/users/maya/cypher", json={"query": SLOW},
                                                         headers={"Authorization": f"Bearer {keys['c0']}"},
                                                         timeout=60, trust_env=False).status_code, range(3)))
            out["three_concurrent_on_one_key"] = sorted(st)
        stop = threading.Event()
        statuses: dict[int, int] = {}
        slow_ms: list[float] = []
        lock = threading.Lock()

        def client(i: int) -> None:
            key = keys[f"c{i}"]
            with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {key}"}, timeout=60,
                              trust_env=False) as c:
                while not stop.is_set():
                    t = time.perf_counter()
                    r = c.post(f"/v1/users/{users[i % len(users)]}/cypher", json={"query": SLOW})
                    with lock:
                        statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                        slow_ms.append((time.perf_counter() - t) * 1e3)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for th in threads:
            th.start()
        time.sleep(1.0)  # let every client have a query running
        health: list[float] = []
        with httpx.Client(base_url=api.url, timeout=30, trust_env=False) as h:
            t_end = time.perf_counter() + seconds
            while time.perf_counter() < t_end:
                t = time.perf_counter()
                assert h.get("/health").status_code == 200
                health.append((time.perf_counter() - t) * 1e3)
                time.sleep(0.05)
        stop.set()
        for th in threads:
            th.join()
        out["health_under_slow_queries"] = {
            "clients": clients, "seconds": seconds, "n": len(health), "p50_ms": round(statistics.median(health), 1),
            "p95_ms": round(pct(health, 95), 1), "max_ms": round(max(health), 1),
            "slow_query_statuses": statuses, "slow_query_p50_ms": round(statistics.median(slow_ms), 1)}
    finally:
        api.stop()
    return out


def fuzz_store(kind: str, work: Path, n: int) -> dict[str, Any]:
    stop = None
    if kind == "embedded":
        from graph.embedded import EmbeddedStore

        store: Any = EmbeddedStore(work / f"fuzz-{kind}")
        store.setup()
    else:
        import os

        from neo4j_server import start_neo4j

        from graph.neo4j import Neo4jStore

        uri = os.environ.get("EVOMEM_NEO4J_URI")
        if not uri:
            uri, stop = start_neo4j()
        store = Neo4jStore(uri, embedding_dim=16)
        store.setup()
        store.wipe()
    try:
        seed_two_users(store)
        root = work / f"files-{kind}"
        root.mkdir()
        t = time.perf_counter()
        stats = fuzz(store, root, n)
        stats["seconds"] = round(time.perf_counter() - t, 1)
        return stats
    finally:
        if kind != "embedded":
            store.wipe()
        store.close()
        if stop:
            stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=15.0, help="How long /health is polled under load.")
    ap.add_argument("--fuzz", type=int, default=5000, help="Generated queries per backend.")
    ap.add_argument("--neo4j", action="store_true", help="Also fuzz through the Neo4j store.")
    ap.add_argument("--skip-http", action="store_true")
    args = ap.parse_args(argv)
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="evomem-bench-cypher-") as tmp:
        work = Path(tmp)
        from graph.embedded import EmbeddedStore

        s = EmbeddedStore(work / "patho")
        s.setup()
        seed_two_users(s)
        report["pathological_10k"] = pathological(s, 10_000)
        report["pathological_4k"] = pathological(s, 4000)  # at the length limit: lexed and parsed
        s.close()
        if not args.skip_http:
            report |= http_bars(work, args.seconds, args.clients)
        report["fuzz"] = {k: fuzz_store(k, work, args.fuzz) for k in (["embedded", "neo4j"] if args.neo4j
                                                                       else ["embedded"])}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
