"""The HTTP side of user Cypher: off the event loop, a few at a time per API key, clear statuses.

A slow query must never stall other users: it runs in a worker thread (anyio) under a global limiter
of its own (half the cores, at least 2), so it can neither exhaust the pool other sync routes use
nor take every core from the event loop; each key may have at most ``per_key`` queries in flight
(more -> 429), and every failure is a 4xx that says what to do.
"""

from __future__ import annotations

import json
import os
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from graph.cypher.errors import CypherFailed, CypherRefused, CypherTimeout
from serving.openai_wire import ApiError


class CypherGate:
    def __init__(self, per_key: int = 2, total: int | None = None):
        # each running query keeps one core busy (the engine runs it on one thread); leave the rest of
        # the machine to the event loop and the other routes
        total = total or max(2, (os.cpu_count() or 2) // 2)
        self.per_key = per_key
        self._active: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self._limiter = anyio.CapacityLimiter(total)

    def _enter(self, key: str) -> None:
        with self._lock:
            if self._active[key] >= self.per_key:
                raise ApiError(429, f"this API key already has {self.per_key} Cypher queries running; "
                               "retry when one finishes", "cypher_busy")
            self._active[key] += 1

    def _leave(self, key: str) -> None:
        with self._lock:
            self._active[key] -= 1
            if self._active[key] <= 0:
                del self._active[key]

    async def run(self, key: str, fn: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """``fn()`` in a worker thread; CypherRefused/Timeout/Failed become 400/408/400 ApiErrors."""
        self._enter(key)
        try:
            return await anyio.to_thread.run_sync(fn, limiter=self._limiter)
        except CypherTimeout as e:
            raise ApiError(408, _sentence("Cypher timed out", e), "cypher_timeout") from e
        except CypherFailed as e:
            raise ApiError(400, _sentence("Cypher failed", e), "cypher_invalid") from e
        except CypherRefused as e:
            raise ApiError(400, _sentence("Cypher refused", e), "cypher_refused") from e
        finally:
            self._leave(key)


def _sentence(what: str, e: Exception) -> str:
    msg = str(e).rstrip()
    return f"{what}: {msg}" + ("" if msg.endswith((".", "?", "!")) else ".")


def cypher_body(user_id: str, rows: list[dict[str, Any]], max_rows: int) -> dict[str, Any]:
    """The response: at most ``max_rows`` rows (JSON-safe) and whether more were found."""
    return {"user_id": user_id, "rows": json.loads(json.dumps(rows[:max_rows], default=str)),
            "truncated": len(rows) > max_rows}
