"""Embedded store on disk: a torn WAL still opens with every whole commit (issue 10, item 5), and a
purge leaves no byte of the purged text in any file of the store (item 6)."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from crash_writer import T0, batch
from graph.edits import apply_batch, check_invariants
from graph.embedded import EmbeddedStore
from graph.models import Turn
from graph.store import PurgeSet

ROOT = Path(__file__).resolve().parents[1]
CANARY = "canary-7f3e9b1d-purple-giraffe"


def occurrences(folder: Path, needle: str) -> dict[str, int]:
    """``grep -a -c`` over every file under ``folder`` (WAL, shadow, leftovers included)."""
    hits = {}
    for p in folder.rglob("*"):
        if p.is_file():
            n = p.read_bytes().count(needle.encode())
            if n:
                hits[str(p.relative_to(folder))] = n
    return hits


def commit_session(store: EmbeddedStore, u: str, n: int, text: str = "", facts: int = 3) -> None:
    snap = store.load_snapshot(u)
    b = batch(u, n, set(snap.facts), f"{u}:c" in snap.concepts, np.random.default_rng(n), facts)
    if text:  # the canary in a turn, a fact statement and the fact's evidence
        b.turns[1] = b.turns[1].model_copy(update={"text": f"{text} in a turn"})
        i = max(i for i, e in enumerate(b.edits) if e.op == "ATTACH")
        e = b.edits[i]
        b.edits[i] = e.model_copy(update={"fact": e.fact.model_copy(update={"statement": f"{text} as a fact",
                                                                             "evidence": text})})
    _, cs = apply_batch(snap, b, T0)
    store.commit(cs)


# -- item 5: a torn WAL --

def _store_with_wal(path: Path, sessions: int) -> None:
    """Commit ``sessions`` sessions (ada, s0..) in a child that exits without closing: the WAL stays."""
    code = ("import os, sys; sys.path.insert(0, 'tests'); from test_embedded_durability import commit_session; "
            "from graph.embedded import EmbeddedStore; "
            f"s = EmbeddedStore({str(path)!r}); s.setup(); "
            f"[commit_session(s, 'ada', 3 * n, facts=20) for n in range({sessions})]; os._exit(0)")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_torn_wal_opens_with_every_whole_commit(tmp_path: Path) -> None:
    import ladybug

    src = tmp_path / "src" / "store"
    _store_with_wal(src, 6)
    wal = src.with_name("store.wal")
    size = wal.stat().st_size
    assert size > 0
    rng = random.Random(10)
    strict_failures, seen = 0, set()
    cuts = [size, size - 1, *sorted(rng.randrange(1, size) for _ in range(12))]
    for cut in cuts:
        d = tmp_path / f"cut{cut}"
        d.mkdir()
        shutil.copy(src, d / "store")
        shutil.copy(wal, d / "store.wal")
        os.truncate(d / "store.wal", cut)
        try:  # what the engine does by default (the failure issue 10 found)
            ladybug.Database(str(d / "store")).close()
        except RuntimeError:
            strict_failures += 1
        store = EmbeddedStore(d / "store")
        snap = store.load_snapshot("ada")
        check_invariants(snap)
        k = len(snap.sessions)
        # a prefix of the commits, each whole (2 turns and 20 facts per session)
        assert set(snap.sessions) == {f"s{3 * n}" for n in range(k)}
        assert len(snap.facts) == 20 * k and len(snap.turn_ids) == 2 * k and snap.version == k
        assert (k == 6) == (cut == size)
        seen.add(k)
        # the recovered store takes new commits that survive the next open
        commit_session(store, "ada", 999)
        store.close()
        again = EmbeddedStore(d / "store")
        assert len(again.load_snapshot("ada").sessions) == k + 1 and not again.recovered_wal
        again.close()
    print(f"cuts={len(cuts)} default_open_failed={strict_failures} ours_opened={len(cuts)} prefixes={sorted(seen)}")
    assert strict_failures >= 1  # the cuts did reproduce the corruption the default open refuses
    assert len(seen) >= 3  # and they landed in different commits


# -- item 6: purge means gone from disk --

@pytest.fixture
def two_users(tmp_path: Path) -> EmbeddedStore:
    store = EmbeddedStore(tmp_path / "store")
    store.setup()
    for n in range(4):  # session numbers 3 apart: each session's first fact supersedes the previous one's
        commit_session(store, "keep", 10 + 3 * n, text="keeper-text")
        commit_session(store, "victim", 3 * n, text=CANARY if n < 2 else "")
    return store


def test_purge_user_leaves_no_byte_on_disk(tmp_path: Path, two_users: EmbeddedStore) -> None:
    store = two_users
    store.close()  # a clean shutdown: what issue 10 grepped
    assert occurrences(tmp_path, CANARY)  # the canary was on disk, so the scan can see it
    store = EmbeddedStore(tmp_path / "store")
    assert store.purge_user("victim") > 0
    assert occurrences(tmp_path, CANARY) == {}  # while open (WAL and data file)
    assert store.users() == ["keep"] and store.counts("victim")["Fact"] == 0
    keep = store.load_snapshot("keep")
    check_invariants(keep)
    assert len(keep.sessions) == 4 and keep.version == 4 and len(keep.relations) == 3
    assert len(store.turns("keep", sorted(keep.turn_ids))) == 8
    q = np.random.default_rng(0).normal(size=16).tolist()
    assert len(store.vector_search("keep", q, 5)) == 5  # embeddings (BLOBs) survived the copy
    commit_session(store, "keep", 99)
    store.close()
    assert occurrences(tmp_path, CANARY) == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]  # no copy or marker left behind
    store = EmbeddedStore(tmp_path / "store")
    assert len(store.load_snapshot("keep").sessions) == 5
    store.close()


def test_purge_items_leaves_no_byte_on_disk(tmp_path: Path, two_users: EmbeddedStore) -> None:
    store = two_users
    snap = store.load_snapshot("victim")
    gone = ("s0", "s3")  # the canary sessions: their turns, facts and session records
    purge = PurgeSet(user_id="victim", expected_version=snap.version,
                     turn_ids=tuple(t for t in snap.turn_ids if t.split(":")[0] in gone),
                     fact_ids=tuple(f for f in snap.facts if f.split(":f")[1].split("-")[0] in ("0", "3")),
                     session_ids=gone)
    out = store.purge_items(purge)
    assert out["Turn"] == 4 and out["Fact"] == 6 and out["Session"] == 2
    assert occurrences(tmp_path, CANARY) == {}
    left = store.load_snapshot("victim")
    assert set(left.sessions) == {"s6", "s9"} and left.version == snap.version + 1
    check_invariants(left)
    store.close()
    assert occurrences(tmp_path, CANARY) == {}


def test_purge_interrupted_before_the_rewrite_finishes_on_open(tmp_path: Path, two_users: EmbeddedStore,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import graph.embedded.store as mod

    def crash(*a: object, **k: object) -> None:
        raise KeyboardInterrupt("killed mid-compaction")

    monkeypatch.setattr(mod, "build_copy", crash)
    with pytest.raises(KeyboardInterrupt):
        two_users.purge_user("victim")
    two_users.close()
    assert occurrences(tmp_path, CANARY)  # the purge committed, its rewrite did not run
    monkeypatch.undo()
    store = EmbeddedStore(tmp_path / "store")  # the marker makes the open finish the rewrite
    assert occurrences(tmp_path, CANARY) == {}
    assert store.users() == ["keep"]
    store.close()


def test_turn_text_canary_scan_is_not_fooled_by_encoding(tmp_path: Path) -> None:
    # A non-ASCII canary: the scan reads raw bytes, so it must look for the UTF-8 encoding.
    store = EmbeddedStore(tmp_path / "store")
    store.setup()
    text = "Kanarienvogel-Grün-ß-" + CANARY
    snap = store.load_snapshot("u")
    t = Turn(turn_id="t0", user_id="u", session_id="s", seq=0, role="user", text=text,
             at=datetime(2025, 1, 1, tzinfo=timezone.utc))
    from graph.edits import EditBatch

    _, cs = apply_batch(snap, EditBatch(user_id="u", session_id="s", session_hash="h", turns=[t]), T0)
    store.commit(cs)
    assert occurrences(tmp_path, text)
    store.purge_user("u")
    store.close()
    assert occurrences(tmp_path, text) == {} and occurrences(tmp_path, "Kanarienvogel") == {}


def test_purge_that_deletes_nothing_skips_the_rewrite(tmp_path: Path, two_users: EmbeddedStore) -> None:
    inode = (tmp_path / "store").stat().st_ino
    assert two_users.purge_user("nobody") == 0
    assert (tmp_path / "store").stat().st_ino == inode  # not rewritten
    assert two_users.purge_user("victim") > 0
    assert (tmp_path / "store").stat().st_ino != inode  # rewritten
    assert not (tmp_path / "store.purge-pending").exists()
    two_users.close()
