"""The shipped example history (hand-written facts over real turns), as edit batches."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from importlib import resources
from typing import TYPE_CHECKING, Any

from graph.edits import AttachFact, Conflict, CreateConcept, EditBatch, OntologyEdit, Supersede
from graph.models import Fact, Turn

if TYPE_CHECKING:
    from memcore.memory import Memory


def load_history() -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath("history.json").read_text())


def load_into(memory: Memory, history: dict[str, Any] | None = None) -> int:
    """Apply the example history's sessions ``memory`` does not hold yet (session id as the idempotency
    hash, so a rerun adds nothing); returns how many were applied."""
    n = 0
    for batch in history_batches(history or load_history()):
        if batch.session_id not in memory.store.load_snapshot(batch.user_id).sessions:
            memory.apply(batch.model_copy(update={"session_hash": batch.session_id}))
            n += 1
    return n


def concept_id(user_id: str, path: list[str] | tuple[str, ...]) -> str:
    return f"{user_id}::c::{'/'.join(path)}"


def fact_id(user_id: str, key: str) -> str:
    return f"{user_id}::f::{key}"


def history_batches(history: dict[str, Any]) -> list[EditBatch]:
    """One batch per session, in time order per user: turns, new concepts, facts, then relations."""
    batches: list[EditBatch] = []
    for user in history["users"]:
        u = user["user_id"]
        known_concepts: set[str] = set()
        for sess in sorted(user["sessions"], key=lambda s: s["at"]):
            at = datetime.fromisoformat(sess["at"].replace("Z", "+00:00"))
            sid = sess["session_id"]
            turns = [Turn(turn_id=f"{sid}:{i}", user_id=u, session_id=sid, seq=i, role=t["role"], text=t["text"],
                          at=at + timedelta(minutes=i)) for i, t in enumerate(sess["turns"])]
            edits: list[OntologyEdit] = []
            for f in sess.get("facts", []):
                path = tuple(f["concept"])
                for depth in range(1, len(path) + 1):
                    cid = concept_id(u, path[:depth])
                    if cid not in known_concepts:
                        parent = concept_id(u, path[: depth - 1]) if depth > 1 else None
                        edits.append(CreateConcept(concept_id=cid, name=path[depth - 1], parent_id=parent))
                        known_concepts.add(cid)
                valid_to = f.get("valid_to")
                fact = Fact(
                    fact_id=fact_id(u, f["key"]), user_id=u, statement=f["statement"], kind=f["kind"],
                    holder=f.get("holder", "user"), evidence=f.get("evidence", ""),
                    source_turn_ids=(turns[f["turn"]].turn_id,), session_id=sid, observed_at=turns[f["turn"]].at,
                    valid_from=at, valid_to=datetime.fromisoformat(valid_to.replace("Z", "+00:00")) if valid_to else None,
                    scope=f.get("scope"),
                )
                edits.append(AttachFact(fact=fact, concept_id=concept_id(u, path)))
            for r in sess.get("relations", []):
                src, dst = fact_id(u, r["src"]), fact_id(u, r["dst"])
                if r["type"] == "SUPERSEDES":
                    edits.append(Supersede(new_fact_id=src, old_fact_id=dst, reason=r.get("reason", "")))
                else:
                    edits.append(Conflict(a=src, b=dst, reason=r.get("reason", "")))
            batches.append(EditBatch(user_id=u, session_id=sid, turns=turns, edits=edits))
    return batches
