"""Reads of a user's facts, each with its derived relational state."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fastapi import APIRouter, Depends, Query

from graph.models import utcnow
from graph.rules import derive_state
from serving.deps import ApiDeps, existing, get_deps
from serving.openai_wire import ApiError
from serving.wire import FactDetail, FactList, FactWithState

router = APIRouter(tags=["facts"])


def facts_with_states(store: Any, user_id: str) -> list[FactWithState]:
    """Every fact of the user with its derived relational state (newest first)."""
    snap = store.load_snapshot(user_id)
    rels: dict[str, list[Any]] = defaultdict(list)
    for r in snap.relations.values():
        rels[r.src].append(r)
        rels[r.dst].append(r)
    now = utcnow()
    out = [FactWithState(fact=f, state=derive_state(f, rels[fid], snap.facts,
                                                    snap.concept_path(snap.fact_concept[fid])
                                                    if fid in snap.fact_concept else (), now))
           for fid, f in snap.facts.items()]
    out.sort(key=lambda x: ((x.fact.observed_at or x.fact.recorded_at or utcnow()).isoformat(), x.fact.fact_id),
             reverse=True)
    return out


@router.get("/v1/users/{user_id}/facts")
def list_facts(validity: str | None = Query(default=None, description="current, superseded, disputed, expired, "
                                            "retracted"),
               kind: str | None = Query(default=None, description="Fact kind filter."),
               limit: int = Query(default=100, ge=1), offset: int = Query(default=0, ge=0),
               user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> FactList:
    if limit > deps.settings.max_page:
        raise ApiError(422, f"The limit must be at most {deps.settings.max_page}.", "validation_error", "limit")
    rows = [r for r in facts_with_states(deps.memory.store, user_id)
            if (validity is None or r.state.validity == validity) and (kind is None or r.fact.kind == kind)]
    return FactList(user_id=user_id, total=len(rows), facts=rows[offset:offset + limit])


@router.get("/v1/users/{user_id}/facts/{fact_id}")
def get_fact(fact_id: str, user_id: str = Depends(existing), deps: ApiDeps = Depends(get_deps)) -> FactDetail:
    row = next((r for r in facts_with_states(deps.memory.store, user_id) if r.fact.fact_id == fact_id), None)
    if row is None:
        raise ApiError(404, f"User {user_id!r} has no such fact.", "fact_not_found")
    return FactDetail(fact=row.fact, state=row.state,
                      source_turns=deps.memory.store.turns(user_id, list(row.fact.source_turn_ids)))
