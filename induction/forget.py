"""Forgetting: ``retract`` (soft, kept for history, shown as a tombstone) and ``purge`` (hard delete).

- ``retract(memory, user, fact_id=... | request=...)`` commits a RETRACT edit: the fact stays, its
  validity becomes ``retracted``, and rendering shows it as "retracted by the user: never rely on
  this" (retrieval/render.py). A natural-language request ("forget that I'm vegetarian") is matched to a
  fact by embedding cosine at/above ``ForgetConfig.match_threshold``; below it, or when two different
  facts tie within ``ambiguity_margin``, nothing is retracted and the candidates are returned in the
  error so the caller can pick one by id.
- ``purge(memory, user)`` deletes every node of the user (facts with their embeddings, turns,
  concepts, edits, sessions). ``purge_turns(memory, user, turn_ids)`` deletes those turns and
  everything derived from them: facts citing them, edits about those facts (their reasons may quote
  the text), concepts left empty by it (their names may come from the text) with their CREATE edits,
  and sessions left without turns. Both are user-requested hard deletes: no Edit record, no undo.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from graph.edits import EditBatch, Retract, apply_batch
from graph.snapshot import Snapshot
from graph.store import PurgeSet, UnknownUser
from induction.config import ForgetConfig
from induction.pipeline import user_lock
from induction.redact import RedactConfig, redact_text
from memcore.memory import Memory
from memcore.retry import commit_with_retry


ForgetErrorKind = Literal["unknown_fact", "already_retracted", "no_match", "ambiguous"]


class ForgetError(ValueError):
    """Nothing was forgotten; ``kind`` says why (callers map it, e.g. HTTP 404/409/422), ``candidates``
    lists the closest facts (id, statement, cosine)."""

    def __init__(self, message: str, candidates: list[tuple[str, str, float]] | None = None,
                 kind: ForgetErrorKind = "no_match"):
        self.candidates, self.kind = candidates or [], kind
        extra = "".join(f"\n  {fid}  ({s:.2f})  {st}" for fid, st, s in self.candidates)
        super().__init__(message + (f"; closest facts:{extra}" if extra else ""))


class RetractedFact(BaseModel):
    fact_id: str
    statement: str
    similarity: float | None = Field(default=None, description="Cosine to the request, when matched by text.")


class RetractReport(BaseModel):
    user_id: str
    retracted: list[RetractedFact]
    version: int
    redacted: dict[str, int] = Field(default_factory=dict, description="Secrets removed from the reason before "
                                     "storing it, per kind (counts only).")


class PurgeReport(BaseModel):
    user_id: str
    deleted: dict[str, int] = Field(description="Nodes removed per label.")
    unknown_turn_ids: list[str] = Field(default_factory=list)


_REQUEST = re.compile(r"^\s*(?:please\s+)?(?:(?:can|could|would) you\s+)?(?:forget|delete|remove|erase|drop|"
                      r"don'?t remember|stop remembering|no longer remember)\s+(?:about\s+|the fact\s+)?(?:that\s+)?",
                      re.I)


def request_text(request: str) -> str:
    """The proposition inside a forget request.

    >>> request_text("Please forget that I'm vegetarian.")
    "I'm vegetarian."
    """
    core = _REQUEST.sub("", request).strip()
    return core or request.strip()


def _commit_retract(memory: Memory, user_id: str, ids: list[str], reason: str, retries: int = 5) -> int:
    batch = EditBatch(user_id=user_id, edits=[Retract(fact_id=f, reason=reason[:300]) for f in ids])

    def attempt(snap: Snapshot, n: int) -> int:
        new, cs = apply_batch(snap, batch)
        memory.store.commit(cs)
        return new.version

    return commit_with_retry(memory.store, user_id, attempt, retries)


def retract(memory: Memory, user_id: str, fact_id: str | None = None, request: str | None = None,
            reason: str = "", cfg: ForgetConfig | None = None, all_matches: bool = False,
            redact: RedactConfig | None = None) -> RetractReport:
    """Retract one fact by id, or the fact(s) a natural-language request names (bounded similarity). The
    reason is stored with the RETRACT edit, so secrets are cut out of it first (induction/redact.py)."""
    cfg = cfg or ForgetConfig()
    reason, redacted = redact_text(reason, redact)
    if (fact_id is None) == (request is None):
        raise ValueError("give exactly one of fact_id or request")
    with user_lock(memory.store, user_id):
        snap = memory.store.load_snapshot(user_id)
        if not snap.facts:
            raise UnknownUser(f"no memories are stored for user {user_id!r}")
        chosen: list[RetractedFact] = []
        if fact_id is not None:
            f = snap.facts.get(fact_id)
            if f is None:
                raise ForgetError(f"user {user_id!r} has no fact {fact_id!r}", kind="unknown_fact")
            if f.retracted_at is not None:
                raise ForgetError(f"fact {fact_id!r} is already retracted", kind="already_retracted")
            chosen.append(RetractedFact(fact_id=fact_id, statement=f.statement))
        else:
            chosen = _match(memory, snap, request or "", cfg, all_matches)
        version = _commit_retract(memory, user_id, [c.fact_id for c in chosen],
                                  reason or ("forget request" if request else "retracted by id"))
    return RetractReport(user_id=user_id, retracted=chosen, version=version, redacted=redacted)


def _match(memory: Memory, snap: Snapshot, request: str, cfg: ForgetConfig, all_matches: bool) -> list[RetractedFact]:
    from induction.resolve import normalize_text

    vec = memory.embedder.embed([request_text(request)])[0]
    hits = [(fid, s) for fid, s in memory.store.vector_search(snap.user_id, vec.tolist(), cfg.candidates * 3)
            if fid in snap.facts and snap.facts[fid].retracted_at is None][: cfg.candidates]
    cands = [(fid, snap.facts[fid].statement, float(s)) for fid, s in hits]
    above = [c for c in cands if c[2] >= cfg.match_threshold]
    if not above:
        raise ForgetError(f"no fact matches {request!r} at cosine >= {cfg.match_threshold}", cands)
    if all_matches:
        return [RetractedFact(fact_id=f, statement=st, similarity=s) for f, st, s in above]
    best = above[0]
    rivals = [c for c in above[1:] if best[2] - c[2] <= cfg.ambiguity_margin
              and normalize_text(c[1]) != normalize_text(best[1])]
    if rivals:
        raise ForgetError(f"{request!r} matches several different facts equally well; retract by id "
                          "or use all_matches", [best, *rivals], kind="ambiguous")
    return [RetractedFact(fact_id=best[0], statement=best[1], similarity=best[2])]


def purge(memory: Memory, user_id: str) -> PurgeReport:
    """Hard-delete everything of the user."""
    with user_lock(memory.store, user_id):
        n = memory.store.purge_user(user_id)  # stores invalidate their own caches (any process)
    return PurgeReport(user_id=user_id, deleted={"nodes": n})


def _mentions(payload: Any, ids: set[str]) -> bool:
    if isinstance(payload, str):
        return payload in ids
    if isinstance(payload, dict):
        return any(_mentions(k, ids) or _mentions(v, ids) for k, v in payload.items())
    if isinstance(payload, (list, tuple)):
        return any(_mentions(v, ids) for v in payload)
    return False


def plan_purge_turns(snap: Snapshot, turn_ids: Sequence[str], turn_sessions: dict[str, str]) -> PurgeSet:
    """Everything derived from ``turn_ids`` (pure; ``turn_sessions`` maps every stored turn to its session)."""
    turns = {t for t in turn_ids if t in snap.turn_ids}
    facts = {fid for fid, f in snap.facts.items() if turns & set(f.source_turn_ids)}
    # Concepts emptied by the purge (leaf first, then parents that become empty leaves). The root stays.
    remaining = {f: c for f, c in snap.fact_concept.items() if f not in facts}
    touched = {snap.fact_concept[f] for f in facts if f in snap.fact_concept}
    concepts: set[str] = set()
    frontier = set(touched)
    while frontier:
        nxt: set[str] = set()
        for c in frontier:
            if c == snap.root_id or c in concepts or c in remaining.values():
                continue
            if any(p == c and child not in concepts for child, p in snap.parent.items()):
                continue
            concepts.add(c)
            if snap.parent.get(c):
                nxt.add(snap.parent[c])
        frontier = nxt
    gone = facts | concepts
    edits = {eid for eid, e in snap.edits.items()
             if (e.op in ("ATTACH", "SUPERSEDE", "CONFLICT", "RESOLVE", "RETRACT", "CREATE") and _mentions(e.payload, gone))}
    edits |= {eid for eid, e in snap.edits.items() if e.op == "UNDO" and e.payload.get("undid") in edits}
    left = {s for t, s in turn_sessions.items() if t not in turns}
    sessions = {s for t, s in turn_sessions.items() if t in turns} - left
    return PurgeSet(user_id=snap.user_id, expected_version=snap.version, fact_ids=tuple(sorted(facts)),
                    turn_ids=tuple(sorted(turns)), edit_ids=tuple(sorted(edits)), concept_ids=tuple(sorted(concepts)),
                    session_ids=tuple(sorted(sessions)))


def purge_turns(memory: Memory, user_id: str, turn_ids: Sequence[str], retries: int = 5) -> PurgeReport:
    """Hard-delete the given turns and everything derived from them, atomically."""
    def attempt(snap: Snapshot, n: int) -> PurgeReport:
        stored = memory.store.turns(user_id, sorted(snap.turn_ids))
        plan = plan_purge_turns(snap, turn_ids, {t.turn_id: t.session_id for t in stored})
        deleted = memory.store.purge_items(plan)
        return PurgeReport(user_id=user_id, deleted=deleted, unknown_turn_ids=sorted(set(turn_ids) - snap.turn_ids))

    with user_lock(memory.store, user_id):
        return commit_with_retry(memory.store, user_id, attempt, retries)
