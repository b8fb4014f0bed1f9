"""Scale-out benchmark: `evomem serve --workers N` processes behind one address on one Neo4j (loopback).

For each N in ``--workers`` (default 1 2 4): wipe the Neo4j, start ``evomem serve --workers N`` (hash
embedder, rule policy, no answer model loaded: the store and the API are measured, not a model), then

1. **writes**: ``--writers`` client threads post ``--sessions`` distinct sessions each, spread over
   ``--users`` users (the same users from every thread, so a user's commits race across worker
   processes); every acknowledged session must be in the store at the end: ``lost`` counts those
   that are not;
2. **search**: after ``--warmup`` untimed seconds (each worker builds a user's route index on its first
   search of that user), ``--clients`` threads post ``/search`` for ``--seconds`` seconds to random users and
   count requests/s and p50; every returned fact must be the asked user's: ``cross_user`` counts rows
   of another user.

    python bench/scaleout.py                          # EVOMEM_NEO4J_URI, or a Neo4j started here
    python bench/scaleout.py --workers 1 2 --seconds 5 --json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

WORDS = ("hiking beach knee coffee tea sushi flight window seat vegan allergy running swim berlin paris tokyo dog "
         "cat piano guitar novel jazz opera tennis yoga cooking garden bike train hotel museum concert").split()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(uri: str, workers: int, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "EVOMEM_STORE": "neo4j", "EVOMEM_NEO4J_URI": uri, "EVOMEM_EMBEDDER": "hash",
           "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "evomem.cli", "serve", "--no-auth", "--host", "127.0.0.1", "--port", str(port),
           "--workers", str(workers), "--policy", "rule", "--log-level", "warning",
           # search never calls the answer model: a URL nothing listens on keeps SmolLM2 out of every worker
           "--answer-url", "http://127.0.0.1:9/v1", "--answer-model", "none"]
    return subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_ready(base: str, proc: subprocess.Popen[bytes], timeout: float = 300.0) -> None:
    import httpx

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {(proc.stderr.read() if proc.stderr else b'').decode()[-2000:]}")
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("server did not become ready")


def session(u: str, sid: str, rng: random.Random) -> dict[str, Any]:
    turns = [{"role": "user", "text": f"I really like {' and '.join(rng.sample(WORDS, 2))} since {sid}."}
             for _ in range(3)]
    return {"session_id": sid, "turns": turns}


def write_phase(base: str, users: list[str], writers: int, sessions: int, seed: int) -> dict[str, Any]:
    import httpx

    acked: list[tuple[str, str]] = []
    refused: dict[str, int] = {}
    lock = threading.Lock()

    def worker(w: int) -> None:
        rng = random.Random(seed * 1000 + w)
        with httpx.Client(base_url=base, timeout=120) as c:
            for i in range(sessions):
                u = users[(w + i) % len(users)]
                sid = f"w{w}-s{i}"
                r = c.post(f"/v1/users/{u}/sessions", json=session(u, sid, rng))
                with lock:
                    if r.status_code == 200 and r.json().get("status") == "committed":
                        acked.append((u, sid))
                    else:
                        key = f"{r.status_code}:{r.json().get('code', '') if r.headers.get('content-type', '').startswith('application/json') else ''}"
                        refused[key] = refused.get(key, 0) + 1

    t = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(writers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return {"acked": acked, "refused": refused, "seconds": time.perf_counter() - t}


def search_phase(base: str, users: list[str], clients: int, seconds: float, seed: int) -> dict[str, Any]:
    import httpx

    from graph.ids import id_owner

    lat: list[float] = []
    cross = errors = rows = 0
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def worker(w: int) -> None:
        nonlocal cross, errors, rows
        rng = random.Random(seed * 7919 + w)
        mine: list[float] = []
        with httpx.Client(base_url=base, timeout=60) as c:
            while time.monotonic() < end:
                u = rng.choice(users)
                t = time.perf_counter()
                try:
                    r = c.post(f"/v1/users/{u}/search", json={"query": " ".join(rng.sample(WORDS, 3))})
                except httpx.HTTPError:
                    with lock:
                        errors += 1
                    continue
                mine.append((time.perf_counter() - t) * 1e3)
                with lock:
                    if r.status_code != 200:
                        errors += 1
                        continue
                    items = r.json()["items"]
                    rows += len(items)
                    cross += sum(1 for it in items if it["fact"]["user_id"] != u
                                 or id_owner(it["fact"]["fact_id"]) not in (None, u))
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(clients)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    return {"requests": len(lat), "rps": len(lat) / wall, "p50_ms": statistics.median(lat) if lat else float("nan"),
            "errors": errors, "rows": rows, "cross_user": cross}


def run_one(uri: str, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    from graph.neo4j import Neo4jStore

    store = Neo4jStore(uri, embedding_dim=384)
    store.setup()
    store.wipe()
    users = [f"user{i:03d}" for i in range(args.users)]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(uri, workers, port)
    try:
        wait_ready(base, proc)
        w = write_phase(base, users, args.writers, args.sessions, args.seed)
        # untimed: every worker process builds each user's route index on its first search of that user
        search_phase(base, users, args.clients, args.warmup, args.seed + 1)
        s = search_phase(base, users, args.clients, args.seconds, args.seed)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    stored = {u: set(store.load_snapshot(u).sessions) for u in users}
    store.close()
    lost = [f"{u}/{sid}" for u, sid in w["acked"] if sid not in stored[u]]
    return {"workers": workers, "search_rps": s["rps"], "search_p50_ms": s["p50_ms"], "search_requests": s["requests"],
            "search_errors": s["errors"], "rows": s["rows"], "cross_user_rows": s["cross_user"],
            "writes_acked": len(w["acked"]), "writes_refused": w["refused"], "lost_writes": len(lost),
            "lost_examples": lost[:5], "write_s": w["seconds"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--writers", type=int, default=4, help="concurrent writing clients")
    ap.add_argument("--sessions", type=int, default=6, help="sessions each writer posts")
    ap.add_argument("--clients", type=int, default=8, help="concurrent searching clients")
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--warmup", type=float, default=60.0, help="untimed search seconds first (cold route indexes)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    uri, stop = os.environ.get("EVOMEM_NEO4J_URI"), None
    if not uri:
        from neo4j_server import start_neo4j  # type: ignore[import-not-found]  # tests/ is on sys.path

        uri, stop = start_neo4j()
    try:
        results = [run_one(uri, n, args) for n in args.workers]
    finally:
        if stop:
            stop()
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"search over {args.users} users, {args.clients} clients x {args.seconds:.0f} s; writes: {args.writers} "
          f"writers x {args.sessions} sessions (users shared); one Neo4j on loopback; load {os.getloadavg()[0]:.1f}")
    print(f"{'workers':>8}{'search/s':>10}{'p50 ms':>9}{'errors':>8}{'cross-user':>11}{'acked':>7}{'lost':>6}  refused")
    for r in results:
        print(f"{r['workers']:>8}{r['search_rps']:>10.1f}{r['search_p50_ms']:>9.1f}{r['search_errors']:>8}"
              f"{r['cross_user_rows']:>11}{r['writes_acked']:>7}{r['lost_writes']:>6}  {r['writes_refused']}")
    return 0 if all(r["cross_user_rows"] == 0 and r["lost_writes"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
