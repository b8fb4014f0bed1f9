"""The LLM proposer: one batched call labels every fact that has candidates; code disposes.

The model proposes, code disposes: a label is accepted only if its target was offered to it as a
candidate, the kinds and holders may be related (graph.rules) and the ids exist; anything else is
recorded as a rejected label and the fact keeps its base decision (``decisions.keep_as_new``). If the
call fails, ``loop.adjudicate_safely`` keeps every fact as new (or lets the rules decide).
"""

from __future__ import annotations

from graph.edits import MergeConcepts, SplitChild, SplitConcept
from graph.rules import may_conflict, may_supersede
from graph.snapshot import Snapshot
from induction.adjudication.decisions import Adjudication, holder_of, keep_as_new, kind_of
from induction.config import LLMCallConfig
from induction.extract import RejectedItem, call_model, concept_slug
from induction.resolve import Resolution
from llmclients.chat import ChatModel


class LLMAdjudicator:
    """One batched call labels every fact that has candidates; code checks every label."""

    name = "llm"

    def __init__(self, chat: ChatModel, cfg: LLMCallConfig | None = None, max_existing: int = 40):
        from induction.prompts import adjudicate_v2 as prompt

        self.chat, self.prompt = chat, prompt
        self.cfg = cfg or LLMCallConfig()
        self.max_existing = max_existing

    def adjudicate(self, res: Resolution, snap: Snapshot) -> Adjudication:
        """Raises ExtractionError when the call or its reply fails; the pipeline then keeps facts as new."""
        base = keep_as_new(res)
        todo = [r for r in res.facts if r.duplicate_of is None and r.neighbours]
        if not todo:
            return base  # nothing to relate: no call needed
        view = self.prompt.build_view(res, snap, todo, self.max_existing)
        reply = call_model(self.chat, self.prompt.build_messages(view), self.prompt.json_schema(), self.cfg,
                           self.prompt.AdjudicateResponse)
        out = apply_labels(res, snap, view, reply, base)  # type: ignore[arg-type]
        out.llm_calls = 1
        return out


def apply_labels(res: Resolution, snap: Snapshot, view: object, reply: object, base: Adjudication) -> Adjudication:
    """Map aliased labels back to ids; keep only what the candidates and the kind rules allow."""
    by_id = res.by_id()
    alias: dict[str, str] = view.alias_to_id  # type: ignore[attr-defined]
    offered: dict[str, set[str]] = view.offered  # type: ignore[attr-defined]
    decisions = {d.fact_id: d for d in base.decisions}
    rejected: list[RejectedItem] = []

    def bad(item: str, why: str) -> None:
        rejected.append(RejectedItem(step="adjudicate", item=item, reason=why))

    for lab in reply.labels:  # type: ignore[attr-defined]
        fid = alias.get(lab.fact)
        if fid not in by_id or fid not in decisions:
            bad(lab.fact, "label for a fact that was not offered")
            continue
        d = decisions[fid]
        if d.label == "duplicate":
            continue  # text duplicates were settled without the model
        kind = by_id[fid].candidate.kind
        holder = by_id[fid].candidate.holder
        targets = [alias.get(t) for t in lab.targets]
        valid = [t for t in targets if t is not None and t in offered.get(fid, set())]
        if len(valid) != len(targets):
            bad(f"{lab.fact} {lab.label} {lab.targets}", "target was not among the offered candidates")
        if lab.label == "duplicate" and valid:
            d.label, d.duplicate_of, d.reason = "duplicate", valid[0], lab.reason or "model: duplicate"
        elif lab.label == "supersedes":
            # Offered candidates are older by construction; holders and kinds are checked here (graph.rules).
            ok = [t for t in valid if may_supersede(kind, kind_of(t, res, by_id) or "", holder,
                                                    holder_of(t, res, by_id), True)]
            if len(ok) != len(valid):
                bad(f"{lab.fact} supersedes {lab.targets}", f"a {kind} of {holder} cannot supersede those facts")
            d.supersedes, d.reason = ok, lab.reason or "model: supersedes"
        elif lab.label in ("conflicts", "conflicts_with"):  # v1 and v2 names
            ok = [t for t in valid if may_conflict(kind, kind_of(t, res, by_id) or "", holder, holder_of(t, res, by_id))]
            if len(ok) != len(valid):
                bad(f"{lab.fact} conflicts {lab.targets}", f"a {kind} of {holder} cannot conflict with those facts")
            d.conflicts_with, d.reason = ok, lab.reason or "model: conflicts"
        if lab.concept:
            cid = alias.get(lab.concept)
            if cid in snap.concepts and snap.concepts[cid].retired_at is None:
                d.concept_id = cid
            else:
                bad(f"{lab.fact} concept {lab.concept}", "unknown or retired concept")
        elif lab.new_concept:
            path = tuple(p.strip()[:60] for p in lab.new_concept.split("/") if p.strip())[:4]
            if path:
                d.concept_path, d.concept_id = path, None
    ops: list[MergeConcepts | SplitConcept] = []
    for op in reply.concept_ops:  # type: ignore[attr-defined]
        src = alias.get(op.concept)
        if src not in snap.concepts or snap.concepts[src].retired_at is not None or src == snap.root_id:
            bad(f"{op.op} {op.concept}", "unknown, retired or root concept")
            continue
        if op.op == "MERGE":
            tgt = alias.get(op.into or "")
            if tgt not in snap.concepts or tgt == src:
                bad(f"MERGE {op.concept} into {op.into}", "unknown target concept")
                continue
            ops.append(MergeConcepts(source_id=src, target_id=tgt))
        else:
            children = []
            for k, ch in enumerate(op.children):
                fids = tuple(f for f in (alias.get(a) for a in ch.facts) if f and snap.fact_concept.get(f) == src)
                if fids and ch.name.strip():
                    children.append(SplitChild(concept_id=f"{src}/{concept_slug(ch.name)}-{k}", name=ch.name.strip()[:60],
                                               fact_ids=fids))
            if children:
                ops.append(SplitConcept(concept_id=src, children=tuple(children)))
            else:
                bad(f"SPLIT {op.concept}", "no child holds facts of that concept")
    return Adjudication(decisions=list(decisions.values()), concept_ops=ops, rejected=base.rejected + rejected)
