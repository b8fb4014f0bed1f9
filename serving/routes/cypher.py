"""Read-only Cypher over the user's own subgraph (graph/cypher/: parsed against an allowlist, run in a
per-user sandbox). The query runs off the event loop, a few at a time per key (serving/cypher_route.py);
refused or invalid 400, timed out 408, too many in flight 429."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from serving import service
from serving.deps import ApiDeps, ApiKey, existing, get_deps, principal
from serving.wire import CypherOut

router = APIRouter(tags=["inspect"])


class CypherBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=10_000, description="Read-only Cypher (MATCH ... RETURN ...).")
    params: dict[str, Any] = Field(default_factory=dict, description="Query parameters.")


@router.post("/v1/users/{user_id}/cypher")
async def cypher(body: CypherBody, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps),
                 who: ApiKey | None = Depends(principal)) -> CypherOut:
    return await service.cypher(deps, user_id, who.key if who else "", body.query, body.params)
