"""Bounded loopback load test of ``evomem serve``: N concurrent clients x M requests each.

Starts ``evomem serve-model`` (SmolLM2, answers capped at a few tokens) and ``evomem serve`` on
127.0.0.1 with one API key per user (each bound to its user) and an admin key; gives every user the
example history's facts plus a unique canary fact; then every client, acting for one user with that
user's key, mixes facts/search/explain/state/answer/chat requests and cross-user probes.

Checked on every response: no 5xx, the expected status (200; 403 for cross-user probes), and that
the body contains no other user's canary and no other user's ids. Reported: p50/p95/max per endpoint.
Runs on the embedded store, and also on Neo4j when EVOMEM_NEO4J_URI is set (or --stores neo4j).

    python bench/load.py                                  # 8 clients x 25 requests, embedded
    python bench/load.py --clients 16 --requests 50 --stores embedded neo4j
    python bench/load.py --model none                     # no answer/chat traffic, no model server
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import secrets
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import httpx  # noqa: E402
from servers import ServerProcess, free_port, start_model_server, start_process  # noqa: E402

from evomem.examples import history_batches, load_history  # noqa: E402

# endpoint -> weight in the mix (answer/chat go through the model server: slowest, fewest)
MIX = {"facts": 2, "search": 3, "explain": 2, "state": 2, "answer": 1, "chat": 1, "probe": 1}


def make_users(n: int, run: str) -> tuple[list[dict[str, Any]], dict[str, str], list[dict[str, str]]]:
    """n users cloned from the example history's users, ids prefixed by ``run``; one canary each."""
    hist = load_history()
    users, canaries, requests = [], {}, []
    for i in range(n):
        tpl = copy.deepcopy(hist["users"][i % len(hist["users"])])
        uid = f"{run}-{tpl['user_id']}-{i}"
        tpl["user_id"] = uid
        canary = f"CANARY{secrets.token_hex(6).upper()}"
        canaries[uid] = canary
        tpl["sessions"][-1].setdefault("facts", []).append(
            {"key": "locker", "statement": f"My gym locker code is {canary}", "kind": "circumstance",
             "concept": ["misc"], "turn": 0})
        users.append(tpl)
        requests += [{"user_id": uid, "request": r["request"]} for r in hist["requests"]
                     if r["user_id"] == hist["users"][i % len(hist["users"])]["user_id"]]
        requests.append({"user_id": uid, "request": "What is my gym locker code?"})
    return users, canaries, requests


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p)) if xs else float("nan")


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lat: dict[str, list[float]] = {}
        self.status: dict[str, dict[int, int]] = {}
        self.five_xx: list[str] = []
        self.unexpected: list[str] = []
        self.leaks: list[str] = []
        self.own_canary_seen = 0

    def add(self, ep: str, status: int, ms: float) -> None:
        with self.lock:
            self.lat.setdefault(ep, []).append(ms)
            self.status.setdefault(ep, {}).setdefault(status, 0)
            self.status[ep][status] += 1


def client_run(api: str, key: str, user: str, others: list[str], canaries: dict[str, str], reqs: list[str],
               n: int, offset: int, tally: Tally, model: bool, max_tokens: int) -> None:
    mix = [ep for ep, w in MIX.items() for _ in range(w) if model or ep not in ("answer", "chat")]
    foreign = [canaries[o] for o in others] + [f"{o}::" for o in others]
    with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {key}"}, timeout=300, trust_env=False) as c:
        for j in range(n):
            ep = mix[(offset + j) % len(mix)]
            q = reqs[(offset + j) % len(reqs)]
            t0 = time.perf_counter()
            if ep == "facts":
                r = c.get(f"/v1/users/{user}/facts", params={"limit": 50})
            elif ep == "probe":
                r = c.get(f"/v1/users/{others[(offset + j) % len(others)]}/facts")
            elif ep == "chat":
                r = c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": q}], "user": user,
                                                         "max_tokens": max_tokens})
            else:
                body: dict[str, Any] = {"query": q, "k": 4}
                if ep == "answer":
                    body["max_tokens"] = max_tokens
                r = c.post(f"/v1/users/{user}/{ep}", json=body)
            ms = (time.perf_counter() - t0) * 1e3
            tally.add(ep, r.status_code, ms)
            text = r.text
            with tally.lock:
                if r.status_code >= 500:
                    tally.five_xx.append(f"{ep} {r.status_code} {text[:200]}")
                if r.status_code != (403 if ep == "probe" else 200):
                    tally.unexpected.append(f"{ep} {r.status_code} {text[:200]}")
                hit = [f for f in foreign if f in text]
                if hit:
                    tally.leaks.append(f"{user} {ep}: response contains {hit[:3]}")
                if canaries[user] in text:
                    tally.own_canary_seen += 1


def run_store(store: str, args: argparse.Namespace, work: Path, model_url: str | None) -> dict[str, Any]:
    run = f"lt{secrets.token_hex(3)}"
    users, canaries, requests = make_users(args.users, run)
    admin = f"admin-{secrets.token_hex(12)}"
    keys = {u["user_id"]: f"k-{secrets.token_hex(12)}" for u in users}
    keys_file = work / f"keys-{store}.json"
    keys_file.write_text(json.dumps([{"key": admin, "name": "admin"}]
                                    + [{"key": k, "name": u, "users": [u]} for u, k in keys.items()]))
    port = free_port()
    cmd = ["serve", "--host", "127.0.0.1", "--port", str(port), "--api-keys-file", str(keys_file), "--embedder",
           args.embedder, "--log-level", "warning", "--store", store]
    cmd += ["--store-path", str(work / f"store-{run}")] if store == "embedded" else []
    cmd += ["--answer-url", model_url, "--answer-model", "smollm2-135m-instruct", "--answer-timeout-s", "300"] \
        if model_url else []
    api: ServerProcess = start_process(cmd, work / f"api-{store}.log", port, timeout_s=180)
    out: dict[str, Any] = {"store": store}
    try:
        with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {admin}"}, timeout=120,
                          trust_env=False) as c:
            t0 = time.perf_counter()
            for b in history_batches({"users": users}):
                r = c.post(f"/v1/users/{b.user_id}/edits", json=b.model_dump(mode="json"))
                r.raise_for_status()
            out["seed_s"] = round(time.perf_counter() - t0, 2)
        tally = Tally()
        uids = [u["user_id"] for u in users]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            futs = []
            for i in range(args.clients):
                u = uids[i % len(uids)]
                futs.append(pool.submit(client_run, api.url, keys[u], u, [o for o in uids if o != u], canaries,
                                        [r["request"] for r in requests if r["user_id"] == u], args.requests, i * 7,
                                        tally, model_url is not None, args.max_tokens))
            for f in futs:
                f.result()
        wall = time.perf_counter() - t0
        total = sum(len(v) for v in tally.lat.values())
        out |= {"clients": args.clients, "requests_per_client": args.requests, "users": len(uids), "requests": total,
                "wall_s": round(wall, 2), "rps": round(total / wall, 1), "five_xx": len(tally.five_xx),
                "unexpected_status": len(tally.unexpected), "cross_user_leaks": len(tally.leaks),
                "own_canary_responses": tally.own_canary_seen,
                "endpoints": {ep: {"n": len(v), "p50_ms": round(pct(v, 50), 1), "p95_ms": round(pct(v, 95), 1),
                                   "max_ms": round(max(v), 1), "status": tally.status[ep]}
                              for ep, v in sorted(tally.lat.items())},
                "examples": {"five_xx": tally.five_xx[:3], "unexpected": tally.unexpected[:3], "leaks": tally.leaks[:3]}}
        with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {admin}"}, timeout=120,
                          trust_env=False) as c:
            if store != "embedded":  # leave a shared Neo4j as we found it
                for u in uids:
                    c.delete(f"/v1/users/{u}", params={"confirm": "true"})
    finally:
        api.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=8, help="Concurrent clients (threads, one connection each).")
    ap.add_argument("--requests", type=int, default=25, help="Requests per client.")
    ap.add_argument("--users", type=int, default=6, help="Users (clients are spread over them).")
    ap.add_argument("--stores", nargs="+", default=None, choices=["embedded", "neo4j"],
                    help="Backends (default: embedded, plus neo4j when EVOMEM_NEO4J_URI is set).")
    ap.add_argument("--embedder", default="hash", choices=["hash", "minilm"], help="Server embedder.")
    ap.add_argument("--model", default="smollm2", choices=["smollm2", "none"], help="Answer model server.")
    ap.add_argument("--max-tokens", type=int, default=8, help="Answer/chat length cap (keeps CPU answers short).")
    ap.add_argument("--json", action="store_true", help="Print JSON only.")
    args = ap.parse_args(argv)
    stores = args.stores or (["embedded", "neo4j"] if os.environ.get("EVOMEM_NEO4J_URI") else ["embedded"])
    work = Path(tempfile.mkdtemp(prefix="evomem-load-"))
    model: ServerProcess | None = start_model_server(work) if args.model != "none" else None
    results = []
    try:
        for store in stores:
            results.append(run_store(store, args, work, model.url + "/v1" if model else None))
    finally:
        if model:
            model.stop()
    if args.json:
        print(json.dumps(results, indent=2))
    for res in results if not args.json else []:
        print(f"\n== evomem serve on {res['store']}: {res['clients']} clients x {res['requests_per_client']} requests, "
              f"{res['users']} users — {res['requests']} requests in {res['wall_s']}s ({res['rps']} req/s)")
        print(f"   5xx: {res['five_xx']}   unexpected status: {res['unexpected_status']}   cross-user leaks: "
              f"{res['cross_user_leaks']}   own-canary responses: {res['own_canary_responses']}")
        print(f"   {'endpoint':<10}{'n':>6}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}  status")
        for ep, e in res["endpoints"].items():
            print(f"   {ep:<10}{e['n']:>6}{e['p50_ms']:>10.1f}{e['p95_ms']:>10.1f}{e['max_ms']:>10.1f}  {e['status']}")
        for k, v in res["examples"].items():
            for x in v:
                print(f"   {k}: {x}")
    bad = any(r["five_xx"] or r["cross_user_leaks"] or r["unexpected_status"] for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
