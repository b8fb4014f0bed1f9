"""The rules proposer: offline rules relate each new fact to its older, still-current neighbours.

It runs the one decision loop (``loop.decide_each``) and takes its concept operations from
``concept_ops``; the trained relation model (``model.py``) stands on these rules when its artefact is
absent.
"""

from __future__ import annotations

from typing import cast

from graph.models import FactKind
from graph.rules import can_conflict, can_supersede
from graph.snapshot import Snapshot
from induction.adjudication.concept_ops import concept_ops
from induction.adjudication.decisions import STATIVE, Adjudication, Decision
from induction.adjudication.decisions import kind_of as decided_kind
from induction.adjudication.loop import decide_each
from induction.config import RuleAdjudicatorConfig
from induction.resolve import Resolution, ResolvedFact


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
        fixed: dict[str, str] = {}  # kinds corrected earlier in this batch

        def kind_of(fid: str) -> str:
            return fixed.get(fid) or decided_kind(fid, res, by_id) or ""

        def propose(r: ResolvedFact, d: Decision, superseded: set[str]) -> None:
            c = r.candidate
            live = [n for n in r.neighbours if n.older and n.same_holder and not n.same_turn
                    and n.fact_id not in superseded and by_id.get(n.fact_id, r).duplicate_of is None]
            if "change" in c.cues:
                kind = c.kind
                near = [n for n in live if n.similarity >= cfg.change_similarity]
                if not c.kind_certain and near:
                    # The kind was a guess: the update takes the kind of the closest state it replaces.
                    best = kind_of(near[0].fact_id)
                    if best in STATIVE:
                        kind = cast(FactKind, best)  # one of the stative kinds
                        d.kind = None if kind == c.kind else kind
                        fixed[c.fact_id] = kind
                targets = [n for n in near if can_supersede(kind, kind_of(n.fact_id))]
                d.supersedes = [n.fact_id for n in targets[: cfg.max_superseded_per_fact]]
                d.reason = f"change cue: {c.qualifiers.get('change_cue', '')!r}"
            elif c.kind in STATIVE:
                neg = "negation" in c.cues
                for n in live:  # best first: the closest opposite-polarity state is a conflict
                    if n.similarity < cfg.conflict_similarity:
                        break
                    ok = kind_of(n.fact_id)
                    if ok in STATIVE and self._negated(n.fact_id, res, by_id) != neg and can_conflict(c.kind, ok):
                        d.conflicts_with, d.reason = [n.fact_id], "opposite polarity, no change cue"
                        break
                if not d.conflicts_with:
                    targets = [n for n in live if n.same_concept and n.similarity >= cfg.same_concept_similarity
                               and self._negated(n.fact_id, res, by_id) == neg
                               and kind_of(n.fact_id) in STATIVE
                               and can_supersede(c.kind, kind_of(n.fact_id))]
                    d.supersedes = [n.fact_id for n in targets[:1]]
                    d.reason = "restated in the same concept" if d.supersedes else ""

        decisions = decide_each(res, propose)
        return Adjudication(decisions=decisions, concept_ops=concept_ops(res, snap, decisions, cfg))

    @staticmethod
    def _negated(fid: str, res: Resolution, by_id: dict[str, ResolvedFact]) -> bool:
        if fid in by_id:
            return "negation" in by_id[fid].candidate.cues
        return has_negation(res.existing[fid].statement)


def has_negation(text: str) -> bool:
    """Does the statement carry a negation (induction.offline.NEGATION, on its plain form)?"""
    from induction.offline import NEGATION, plain

    return bool(NEGATION.search(plain(text)))
