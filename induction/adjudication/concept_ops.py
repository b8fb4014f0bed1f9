"""Concept operations the rules propose for a batch (the rules and the model adjudicator both use them):
MERGE live siblings whose names normalize alike; SPLIT an oversized leaf concept by fact kind."""

from __future__ import annotations

from graph.edits import MergeConcepts, SplitChild, SplitConcept
from graph.snapshot import Snapshot
from induction.adjudication.decisions import Decision
from induction.config import RuleAdjudicatorConfig
from induction.extract import concept_id_for, concept_slug
from induction.resolve import Resolution


def concept_ops(res: Resolution, snap: Snapshot, decisions: list[Decision],
                cfg: RuleAdjudicatorConfig) -> list[MergeConcepts | SplitConcept]:
    """MERGE live siblings whose names normalize alike; SPLIT an oversized leaf concept by fact kind."""
    ops: list[MergeConcepts | SplitConcept] = []
    live = {c: v for c, v in snap.concepts.items() if v.retired_at is None and c != snap.root_id}
    seen: dict[tuple[str | None, str], str] = {}
    for cid in sorted(live, key=lambda c: (live[c].created_at is None, live[c].created_at, c)):
        key = (snap.parent.get(cid), concept_slug(live[cid].name))
        if key in seen:
            ops.append(MergeConcepts(source_id=cid, target_id=seen[key]))
        else:
            seen[key] = cid
    merged = {op.source_id for op in ops if isinstance(op, MergeConcepts)}
    counts: dict[str, list[str]] = {}
    for f, c in snap.fact_concept.items():
        counts.setdefault(c, []).append(f)
    incoming: dict[str, int] = {}
    for d in decisions:
        if d.label == "new":
            cid = concept_id_for(snap.user_id, d.concept_path)
            incoming[cid] = incoming.get(cid, 0) + 1
    has_children = set(snap.parent.values())
    for cid, facts in sorted(counts.items()):
        if cid not in live or cid in merged or cid in has_children:
            continue
        if len(facts) + incoming.get(cid, 0) <= cfg.split_min_facts:
            continue
        by_kind: dict[str, list[str]] = {}
        for f in facts:
            by_kind.setdefault(snap.facts[f].kind, []).append(f)
        groups = {k: v for k, v in by_kind.items() if len(v) >= cfg.split_min_child}
        if len(groups) < 2:
            continue
        ops.append(SplitConcept(concept_id=cid, children=tuple(
            SplitChild(concept_id=f"{cid}/{k}", name=f"{live[cid].name}: {k}", fact_ids=tuple(sorted(v)))
            for k, v in sorted(groups.items()))))
    return ops
