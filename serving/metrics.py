"""Request metrics of ``evomem serve``: counts, status classes and latency percentiles per route template."""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any


class Metrics:
    """Request counts, status classes and latency percentiles per route template (thread-safe).
    Latencies keep the last ``window`` samples per route, so memory stays bounded under load."""

    def __init__(self, window: int = 4096):
        self._lock = threading.Lock()
        self._window = window
        self.routes: dict[str, dict[str, Any]] = {}
        self.started = time.time()

    def record(self, route: str, status: int, ms: float) -> None:
        with self._lock:
            r = self.routes.setdefault(route, {"count": 0, "status": {}, "lat": deque(maxlen=self._window)})
            r["count"] += 1
            cls = f"{status // 100}xx"
            r["status"][cls] = r["status"].get(cls, 0) + 1
            r["lat"].append(ms)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            out = {}
            for route, r in sorted(self.routes.items()):
                lat = sorted(r["lat"])
                out[route] = {"count": r["count"], "status": dict(r["status"]), "p50_ms": _quantile(lat, 0.50),
                              "p95_ms": _quantile(lat, 0.95), "max_ms": round(lat[-1], 2) if lat else None}
            return {"uptime_s": round(time.time() - self.started, 1), "routes": out}


def _quantile(sorted_ms: list[float], q: float) -> float | None:
    """Nearest-rank quantile of an ascending list (None when empty)."""
    return round(sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))], 2) if sorted_ms else None


def install_metrics(app: Any, metrics: Metrics) -> None:
    """Time every request and file it under its route template (``/v1/users/{user_id}/answer``),
    never under the raw path, so user ids do not leak into metrics and cardinality stays bounded."""
    from fastapi import Request

    @app.middleware("http")
    async def _timed(request: Request, call_next: Any) -> Any:
        t0 = time.perf_counter()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            return response
        finally:
            route = request.scope.get("route")
            name = f"{request.method} {route.path}" if route is not None else "unmatched"
            metrics.record(name, status, (time.perf_counter() - t0) * 1e3)
