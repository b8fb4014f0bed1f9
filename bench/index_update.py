"""Route index update per session, and the first request after it, at several history sizes.

For each size N: a user with N facts (one turn per two facts, 384-d hash embedder: no model) is
loaded and their route index built once (``cold build``). Then S sessions of 20 facts are committed
one by one through ``Memory.apply``; right after each commit one request is served
(``Memory.retrieve``): its time is the *first request* after the commit, and the part of it spent
bringing the index to the new version is the *update* (``timings_ms['index']``: extending the
index by the session's ChangeSet, retrieval/seeds/delta.py; a rebuild before). A second request at the
same version is ``steady``. Prints p50 / max per size (wall; the first and steady requests also in the
request thread's CPU time, for a loaded box) and the issue-45 bars, from the same run:

- update time per session flat across sizes: max(p50) / min(p50) <= 2;
- first request after committing one session, at 10k facts: p50 <= 50 ms.

    python bench/index_update.py                              # 1k, 5k, 10k, 20k facts, 10 sessions each
    python bench/index_update.py --sizes 500 2000 --sessions 5  # quick
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graph.edits import AttachFact, CreateConcept, EditBatch, Supersede, apply_batch  # noqa: E402
from graph.embedded import EmbeddedStore  # noqa: E402
from graph.models import Fact, Turn  # noqa: E402
from llmclients.embeddings import HashEmbedder  # noqa: E402
from memcore.memory import Memory  # noqa: E402

VOCAB = ("hiking beach knee coffee tea sushi flight window seat aisle vegan allergy peanut running swim berlin paris "
         "tokyo dog cat piano guitar novel jazz opera tennis yoga cooking garden bike train hotel museum concert "
         "budget salary manager sister brother doctor dentist gym diet sleep").split()
T0 = datetime(2023, 1, 1, tzinfo=timezone.utc)


def session(rng: np.random.Generator, u: str, s: int, n_facts: int, first: bool) -> EditBatch:
    """One session: n_facts/2 turns, two facts per turn, a few supersedes of the session's own facts."""
    at = T0 + timedelta(hours=s)
    turns: list[Turn] = []
    edits: list[Any] = []
    if first:
        edits.append(CreateConcept(concept_id=f"{u}:c", name="everything"))
    ids = []
    for i in range(max(1, n_facts // 2)):
        tid = f"{u}:s{s}:t{i}"
        words = " ".join(rng.choice(VOCAB, size=5))
        turns.append(Turn(turn_id=tid, user_id=u, session_id=f"s{s:05d}", seq=i, role="user", at=at,
                          text=f"{words} w{rng.integers(5000)} w{rng.integers(5000)}"))
        for j in range(2):
            fid = f"{u}:s{s}:f{i}{j}"
            text = f"{' '.join(rng.choice(VOCAB, size=4))} w{rng.integers(5000)} {s}-{i}-{j}"
            edits.append(AttachFact(fact=Fact(fact_id=fid, user_id=u, statement=text, source_turn_ids=(tid,),
                                              observed_at=at), concept_id=f"{u}:c"))
            ids.append(fid)
    for k in range(0, len(ids) - 1, 8):
        edits.append(Supersede(new_fact_id=ids[k + 1], old_fact_id=ids[k]))
    return EditBatch(user_id=u, session_id=f"s{s:05d}", session_hash=f"h{s}", turns=turns, edits=edits)


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p))


def run_size(n: int, sessions: int, per_session: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    tmp = Path(tempfile.mkdtemp(prefix="evomem-index-update-"))
    store = EmbeddedStore(tmp / "store")
    store.setup()
    mem = Memory(store, HashEmbedder(384))
    u = f"user{n}"
    t = time.perf_counter()
    history = [session(rng, u, 0, n, True)]
    for h in history:  # the history in one commit (the load is not what is measured here)
        emb = mem._with_embeddings(h)
        _, cs = apply_batch(store.load_snapshot(u), emb)
        store.commit(cs)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    mem.routes.get(store, u)
    cold_ms = (time.perf_counter() - t) * 1e3
    out: dict[str, list[float]] = {"update": [], "first": [], "steady": [], "commit": [], "first_cpu": [], "steady_cpu": []}
    for s in range(1, sessions + 1):
        batch = session(rng, u, s, per_session, False)
        t = time.perf_counter()
        mem.apply(batch)
        out["commit"].append((time.perf_counter() - t) * 1e3)
        q = " ".join(rng.choice(VOCAB, size=3))
        t, c = time.perf_counter(), time.thread_time()
        got = mem.retrieve(u, q)
        out["first"].append((time.perf_counter() - t) * 1e3)
        out["first_cpu"].append((time.thread_time() - c) * 1e3)
        out["update"].append(got.explain.timings_ms["index"])
        t, c = time.perf_counter(), time.thread_time()
        mem.retrieve(u, q)
        out["steady"].append((time.perf_counter() - t) * 1e3)
        out["steady_cpu"].append((time.thread_time() - c) * 1e3)
    mem.close()
    return {"facts": n, "load_s": round(load_s, 1), "cold_build_ms": round(cold_ms, 1)} | {
        f"{k}_p50_ms": round(pct(v, 50), 2) for k, v in out.items()} | {
        f"{k}_max_ms": round(max(v), 2) for k, v in out.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000, 20000], help="facts per user")
    ap.add_argument("--sessions", type=int, default=10, help="sessions committed after the history, per size")
    ap.add_argument("--session-facts", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = [run_size(n, a.sessions, a.session_facts, a.seed) for n in a.sizes]
    upd = [r["update_p50_ms"] for r in rows]
    flat = max(upd) / max(min(upd), 1e-9)
    at10k = [r for r in rows if r["facts"] == 10000]
    res = {"rows": rows, "update_flatness": round(flat, 2), "update_flat_bar": 2.0,
           "first_p50_10k_ms": at10k[0]["first_p50_ms"] if at10k else None, "first_bar_ms": 50.0}
    if a.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"{'facts':>7}{'load s':>8}{'cold ms':>9}{'update p50':>12}{'max':>8}{'first p50':>11}{'max':>8}"
          f"{'steady p50':>12}{'commit p50':>12}{'first cpu':>11}{'steady cpu':>12}")
    for r in rows:
        print(f"{r['facts']:>7}{r['load_s']:>8}{r['cold_build_ms']:>9.0f}{r['update_p50_ms']:>12.2f}{r['update_max_ms']:>8.1f}"
              f"{r['first_p50_ms']:>11.2f}{r['first_max_ms']:>8.1f}{r['steady_p50_ms']:>12.2f}{r['commit_p50_ms']:>12.1f}"
              f"{r['first_cpu_p50_ms']:>11.2f}{r['steady_cpu_p50_ms']:>12.2f}")
    print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; cpu = the request "
          "thread's CPU time (time.thread_time), p50")
    print(f"update per session flat across sizes: max/min p50 = {flat:.2f} (bar <= 2): {'PASS' if flat <= 2 else 'FAIL'}")
    if at10k:
        f = at10k[0]["first_p50_ms"]
        print(f"first request after one session at 10k facts: p50 {f:.1f} ms (bar <= 50): {'PASS' if f <= 50 else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
