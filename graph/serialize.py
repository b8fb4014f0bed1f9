"""Model <-> property-row conversion shared by the backends (both store flat property maps)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from graph.models import Concept, Edit, Fact, Relation, Turn, as_utc

FACT_PROPS = ("fact_id", "user_id", "statement", "kind", "holder", "evidence", "source_turn_ids", "session_id",
              "observed_at", "valid_from", "valid_to", "recorded_at", "expired_at", "retracted_at", "scope",
              "qualifiers", "confidence")
FACT_TIME_PROPS = ("observed_at", "valid_from", "valid_to", "recorded_at", "expired_at", "retracted_at")


def _t(v: Any) -> datetime | None:
    if v is None:
        return None
    if hasattr(v, "to_native"):  # neo4j.time.DateTime
        v = v.to_native()
    return as_utc(v)


def fact_row(f: Fact) -> dict[str, Any]:
    row = f.model_dump()
    row["source_turn_ids"] = list(f.source_turn_ids)
    row["qualifiers"] = json.dumps(f.qualifiers, sort_keys=True)
    return row


def row_fact(row: dict[str, Any]) -> Fact:
    data = {k: row.get(k) for k in FACT_PROPS}
    for k in FACT_TIME_PROPS:
        data[k] = _t(data[k])
    data["source_turn_ids"] = tuple(data["source_turn_ids"] or ())
    data["qualifiers"] = json.loads(data["qualifiers"] or "{}")
    data["holder"] = data["holder"] or "user"
    data["evidence"] = data["evidence"] or ""
    data["confidence"] = 1.0 if data["confidence"] is None else data["confidence"]
    return Fact.model_validate(data)


def concept_row(c: Concept) -> dict[str, Any]:
    return c.model_dump()


def row_concept(row: dict[str, Any]) -> Concept:
    return Concept(concept_id=row["concept_id"], user_id=row["user_id"], name=row["name"],
                   description=row.get("description") or "", created_at=_t(row.get("created_at")),
                   retired_at=_t(row.get("retired_at")))


def edit_row(e: Edit) -> dict[str, Any]:
    row = e.model_dump()
    row["payload"] = json.dumps(e.payload, sort_keys=True, default=str)
    return row


def row_edit(row: dict[str, Any]) -> Edit:
    return Edit(edit_id=row["edit_id"], user_id=row["user_id"], seq=row["seq"], session_id=row.get("session_id"),
                op=row["op"], at=_t(row["at"]), payload=json.loads(row["payload"] or "{}"),
                undone_at=_t(row.get("undone_at")))


def turn_row(t: Turn) -> dict[str, Any]:
    row = t.model_dump()
    row["key"] = turn_key(t.user_id, t.turn_id)
    return row


def row_turn(row: dict[str, Any]) -> Turn:
    return Turn(turn_id=row["turn_id"], user_id=row["user_id"], session_id=row["session_id"], seq=row["seq"],
                role=row["role"], text=row["text"], at=_t(row.get("at")))


def turn_key(user_id: str, turn_id: str) -> str:
    """Turn ids (e.g. LoCoMo's ``D1:3``) are unique per user only, so the stored key carries the user."""
    return f"{user_id}/{turn_id}"


def session_key(user_id: str, session_id: str) -> str:
    return f"{user_id}/{session_id}"


def relation_row(r: Relation) -> dict[str, Any]:
    return {"type": r.type, "src": r.src, "dst": r.dst, "at": r.at, "reason": r.reason, "resolved_at": r.resolved_at}


def row_relation(row: dict[str, Any]) -> Relation:
    return Relation(type=row["type"], src=row["src"], dst=row["dst"], at=_t(row.get("at")),
                    reason=row.get("reason") or "", resolved_at=_t(row.get("resolved_at")))
