"""The one commit-with-retry loop: optimistic concurrency on a user's version, shared by every writer."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from graph.snapshot import Snapshot
from graph.store import ConcurrentModification, GraphStore

R = TypeVar("R")


def commit_with_retry(store: GraphStore, user_id: str, attempt: Callable[[Snapshot, int], R], retries: int = 5,
                      first: Snapshot | None = None, backoff_s: float = 0.01) -> R:
    """Run ``attempt(snapshot, attempt_number)`` — build from the snapshot, then write it — until it does
    not raise ``ConcurrentModification``; at most ``retries`` attempts, the last one's error propagates.

    Each attempt gets a freshly loaded snapshot (``first`` is used for attempt 1 when the caller already
    holds one), so a concurrent writer's changes are rebuilt on, never overwritten. The short linear
    backoff lets the winning writer finish before we reload."""
    if retries < 1:
        raise ValueError("retries must be >= 1")
    for n in range(1, retries + 1):
        snap = first if (n == 1 and first is not None) else store.load_snapshot(user_id)
        try:
            return attempt(snap, n)
        except ConcurrentModification:
            if n == retries:
                raise
            time.sleep(backoff_s * n)
    raise AssertionError("unreachable")
