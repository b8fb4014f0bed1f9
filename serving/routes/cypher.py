"""Read-only Cypher over the user's own subgraph (the guard in graph/cypher_guard.py pins every pattern
to the user). Errors: a refused query 400, a query the engine rejects 400 (serving/errors.py)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from serving.deps import ApiDeps, existing, get_deps

router = APIRouter(tags=["inspect"])


class CypherBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=10_000, description="Read-only Cypher (MATCH ... RETURN ...).")
    params: dict[str, Any] = Field(default_factory=dict, description="Query parameters.")


@router.post("/v1/users/{user_id}/cypher")
def cypher(body: CypherBody, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> dict[str, Any]:
    cap = deps.settings.max_cypher_rows
    rows = deps.memory.cypher(user_id, body.query, body.params)
    return {"user_id": user_id, "rows": json.loads(json.dumps(rows[:cap], default=str)), "truncated": len(rows) > cap}
