"""Resolve: dedup by normalized text (no model call), then candidate relations by embedding similarity.

For every extracted fact this finds (a) whether it repeats a stored or earlier fact of the same holder
(same normalized text, or cosine at/above ``duplicate_similarity``), and (b) its neighbours: older
stored facts (vector search in the store) and earlier facts of the same session, above
``min_similarity``, each flagged with whether it sits in the same concept neighbourhood (same
concept, parent/child, or sibling) and whether it is older. Adjudication decides what they mean.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from graph.models import Fact, as_utc
from graph.snapshot import Snapshot
from graph.store import GraphStore
from induction.config import ResolveConfig
from induction.branch import validity_map
from induction.extract import CandidateFact, concept_id_for
from induction.ontology import anchor_of
from llmclients.embeddings import Embedder


class Neighbour(BaseModel):
    model_config = ConfigDict(frozen=True)
    fact_id: str
    similarity: float
    in_session: bool = Field(description="An earlier fact of the same session (not yet stored).")
    older: bool = Field(description="Said before the candidate (only older facts can be superseded).")
    same_holder: bool
    near_concept: bool = Field(description="Same concept, parent/child or sibling.")
    same_concept: bool
    same_turn: bool


class ResolvedFact(BaseModel):
    candidate: CandidateFact
    embedding: tuple[float, ...]
    concept_id: str = Field(description="Id of the proposed concept (may not exist yet).")
    duplicate_of: str | None = None
    duplicate_reason: str | None = None
    neighbours: list[Neighbour] = Field(default_factory=list, description="Best first.")


class Resolution(BaseModel):
    facts: list[ResolvedFact] = Field(description="In the session's time order.")
    existing: dict[str, Fact] = Field(default_factory=dict, description="Stored facts that are someone's neighbour.")
    validity: dict[str, str] = Field(default_factory=dict, description="Validity of those stored facts now.")

    def by_id(self) -> dict[str, ResolvedFact]:
        return {r.candidate.fact_id: r for r in self.facts}


_ANNOT = re.compile(r"\s\((?:the week of )?\d{0,2}\s?[A-Z]?[a-z]* ?\d{4}\)")


def normalize_text(text: str) -> str:
    """Case, accents, punctuation, spacing and our inserted date annotations do not make a new fact.

    >>> normalize_text("I  LOVE hiking!! ") == normalize_text("i love hiking")
    True
    """
    t = _ANNOT.sub("", text)
    t = unicodedata.normalize("NFKD", t).encode("ascii", "ignore").decode().lower()
    t = re.sub(r"[^a-z0-9]+", " ", t)
    return " ".join(t.split())


def embedding_text(c: CandidateFact) -> str:
    """What a fact's vector encodes: the proposition without a "Name: " speaker prefix. A shared name
    would pull every fact of one speaker together and swamp the similarity thresholds; the name stays
    in the statement, where full-text search still matches it."""
    prefix = f"{c.holder}: "
    return c.statement[len(prefix):] if c.holder != "user" and c.statement.startswith(prefix) else c.statement


def _concept_family(snap: Snapshot, cid: str) -> set[str]:
    fam = {cid}
    p = snap.parent.get(cid)
    if p is not None and p != snap.root_id:
        fam.add(p)
        fam.update(c for c, q in snap.parent.items() if q == p)
    fam.update(c for c, q in snap.parent.items() if q == cid)
    return fam


def _proposed_family(user_id: str, path: tuple[str, ...]) -> set[str]:
    """For a concept that may not exist yet: itself and its parent path."""
    return {concept_id_for(user_id, path[:i]) for i in range(1, len(path) + 1)}


def _older(a: Fact, c: CandidateFact) -> bool:
    ta = a.observed_at or a.recorded_at
    if ta is None or c.observed_at is None:
        return True  # a stored fact without a time, or an undated session: storage order stands in for time
    return as_utc(ta) <= as_utc(c.observed_at)


def resolve(snap: Snapshot, store: GraphStore, embedder: Embedder, candidates: Sequence[CandidateFact],
            cfg: ResolveConfig) -> Resolution:
    user = snap.user_id
    cands = sorted(candidates, key=lambda c: c.order)
    known: dict[tuple[str, str], str] = {
        (f.holder, normalize_text(f.statement)): fid for fid, f in snap.facts.items() if f.retracted_at is None}
    vecs = embedder.embed([embedding_text(c) for c in cands]) if cands else np.zeros((0, embedder.dim), dtype=np.float32)
    vecs = np.asarray(vecs, dtype=np.float32)
    sims = vecs @ vecs.T if len(cands) else np.zeros((0, 0))
    out: list[ResolvedFact] = []
    existing: dict[str, Fact] = {}
    batch_concept: dict[str, str] = {}
    for i, c in enumerate(cands):
        cid = concept_id_for(user, c.concept)
        batch_concept[c.fact_id] = cid
        fam = _concept_family(snap, cid) if cid in snap.concepts else _proposed_family(user, c.concept)
        key = (c.holder, normalize_text(c.statement))
        dup, why = None, None
        if key in known:
            dup, why = known[key], "same normalized text"
        neigh: list[Neighbour] = []
        for fid, s in store.vector_search(user, vecs[i].tolist(), cfg.neighbours):
            f = snap.facts.get(fid)
            if f is None or s < cfg.min_similarity or f.retracted_at is not None:
                continue
            if dup is None and s >= cfg.duplicate_similarity and f.holder == c.holder:
                dup, why = fid, f"cosine {s:.3f}"
            existing[fid] = f
            fc = anchor_of(snap.fact_concept.get(fid, ""))  # induced concepts compare by their topic
            neigh.append(Neighbour(fact_id=fid, similarity=float(s), in_session=False, older=_older(f, c),
                                   same_holder=f.holder == c.holder, near_concept=fc in fam, same_concept=fc == cid,
                                   same_turn=False))
        for j in range(i):
            prev = out[j]
            if prev.duplicate_of is not None:
                continue
            s = float(sims[i, j])
            p = prev.candidate
            if dup is None and p.holder == c.holder and (normalize_text(p.statement) == key[1]
                                                          or s >= cfg.duplicate_similarity):
                dup, why = p.fact_id, "repeats an earlier statement of this session"
            if s < cfg.min_similarity:
                continue
            pc = batch_concept[p.fact_id]
            neigh.append(Neighbour(fact_id=p.fact_id, similarity=s, in_session=True, older=p.order < c.order,
                                   same_holder=p.holder == c.holder, near_concept=pc in fam, same_concept=pc == cid,
                                   same_turn=p.source_turn_ids[:1] == c.source_turn_ids[:1]))
        neigh.sort(key=lambda n: (-n.similarity, n.fact_id))
        out.append(ResolvedFact(candidate=c, embedding=tuple(float(x) for x in vecs[i]), concept_id=cid,
                                duplicate_of=dup, duplicate_reason=why, neighbours=neigh[: cfg.neighbours * 2]))
    # what was still valid when this session was said (a plan over by then is expired); undated: today
    said = [c.observed_at for c in cands if c.observed_at is not None]
    return Resolution(facts=out, existing=existing, validity=validity_map(snap, list(existing),
                                                                          min(said, key=as_utc) if said else None))
