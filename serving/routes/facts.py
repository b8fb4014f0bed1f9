"""Reads of a user's facts, each with its derived relational state."""

from __future__ import annotations


from fastapi import APIRouter, Depends, Query

from graph.models import Instant
from serving import service
from serving.service import facts_with_states
from serving.deps import ApiDeps, existing, get_deps
from serving.openai_wire import ApiError
from serving.wire import FactDetail, FactList

router = APIRouter(tags=["facts"])


@router.get("/v1/users/{user_id}/facts")
def list_facts(validity: str | None = Query(default=None, description="Only this validity: current, superseded, "
                                            "disputed, expired, retracted (overrides include)."),
               include: str | None = Query(default=None, description="Comma-separated validities to show besides "
                                           "current: superseded, disputed, expired, retracted, or all."),
               kind: str | None = Query(default=None, description="Fact kind filter."),
               as_of: Instant | None = Query(default=None, description="Valid time: states as they were then."),
               known_at: Instant | None = Query(default=None, description="Recorded time: what memory knew then."),
               limit: int = Query(default=100, ge=1), offset: int = Query(default=0, ge=0),
               user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> FactList:
    return service.list_facts(deps, user_id, validity, include, kind, as_of, known_at, limit, offset)


@router.get("/v1/users/{user_id}/facts/{fact_id}")
def get_fact(fact_id: str, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> FactDetail:
    row = next((r for r in facts_with_states(deps.memory.store, user_id) if r.fact.fact_id == fact_id), None)
    if row is None:
        raise ApiError(404, f"User {user_id!r} has no such fact.", "fact_not_found")
    return FactDetail(fact=row.fact, state=row.state,
                      source_turns=deps.memory.store.turns(user_id, list(row.fact.source_turn_ids)))
