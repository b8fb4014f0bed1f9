"""Writes: a conversation session through induction (``/sessions``) or an explicit edit batch (``/edits``).
Both are atomic: a refused request leaves the store as it was (serving/service.py does the work)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends

from graph.edits import EditBatch
from serving import service
from serving.deps import ApiDeps, get_deps, scoped
from serving.wire import EditsOut, IngestOut

router = APIRouter(tags=["ingest"])


@router.post("/v1/users/{user_id}/sessions")
def ingest_session(session: dict[str, Any] = Body(...), user_id: str = Depends(scoped),
                   deps: ApiDeps = Depends(get_deps)) -> IngestOut:
    return service.ingest_session(deps, user_id, session)


@router.post("/v1/users/{user_id}/edits")
def apply_edits(batch: EditBatch, user_id: str = Depends(scoped), deps: ApiDeps = Depends(get_deps)) -> EditsOut:
    return service.apply_edits(deps, user_id, batch)
