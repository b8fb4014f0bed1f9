"""Two server processes on one Neo4j (issue 10, item 9): writers serialize, no stale reads, no lost writes.

Two real OS processes (tests/multiproc_neo4j.py), each with its own Neo4jStore and Memory (and so its
own embedding cache), run concurrently against the session's Neo4j on the same three users:
  1. serialize: both only ingest; every acked commit has its own (user, version), none is lost;
  2. mixed: ingest, supersede, read (retrieve over all facts) and purge_user, interleaved.
The checker (multiproc_neo4j.check) counts stale reads (a purged fact after the purge was acked, or
a superseded fact shown as current), reads missing an acked write, lost and phantom writes.
Bounded: ~6 s + ~20 s of load, set by EVOMEM_MP_SECONDS (mixed phase). The users are fresh per run,
but nothing else may wipe the same Neo4j meanwhile (the ``store`` fixture does, so not in parallel).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from multiproc_neo4j import check

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "multiproc_neo4j.py"


def _run_phase(uri: str, users: list[str], mode: str, seconds: float, tmp: Path) -> list[dict[str, Any]]:
    outs = [tmp / f"{mode}-{p}.jsonl" for p in (0, 1)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, str(WORKER), "--uri", uri, "--proc", str(p), "--users", ",".join(users),
                               "--mode", mode, "--seconds", str(seconds), "--seed", str(p), "--out", str(outs[p])],
                              env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for p in (0, 1)]
    for pr in procs:  # both have imported and connected; then they begin together
        assert pr.stdout is not None and pr.stdout.readline().strip() == "ready", pr.communicate()[1][-3000:]
    start = time.monotonic() + 0.2
    for pr in procs:
        assert pr.stdin is not None
        pr.stdin.write(f"{start!r}\n")
        pr.stdin.flush()  # communicate() below closes it
    for pr in procs:
        _, err = pr.communicate(timeout=seconds + 60)
        assert pr.returncode == 0, err[-3000:]
    return [json.loads(line) for o in outs for line in o.read_text().splitlines()]


def _final(store: Any, users: list[str]) -> dict[str, set[str]]:
    return {u: set(store.load_snapshot(u).facts) for u in users}


def test_checker_catches_what_it_counts() -> None:
    """The checker is not vacuous: a hand-made history with one of each violation."""
    ev = [
        {"proc": 0, "op": "ingest", "u": "a", "fid": "f1", "v": 1, "ok": True, "s": 0.0, "e": 1.0},
        {"proc": 1, "op": "purge", "u": "a", "ok": True, "s": 2.0, "e": 3.0},
        {"proc": 0, "op": "read", "u": "a", "ok": True, "s": 4.0, "e": 5.0, "facts": [["f1", "current"]]},
        {"proc": 0, "op": "ingest", "u": "a", "fid": "f2", "v": 1, "ok": True, "s": 6.0, "e": 7.0},
        {"proc": 1, "op": "supersede", "u": "a", "fid": "f3", "old": "f2", "v": 2, "ok": True, "s": 8.0, "e": 9.0},
        {"proc": 0, "op": "read", "u": "a", "ok": True, "s": 10.0, "e": 11.0, "facts": [["f2", "current"]]},
        {"proc": 1, "op": "ingest", "u": "a", "fid": "f4", "v": 2, "ok": True, "s": 12.0, "e": 13.0},
    ]
    rep = check(ev, {"a": {"f2", "f3", "f9"}}, serialize=True)
    assert rep.stale_purged == ["0@4.000 f1"] and rep.stale_superseded == ["0@10.000 f2 (by f3)"]
    assert rep.missing_in_read == ["0@10.000 f3"] and rep.lost == ["f4"] and rep.phantom == ["f9"]
    assert rep.version_clash == ["a v1: f1 and f2", "a v2: f3 and f4"] and rep.violations == 7


@pytest.mark.neo4j
@pytest.mark.slow
def test_two_processes_on_one_neo4j(neo4j_uri: str, tmp_path: Path) -> None:
    from graph.neo4j import Neo4jStore

    store = Neo4jStore(neo4j_uri, embedding_dim=16)
    store.setup()
    run = uuid.uuid4().hex[:6]
    users = [f"mp{run}-{i}" for i in range(3)]
    try:
        ev = _run_phase(neo4j_uri, users, "serialize", 6.0, tmp_path)
        rep1 = check(ev, _final(store, users), serialize=True)
        stored = sum(len(v) for v in _final(store, users).values())
        print(f"\nserialize: {rep1.ops} refused={rep1.refused} stored={stored} "
              f"versions={[store.load_snapshot(u).version for u in users]} violations={rep1.violations}")
        assert rep1.violations == 0, rep1
        assert stored == rep1.ops["ingest"]  # every acked ingest exactly once, nothing else
        assert [store.load_snapshot(u).version for u in users] == [
            sum(1 for e in ev if e["ok"] and e["u"] == u) for u in users]

        ev = _run_phase(neo4j_uri, users, "mixed", float(os.environ.get("EVOMEM_MP_SECONDS", "20")), tmp_path)
        rep2 = check(ev, _final(store, users))
        print(f"mixed: {rep2.ops} refused={rep2.refused} reads_checked={rep2.reads_checked} "
              f"stale_purged={len(rep2.stale_purged)} stale_superseded={len(rep2.stale_superseded)} "
              f"missing_in_read={len(rep2.missing_in_read)} lost={len(rep2.lost)} phantom={len(rep2.phantom)}")
        assert rep2.violations == 0, rep2
        # The only expected refusal: superseding a fact the other process has just purged. A torn
        # purge would show here too (e.g. fact_without_concept on the user's next ingest).
        assert set(rep2.refused) <= {"supersede:dangling_id"}, rep2.refused
        assert rep2.ops.get("purge", 0) >= 5 and rep2.ops.get("supersede", 0) >= 5 and rep2.reads_checked >= 50
    finally:
        for u in users:
            store.purge_user(u)
        store.close()
