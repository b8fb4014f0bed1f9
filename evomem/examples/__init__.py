"""The shipped example history: raw turns with their dates (history.json), ingested for real.

- ``history_sessions`` / ``ingest_history``: the turns as ``Session``s through the default ingestion (the
  same path as ``evomem ingest``: offline extractor, shipped relation model); what ``make demo`` and
  ``evomem ship-policy``'s example check do.
- ``showcase``: what ingestion found in the store, per state the example exists to show (an update, a
  person's own contradiction, a belief contradicted by outside evidence, a plan expired by the request
  date, a scoped preference), checked against the history's ``showcase`` expectations.
- ``fixture_batches`` (alias ``history_batches``) / ``load_fixture``: a HAND-WRITTEN ontology over the same
  turns (fixture_ontology.json), a test fixture with known fact ids (``evomem load-example`` loads it, and
  says so) — never presented as what ingestion found.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from graph.edits import AttachFact, Conflict, CreateConcept, EditBatch, OntologyEdit, Supersede
from graph.models import Fact, Turn
from graph.rules import EVIDENCE_HOLDERS

if TYPE_CHECKING:
    from induction.pipeline import IngestReport, Ingestor
    from induction.session import Session
    from memcore.memory import Memory


def _read(name: str) -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath(name).read_text())


def load_history() -> dict[str, Any]:
    return _read("history.json")


def _at(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def asked_at(history: dict[str, Any] | None = None) -> datetime:
    """When the history's requests are asked (the reading date, ``as_of``, of the demo)."""
    return _at((history or load_history())["asked_at"])


def history_sessions(history: dict[str, Any] | None = None) -> list[Session]:
    """The raw turns as sessions, each with its date, in time order per user."""
    from induction.session import Session

    out = []
    for user in (history or load_history())["users"]:
        for sess in sorted(user["sessions"], key=lambda s: s["at"]):
            out.append(Session.model_validate({
                "session_id": sess["session_id"], "user_id": user["user_id"], "started_at": _at(sess["at"]),
                "turns": [{"role": t["role"], "text": t["text"]} for t in sess["turns"]],
                "source": "evomem/examples/history.json"}))
    return out


def ingest_history(memory: Memory, history: dict[str, Any] | None = None,
                   ingestor: Ingestor | None = None) -> list[IngestReport]:
    """Every session through ``ingestor`` (default: the default ingestion, as ``evomem ingest``); a session
    already stored with the same content is reported ``unchanged``."""
    from induction.config import IngestConfig
    from induction.pipeline import make_ingestor

    ing = ingestor or make_ingestor(memory, IngestConfig(extractor="offline", adjudicator="model"))
    return [ing.ingest(s) for s in history_sessions(history)]


def load_into(memory: Memory, history: dict[str, Any] | None = None) -> int:
    """Ingest the example history's sessions ``memory`` does not hold yet; returns how many were committed."""
    return sum(1 for r in ingest_history(memory, history) if r.status == "committed")


# ------------------------------------------------------------------ what ingestion found
ShowcaseState = Literal["update", "self_contradiction", "evidence_conflict", "expired", "scoped"]


class Found(BaseModel):
    """One state ingestion produced: a relation (``fact`` → ``other``) or a fact's own standing."""

    state: ShowcaseState
    user: str
    fact: str
    other: str = ""
    detail: str = ""


def showcase(memory: Memory, users: list[str], as_of: datetime) -> list[Found]:
    """Every update, conflict, expired fact and scoped fact in the users' stored memory, read at ``as_of``."""
    from induction.branch import validity_map

    out: list[Found] = []
    for u in users:
        snap = memory.store.load_snapshot(u)
        facts = snap.facts
        for r in sorted(snap.relations.values(), key=lambda r: (r.type, r.src, r.dst)):
            a, b = facts.get(r.src), facts.get(r.dst)
            if a is None or b is None:
                continue
            if r.type == "SUPERSEDES":
                out.append(Found(state="update", user=u, fact=a.statement, other=b.statement))
            elif a.holder in EVIDENCE_HOLDERS or b.holder in EVIDENCE_HOLDERS:
                ev, belief = (a, b) if a.holder in EVIDENCE_HOLDERS else (b, a)
                out.append(Found(state="evidence_conflict", user=u, fact=ev.statement, other=belief.statement,
                                 detail=f"{ev.holder} vs {belief.holder}"))
            elif a.holder == b.holder:
                new, old = (a, b) if (a.observed_at or as_of) >= (b.observed_at or as_of) else (b, a)
                out.append(Found(state="self_contradiction", user=u, fact=new.statement, other=old.statement,
                                 detail=f"both said by {a.holder}"))
        validity = validity_map(snap, sorted(facts), as_of)
        for fid, f in sorted(facts.items(), key=lambda x: (x[1].observed_at or as_of, x[0])):
            if validity.get(fid) == "expired" and f.valid_to is not None:
                said = f.observed_at.date().isoformat() if f.observed_at else "undated"
                out.append(Found(state="expired", user=u, fact=f.statement,
                                 detail=f"said {said}, valid until {f.valid_to.date().isoformat()}"
                                 + (f" ('{f.qualifiers['valid_to_expression']}')" if f.qualifiers.get("valid_to_expression") else "")))
            if f.scope:
                out.append(Found(state="scoped", user=u, fact=f.statement, detail=f.scope))
    return out


def expectation_met(expect: dict[str, str], found: list[Found]) -> Found | None:
    """The found state that meets one ``showcase`` expectation of history.json (fragments, case-insensitive)."""
    def has(text: str, frag: str | None) -> bool:
        return frag is None or frag.lower() in text.lower()

    for f in found:
        if f.state != expect["state"] or f.user != expect["user"]:
            continue
        if has(f.fact, expect.get("new") or expect.get("fact")) and has(f.other, expect.get("old")) \
                and has(f.detail, expect.get("scope")):
            return f
    return None


# ------------------------------------------------------------------ the hand-written test fixture
def concept_id(user_id: str, path: list[str] | tuple[str, ...]) -> str:
    return f"{user_id}::c::{'/'.join(path)}"


def fact_id(user_id: str, key: str) -> str:
    return f"{user_id}::f::{key}"


def fixture_batches(history: dict[str, Any] | None = None) -> list[EditBatch]:
    """TEST FIXTURE: the hand-written ontology (fixture_ontology.json) over the history's turns, one batch per
    session in time order per user: turns, new concepts, facts, then relations. Not the system's output."""
    history = history or load_history()
    written = _read("fixture_ontology.json")["sessions"]
    batches: list[EditBatch] = []
    for user in history["users"]:
        u = user["user_id"]
        known_concepts: set[str] = set()
        for sess in sorted(user["sessions"], key=lambda s: s["at"]):
            at = _at(sess["at"])
            sid = sess["session_id"]
            hand = written.get(sid, {})
            turns = [Turn(turn_id=f"{sid}:{i}", user_id=u, session_id=sid, seq=i, role=t["role"], text=t["text"],
                          at=at + timedelta(minutes=i)) for i, t in enumerate(sess["turns"])]
            edits: list[OntologyEdit] = []
            for f in hand.get("facts", []):
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
                    valid_from=at, valid_to=_at(valid_to) if valid_to else None, scope=f.get("scope"),
                )
                edits.append(AttachFact(fact=fact, concept_id=concept_id(u, path)))
            for r in hand.get("relations", []):
                src, dst = fact_id(u, r["src"]), fact_id(u, r["dst"])
                if r["type"] == "SUPERSEDES":
                    edits.append(Supersede(new_fact_id=src, old_fact_id=dst, reason=r.get("reason", "")))
                else:
                    edits.append(Conflict(a=src, b=dst, reason=r.get("reason", "")))
            batches.append(EditBatch(user_id=u, session_id=sid, turns=turns, edits=edits))
    return batches


history_batches = fixture_batches  # the name the tests know: the hand-written fixture


def load_fixture(memory: Memory, history: dict[str, Any] | None = None) -> int:
    """TEST FIXTURE: apply the hand-written ontology's sessions ``memory`` does not hold yet (session id as the
    idempotency hash, so a rerun adds nothing); returns how many were applied."""
    n = 0
    held: dict[str, set[str | None]] = {}  # per user, read once: the sessions it holds (and those applied here)
    for batch in fixture_batches(history):
        have = held.get(batch.user_id)
        if have is None:
            have = held[batch.user_id] = set[str | None](memory.store.load_snapshot(batch.user_id).sessions)
        if batch.session_id not in have:
            memory.apply(batch.model_copy(update={"session_hash": batch.session_id}))
            have.add(batch.session_id)
            n += 1
    return n
