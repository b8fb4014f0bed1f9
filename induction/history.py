"""``history(store, user, fact_id)``: a fact, its Relational State, its evidence turns, and every edit
that touched it (ATTACH, SUPERSEDE/CONFLICT/RESOLVE in either role, RETRACT, MERGE/SPLIT moves)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from graph.models import Edit, Fact, RelationalState, Turn, utcnow
from graph.rules import derive_state
from graph.snapshot import concept_path
from graph.store import GraphStore


class FactHistory(BaseModel):
    fact: Fact
    state: RelationalState
    related: dict[str, str]  # other fact id -> its statement
    turns: list[Turn]
    edits: list[Edit]


class UnknownFact(KeyError):
    pass


def _mentions(payload: Any, fid: str) -> bool:
    if isinstance(payload, str):
        return payload == fid
    if isinstance(payload, dict):
        return any(_mentions(k, fid) or _mentions(v, fid) for k, v in payload.items())
    if isinstance(payload, (list, tuple)):
        return any(_mentions(v, fid) for v in payload)
    return False


def fact_history(store: GraphStore, user_id: str, fact_id: str, now: datetime | None = None) -> FactHistory:
    snap = store.load_snapshot(user_id)
    f = snap.facts.get(fact_id)
    if f is None:
        raise UnknownFact(f"user {user_id!r} has no fact {fact_id!r}")
    rels = [r for r in snap.relations.values() if fact_id in (r.src, r.dst)]
    cid = snap.fact_concept.get(fact_id)
    state = derive_state(f, rels, snap.facts, concept_path(snap.concepts, snap.parent, cid) if cid else (), now or utcnow())
    others = {r.src if r.dst == fact_id else r.dst for r in rels}
    edits = sorted((e for e in snap.edits.values() if _mentions(e.payload, fact_id)), key=lambda e: e.seq)
    return FactHistory(fact=f, state=state, related={o: snap.facts[o].statement for o in others if o in snap.facts},
                       turns=store.turns(user_id, list(f.source_turn_ids)), edits=edits)
