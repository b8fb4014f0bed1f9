"""The Neo4j backend's own costs, with server round trips counted (issue 45, items 2 and 5).

Loads U users x F facts (bench/retrieval_speed.py's generator) into one Neo4j server and reports, each
with the round trips it took (a round trip = a request sent and its answer waited for, counted on the
driver's sockets):

- bulk load: facts/s of the whole load (snapshot + apply_batch + commit, as retrieval_speed.py times it)
  and of the commits alone;
- snapshot: ``load_snapshot`` of a loaded user;
- search hot path: ``retrieve`` through the route index as ``Memory.retrieve`` runs it, p50, with the
  time of the Neo4j part alone (the version read) beside it;
- first query of a user: a fresh route index cache (the index built from the store: snapshot + turns),
  and after ``warm`` (the cache built in the background before the request, as the server does after
  ingestion);
- export and import (``replace_user``) of one user, the two halves of ``evomem migrate``.

    python bench/neo4j_speed.py --users 5 --facts 1000 --queries 200      # EVOMEM_NEO4J_URI or started here
    python bench/neo4j_speed.py --json

Destructive: the server is wiped. Prints the load average with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from graph.edits import AttachFact, apply_batch  # noqa: E402
from graph.portable import export_user, import_user, loads  # noqa: E402
from retrieval.retrieve import RetrievalConfig, retrieve  # noqa: E402
from retrieval.seeds.index import RouteIndexCache  # noqa: E402
from retrieval_speed import VOCAB, build_user  # noqa: E402


class RoundTrips:
    """Counts request/answer exchanges on the driver's sockets: a receive after a send is one round trip."""

    def __init__(self) -> None:
        self.n = 0
        self._lock = threading.Lock()
        self._sent: set[int] = set()

    def install(self) -> None:
        from neo4j._sync.io._bolt._bolt_socket import BoltSocket

        send, recv = BoltSocket.sendall, BoltSocket.recv_into
        me = self

        def sendall(sock: Any, data: Any) -> Any:
            with me._lock:
                me._sent.add(id(sock))
            return send(sock, data)

        def recv_into(sock: Any, buffer: Any, nbytes: Any = 0) -> Any:
            with me._lock:
                if id(sock) in me._sent:
                    me._sent.discard(id(sock))
                    me.n += 1
            return recv(sock, buffer, nbytes)

        BoltSocket.sendall, BoltSocket.recv_into = sendall, recv_into  # type: ignore[method-assign]

    @contextmanager
    def count(self, into: list[int]) -> Iterator[None]:
        n0 = self.n
        yield
        into.append(self.n - n0)


def cpu_of(pid: int | None) -> float:
    """CPU seconds (user + system) the process ``pid`` has used; this process's own when None."""
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p)) if xs else float("nan")


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t) * 1e3, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=5)
    ap.add_argument("--facts", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--server-pid", type=int, default=None,
                    help="the Neo4j server's process id (scripts/neo4j-server's pidfile): its CPU per load is "
                         "reported too, a figure the box's load does not inflate as it does wall time")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rt = RoundTrips()
    rt.install()
    from graph.neo4j import Neo4jStore

    uri, stop = os.environ.get("EVOMEM_NEO4J_URI"), None
    if not uri:
        from neo4j_server import start_neo4j  # type: ignore[import-not-found]

        uri, stop = start_neo4j()
    store = Neo4jStore(uri, embedding_dim=a.dim)
    out: dict[str, Any] = {"config": vars(a)}
    try:
        store.setup()
        warming = getattr(store, "_warming", None)  # the background warm-up (round trips of its own)
        if warming is not None:
            warming.join()
        store.wipe()
        rng = np.random.default_rng(a.seed)
        users = [(f"user{i:04d}", *build_user(rng, f"user{i:04d}", a.facts, a.dim)) for i in range(a.users)]
        load_ms, commit_ms, commit_rt = 0.0, 0.0, list[int]()
        cpu0, srv0 = cpu_of(None), cpu_of(a.server_pid) if a.server_pid else 0.0
        for u, batch, _, _ in users:
            t = time.perf_counter()
            _, cs = apply_batch(store.load_snapshot(u), batch)
            with rt.count(commit_rt):
                c_ms, _ = timed(lambda: store.commit(cs))  # noqa: B023
            load_ms += (time.perf_counter() - t) * 1e3
            commit_ms += c_ms
        n = a.users * a.facts
        load_cpu = {"client_cpu_s_per_1000_facts": (cpu_of(None) - cpu0) / n * 1000}
        if a.server_pid:
            load_cpu["server_cpu_s_per_1000_facts"] = (cpu_of(a.server_pid) - srv0) / n * 1000
        out["load"] = {"facts_per_s": n / load_ms * 1e3, "commit_facts_per_s": n / commit_ms * 1e3,
                       "commit_round_trips": max(commit_rt), **load_cpu}
        snap_ms, snap_rt = [], list[int]()
        for u, *_ in users:
            with rt.count(snap_rt):
                ms, _ = timed(lambda: store.load_snapshot(u))  # noqa: B023
            snap_ms.append(ms)
        out["snapshot"] = {"p50_ms": pct(snap_ms, 50), "round_trips": max(snap_rt)}

        vec = {f.statement: e for _, b, m, _ in users for f, e in
               zip((x.fact for x in b.edits if isinstance(x, AttachFact)), m)}

        def embed(texts: Any) -> Any:
            return np.stack([vec[t.split(": ", 1)[-1]] for t in texts])

        cfg = RetrievalConfig(k=a.k)
        queries = []
        for qi in range(max(a.queries, a.users)):
            ui = qi % a.users
            target = users[ui][2][rng.integers(a.facts)]
            qv = target + rng.normal(scale=0.5 / np.sqrt(a.dim), size=a.dim).astype(np.float32)
            queries.append((ui, (qv / np.linalg.norm(qv)).tolist(), " ".join(rng.choice(VOCAB, size=3))))

        def one(cache: RouteIndexCache, ui: int, qv: list[float], qt: str) -> Any:
            u = users[ui][0]
            return cache.use(store, u, lambda index: retrieve(store, u, qt, qv, cfg, index=index))

        cache = RouteIndexCache(embed)
        cold_ms, cold_rt = [], list[int]()
        for ui, qv, qt in queries[: a.users]:
            with rt.count(cold_rt):
                ms, _ = timed(lambda: one(cache, ui, qv, qt))  # noqa: B023
            cold_ms.append(ms)
        hot_ms, hot_rt, ver_ms, serial_ms = [], list[int](), [], []
        for ui, qv, qt in queries:
            with rt.count(hot_rt):
                ms, _ = timed(lambda: one(cache, ui, qv, qt))  # noqa: B023
            hot_ms.append(ms)
            ver_ms.append(timed(lambda: store.version_token(users[ui][0]))[0])  # noqa: B023
            # the version read first, then the routes (no overlap: no second thread to wait on)
            serial_ms.append(timed(lambda: retrieve(store, users[ui][0], qt, qv, cfg,  # noqa: B023
                                                    index=cache.get(store, users[ui][0])))[0])  # noqa: B023
        cache.close()
        warm_cache = RouteIndexCache(embed)
        warm_ms = []
        for ui, qv, qt in queries[: a.users]:
            warm_cache.warm(store, users[ui][0]).result()
            warm_ms.append(timed(lambda: one(warm_cache, ui, qv, qt))[0])  # noqa: B023
        warm_cache.close()
        out["search"] = {"p50_ms": pct(hot_ms, 50), "p95_ms": pct(hot_ms, 95), "round_trips_max": max(hot_rt),
                         "round_trips_mean": statistics.fmean(hot_rt), "version_read_p50_ms": pct(ver_ms, 50),
                         "serial_p50_ms": pct(serial_ms, 50),
                         "first_query_p50_ms": pct(cold_ms, 50), "first_query_round_trips": max(cold_rt),
                         "first_query_after_warm_p50_ms": pct(warm_ms, 50)}

        exp_ms, imp_ms, same, exp_cpu, imp_cpu = [], [], 0, [], []
        for u, *_ in users[: min(2, a.users)]:
            c0 = cpu_of(None) + (cpu_of(a.server_pid) if a.server_pid else 0.0)
            ms, text = timed(lambda: export_user(store, u))  # noqa: B023
            c1 = cpu_of(None) + (cpu_of(a.server_pid) if a.server_pid else 0.0)
            exp_ms.append(ms)
            data = loads(text)
            c2 = cpu_of(None) + (cpu_of(a.server_pid) if a.server_pid else 0.0)
            imp_ms.append(timed(lambda: import_user(store, data, mode="replace"))[0])  # noqa: B023
            c3 = cpu_of(None) + (cpu_of(a.server_pid) if a.server_pid else 0.0)
            exp_cpu.append(c1 - c0)
            imp_cpu.append(c3 - c2)
            same += export_user(store, u) == text
        out["migrate_halves"] = {"export_p50_ms": pct(exp_ms, 50), "import_replace_p50_ms": pct(imp_ms, 50),
                                 "export_cpu_s": pct(exp_cpu, 50), "import_cpu_s": pct(imp_cpu, 50),
                                 "byte_identical": f"{same}/{len(exp_ms)}"}
        out["load_average"] = os.getloadavg()
    finally:
        store.close()
        if stop:
            stop()
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    ld, sn, se, mg = out["load"], out["snapshot"], out["search"], out["migrate_halves"]
    print(f"Neo4j, {a.users} users x {a.facts} facts, {len(queries)} queries, K={a.k}")
    print(f"bulk load {ld['facts_per_s']:.0f} facts/s (commits alone {ld['commit_facts_per_s']:.0f} facts/s); "
          f"round trips per commit {ld['commit_round_trips']}; CPU s per 1,000 facts: client "
          f"{ld['client_cpu_s_per_1000_facts']:.2f}" + (f", server {ld['server_cpu_s_per_1000_facts']:.2f}"
                                                        if "server_cpu_s_per_1000_facts" in ld else ""))
    print(f"load_snapshot p50 {sn['p50_ms']:.1f} ms, {sn['round_trips']} round trips")
    print(f"search p50 {se['p50_ms']:.2f} ms (p95 {se['p95_ms']:.2f}), round trips per search max "
          f"{se['round_trips_max']} mean {se['round_trips_mean']:.2f}; version read alone p50 "
          f"{se['version_read_p50_ms']:.2f} ms; version read then routes (no overlap) p50 {se['serial_p50_ms']:.2f} ms")
    print(f"first query of a user p50 {se['first_query_p50_ms']:.1f} ms ({se['first_query_round_trips']} round trips); "
          f"after warm {se['first_query_after_warm_p50_ms']:.1f} ms")
    print(f"export p50 {mg['export_p50_ms']:.0f} ms, import (replace) p50 {mg['import_replace_p50_ms']:.0f} ms, "
          f"byte-identical {mg['byte_identical']}; CPU s (client{' + server' if a.server_pid else ''}): export "
          f"{mg['export_cpu_s']:.2f}, import {mg['import_cpu_s']:.2f}")
    print("load average " + ", ".join(f"{x:.1f}" for x in out["load_average"]) + f" on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
