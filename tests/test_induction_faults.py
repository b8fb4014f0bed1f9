"""Fault injection: a process killed between extraction and commit, or in the middle of the commit
transaction, or at a random moment of a long ingest, leaves no partial session on either backend; a
rerun completes the work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from graph.edits import check_invariants
from induction.offline import OfflineExtractor
from induction.pipeline import Ingestor
from induction.session import load_sessions
from llmclients.embeddings import HashEmbedder

REPO = Path(__file__).resolve().parent.parent

CHILD = r'''
import os, sys
from llmclients.embeddings import HashEmbedder
from induction.offline import OfflineExtractor
from induction.pipeline import Ingestor
from induction.session import load_sessions

backend, target, mode, path = sys.argv[1:5]
if backend == "embedded":
    from graph.embedded import EmbeddedStore
    store = EmbeddedStore(target)
else:
    from graph.neo4j import Neo4jStore
    store = Neo4jStore(target, embedding_dim=16)
store.setup()

class M:
    pass

m = M(); m.store = store; m.embedder = HashEmbedder(256)
ing = Ingestor(m, OfflineExtractor())
if mode == "after_extract":       # extraction done, nothing committed yet
    ing.hook = lambda step: os._exit(137) if step == "commit" else None
elif mode == "in_transaction":    # every write of the session issued, COMMIT never sent
    orig = store._write
    def crash(*a):
        orig(*a)
        os._exit(137)
    store._write = crash
for s in load_sessions(path):
    print("start", s.session_id, flush=True)
    ing.ingest(s)
    print("done", s.session_id, flush=True)
os._exit(0)
'''


def _sessions_file(tmp: Path, user: str, n: int) -> Path:
    rows = []
    for i in range(n):
        rows.append({"session_id": f"s{i}", "user_id": user, "started_at": f"2025-0{1 + i % 9}-1{i % 10}T10:00:00Z",
                     "turns": [{"role": "user", "text": f"I really enjoy hiking trail number {i} in the mountains."},
                               {"role": "assistant", "text": "Noted."},
                               {"role": "user", "text": f"These days I no longer enjoy trail number {i - 1} at all. "
                                                        f"I am vegetarian since {2000 + i}."}]})
    p = tmp / f"{user}.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    return p


def _child(backend: str, target: str, mode: str, path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", CHILD, backend, target, mode, str(path)], cwd=str(REPO), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _open(backend: str, target: str) -> Any:
    if backend == "embedded":
        from graph.embedded import EmbeddedStore

        s = EmbeddedStore(target)
    else:
        from graph.neo4j import Neo4jStore

        s = Neo4jStore(target, embedding_dim=16)
    s.setup()
    return s


def assert_whole_sessions(store: Any, user: str, path: Path) -> set[str]:
    """Every session is either entirely present (turns, facts, edits, hash) or entirely absent."""
    sessions = load_sessions(path)
    snap = store.load_snapshot(user)
    if snap.facts:
        check_invariants(snap)
    all_turns = [s.turn_id(i) for s in sessions for i in range(len(s.turns))]
    stored = {t.turn_id: t for t in store.turns(user, all_turns)}
    for s in sessions:
        tids = [s.turn_id(i) for i in range(len(s.turns))]
        facts = [f for f in snap.facts.values() if f.session_id == s.session_id]
        edits = [e for e in snap.edits.values() if e.session_id == s.session_id]
        if s.session_id in snap.sessions:
            assert snap.sessions[s.session_id] == s.content_hash()
            assert all(t in stored for t in tids) and facts and edits, s.session_id
            assert all(set(f.source_turn_ids) <= set(tids) for f in facts)
        else:
            assert not any(t in stored for t in tids) and not facts and not edits, f"partial {s.session_id}"
    return set(snap.sessions)


def _rerun(store: Any, path: Path) -> None:
    class M:
        pass

    m = M()
    m.store, m.embedder = store, HashEmbedder(256)
    ing = Ingestor(m, OfflineExtractor())  # type: ignore[arg-type]
    for s in load_sessions(path):
        assert ing.ingest(s).status in ("committed", "unchanged")


@pytest.fixture(params=["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    if request.param == "embedded":
        return "embedded", str(tmp_path / "store")
    return "neo4j", request.getfixturevalue("neo4j_uri")


@pytest.mark.parametrize("mode", ["after_extract", "in_transaction"])
def test_crash_before_or_during_commit_leaves_nothing(target: tuple[str, str], tmp_path: Path, mode: str) -> None:
    backend, where = target
    user = f"crash-{uuid.uuid4().hex[:8]}"
    path = _sessions_file(tmp_path, user, 2)
    proc = _child(backend, where, mode, path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 137, err[-2000:]
    assert "start s0" in out and "done" not in out  # it died inside the first session
    store = _open(backend, where)
    try:
        assert assert_whole_sessions(store, user, path) == set()
        assert user not in store.users() or store.counts(user)["Turn"] == 0
        _rerun(store, path)
        assert assert_whole_sessions(store, user, path) == {"s0", "s1"}
    finally:
        store.close()


def test_sigkill_at_a_random_moment(target: tuple[str, str], tmp_path: Path) -> None:
    backend, where = target
    user = f"kill-{uuid.uuid4().hex[:8]}"
    n = 16
    path = _sessions_file(tmp_path, user, n)
    proc = _child(backend, where, "normal", path)
    assert proc.stdout is not None
    done = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # kill once the third session has started (the child may run ahead)
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("done"):
            done += 1
        if line.startswith("start") and done == 2:
            time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    store = _open(backend, where)
    try:
        present = assert_whole_sessions(store, user, path)
        # Sessions commit in order: what survived is a prefix s0..s(m-1), at least the two reported done.
        m = len(present)
        assert 2 <= m < n and present == {f"s{i}" for i in range(m)}
        _rerun(store, path)
        assert assert_whole_sessions(store, user, path) == {f"s{i}" for i in range(n)}
    finally:
        store.close()
