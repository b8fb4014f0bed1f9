"""Users partitioned over two Neo4j servers, and moving users between them (issue 45, item 6).

Builds synthetic users (bench/retrieval_speed.py's generator: facts, turns, concepts, SUPERSEDES and
CONFLICTS_WITH), loads them into a ``PartitionedStore`` over two servers (the 'hash' rule splits them),
then:

- search: the same vector and text searches through the partitioned store and directly on each user's
  server (same results; p50 of both, so the routing's own cost shows);
- migrate: each user moved to the other server (``graph.partition.migrate_user``: lock, export, import,
  verify byte-identical, map, delete), timed per user, and the export compared with the one before.

    python bench/partition_migrate.py --uris bolt://127.0.0.1:7687 bolt://127.0.0.1:7688
    python bench/partition_migrate.py                     # starts two servers with scripts/neo4j-server

Destructive: both servers are wiped. Prints figures with the load average; exit 1 if a result differs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from graph.edits import apply_batch  # noqa: E402
from graph.partition import PartitionConfig, PartitionedStore, migrate_user  # noqa: E402
from graph.portable import export_user  # noqa: E402
from graph.snapshot import Snapshot  # noqa: E402
from retrieval_speed import build_user  # noqa: E402

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uris", nargs=2, default=None, help="two Bolt URIs (default: start two servers here)")
    ap.add_argument("--users", type=int, default=4)
    ap.add_argument("--facts", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--dim", type=int, default=384)
    a = ap.parse_args()
    stops: list[Callable[[], None]] = []
    uris = a.uris
    if not uris:
        from neo4j_server import start_neo4j

        uris = []
        for _ in range(2):
            uri, stop = start_neo4j()
            uris.append(uri)
            stops.append(stop)
    cfg = PartitionConfig.model_validate({"servers": [{"name": n, "uri": u} for n, u in zip("ab", uris)],
                                          "map_path": str(Path(tempfile.mkdtemp()) / "map.json")})
    store = PartitionedStore.open(cfg, embedding_dim=a.dim)
    ok = True
    try:
        store.setup()
        for m in store.members.values():
            m.wipe()  # type: ignore[attr-defined]
        rng = np.random.default_rng(0)
        users = [f"user{i}" for i in range(a.users)]
        load_s = 0.0
        for u in users:
            batch, _, _ = build_user(rng, u, a.facts, a.dim)
            _, cs = apply_batch(Snapshot(user_id=u), batch, T0)
            t = time.perf_counter()
            store.commit(cs)
            load_s += time.perf_counter() - t
        split = {n: [u for u in users if store.server_for(u) == n] for n in store.members}
        print(f"loaded {a.users} users x {a.facts} facts: {a.users * a.facts / load_s:.0f} facts/s; split {split}")
        before = {u: export_user(store, u) for u in users}

        lat: dict[str, list[float]] = {"partitioned": [], "direct": []}
        differ = 0
        for q in range(a.queries):
            u = users[q % len(users)]
            vec = rng.normal(size=a.dim).astype(np.float32).tolist()
            text = "coffee hiking"
            got: dict[str, Any] = {}
            for name, s in (("partitioned", store), ("direct", store.store_for(u))):
                t = time.perf_counter()
                got[name] = (s.vector_search(u, vec, 10), s.text_search(u, text, 10))
                lat[name].append((time.perf_counter() - t) * 1e3)
            differ += got["partitioned"] != got["direct"]
        p50 = {k: statistics.median(v[len(users):]) for k, v in lat.items()}  # the first per user fills caches
        print(f"search (vector + text, k=10), {a.queries} queries: p50 partitioned {p50['partitioned']:.1f} ms, "
              f"direct {p50['direct']:.1f} ms; results differing: {differ}")
        ok &= differ == 0

        times, same, steps = [], 0, []
        for u in users:
            to = "b" if store.server_for(u) == "a" else "a"
            t = time.perf_counter()
            rep = migrate_user(store, u, to)
            times.append(time.perf_counter() - t)
            same += export_user(store.members[to], u) == before[u] and rep["verified"]
            steps.append(rep["timings_s"])
        print(f"migrate: {len(users)} users moved, byte-identical {same}/{len(users)}; per user p50 "
              f"{statistics.median(times):.1f} s ({a.facts / statistics.median(times):.0f} facts/s incl. verify); "
              f"orphans left {len(store.orphans())}")
        ends = {k: statistics.median(t[k] for t in steps) for k in steps[0]}
        prev = 0.0
        parts = []
        for k, end in ends.items():
            parts.append(f"{k} {end - prev:.1f} s")
            prev = end
        print("migrate steps (p50, each step's own time): " + ", ".join(parts))
        ok &= same == len(users) and not store.orphans()
        print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; "
              f"{'OK' if ok else 'DIFFERENT'}")
    finally:
        store.close()
        for stop in stops:
            stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
