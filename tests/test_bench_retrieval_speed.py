"""The retrieval speed bench runs on the shipped route set (a tiny store, embedded only).

Why: the bench is not imported by any other test, and a route that a request kind leaves off (823e8e2's
concept route) stopped it with a KeyError that no test saw. This runs it end to end on 2 users x 60 facts
(about 2 s) and checks it reports a time for every route, including one that did not run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from retrieval.seeds.rank import ROUTES

ROOT = Path(__file__).resolve().parents[1]


def test_the_retrieval_bench_runs_and_reports_every_route() -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "bench/retrieval_speed.py", "--users", "2", "--facts", "60",
                          "--queries", "6", "--backends", "embedded", "--json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    emb = json.loads(out.stdout)["backends"]["embedded"]
    assert emb["n_queries"] == 6 and emb["p50_ms"] > 0
    assert {f"route_{r}" for r in ROUTES} <= set(emb["stages_p50_ms"])
