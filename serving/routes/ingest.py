"""Writes: a conversation session through induction (``/sessions``) or an explicit edit batch (``/edits``).
Both are atomic: a refused request leaves the store as it was."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends

from graph.edits import EditBatch, EditRejected
from induction.redact import redact_batch
from llmclients.chat import ChatError
from serving.deps import ApiDeps, get_deps, scoped
from serving.errors import FOREIGN_ID_RULES, id_conflict, model_error, sentence
from serving.openai_wire import ApiError

router = APIRouter(tags=["ingest"])


@router.post("/v1/users/{user_id}/sessions")
def ingest_session(session: dict[str, Any] = Body(...), user_id: str = Depends(scoped),
                   deps: ApiDeps = Depends(get_deps)) -> dict[str, Any]:
    if deps.ingest is None:
        raise ApiError(501, "Session ingestion is not configured on this server; POST an edit batch to "
                       f"/v1/users/{user_id}/edits instead.", "ingest_not_configured")
    if session.get("user_id") not in (None, user_id):
        raise ApiError(400, "The session's user_id does not match the user in the path.", "user_mismatch", "user_id")
    try:
        return deps.ingest(user_id, session)
    except ChatError as e:
        raise model_error(e) from e
    except EditRejected as e:
        if e.rule in FOREIGN_ID_RULES:
            raise  # the EditRejected handler: 409 without the rule's text
        raise ApiError(422, sentence(f"Session not ingested, nothing was written: {e}"), e.rule) from e
    except ValueError as e:  # malformed session (SessionFormatError)
        raise ApiError(422, sentence(f"Session not ingested, nothing was written: {e}"), getattr(e, "rule", None)
                       or "invalid_session") from e
    except RuntimeError as e:  # induction.IngestError: conflict / extraction / validation
        kind = getattr(e, "kind", None)
        if kind is None:
            raise (id_conflict(e) or e) from e
        if isinstance(e.__cause__, ChatError):
            raise model_error(e.__cause__) from e
        status = 409 if kind in ("session_conflict", "turn_conflict", "concurrency") else 422
        raise ApiError(status, sentence(f"Session not ingested, nothing was written: {e}"), kind) from e


@router.post("/v1/users/{user_id}/edits")
def apply_edits(batch: EditBatch, user_id: str = Depends(scoped), deps: ApiDeps = Depends(get_deps)) -> dict[str, Any]:
    if batch.user_id != user_id:
        raise ApiError(400, "The batch's user_id does not match the user in the path.", "user_mismatch", "user_id")
    batch, redacted = redact_batch(batch, deps.redact)  # secrets never stored (induction/redact.py)
    _, cs = deps.memory.apply(batch)
    return {"user_id": user_id, "version": cs.new_version, "facts_created": [f.fact_id for f in cs.facts_create],
            "relations_added": len(cs.relations_add), "concepts_upserted": len(cs.concepts_upsert),
            "edit_ids": [e.edit_id for e in cs.edits_upsert], "redacted": redacted}
