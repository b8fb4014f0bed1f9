"""Embedded commit latency: small session-sized commits (2 turns, 3 facts) and purges, one by one.

    python bench/commit_latency.py                 # 300 commits over 3 users into a fresh store
    python bench/commit_latency.py --commits 1000 --purges 5

Prints p50/p95 commit latency (snapshot load + apply + commit, as an ingest does) and, with
``--purges``, the latency of ``purge_user`` on the store built so far (it rewrites the store file).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from crash_writer import T0, batch, user_of  # noqa: E402
from graph.edits import apply_batch  # noqa: E402
from graph.embedded import EmbeddedStore  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=300)
    ap.add_argument("--purges", type=int, default=0)
    ap.add_argument("--dim", type=int, default=384)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as d:
        store = EmbeddedStore(Path(d) / "store")
        store.setup()
        lat = []
        for n in range(args.commits):
            u = user_of(n)
            t0 = time.perf_counter()
            snap = store.load_snapshot(u)
            _, cs = apply_batch(snap, batch(u, n, set(snap.facts), f"{u}:c" in snap.concepts, rng, 3, args.dim), T0)
            store.commit(cs)
            lat.append(time.perf_counter() - t0)
        ms = np.asarray(lat) * 1000
        print(f"commit: n={len(ms)} p50={np.percentile(ms, 50):.1f} ms p95={np.percentile(ms, 95):.1f} ms "
              f"({len(ms) / ms.sum() * 1000:.0f} commits/s)")
        for i in range(args.purges):
            u = f"victim{i}"
            snap = store.load_snapshot(u)
            _, cs = apply_batch(snap, batch(u, i, set(), False, rng, 3, args.dim), T0)
            store.commit(cs)
            t0 = time.perf_counter()
            store.purge_user(u)
            print(f"purge_user #{i}: {(time.perf_counter() - t0) * 1000:.0f} ms")
        store.close()


if __name__ == "__main__":
    main()
