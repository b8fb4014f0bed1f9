"""Reads of a user's facts, each with its derived relational state."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel

from graph.models import Fact, RelationalState, Turn, utcnow
from graph.timeline import TimeView, parse_include, states_at
from serving.deps import ApiDeps, existing, get_deps
from serving.openai_wire import ApiError

router = APIRouter(tags=["facts"])


class FactWithState(BaseModel):
    fact: Fact
    state: RelationalState


class FactDetail(FactWithState):
    source_turns: list[Turn]


class FactList(BaseModel):
    user_id: str
    total: int
    facts: list[FactWithState]


def facts_with_states(store: Any, user_id: str, view: TimeView | None = None) -> list[FactWithState]:
    """Every fact of the user (visible in ``view``, default now) with its derived relational state,
    newest first (graph/timeline.py derives them)."""
    snap = store.load_snapshot(user_id)
    out = [FactWithState(fact=f, state=st) for f, st in states_at(snap, view).values()]
    out.sort(key=lambda x: ((x.fact.observed_at or x.fact.recorded_at or utcnow()).isoformat(), x.fact.fact_id),
             reverse=True)
    return out


@router.get("/v1/users/{user_id}/facts")
def list_facts(validity: str | None = Query(default=None, description="Only this validity: current, superseded, "
                                            "disputed, expired, retracted (overrides include)."),
               include: str | None = Query(default=None, description="Comma-separated validities to show besides "
                                           "current: superseded, disputed, expired, retracted, or all."),
               kind: str | None = Query(default=None, description="Fact kind filter."),
               as_of: datetime | None = Query(default=None, description="Valid time: states as they were then."),
               known_at: datetime | None = Query(default=None, description="Recorded time: what memory knew then."),
               limit: int = Query(default=100, ge=1), offset: int = Query(default=0, ge=0),
               user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> FactList:
    if limit > deps.settings.max_page:
        raise ApiError(422, f"The limit must be at most {deps.settings.max_page}.", "validation_error", "limit")
    try:
        shown = frozenset([validity]) if validity is not None else parse_include(include)
    except ValueError as e:
        raise ApiError(422, f"{str(e)[0].upper()}{str(e)[1:]}.", "validation_error", "include") from None
    rows = [r for r in facts_with_states(deps.memory.store, user_id, TimeView(as_of=as_of, known_at=known_at))
            if r.state.validity in shown and (kind is None or r.fact.kind == kind)]
    return FactList(user_id=user_id, total=len(rows), facts=rows[offset:offset + limit])


@router.get("/v1/users/{user_id}/facts/{fact_id}")
def get_fact(fact_id: str, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> FactDetail:
    row = next((r for r in facts_with_states(deps.memory.store, user_id) if r.fact.fact_id == fact_id), None)
    if row is None:
        raise ApiError(404, f"User {user_id!r} has no such fact.", "fact_not_found")
    return FactDetail(fact=row.fact, state=row.state,
                      source_turns=deps.memory.store.turns(user_id, list(row.fact.source_turn_ids)))
