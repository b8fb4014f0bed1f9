"""commit_with_retry: the one optimistic-concurrency loop every writer (Memory.apply, ingestion,
retract, purge_turns) goes through."""

from __future__ import annotations

from typing import Any

import pytest

from graph.edits import EditBatch
from graph.snapshot import Snapshot
from graph.store import ConcurrentModification
from memcore.memory import Memory
from memcore.retry import commit_with_retry


class _Store:
    """Counts snapshot loads; the snapshot's version says which load an attempt got."""

    def __init__(self) -> None:
        self.loads = 0

    def load_snapshot(self, user_id: str) -> Snapshot:
        self.loads += 1
        return Snapshot(user_id=user_id, version=self.loads)


def test_each_attempt_builds_on_a_fresh_snapshot_until_one_commits() -> None:
    store = _Store()
    seen: list[int] = []

    def attempt(snap: Snapshot, n: int) -> str:
        seen.append(snap.version)
        if n < 3:
            raise ConcurrentModification("another writer won")
        return f"committed on v{snap.version}"

    assert commit_with_retry(store, "u", attempt, retries=5, backoff_s=0) == "committed on v3"  # type: ignore[arg-type]
    assert seen == [1, 2, 3] and store.loads == 3


def test_the_last_conflict_propagates_and_first_snapshot_is_reused() -> None:
    store = _Store()
    first = Snapshot(user_id="u", version=0)
    seen: list[int] = []

    def attempt(snap: Snapshot, n: int) -> None:
        seen.append(snap.version)
        raise ConcurrentModification("always")

    with pytest.raises(ConcurrentModification):
        commit_with_retry(store, "u", attempt, retries=2, first=first, backoff_s=0)  # type: ignore[arg-type]
    assert seen == [first.version, 1] and store.loads == 1  # attempt 1 used the caller's snapshot


def test_memory_apply_retries_a_concurrent_modification(embedded_memory: Memory,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    real = embedded_memory.store.commit
    calls: list[int] = []

    def flaky(cs: Any) -> None:
        calls.append(cs.expected_version)
        if len(calls) == 1:
            raise ConcurrentModification("simulated concurrent writer")
        real(cs)

    monkeypatch.setattr(embedded_memory.store, "commit", flaky)
    snap, cs = embedded_memory.apply(EditBatch(user_id="u", session_id="s", session_hash="h", edits=[]))
    assert len(calls) == 2 and snap.version == cs.new_version
