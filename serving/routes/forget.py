"""Forgetting over HTTP, through induction/forget.py like the CLI: a retract (soft, kept as a tombstone)
and a purge (hard delete). Going through that module means the HTTP routes take the same per-user
lock as session ingestion, so a purge never interleaves with an ingest of the same user."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from serving import service
from serving.deps import ApiDeps, existing, get_deps
from serving.wire import ForgetOut, PurgeOut

router = APIRouter(tags=["forget"])


class ForgetBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(default="", max_length=1000, description="Why the user asked to forget it.")


@router.post("/v1/users/{user_id}/facts/{fact_id}/forget")
def forget_fact(fact_id: str, body: ForgetBody | None = None, user_id: str = Depends(existing),
                deps: ApiDeps = Depends(get_deps)) -> ForgetOut:
    return service.forget_fact(deps, user_id, fact_id, body.reason if body else "")


@router.delete("/v1/users/{user_id}")
def purge_user(confirm: bool = Query(default=False, description="Must be true: purge is irreversible."),
               user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> PurgeOut:
    return service.purge_user(deps, user_id, confirm)
