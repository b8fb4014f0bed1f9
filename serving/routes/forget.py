"""Forgetting over HTTP, through induction/forget.py like the CLI: a retract (soft, kept as a tombstone)
and a purge (hard delete). Going through that module means the HTTP routes take the same per-user
lock as session ingestion, so a purge never interleaves with an ingest of the same user."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from induction.forget import ForgetError, purge, retract
from serving.deps import ApiDeps, existing, get_deps
from serving.openai_wire import ApiError

router = APIRouter(tags=["forget"])


class ForgetBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(default="", max_length=1000, description="Why the user asked to forget it.")


@router.post("/v1/users/{user_id}/facts/{fact_id}/forget")
def forget_fact(fact_id: str, body: ForgetBody | None = None, user_id: str = Depends(existing),
                deps: ApiDeps = Depends(get_deps)) -> dict[str, Any]:
    # checked here first for the precise status (404 vs 409); retract checks again under the lock
    f = deps.memory.store.load_snapshot(user_id).facts.get(fact_id)
    if f is None:
        raise ApiError(404, f"User {user_id!r} has no such fact.", "fact_not_found")
    if f.retracted_at is not None:
        raise ApiError(409, "This fact is already retracted.", "already_retracted")
    try:
        report = retract(deps.memory, user_id, fact_id=fact_id, reason=body.reason if body else "")
    except ForgetError as e:  # retracted by a concurrent request between the check and the lock
        raise ApiError(409, "This fact was changed by a concurrent request; reload it and retry.",
                       "concurrent_modification") from e
    return {"user_id": user_id, "fact_id": fact_id, "status": "retracted", "version": report.version}


@router.delete("/v1/users/{user_id}")
def purge_user(confirm: bool = Query(default=False, description="Must be true: purge is irreversible."),
               user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> dict[str, Any]:
    if not confirm:
        raise ApiError(400, "Purge deletes every fact, turn, embedding and edit of the user irreversibly; "
                       "repeat with ?confirm=true.", "confirmation_required", "confirm")
    report = purge(deps.memory, user_id)
    return {"user_id": user_id, "status": "purged", "nodes_removed": report.deleted.get("nodes", 0)}
