"""Operations: ``/health`` (no key: load balancers probe it) and ``/metrics``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from graph.cypher.pool import sandbox_restarts
from serving.deps import ApiDeps, ApiKey, get_deps, principal

router = APIRouter(tags=["ops"])


@router.get("/health")
def health(deps: ApiDeps = Depends(get_deps)) -> dict[str, Any]:
    pipe = deps.pipeline
    return {"status": "ok", "store": getattr(deps.memory.store, "name", "?"), "policy": getattr(pipe.policy, "name", "?"),
            "answer_model": getattr(pipe.answer_model, "name", "?"), "ingest": deps.ingest is not None}


@router.get("/metrics")
def metrics(_: ApiKey | None = Depends(principal), deps: ApiDeps = Depends(get_deps)) -> dict[str, Any]:
    return {**deps.metrics.snapshot(), "cypher_sandbox": {"restarts": sandbox_restarts()}}
