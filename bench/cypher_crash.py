"""The crash corpus against a live ``evomem serve`` (issue 43 bars), per backend.

What it does: starts ``evomem serve`` (hash embedder) on 127.0.0.1 with the example history, embedded
or on a real Neo4j, and sends the crash corpus of tests/cypher_crash.py (the probe's queries of the
SKIP/ORDER BY, folded-string and one-step-builder classes and generated variants of each) from
``--clients`` keys at once, while /health is polled every 50 ms and the server's RSS sampled. Prints,
per backend: statuses per class, /health p50/p95/max, the server's largest RSS, whether the same
process still serves, and every error message that is not a sentence; exits 1 if a bar fails
(same PID, /health p95 < 100 ms, RSS < 1.5 GB, every answer 200/4xx/408 as a sentence).

    python bench/cypher_crash.py --queries 1000                     # embedded
    python bench/cypher_crash.py --queries 1000 --backends embedded neo4j
    python bench/cypher_crash.py --queries 60 --timeout-s 0.5       # a quick look

``--timeout-s`` sets the sandbox's query timeout (EVOMEM_CYPHER_TIMEOUT_S; default 2 s as served):
the folded class runs into it, so it bounds how long the corpus takes.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import httpx  # noqa: E402
from cypher_crash import attack, corpus  # noqa: E402
from servers import start_api_server  # noqa: E402

from evomem.examples import history_batches, load_history  # noqa: E402

BARS = {"health_p95_ms": 100.0, "rss_max_mb": 1536.0}


def run_backend(backend: str, work: Path, n: int, clients: int, timeout_s: float | None, seed: int,
                neo4j_uri: str | None) -> dict[str, Any]:
    admin = f"admin-{secrets.token_hex(8)}"
    keys = [f"maya-{i}-{secrets.token_hex(8)}" for i in range(clients)]
    kf = work / f"keys-{backend}.json"
    kf.write_text(json.dumps([{"key": admin, "name": "ops"}] + [{"key": k, "name": f"c{i}", "users": ["maya"]}
                                                                 for i, k in enumerate(keys)]))
    extra = ["--store", "neo4j", "--neo4j-uri", neo4j_uri] if backend == "neo4j" and neo4j_uri else []
    env = {"EVOMEM_CYPHER_TIMEOUT_S": str(timeout_s)} if timeout_s else None
    srv = start_api_server(work, work / f"store-{backend}", None, None, api_keys_file=kf, extra_args=extra,
                           env=env, timeout_s=240)
    try:
        with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {admin}"}, timeout=60,
                          trust_env=False) as c:
            if backend == "neo4j":
                c.delete("/v1/users/maya", params={"confirm": "true"})
            for b in history_batches(load_history()):
                if b.user_id == "maya":
                    c.post(f"/v1/users/{b.user_id}/edits", json=b.model_dump(mode="json")).raise_for_status()
        pid = srv.proc.pid
        out = attack(srv.url, pid, keys, "maya", list(corpus(n, seed)))
        out["same_pid_serving"] = srv.proc.poll() is None and httpx.get(
            f"{srv.url}/health", timeout=5, trust_env=False).status_code == 200
        statuses = {s for v in out["statuses"].values() for s in v}
        out["bars"] = {
            "same_pid": out["same_pid_serving"],
            "health_p95_ms<100": (out["health_p95_ms"] or 1e9) < BARS["health_p95_ms"],
            "rss<1.5GB": (out["rss_max_mb"] or 1e9) < BARS["rss_max_mb"],
            "4xx/408 sentences": not out["n_not_a_sentence"] and not out["transport_errors"]
            and all(s == 200 or 400 <= s < 500 for s in statuses)}
        return out
    finally:
        srv.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=1000, help="Corpus size per backend.")
    ap.add_argument("--clients", type=int, default=4, help="Concurrent clients, one key each.")
    ap.add_argument("--backends", nargs="+", default=["embedded"], choices=["embedded", "neo4j"])
    ap.add_argument("--timeout-s", type=float, default=None, help="Sandbox query timeout (default: as served, 2 s).")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    report: dict[str, Any] = {}
    stop = None
    uri = os.environ.get("EVOMEM_NEO4J_URI")
    if "neo4j" in args.backends and not uri:
        from neo4j_server import start_neo4j

        uri, stop = start_neo4j()
    try:
        with tempfile.TemporaryDirectory(prefix="evomem-bench-crash-") as tmp:
            for b in args.backends:
                report[b] = run_backend(b, Path(tmp), args.queries, args.clients, args.timeout_s, args.seed, uri)
                print(json.dumps({b: report[b]}, indent=2), flush=True)
    finally:
        if stop:
            stop()
    return 0 if all(all(r["bars"].values()) for r in report.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
