"""kill -9 the writer at random instants, many times, on both backends (issue 10, item 5).

The writer (tests/crash_writer.py) prints ``ACK <user> <n>`` only after ``commit`` returned. After
every kill the next writer must open the store; at the end the store must hold every acknowledged
session exactly once, each session whole (its turns, facts and session record together, the
version bumped once per session), and every user's snapshot must satisfy the graph invariants.
For Neo4j the killed process is our client; the server stays up.

Unmarked: 5 kills per backend. ``slow``: 50 kills per backend (the bar in issue 10).
"""

from __future__ import annotations

import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from crash_writer import SESSION_SIZES, SCRATCH, TURNS_PER_SESSION, USERS, fact_ids, session_id
from graph.edits import check_invariants

ROOT = Path(__file__).resolve().parents[1]
WRITER = Path(__file__).resolve().parent / "crash_writer.py"


@dataclass
class Run:
    kills: int = 0
    failed_opens: list[str] = field(default_factory=list)
    acked: dict[str, set[int]] = field(default_factory=dict)  # user -> acknowledged session numbers
    purges: int = 0
    recovered_opens: int = 0  # opens that found a torn WAL and replayed its valid prefix


def kill_loop(backend: str, where: str, kills: int, seed: int, extra: list[str], at_pwrite: bool = False) -> Run:
    """Start the writer, SIGKILL it, ``kills`` times; every writer first opens the store the last
    one left, so a store that fails to open is seen (and ends the loop).

    By default the kill comes after a random number of acknowledgements plus a random delay (each
    cycle does some work however slow the machine is, and the kill lands at an arbitrary instant).
    ``at_pwrite``: strace kills the writer on entering its N-th ``pwrite64`` (N random), which puts
    kills inside LadybugDB's multi-page WAL writes, its checkpoints and our compaction, where a
    timer almost never lands (a large commit's WAL goes out in 4 KiB pwrites, then one fdatasync).
    """
    rng = random.Random(seed)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    run, start = Run(), 0
    for i in range(kills):
        # Alternate small and large sessions: a large one's WAL is written in several pieces.
        size = SESSION_SIZES[0] if i % 3 else SESSION_SIZES[1]
        prefix: list[str] = []
        if at_pwrite:
            if i % 2 == 0:  # the N-th pwrite to the WAL: inside a commit's multi-page WAL write
                nth, only, size = rng.randint(1, 250), ["-P", where + ".wal"], SESSION_SIZES[1]
            else:  # the N-th pwrite anywhere, log-uniform: the open after a crash replays and
                # checkpoints (~1,000 pwrites), a purge's rewrite ~1,000, a commit 2-50
                nth, only = int(math.exp(rng.uniform(0, math.log(6000)))), []
            prefix = ["strace", "-f", "-o", os.devnull, *only, "-e", "trace=pwrite64",
                      "-e", f"inject=pwrite64:signal=SIGKILL:when={nth}"]
        cmd = [*prefix, sys.executable, str(WRITER), backend, where, "--start", str(start), "--facts", str(size), *extra]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert p.stdout is not None
        first = p.stdout.readline().strip()
        lines: list[str] = []
        if first.startswith("OPEN") and not at_pwrite:
            lines = [p.stdout.readline() for _ in range(rng.randint(0, 6))]
            time.sleep(rng.uniform(0.0, 0.5))
            os.kill(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        if p.returncode not in (-signal.SIGKILL, 128 + signal.SIGKILL):  # it died on its own
            run.failed_opens.append(f"{first!r} rc={p.returncode}: {err[-2000:]}")
            break
        run.kills += 1
        run.recovered_opens += first == "OPEN recovered"
        for line in "".join(lines + [out]).splitlines():
            kind, user, n = line.split()
            if kind == "ACK":
                run.acked.setdefault(user, set()).add(int(n))
            else:
                run.purges += 1
            start = max(start, int(n) + 1)
        start += 1  # the session in flight at the kill may have committed unacknowledged: never reuse its ids
    return run


def check_store(store: Any, run: Run) -> dict[str, int]:
    """Every acknowledged session present exactly once and whole; returns counts for the report."""
    lost = 0
    for u in USERS:
        snap = store.load_snapshot(u)
        check_invariants(snap)
        present = {int(s[1:]) for s in snap.sessions}
        lost += len(run.acked.get(u, set()) - present)
        # whole sessions only: every stored fact and turn belongs to a stored session, and each stored
        # session has all of its facts and turns (sizes differ, so count from the facts' ids)
        fact_sessions = {int(f.split(":f")[1].split("-")[0]) for f in snap.facts}
        assert fact_sessions == present, f"{u}: facts of sessions {sorted(fact_sessions ^ present)} without their session"
        for n in present:
            k = sum(1 for f in snap.facts if f.startswith(f"{u}:f{n}-"))
            assert k in SESSION_SIZES and set(fact_ids(u, n, k)) <= set(snap.facts), f"{u} s{n}: {k} facts"
        turn_sessions = {t.split(":")[0] for t in snap.turn_ids}
        assert turn_sessions == {session_id(n) for n in present}
        counts = store.counts(u)
        assert counts["Turn"] == TURNS_PER_SESSION * len(present)  # exactly once: no duplicate rows
        assert counts["Session"] == len(present) and counts["Fact"] == len(snap.facts)
        assert snap.version == len(present), f"{u}: version {snap.version} for {len(present)} sessions"
    check_invariants(store.load_snapshot(SCRATCH))
    return {"lost": lost, "acked": sum(len(v) for v in run.acked.values())}


def _embedded(tmp_path: Path, kills: int, seed: int, at_pwrite: bool = False) -> tuple[Run, dict[str, int]]:
    from graph.embedded import EmbeddedStore

    where = str(tmp_path / "store")
    # timer kills: a low checkpoint threshold so they also land inside checkpoints (purges rewrite
    # the file anyway); pwrite kills: the default, so most pwrites are WAL writes of commits
    extra = [] if at_pwrite else ["--checkpoint-bytes", "65536"]
    run = kill_loop("embedded", where, kills, seed, extra, at_pwrite)
    store = EmbeddedStore(where)
    try:
        return run, check_store(store, run)
    finally:
        store.close()


def _neo4j(uri: str, kills: int, seed: int) -> tuple[Run, dict[str, int]]:
    from graph.neo4j import Neo4jStore

    store = Neo4jStore(uri, embedding_dim=16)
    store.setup()
    store.wipe()
    run = kill_loop("neo4j", uri, kills, seed, ["--no-setup"])
    try:
        return run, check_store(store, run)
    finally:
        store.wipe()
        store.close()


def _assert_bar(run: Run, result: dict[str, int], kills: int) -> None:
    print(f"kills={run.kills} acked={result['acked']} purges={run.purges} lost={result['lost']} "
          f"failed_opens={len(run.failed_opens)} recovered_opens={run.recovered_opens}")
    assert not run.failed_opens, run.failed_opens[0]
    assert run.kills == kills
    assert result["lost"] == 0
    assert result["acked"] > 0  # the kills did not all land before the first commit


def test_embedded_survives_kill9(tmp_path: Path) -> None:
    run, res = _embedded(tmp_path, 5, seed=1)
    _assert_bar(run, res, 5)


@pytest.fixture
def strace() -> None:
    """The injected-kill tests need strace: skipped locally without it, a failure under CI (scripts/run-tests
    installs it), so the test that reproduces the torn WAL can never silently drop out of CI."""
    if shutil.which("strace") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the injected-kill crash tests, but strace is missing")
        pytest.skip("needs strace to inject the kill")


@pytest.mark.usefixtures("strace")
def test_embedded_survives_kill9_inside_writes(tmp_path: Path) -> None:
    run, res = _embedded(tmp_path, 8, seed=2, at_pwrite=True)
    _assert_bar(run, res, 8)


@pytest.mark.neo4j
def test_neo4j_client_survives_kill9(neo4j_uri: str) -> None:
    run, res = _neo4j(neo4j_uri, 5, seed=1)
    _assert_bar(run, res, 5)


@pytest.mark.slow
def test_embedded_survives_50_kill9(tmp_path: Path) -> None:
    run, res = _embedded(tmp_path, 50, seed=50)
    _assert_bar(run, res, 50)


@pytest.mark.slow
@pytest.mark.usefixtures("strace")
def test_embedded_survives_50_kill9_inside_writes(tmp_path: Path) -> None:
    run, res = _embedded(tmp_path, 50, seed=51, at_pwrite=True)
    _assert_bar(run, res, 50)
    assert run.recovered_opens >= 1  # some kills did tear the WAL (else this test proves less than it says)


@pytest.mark.slow
@pytest.mark.neo4j
def test_neo4j_client_survives_50_kill9(neo4j_uri: str) -> None:
    run, res = _neo4j(neo4j_uri, 50, seed=50)
    _assert_bar(run, res, 50)
