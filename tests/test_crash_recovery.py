"""kill -9 the writer at random instants, many times, on both backends (issue 10, item 5).

The writer (tests/crash_writer.py) prints ``ACK <user> <n>`` only after ``commit`` returned. After
every kill the next writer must open the store; at the end the store must hold every acknowledged
session exactly once, each session whole (its turns, facts and session record together, the
version bumped once per session), and every user's snapshot must satisfy the graph invariants.
For Neo4j the killed process is our client; the server stays up.

Purges: after every kill that came after an acknowledged purge (``ACK-PURGE``) and before the writer
began to write the scratch user again (``SCRATCH``), the parent checks that the scratch user is empty:
no node, no snapshot content, and (embedded) none of its text in the store's files. The embedded store
is checked through a copy of its files, so the next writer still meets the store exactly as the kill
left it (a torn WAL included).

Unmarked: 5 kills per backend (8 inside writes). ``slow``: 50 kills per backend (the bar in issue 10). The
unmarked ones are stand-ins (tests/file_order.py): a run that includes the 50-kill test of the same kind
deselects its 5-kill one, whose every assertion the 50-kill test makes too.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from crash_writer import SESSION_SIZES, SCRATCH, TURNS_PER_SESSION, USERS, fact_ids, session_id
from graph.edits import check_invariants

ROOT = Path(__file__).resolve().parents[1]
SCRATCH_TEXT = f"for {SCRATCH}".encode()  # in every scratch turn: "turn 0 of session 7 for scratch"
WRITER = Path(__file__).resolve().parent / "crash_writer.py"


@dataclass
class Run:
    kills: int = 0
    failed_opens: list[str] = field(default_factory=list)
    acked: dict[str, set[int]] = field(default_factory=dict)  # user -> acknowledged session numbers
    purges: int = 0
    recovered_opens: int = 0  # opens that found a torn WAL and replayed its valid prefix
    purge_checks: int = 0  # kills after which an acknowledged purge was checked


KINDS = ("ACK", "ACK-PURGE", "SCRATCH")


def writer_lines(text: str) -> list[tuple[str, str, int]]:
    """The writer's complete lines as ``(kind, user, n)``. The piece after the last newline is dropped:
    a kill inside a line's write leaves it unterminated, and an unfinished announcement acknowledges
    nothing (a ``SCRATCH`` line is printed before the scratch write begins, so a torn one means it had
    not begun). Any other line is a protocol error, reported as such."""
    *whole, _torn = text.split("\n")
    out = []
    for line in whole:
        parts = line.split()
        assert len(parts) == 3 and parts[0] in KINDS and parts[2].isdigit(), f"unexpected writer line {line!r}"
        out.append((parts[0], parts[1], int(parts[2])))
    return out


def scratch_must_be_empty(lines: list[tuple[str, str, int]], before: bool) -> bool:
    """Whether, after a writer printed ``lines`` and was killed, the scratch user must be empty:
    its last scratch line is an acknowledged purge (``before``: what held when this writer started)."""
    for kind, _, _ in lines:
        if kind == "SCRATCH":
            before = False  # a scratch write began: it may have committed before the kill
        elif kind == "ACK-PURGE":
            before = True
    return before


@dataclass
class Cycle:
    first: str  # the writer's first line (``OPEN clean`` / ``OPEN recovered``), stripped
    out: str  # all it printed after that, up to its death (the last line may be torn)
    returncode: int | None
    err: str


def run_writer(cmd: list[str], env: dict[str, str], reads: int | None, delay: float, kill: bool) -> Cycle:
    """Start one writer; with ``kill``, read ``reads`` more lines (None: up to the first ``ACK-PURGE``),
    wait ``delay`` s and SIGKILL it; then read its stdout to the end.

    Everything is read through the one buffered reader ``p.stdout``: ``communicate()`` after
    ``readline()`` reads the pipe past the lines that reader had already buffered, and so lost the
    line printed right after the last one read (a ``SCRATCH`` line: the scratch user then looked
    purged when it was not). stderr goes to a file, so no second pipe can fill up."""
    with tempfile.TemporaryFile() as errf:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, text=True, env=env)
        assert p.stdout is not None
        first = p.stdout.readline()
        out = ""
        if first.startswith("OPEN") and kill:
            if reads is None:
                while (line := p.stdout.readline()) and not (line.startswith("ACK-PURGE") and line.endswith("\n")):
                    out += line
                out += line
            else:
                out = "".join(p.stdout.readline() for _ in range(reads))
            time.sleep(delay)
            os.kill(p.pid, signal.SIGKILL)
        out += p.stdout.read()  # to EOF: the writer is dead (killed, or died on its own)
        p.stdout.close()
        p.wait()
        errf.seek(0)
        return Cycle(first.strip(), out, p.returncode, errf.read().decode(errors="replace"))


def kill_loop(backend: str, where: str, kills: int, seed: int, extra: list[str], at_pwrite: bool = False,
              check_scratch: Callable[[], None] | None = None) -> Run:
    """Start the writer, SIGKILL it, ``kills`` times; every writer first opens the store the last
    one left, so a store that fails to open is seen (and ends the loop). ``check_scratch`` is called
    after each kill at which the writer's last scratch line was an acknowledged purge.

    By default the kill comes after a random number of acknowledgements plus a random delay (each
    cycle does some work however slow the machine is, and the kill lands at an arbitrary instant).
    ``at_pwrite``: strace kills the writer on entering its N-th ``pwrite64`` (N random), which puts
    kills inside LadybugDB's multi-page WAL writes, its checkpoints and our compaction, where a
    timer almost never lands (a large commit's WAL goes out in 4 KiB pwrites, then one fdatasync).
    """
    rng = random.Random(seed)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    run, start, purged = Run(), 0, False
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
        reads: int | None = None  # the first kill right after the first acknowledged purge: every run checks one
        delay = 0.0
        if i and not at_pwrite:
            reads, delay = rng.randint(0, 6), rng.uniform(0.0, 0.5)
        c = run_writer(cmd, env, reads, delay, kill=not at_pwrite)
        if c.returncode not in (-signal.SIGKILL, 128 + signal.SIGKILL):  # it died on its own
            run.failed_opens.append(f"{c.first!r} rc={c.returncode}: {c.err[-2000:]}")
            break
        run.kills += 1
        run.recovered_opens += c.first == "OPEN recovered"
        printed = writer_lines(c.out)
        for kind, user, n in printed:
            if kind == "ACK":
                run.acked.setdefault(user, set()).add(n)
            elif kind == "ACK-PURGE":
                run.purges += 1
            start = max(start, n + 1)
        start += 1  # the session in flight at the kill may have committed unacknowledged: never reuse its ids
        purged = scratch_must_be_empty(printed, purged)
        if purged and check_scratch is not None:
            check_scratch()
            run.purge_checks += 1
    return run


def assert_scratch_empty(store: Any) -> None:
    counts = store.counts(SCRATCH)
    assert not any(counts.values()), f"an acknowledged purge left {SCRATCH}: {counts}"
    snap = store.load_snapshot(SCRATCH)
    assert not snap.facts and not snap.turn_ids and not snap.sessions and not snap.concepts, snap


def embedded_scratch_check(where: Path, scratch_dir: Path) -> Callable[[], None]:
    """Open a copy of the embedded store (the writer's next open must meet the original untouched) and
    check the scratch user is gone; no scratch turn text ("... for scratch") may be left in the files."""
    from graph.embedded import EmbeddedStore

    def check() -> None:
        files = [f for f in where.parent.iterdir() if f.is_file()]
        assert not any(SCRATCH_TEXT in f.read_bytes() for f in files), "an acknowledged purge left scratch bytes"
        shutil.rmtree(scratch_dir, ignore_errors=True)
        scratch_dir.mkdir(parents=True)
        for f in files:
            shutil.copy2(f, scratch_dir / f.name)
        store = EmbeddedStore(scratch_dir / where.name)
        try:
            assert_scratch_empty(store)
        finally:
            store.close()

    return check


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

    (tmp_path / "db").mkdir()
    where = tmp_path / "db" / "store"  # a folder of its own: the purge check copies every file in it
    # timer kills: a low checkpoint threshold so they also land inside checkpoints (purges rewrite
    # the file anyway); pwrite kills: the default, so most pwrites are WAL writes of commits
    extra = [] if at_pwrite else ["--checkpoint-bytes", "65536"]
    run = kill_loop("embedded", str(where), kills, seed, extra, at_pwrite,
                    embedded_scratch_check(where, tmp_path / "check"))
    store = EmbeddedStore(where)
    try:
        return run, check_store(store, run)
    finally:
        store.close()


def _neo4j(uri: str, kills: int, seed: int) -> tuple[Run, dict[str, int]]:
    from graph.neo4j import Neo4jStore

    store = Neo4jStore(uri, embedding_dim=16)
    store.setup()
    for u in (*USERS, SCRATCH):  # only this test's users: the server is shared with other tests
        store.purge_user(u)
    run = kill_loop("neo4j", uri, kills, seed, ["--no-setup"], check_scratch=lambda: assert_scratch_empty(store))
    try:
        return run, check_store(store, run)
    finally:
        for u in (*USERS, SCRATCH):
            store.purge_user(u)
        store.close()


def _assert_bar(run: Run, result: dict[str, int], kills: int, purge_checks: int = 0) -> None:
    """``purge_checks``: the fewest kills after which an acknowledged purge must have been checked (timer
    kills: the first comes right after the first purge; kills inside writes may all miss the purges of
    a short run, the 50-kill run acknowledges several)."""
    print(f"kills={run.kills} acked={result['acked']} purges={run.purges} purge_checks={run.purge_checks} "
          f"lost={result['lost']} failed_opens={len(run.failed_opens)} recovered_opens={run.recovered_opens}")
    assert not run.failed_opens, run.failed_opens[0]
    assert run.kills == kills
    assert result["lost"] == 0
    assert result["acked"] > 0  # the kills did not all land before the first commit
    assert run.purge_checks >= purge_checks, "too few kills came after an acknowledged purge to check one"


def test_writer_lines_drop_a_torn_last_line() -> None:
    """A kill inside a line's write: the unterminated piece acknowledges nothing; a line outside the
    protocol is an error (the ValueError the bookkeeping once died of came from a torn line)."""
    assert writer_lines("ACK ada 1\nSCRATCH scratch 7\nACK-PURGE scratch 7") == [("ACK", "ada", 1),
                                                                                 ("SCRATCH", "scratch", 7)]
    assert not scratch_must_be_empty(writer_lines("SCRATCH scratch 7\nACK-PURGE scr"), True)
    assert scratch_must_be_empty(writer_lines("SCRATCH scratch 7\nACK-PURGE scratch 7\nACK ada 8\nSCRA"), False)
    assert writer_lines("") == []
    with pytest.raises(AssertionError, match="unexpected writer line"):
        writer_lines("ACK ada 1\n\nACK bo 2\n")


def test_run_writer_keeps_the_lines_it_read_ahead() -> None:
    """Lines that reached the parent's buffer before the kill are seen: reading the rest with
    communicate() lost them, so a SCRATCH line right after an ACK went missing and the scratch user,
    written after it, looked purged."""
    child = "import os, time\nos.write(1, b'OPEN clean\\nACK ada 84\\nSCRATCH scratch 84\\n')\ntime.sleep(60)\n"
    c = run_writer([sys.executable, "-c", child], dict(os.environ), reads=1, delay=0.0, kill=True)
    assert c.returncode == -signal.SIGKILL and c.first == "OPEN clean"
    assert writer_lines(c.out) == [("ACK", "ada", 84), ("SCRATCH", "scratch", 84)]


@pytest.mark.stand_in("test_embedded_survives_50_kill9")  # same loop and checks, 50 kills, >= 5 purge checks
def test_embedded_survives_kill9(tmp_path: Path) -> None:
    run, res = _embedded(tmp_path, 5, seed=1)
    _assert_bar(run, res, 5, purge_checks=1)


@pytest.fixture
def strace() -> None:
    """The injected-kill tests need strace: skipped locally without it, a failure under CI (scripts/run-tests
    installs it), so the test that reproduces the torn WAL can never silently drop out of CI."""
    if shutil.which("strace") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the injected-kill crash tests, but strace is missing")
        pytest.skip("needs strace to inject the kill")


@pytest.mark.usefixtures("strace")
@pytest.mark.stand_in("test_embedded_survives_50_kill9_inside_writes")  # same, 50 kills, + a recovered open
def test_embedded_survives_kill9_inside_writes(tmp_path: Path) -> None:
    run, res = _embedded(tmp_path, 8, seed=2, at_pwrite=True)
    _assert_bar(run, res, 8)


@pytest.mark.neo4j
@pytest.mark.stand_in("test_neo4j_client_survives_50_kill9")  # same loop and checks, 50 kills, >= 5 purge checks
def test_neo4j_client_survives_kill9(neo4j_uri: str) -> None:
    run, res = _neo4j(neo4j_uri, 5, seed=1)
    _assert_bar(run, res, 5, purge_checks=1)


@pytest.mark.slow
def test_embedded_survives_50_kill9(tmp_path: Path) -> None:
    run, res = _embedded(tmp_path, 50, seed=50)
    _assert_bar(run, res, 50, purge_checks=5)


@pytest.mark.slow
@pytest.mark.usefixtures("strace")
def test_embedded_survives_50_kill9_inside_writes(tmp_path: Path) -> None:
    run, res = _embedded(tmp_path, 50, seed=51, at_pwrite=True)
    _assert_bar(run, res, 50, purge_checks=1)
    assert run.recovered_opens >= 1  # some kills did tear the WAL (else this test proves less than it says)


@pytest.mark.slow
@pytest.mark.neo4j
def test_neo4j_client_survives_50_kill9(neo4j_uri: str) -> None:
    run, res = _neo4j(neo4j_uri, 50, seed=50)
    _assert_bar(run, res, 50, purge_checks=5)
