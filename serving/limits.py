"""Limits one caller may not exceed, the same over HTTP and MCP: request size, session text, and a
per-key budget of work for the costly stateless route (/v1/state/external).

HTTP bodies are capped by BodyLimitMiddleware before parsing; MCP tool arguments never pass through
it, so the MCP tools call ``check_body_size`` with the same limit and the same message, and both
paths reach ``check_session_size`` in serving/service.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from serving.config import ApiSettings
from serving.openai_wire import ApiError


def check_body_size(settings: ApiSettings, payload: Any) -> None:
    """413 when ``payload`` as JSON is larger than an HTTP body may be (ApiSettings.max_body_bytes)."""
    n = len(json.dumps(payload, default=str).encode())
    if n > settings.max_body_bytes:
        raise ApiError(413, f"The request body exceeds the limit of {settings.max_body_bytes} bytes.", "body_too_large")


def check_session_size(settings: ApiSettings, session: dict[str, Any]) -> None:
    """413 when the session's turns carry more text than ApiSettings.max_session_chars."""
    turns = session.get("turns")
    total = sum(len(t["text"]) for t in turns if isinstance(t, dict) and isinstance(t.get("text"), str)) \
        if isinstance(turns, list) else 0
    if total > settings.max_session_chars:
        raise ApiError(413, f"The session carries {total:,} characters of text; the limit is "
                       f"{settings.max_session_chars:,}. Split it into smaller sessions.", "session_too_large")


class KeyBudget:
    """Seconds of work per API key in a sliding window, one request in flight per key: a key that has
    spent its budget gets 429 (with when to retry) until old requests leave the window."""

    def __init__(self, budget_s: float, window_s: float):
        self.budget_s, self.window_s = budget_s, window_s
        self._spent: dict[str, deque[tuple[float, float]]] = defaultdict(deque)
        self._busy: set[str] = set()
        self._lock = threading.Lock()

    def _used(self, key: str, now: float) -> float:
        q = self._spent[key]
        while q and q[0][0] < now - self.window_s:
            q.popleft()
        return sum(s for _, s in q)

    @contextmanager
    def spend(self, key: str) -> Iterator[None]:
        now = time.monotonic()
        with self._lock:
            if key in self._busy:
                raise ApiError(429, "This API key already has a request on this route running; retry when it "
                               "finishes.", "budget_busy")
            used = self._used(key, now)
            if used >= self.budget_s:
                wait = self._spent[key][0][0] + self.window_s - now
                raise ApiError(429, f"This API key has used its {self.budget_s:g} s of work on this route in the last "
                               f"{self.window_s:g} s; retry in {max(1, round(wait))} s.", "budget_exhausted")
            self._busy.add(key)
        t0 = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                self._busy.discard(key)
                self._spent[key].append((time.monotonic(), time.monotonic() - t0))
