"""``GET /v1/users/{u}/facts/{f}/history``: a fact, its state, related facts, evidence turns and every
edit that touched it (the HTTP side of ``evomem history``)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from serving import service
from serving.deps import ApiDeps, existing, get_deps
from serving.wire import FactHistoryOut

router = APIRouter(tags=["facts"])


@router.get("/v1/users/{user_id}/facts/{fact_id}/history")
def fact_history(fact_id: str, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> FactHistoryOut:
    return service.history(deps, user_id, fact_id)
