"""Decisions -> graph edits, deterministically: concepts first (CREATE, then MERGE/SPLIT), then ATTACH every
new fact, then SUPERSEDE/CONFLICT."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from graph.edits import AttachFact, Conflict, CreateConcept, MergeConcepts, OntologyEdit, SplitConcept, Supersede
from graph.snapshot import Snapshot
from induction.adjudication.decisions import Adjudication
from induction.extract import concept_id_for
from induction.resolve import Resolution, ResolvedFact

def _follow_merges(snap: Snapshot, cid: str) -> str:
    """A concept merged away stands for its merge target (from the MERGE edit's payload)."""
    for _ in range(len(snap.concepts) + 1):
        c = snap.concepts.get(cid)
        if c is None or c.retired_at is None:
            return cid
        tgt = next((e.payload.get("target_id") for e in sorted(snap.edits.values(), key=lambda e: -e.seq)
                    if e.op == "MERGE" and e.undone_at is None and e.payload.get("source_id") == cid), None)
        if tgt is None:
            return cid
        cid = tgt
    return cid


def _restated_turns(by_id: Mapping[str, ResolvedFact], adj: Adjudication, kept: set[str],
                    new: set[str]) -> dict[str, tuple[str, ...]]:
    """Per new fact, the turns of this session that said it again (its duplicates that passed validation):
    the repeat is dropped, but its turn still said the fact, so the fact cites it too — a turn whose only
    sentence repeats an earlier one would otherwise have no fact, and no route could reach it (BEAM users
    paste the same message twice). Stored facts keep their turns: a committed fact does not change."""
    out: dict[str, tuple[str, ...]] = {}
    for d in adj.decisions:
        if d.label == "duplicate" and d.fact_id in kept and d.duplicate_of in new and d.fact_id in by_id:
            out[d.duplicate_of] = out.get(d.duplicate_of, ()) + by_id[d.fact_id].candidate.source_turn_ids
    return out


def to_edits(snap: Snapshot, res: Resolution, adj: Adjudication, session_id: str,
             keep: Sequence[str] | None = None) -> list[OntologyEdit]:
    """Concepts first (CREATE, then MERGE/SPLIT), then ATTACH every new fact, then SUPERSEDE/CONFLICT.
    ``keep`` restricts to facts that passed validation; relations to dropped facts are dropped too."""
    user = snap.user_id
    by_id = res.by_id()
    kept = set(keep) if keep is not None else {d.fact_id for d in adj.decisions}
    new = [d for d in adj.decisions if d.label == "new" and d.fact_id in kept]
    edits: list[OntologyEdit] = []
    created: set[str] = set()
    merged_into = {op.source_id: op.target_id for op in adj.concept_ops if isinstance(op, MergeConcepts)}
    split_child = {(op.concept_id, ch.name.split(": ")[-1]): ch.concept_id
                   for op in adj.concept_ops if isinstance(op, SplitConcept) for ch in op.children}
    target_of: dict[str, str] = {}
    for d in new:
        if d.concept_id is not None:
            cid = d.concept_id
        else:
            path = d.concept_path or ("general",)
            cid = concept_id_for(user, path)
            for depth in range(1, len(path) + 1):
                pid = concept_id_for(user, path[:depth])
                if pid not in snap.concepts and pid not in created:
                    parent = concept_id_for(user, path[: depth - 1]) if depth > 1 else None
                    edits.append(CreateConcept(concept_id=pid, name=path[depth - 1], parent_id=parent))
                    created.add(pid)
        cid = _follow_merges(snap, merged_into.get(cid, cid))
        cid = merged_into.get(cid, cid)
        cid = split_child.get((cid, by_id[d.fact_id].candidate.kind), cid)
        target_of[d.fact_id] = cid
    edits.extend(adj.concept_ops)
    restated = _restated_turns(by_id, adj, kept, {d.fact_id for d in new})
    for d in new:
        r = by_id[d.fact_id]
        cand = r.candidate.model_copy(update={"kind": d.kind}) if d.kind else r.candidate
        if d.fact_id in restated:
            cand = cand.model_copy(update={"source_turn_ids": tuple(dict.fromkeys(cand.source_turn_ids + restated[d.fact_id]))})
        edits.append(AttachFact(fact=cand.to_fact(user, session_id), concept_id=target_of[d.fact_id],
                                embedding=r.embedding))
    present = set(snap.facts) | {d.fact_id for d in new}
    for d in new:
        for old in dict.fromkeys(d.supersedes):
            if old in present and old != d.fact_id:
                edits.append(Supersede(new_fact_id=d.fact_id, old_fact_id=old, reason=d.reason[:200]))
        for other in dict.fromkeys(d.conflicts_with):
            if other in present and other != d.fact_id:
                edits.append(Conflict(a=d.fact_id, b=other, reason=d.reason[:200]))
    return edits
