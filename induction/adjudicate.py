"""Adjudicate: label every resolved fact (new / duplicate / supersedes X / conflicts with X / concept)
and propose concept MERGE/SPLIT — by deterministic rules or by one batched LLM call.

The model proposes, code disposes: an LLM label is accepted only if its target was offered to it as a
candidate, the kinds may be related (graph.rules) and the ids exist; anything else is recorded as a
rejected label and the fact is kept as new. If the call fails or times out, every fact is kept as new
(or the rules decide, per ``on_adjudication_error``): facts are never lost. ``to_edits`` then turns the
decisions into ``graph.edits`` operations, deterministically.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol, cast, runtime_checkable

from pydantic import BaseModel, Field

from graph.edits import AttachFact, Conflict, CreateConcept, MergeConcepts, OntologyEdit, SplitChild, SplitConcept, Supersede
from graph.models import FactKind
from graph.rules import can_conflict, can_supersede, may_conflict, may_supersede
from graph.snapshot import Snapshot
from induction.config import LLMCallConfig, RuleAdjudicatorConfig
from induction.extract import ExtractionError, RejectedItem, call_model, concept_id_for, concept_slug
from induction.resolve import Resolution, ResolvedFact
from llmclients.chat import ChatModel

_STATIVE = frozenset({"preference", "constraint", "belief", "circumstance", "plan"})


class Decision(BaseModel):
    fact_id: str
    label: Literal["new", "duplicate"]
    duplicate_of: str | None = None
    supersedes: list[str] = Field(default_factory=list)
    conflicts_with: list[str] = Field(default_factory=list)
    concept_path: tuple[str, ...] = Field(description="Names from below the root; created if missing.")
    concept_id: str | None = Field(default=None, description="An existing live concept chosen instead of the path.")
    kind: str | None = Field(default=None, description="Corrected kind (an update takes the kind of what it replaces).")
    reason: str = ""


class Adjudication(BaseModel):
    decisions: list[Decision]
    concept_ops: list[MergeConcepts | SplitConcept] = Field(default_factory=list)
    rejected: list[RejectedItem] = Field(default_factory=list)
    llm_calls: int = 0
    fallback: str | None = Field(default=None, description="Why the adjudicator's own answer was not used.")


@runtime_checkable
class Adjudicator(Protocol):
    name: str

    def adjudicate(self, res: Resolution, snap: Snapshot) -> Adjudication: ...


def keep_as_new(res: Resolution, reason: str | None = None) -> Adjudication:
    """The safe path: text duplicates are still dropped (decided without a model), all else is new."""
    return Adjudication(decisions=[_base(r) for r in res.facts], fallback=reason)


def _base(r: ResolvedFact) -> Decision:
    c = r.candidate
    if r.duplicate_of is not None:
        return Decision(fact_id=c.fact_id, label="duplicate", duplicate_of=r.duplicate_of, concept_path=c.concept,
                        reason=r.duplicate_reason or "")
    return Decision(fact_id=c.fact_id, label="new", concept_path=c.concept)


def _kind_of(fid: str, res: Resolution, by_id: dict[str, ResolvedFact]) -> str | None:
    if fid in by_id:
        return by_id[fid].candidate.kind
    f = res.existing.get(fid)
    return f.kind if f else None


def _holder_of(fid: str, res: Resolution, by_id: dict[str, ResolvedFact]) -> str:
    if fid in by_id:
        return by_id[fid].candidate.holder
    f = res.existing.get(fid)
    return f.holder if f else ""


class RuleAdjudicator:
    """Offline rules, per new fact, against its older, still-current neighbours of the same holder
    (never from the same turn):

    1. a change cue ("no longer", "switched to", "now prefer") → SUPERSEDES every neighbour at
       ``change_similarity`` whose kind it may replace (a guessed kind first takes the closest one's);
    2. otherwise, for states: the closest neighbour at ``conflict_similarity`` with opposite polarity
       (a negation on one side only) → CONFLICTS_WITH;
    3. otherwise, a restatement in the same concept at ``same_concept_similarity`` → SUPERSEDES it.
    Concepts: MERGE live siblings whose names normalize alike; SPLIT an oversized leaf by fact kind."""

    name = "rules"

    def __init__(self, cfg: RuleAdjudicatorConfig | None = None):
        self.cfg = cfg or RuleAdjudicatorConfig()
        self.fallback_reason: str | None = None  # set when the rules stand in for an absent relation model

    def adjudicate(self, res: Resolution, snap: Snapshot) -> Adjudication:
        cfg = self.cfg
        by_id = res.by_id()
        superseded: set[str] = {f for f, v in res.validity.items() if v in ("superseded", "retracted", "expired")}
        decisions: list[Decision] = []
        fixed: dict[str, str] = {}  # kinds corrected earlier in this batch

        def kind_of(fid: str) -> str:
            return fixed.get(fid) or _kind_of(fid, res, by_id) or ""

        for r in res.facts:
            d = _base(r)
            c = r.candidate
            if d.label == "duplicate":
                decisions.append(d)
                continue
            live = [n for n in r.neighbours if n.older and n.same_holder and not n.same_turn
                    and n.fact_id not in superseded and by_id.get(n.fact_id, r).duplicate_of is None]
            if "change" in c.cues:
                kind = c.kind
                near = [n for n in live if n.similarity >= cfg.change_similarity]
                if not c.kind_certain and near:
                    # The kind was a guess: the update takes the kind of the closest state it replaces.
                    best = kind_of(near[0].fact_id)
                    if best in _STATIVE:
                        kind = cast(FactKind, best)  # one of the stative kinds
                        d.kind = None if kind == c.kind else kind
                        fixed[c.fact_id] = kind
                targets = [n for n in near if can_supersede(kind, kind_of(n.fact_id))]
                d.supersedes = [n.fact_id for n in targets[: cfg.max_superseded_per_fact]]
                d.reason = f"change cue: {c.qualifiers.get('change_cue', '')!r}"
            elif c.kind in _STATIVE:
                neg = "negation" in c.cues
                for n in live:  # best first: the closest opposite-polarity state is a conflict
                    if n.similarity < cfg.conflict_similarity:
                        break
                    ok = kind_of(n.fact_id)
                    if ok in _STATIVE and self._negated(n.fact_id, res, by_id) != neg and can_conflict(c.kind, ok):
                        d.conflicts_with, d.reason = [n.fact_id], "opposite polarity, no change cue"
                        break
                if not d.conflicts_with:
                    targets = [n for n in live if n.same_concept and n.similarity >= cfg.same_concept_similarity
                               and self._negated(n.fact_id, res, by_id) == neg
                               and kind_of(n.fact_id) in _STATIVE
                               and can_supersede(c.kind, kind_of(n.fact_id))]
                    d.supersedes = [n.fact_id for n in targets[:1]]
                    d.reason = "restated in the same concept" if d.supersedes else ""
            superseded.update(d.supersedes)
            decisions.append(d)
        return Adjudication(decisions=decisions, concept_ops=self._concept_ops(res, snap, decisions))

    @staticmethod
    def _negated(fid: str, res: Resolution, by_id: dict[str, ResolvedFact]) -> bool:
        if fid in by_id:
            return "negation" in by_id[fid].candidate.cues
        return _has_negation(res.existing[fid].statement)

    def _concept_ops(self, res: Resolution, snap: Snapshot, decisions: list[Decision]) -> list[MergeConcepts | SplitConcept]:
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
            if len(facts) + incoming.get(cid, 0) <= self.cfg.split_min_facts:
                continue
            by_kind: dict[str, list[str]] = {}
            for f in facts:
                by_kind.setdefault(snap.facts[f].kind, []).append(f)
            groups = {k: v for k, v in by_kind.items() if len(v) >= self.cfg.split_min_child}
            if len(groups) < 2:
                continue
            ops.append(SplitConcept(concept_id=cid, children=tuple(
                SplitChild(concept_id=f"{cid}/{k}", name=f"{live[cid].name}: {k}", fact_ids=tuple(sorted(v)))
                for k, v in sorted(groups.items()))))
        return ops


def _has_negation(text: str) -> bool:
    from induction.offline import NEGATION, plain

    return bool(NEGATION.search(plain(text)))


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
            ok = [t for t in valid if may_supersede(kind, _kind_of(t, res, by_id) or "", holder,
                                                    _holder_of(t, res, by_id), True)]
            if len(ok) != len(valid):
                bad(f"{lab.fact} supersedes {lab.targets}", f"a {kind} of {holder} cannot supersede those facts")
            d.supersedes, d.reason = ok, lab.reason or "model: supersedes"
        elif lab.label in ("conflicts", "conflicts_with"):  # v1 and v2 names
            ok = [t for t in valid if may_conflict(kind, _kind_of(t, res, by_id) or "", holder, _holder_of(t, res, by_id))]
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


def adjudicate_safely(primary: Adjudicator, res: Resolution, snap: Snapshot,
                      fallback: Literal["keep_new", "rules"], rules: RuleAdjudicator) -> Adjudication:
    """Never lose facts: a failing adjudicator becomes keep-as-new (or the rules), with the reason."""
    try:
        return primary.adjudicate(res, snap)
    except ExtractionError as e:
        why = f"adjudication failed ({e.kind}): {e}"
        calls = 1
    except Exception as e:  # noqa: BLE001 - any adjudicator bug must not cost the user their facts
        why = f"adjudication crashed: {type(e).__name__}: {e}"
        calls = 0
    out = rules.adjudicate(res, snap) if fallback == "rules" else keep_as_new(res)
    out.fallback, out.llm_calls = why, calls
    return out


# ---------------------------------------------------------------- decisions -> edits
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
