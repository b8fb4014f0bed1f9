"""The local ontology branch: what the LLM extractor is shown of a user's existing memory (nearby
concepts, representative facts with their validity, the relations among them)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from graph.models import utcnow
from graph.rules import derive_validity
from graph.snapshot import Snapshot
from graph.store import GraphStore
from induction.config import LLMCallConfig
from induction.session import Session
from llmclients.embeddings import Embedder


class BranchConcept(BaseModel):
    concept_id: str
    path: tuple[str, ...]
    n_facts: int


class BranchFact(BaseModel):
    fact_id: str
    statement: str
    kind: str
    holder: str
    validity: str
    concept_id: str | None
    observed_at: datetime | None = None


class BranchRelation(BaseModel):
    type: Literal["SUPERSEDES", "CONFLICTS_WITH"]
    src: str
    dst: str


class OntologyBranch(BaseModel):
    """What the extractor sees of the existing memory: nearby concepts, representative facts, relations."""

    concepts: list[BranchConcept] = Field(default_factory=list)
    facts: list[BranchFact] = Field(default_factory=list)
    relations: list[BranchRelation] = Field(default_factory=list)


def validity_map(snap: Snapshot, fact_ids: Sequence[str], now: datetime | None = None) -> dict[str, str]:
    now = now or utcnow()
    inc: dict[str, list[str]] = {}
    conf: dict[str, list[str]] = {}
    for r in snap.relations.values():
        if r.type == "SUPERSEDES":
            inc.setdefault(r.dst, []).append(r.src)
        elif r.resolved_at is None:
            conf.setdefault(r.dst, []).append(r.src)
            conf.setdefault(r.src, []).append(r.dst)
    out: dict[str, str] = {}
    for fid in fact_ids:
        f = snap.facts.get(fid)
        if f is not None:
            out[fid] = derive_validity(f, [snap.facts[i] for i in inc.get(fid, []) if i in snap.facts],
                                       [snap.facts[i] for i in conf.get(fid, []) if i in snap.facts], now)
    return out


def build_branch(snap: Snapshot, store: GraphStore, embedder: Embedder, session: Session,
                 cfg: LLMCallConfig, skip_roles: Sequence[str] = ("assistant", "system")) -> OntologyBranch:
    """Facts nearest to what the session talks about (one vector query per user turn, best score
    wins), their concepts with parents and siblings, and the relations among them."""
    if not snap.facts or cfg.max_branch_facts == 0:
        return OntologyBranch(concepts=_concepts(snap, set())[: cfg.max_branch_concepts])
    texts = [t.text[:1000] for t in session.turns if t.role.lower() not in skip_roles][:32] or [session.turns[0].text[:1000]]
    vecs = embedder.embed(texts)
    best: dict[str, float] = {}
    for v in np.asarray(vecs):
        for fid, s in store.vector_search(snap.user_id, v.tolist(), cfg.max_branch_facts):
            best[fid] = max(best.get(fid, -1.0), s)
    ids = [f for f, _ in sorted(best.items(), key=lambda kv: -kv[1]) if f in snap.facts][: cfg.max_branch_facts]
    val = validity_map(snap, ids)
    facts = [BranchFact(fact_id=i, statement=snap.facts[i].statement, kind=snap.facts[i].kind, holder=snap.facts[i].holder,
                        validity=val.get(i, "current"), concept_id=snap.fact_concept.get(i),
                        observed_at=snap.facts[i].observed_at) for i in ids]
    near = {f.concept_id for f in facts if f.concept_id}
    rels = [BranchRelation(type=r.type, src=r.src, dst=r.dst) for r in snap.relations.values()
            if r.src in best and r.dst in best]
    return OntologyBranch(concepts=_concepts(snap, near)[: cfg.max_branch_concepts], facts=facts, relations=rels)


def _concepts(snap: Snapshot, near: set[str]) -> list[BranchConcept]:
    """Near concepts, their parents and siblings first; then the rest of the live tree by size."""
    counts: dict[str, int] = {}
    for c in snap.fact_concept.values():
        counts[c] = counts.get(c, 0) + 1
    live = [c for c, v in snap.concepts.items() if v.retired_at is None and c != snap.root_id]
    family = set(near)
    for c in near:
        p = snap.parent.get(c)
        if p:
            family.add(p)
            family.update(k for k, v in snap.parent.items() if v == p)
    ranked = sorted(live, key=lambda c: (c not in near, c not in family, -counts.get(c, 0), c))
    return [BranchConcept(concept_id=c, path=snap.concept_path(c)[1:], n_facts=counts.get(c, 0)) for c in ranked]
