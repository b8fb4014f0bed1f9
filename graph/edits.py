"""Ontology edits: CREATE / MERGE / SPLIT / RENAME concept, ATTACH fact, SUPERSEDE, CONFLICT, RESOLVE, RETRACT.

``apply_batch`` applies a batch to a copy of the user's snapshot, checks every rule, and returns the
ChangeSet to commit; any violation raises ``EditRejected`` naming the rule and the offending ids,
and the caller's snapshot (and so the store) is untouched. ``undo`` builds the inverse of the
user's most recent edit from its payload.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graph.ids import UserId, foreign_ids, validate_user_id
from graph.models import Concept, Edit, Fact, Relation, Turn, utcnow
from graph.rules import can_conflict, edge_kinds_allowed, has_cycle
from graph.snapshot import ChangeSet, Snapshot, diff


class EditRejected(ValueError):
    """A batch broke a rule. ``rule`` is a stable identifier; ``ids`` are the offending ids."""

    def __init__(self, rule: str, ids: list[str] | tuple[str, ...], message: str, edit_index: int | None = None):
        self.rule, self.ids, self.edit_index = rule, list(ids), edit_index
        where = f" (edit #{edit_index})" if edit_index is not None else ""
        # No ids: the rule is about ids that must not be echoed (another tenant's), see id_taken.
        named = f": {', '.join(self.ids)}" if self.ids else ""
        super().__init__(f"[{rule}]{where} {message}{named}")


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CreateConcept(_Op):
    op: Literal["CREATE"] = "CREATE"
    concept_id: str
    name: str = Field(min_length=1)
    description: str = ""
    parent_id: str | None = Field(default=None, description="None = under the user's root concept.")


class MergeConcepts(_Op):
    op: Literal["MERGE"] = "MERGE"
    source_id: str = Field(description="Folded into target and retired (kept for history and undo).")
    target_id: str


class SplitChild(_Op):
    concept_id: str
    name: str = Field(min_length=1)
    description: str = ""
    fact_ids: tuple[str, ...]


class SplitConcept(_Op):
    op: Literal["SPLIT"] = "SPLIT"
    concept_id: str
    children: tuple[SplitChild, ...] = Field(min_length=1)


class RenameConcept(_Op):
    """A live concept's new name and description (the previous ones stay in the edit's payload for undo)."""

    op: Literal["RENAME"] = "RENAME"
    concept_id: str
    name: str = Field(min_length=1)
    description: str = ""


class AttachFact(_Op):
    op: Literal["ATTACH"] = "ATTACH"
    fact: Fact
    concept_id: str
    embedding: tuple[float, ...] | None = None


class Supersede(_Op):
    op: Literal["SUPERSEDE"] = "SUPERSEDE"
    new_fact_id: str
    old_fact_id: str
    reason: str = ""


class Conflict(_Op):
    op: Literal["CONFLICT"] = "CONFLICT"
    a: str
    b: str
    reason: str = ""


class Resolve(_Op):
    op: Literal["RESOLVE"] = "RESOLVE"
    a: str
    b: str
    reason: str = ""


class Retract(_Op):
    op: Literal["RETRACT"] = "RETRACT"
    fact_id: str
    reason: str = ""


OntologyEdit = Annotated[
    CreateConcept | MergeConcepts | SplitConcept | RenameConcept | AttachFact | Supersede | Conflict | Resolve | Retract,
    Field(discriminator="op"),
]


class EditBatch(BaseModel):
    """One atomic unit of change for one user (a whole ingested session, or a manual edit)."""

    model_config = ConfigDict(extra="forbid")
    user_id: UserId
    session_id: str | None = None
    session_hash: str | None = Field(default=None, description="Content hash, recorded for idempotent re-ingest.")
    turns: list[Turn] = Field(default_factory=list)
    edits: list[OntologyEdit] = Field(default_factory=list)


def named_ids(e: BaseModel) -> list[str]:
    """Every concept and fact id an edit creates or names (the ids that are global keys in the store)."""
    if isinstance(e, CreateConcept):
        return [e.concept_id, *([e.parent_id] if e.parent_id else [])]
    if isinstance(e, MergeConcepts):
        return [e.source_id, e.target_id]
    if isinstance(e, SplitConcept):
        return [e.concept_id, *(c.concept_id for c in e.children), *(f for c in e.children for f in c.fact_ids)]
    if isinstance(e, AttachFact):
        return [e.fact.fact_id, e.concept_id]
    if isinstance(e, RenameConcept):
        return [e.concept_id]
    if isinstance(e, Supersede):
        return [e.new_fact_id, e.old_fact_id]
    if isinstance(e, (Conflict, Resolve)):
        return [e.a, e.b]
    if isinstance(e, Retract):
        return [e.fact_id]
    return []


def _check_namespaces(user_id: str, edits: list[OntologyEdit]) -> None:
    """An id in another owner's namespace ('leo::…' sent by maya) is refused whether or not it exists,
    and is not echoed: the answer is the same for a real and a made-up id of another user."""
    for i, e in enumerate(edits):
        if foreign_ids(user_id, named_ids(e)):
            raise EditRejected("foreign_namespace", [], "an id of the form '<owner>::…' must use your own user id "
                               "as owner", i)


# Concept, fact and edit ids are global primary keys in both stores (turn and session keys carry the
# user, see graph/serialize.py). The store refuses, inside the commit transaction, a commit that would
# create an id another user already holds; these two helpers keep what it checks and says in one place.
def claimed_ids(cs: ChangeSet) -> dict[str, list[str]]:
    """Node label -> the ids ``cs`` creates or rewrites, which no other user may hold. Also validates
    the user id, so every store write path refuses an invalid one."""
    validate_user_id(cs.user_id)
    return {"Concept": [c.concept_id for c in cs.concepts_upsert], "Fact": [f.fact_id for f in cs.facts_create],
            "Edit": [e.edit_id for e in cs.edits_upsert]}


def id_taken(label: str | None = None) -> EditRejected:
    """The refusal for an id held by another user: names neither that user nor the id."""
    what = f"a {label.lower()} id" if label else "an id"
    return EditRejected("id_taken", [], f"{what} in this batch is already in use; choose another id")


def _ensure_root(s: Snapshot, at: datetime) -> None:
    if s.root_id not in s.concepts:
        s.concepts[s.root_id] = Concept(concept_id=s.root_id, user_id=s.user_id, name="memory", created_at=at)


def _live_concept(s: Snapshot, cid: str, i: int) -> Concept:
    c = s.concepts.get(cid)
    if c is None:
        raise EditRejected("dangling_id", [cid], "unknown concept for this user", i)
    if c.retired_at is not None:
        raise EditRejected("retired_concept", [cid], "concept was merged away", i)
    return c


def _fact(s: Snapshot, fid: str, i: int) -> Fact:
    f = s.facts.get(fid)
    if f is None:
        raise EditRejected("dangling_id", [fid], "unknown fact for this user", i)
    return f


def _apply_one(s: Snapshot, e: BaseModel, i: int, at: datetime) -> dict[str, Any]:  # noqa: C901 - one branch per op
    """Mutate ``s`` by one edit; return the payload that explains and undoes it."""
    if isinstance(e, CreateConcept):
        if e.concept_id in s.concepts:
            raise EditRejected("duplicate_id", [e.concept_id], "concept id already exists", i)
        parent = e.parent_id or s.root_id
        _live_concept(s, parent, i)
        s.concepts[e.concept_id] = Concept(
            concept_id=e.concept_id, user_id=s.user_id, name=e.name, description=e.description, created_at=at
        )
        s.parent[e.concept_id] = parent
        return {"concept_id": e.concept_id, "parent_id": parent, "name": e.name}
    if isinstance(e, MergeConcepts):
        if e.source_id == e.target_id or e.source_id == s.root_id:
            raise EditRejected("invalid_merge", [e.source_id, e.target_id], "cannot merge a concept into itself or the root", i)
        src, _ = _live_concept(s, e.source_id, i), _live_concept(s, e.target_id, i)
        # Merging an ancestor into its descendant would cut the tree: refuse.
        cur: str | None = e.target_id
        while cur is not None:
            if cur == e.source_id:
                raise EditRejected("invalid_merge", [e.source_id, e.target_id], "target lies under source", i)
            cur = s.parent.get(cur)
        moved_facts = sorted(f for f, c in s.fact_concept.items() if c == e.source_id)
        moved_children = sorted(c for c, p in s.parent.items() if p == e.source_id)
        for f in moved_facts:
            s.fact_concept[f] = e.target_id
        for c in moved_children:
            s.parent[c] = e.target_id
        s.concepts[e.source_id] = src.model_copy(update={"retired_at": at})
        return {"source_id": e.source_id, "target_id": e.target_id, "moved_facts": moved_facts,
                "moved_children": moved_children}
    if isinstance(e, SplitConcept):
        _live_concept(s, e.concept_id, i)
        moves: dict[str, str] = {}
        for ch in e.children:
            if ch.concept_id in s.concepts:
                raise EditRejected("duplicate_id", [ch.concept_id], "concept id already exists", i)
            for f in ch.fact_ids:
                if s.fact_concept.get(f) != e.concept_id:
                    raise EditRejected("split_fact_not_in_concept", [f, e.concept_id], "fact is not in the split concept", i)
                if f in moves:
                    raise EditRejected("split_fact_twice", [f], "fact named in two children", i)
                moves[f] = ch.concept_id
            s.concepts[ch.concept_id] = Concept(
                concept_id=ch.concept_id, user_id=s.user_id, name=ch.name, description=ch.description, created_at=at
            )
            s.parent[ch.concept_id] = e.concept_id
        s.fact_concept.update(moves)
        return {"concept_id": e.concept_id, "children": [c.concept_id for c in e.children], "moves": moves}
    if isinstance(e, RenameConcept):
        was = _live_concept(s, e.concept_id, i)
        s.concepts[e.concept_id] = was.model_copy(update={"name": e.name, "description": e.description})
        return {"concept_id": e.concept_id, "name": e.name, "description": e.description,
                "previous_name": was.name, "previous_description": was.description}
    if isinstance(e, AttachFact):
        fact = e.fact
        if fact.user_id != s.user_id:
            raise EditRejected("cross_user", [fact.fact_id], f"fact belongs to user {fact.user_id!r}", i)
        if fact.fact_id in s.facts:
            raise EditRejected("duplicate_id", [fact.fact_id], "fact id already exists", i)
        _live_concept(s, e.concept_id, i)
        missing = [t for t in fact.source_turn_ids if t not in s.turn_ids]
        if missing:
            raise EditRejected("dangling_id", missing, f"fact {fact.fact_id} cites unknown turns", i)
        if fact.recorded_at is None:
            fact = fact.model_copy(update={"recorded_at": at})
        s.facts[fact.fact_id] = fact
        s.fact_concept[fact.fact_id] = e.concept_id
        return {"fact_id": fact.fact_id, "concept_id": e.concept_id}
    if isinstance(e, Supersede):
        new, old = _fact(s, e.new_fact_id, i), _fact(s, e.old_fact_id, i)
        if new.fact_id == old.fact_id:
            raise EditRejected("self_relation", [new.fact_id], "a fact cannot supersede itself", i)
        if not edge_kinds_allowed(new.kind, old.kind):
            raise EditRejected("incompatible_kinds", [new.fact_id, old.fact_id], f"{new.kind} cannot supersede {old.kind}", i)
        key = ("SUPERSEDES", new.fact_id, old.fact_id)
        if key in s.relations:
            raise EditRejected("duplicate_relation", [new.fact_id, old.fact_id], "SUPERSEDES already exists", i)
        s.relations[key] = Relation(type="SUPERSEDES", src=new.fact_id, dst=old.fact_id, at=at, reason=e.reason)
        cycle = has_cycle((r.src, r.dst) for r in s.relations.values() if r.type == "SUPERSEDES")
        if cycle:
            raise EditRejected("supersedes_cycle", cycle, "SUPERSEDES must stay acyclic", i)
        return {"src": new.fact_id, "dst": old.fact_id}
    if isinstance(e, Conflict):
        a, b = _fact(s, e.a, i), _fact(s, e.b, i)
        if a.fact_id == b.fact_id:
            raise EditRejected("self_relation", [a.fact_id], "a fact cannot conflict with itself", i)
        if not can_conflict(a.kind, b.kind):
            raise EditRejected("incompatible_kinds", [a.fact_id, b.fact_id], f"{a.kind} cannot conflict with {b.kind}", i)
        if ("CONFLICTS_WITH", a.fact_id, b.fact_id) in s.relations or ("CONFLICTS_WITH", b.fact_id, a.fact_id) in s.relations:
            raise EditRejected("duplicate_relation", [a.fact_id, b.fact_id], "CONFLICTS_WITH already exists", i)
        s.relations[("CONFLICTS_WITH", a.fact_id, b.fact_id)] = Relation(
            type="CONFLICTS_WITH", src=a.fact_id, dst=b.fact_id, at=at, reason=e.reason
        )
        return {"src": a.fact_id, "dst": b.fact_id}
    if isinstance(e, Resolve):
        found = next((k for k in (("CONFLICTS_WITH", e.a, e.b), ("CONFLICTS_WITH", e.b, e.a)) if k in s.relations), None)
        if found is None:
            raise EditRejected("dangling_id", [e.a, e.b], "no CONFLICTS_WITH between these facts", i)
        r = s.relations[found]
        if r.resolved_at is not None:
            raise EditRejected("already_resolved", [e.a, e.b], "conflict already resolved", i)
        s.relations[found] = r.model_copy(update={"resolved_at": at, "reason": e.reason or r.reason})
        return {"src": found[1], "dst": found[2], "previous_reason": r.reason}
    if isinstance(e, Retract):
        fact = _fact(s, e.fact_id, i)
        if fact.retracted_at is not None:
            raise EditRejected("already_retracted", [fact.fact_id], "fact already retracted", i)
        s.facts[fact.fact_id] = fact.model_copy(update={"retracted_at": at})
        return {"fact_id": fact.fact_id, "reason": e.reason}
    raise EditRejected("unknown_op", [type(e).__name__], "unsupported edit")


def check_invariants(s: Snapshot) -> None:
    """Graph invariants every committed snapshot satisfies; raises EditRejected on the first breach."""
    for cid, c in s.concepts.items():
        if c.user_id != s.user_id:
            raise EditRejected("cross_user", [cid], "concept of another user")
        if cid == s.root_id:
            if cid in s.parent:
                raise EditRejected("root_has_parent", [cid], "the root concept has no parent")
            continue
        if c.retired_at is None:
            p = s.parent.get(cid)
            if p is None:
                raise EditRejected("single_parent", [cid], "non-root concept without a parent")
            if p not in s.concepts or s.concepts[p].retired_at is not None:
                raise EditRejected("dangling_id", [cid, p], "parent is missing or retired")
    cycle = has_cycle((p, c) for c, p in s.parent.items())
    if cycle:
        raise EditRejected("parent_cycle", cycle, "PARENT_OF must form a tree")
    for fid in s.facts:
        home = s.fact_concept.get(fid)
        if home is None:
            raise EditRejected("fact_without_concept", [fid], "every fact needs exactly one concept")
        if home not in s.concepts or s.concepts[home].retired_at is not None:
            raise EditRejected("dangling_id", [fid, home], "fact's concept is missing or retired")
    for f in s.fact_concept:
        if f not in s.facts:
            raise EditRejected("dangling_id", [f], "CONTAINS points at a missing fact")
    for (_, src, dst) in s.relations:
        if src not in s.facts or dst not in s.facts:
            raise EditRejected("dangling_id", [src, dst], "relation endpoint is not a fact of this user")
    cycle = has_cycle((r.src, r.dst) for r in s.relations.values() if r.type == "SUPERSEDES")
    if cycle:
        raise EditRejected("supersedes_cycle", cycle, "SUPERSEDES must stay acyclic")


def new_edit_id() -> str:
    return "e_" + uuid.uuid4().hex


def apply_batch(snapshot: Snapshot, batch: EditBatch, now: datetime | None = None) -> tuple[Snapshot, ChangeSet]:
    """Validate and apply ``batch`` to a copy of ``snapshot``. The input snapshot is never mutated."""
    if batch.user_id != snapshot.user_id:
        raise EditRejected("cross_user", [batch.user_id], f"batch is for another user than {snapshot.user_id!r}")
    _check_namespaces(snapshot.user_id, batch.edits)
    at = now or utcnow()
    s = snapshot.clone()
    _ensure_root(s, at)
    seen_turns: set[str] = set()
    for t in batch.turns:
        if t.user_id != s.user_id:
            raise EditRejected("cross_user", [t.turn_id], f"turn belongs to user {t.user_id!r}")
        if t.turn_id in seen_turns:
            raise EditRejected("duplicate_id", [t.turn_id], "turn id repeated in the batch")
        seen_turns.add(t.turn_id)
        s.turn_ids.add(t.turn_id)
    embeddings: dict[str, list[float]] = {}
    seq = s.next_edit_seq
    for i, e in enumerate(batch.edits):
        payload = _apply_one(s, e, i, at)
        if isinstance(e, AttachFact) and e.embedding is not None:
            embeddings[e.fact.fact_id] = list(e.embedding)
        eid = new_edit_id()
        s.edits[eid] = Edit(edit_id=eid, user_id=s.user_id, seq=seq, session_id=batch.session_id, op=e.op, at=at,
                            payload=payload)
        seq += 1
    check_invariants(s)
    if batch.session_id and batch.session_hash:
        s.sessions[batch.session_id] = batch.session_hash
    new_turns = [t for t in batch.turns if t.turn_id not in snapshot.turn_ids]
    cs = diff(snapshot, s, new_turns, embeddings)
    s.version = cs.new_version
    return s, cs


def undo(snapshot: Snapshot, edit_id: str, now: datetime | None = None) -> tuple[Snapshot, ChangeSet]:
    """Revert ``edit_id`` if it is the user's latest edit not yet undone (undo is a stack)."""
    at = now or utcnow()
    e = snapshot.edits.get(edit_id)
    if e is None or e.op == "UNDO":
        raise EditRejected("dangling_id", [edit_id], "no undoable edit with this id for this user")
    if e.undone_at is not None:
        raise EditRejected("already_undone", [edit_id], "edit was already undone")
    later = [x.edit_id for x in snapshot.edits.values() if x.seq > e.seq and x.op != "UNDO" and x.undone_at is None]
    if later:
        raise EditRejected("undo_not_last", sorted(later), "undo the later edits first")
    s = snapshot.clone()
    p = e.payload
    if e.op == "CREATE":
        cid = p["concept_id"]
        if any(c == cid for c in s.fact_concept.values()) or any(par == cid for par in s.parent.values()):
            raise EditRejected("undo_not_possible", [cid], "concept is no longer empty")
        del s.concepts[cid]
        s.parent.pop(cid, None)
    elif e.op == "MERGE":
        for f in p["moved_facts"]:
            s.fact_concept[f] = p["source_id"]
        for c in p["moved_children"]:
            s.parent[c] = p["source_id"]
        s.concepts[p["source_id"]] = s.concepts[p["source_id"]].model_copy(update={"retired_at": None})
    elif e.op == "SPLIT":
        for f, _child in p["moves"].items():
            s.fact_concept[f] = p["concept_id"]
        for c in p["children"]:
            del s.concepts[c]
            s.parent.pop(c, None)
    elif e.op == "RENAME":
        cid = p["concept_id"]
        s.concepts[cid] = s.concepts[cid].model_copy(update={"name": p["previous_name"],
                                                            "description": p["previous_description"]})
    elif e.op == "ATTACH":
        fid = p["fact_id"]
        s.facts.pop(fid, None)
        s.fact_concept.pop(fid, None)
    elif e.op in ("SUPERSEDE", "CONFLICT"):
        s.relations.pop(("SUPERSEDES" if e.op == "SUPERSEDE" else "CONFLICTS_WITH", p["src"], p["dst"]), None)
    elif e.op == "RESOLVE":
        key = ("CONFLICTS_WITH", p["src"], p["dst"])
        s.relations[key] = s.relations[key].model_copy(update={"resolved_at": None, "reason": p["previous_reason"]})
    elif e.op == "RETRACT":
        s.facts[p["fact_id"]] = s.facts[p["fact_id"]].model_copy(update={"retracted_at": None})
    check_invariants(s)
    s.edits[edit_id] = e.model_copy(update={"undone_at": at})
    uid = new_edit_id()
    s.edits[uid] = Edit(edit_id=uid, user_id=s.user_id, seq=s.next_edit_seq, session_id=e.session_id, op="UNDO",
                        at=at, payload={"undid": edit_id, "op": e.op})
    cs = diff(snapshot, s, [], {})
    s.version = cs.new_version
    return s, cs
