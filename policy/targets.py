"""Warm-start targets that are correct by construction: full Reasoning States chosen with the answer key.

For a *training* instance, a small family of full-format states is scored by the frozen answer model
against the instance's answer key, and the best one becomes the supervised target:

1. the rule baseline's state (``policy.rule.RulePolicy``: one line per fact, role and priority from the
   relational state, plus its RULE lines) — kept whenever it is already right;
2. one side of a relation group taken (``use | high``) and the other members set aside, the other facts
   as the rule state has them — before the single flips, so where both are right the target decides a
   whole conflict or update the same way (a single flip left the second mention of the misleading side
   in use, and per-fact targets then taught both decisions for the same kind of line);
3. the rule state with one fact flipped to ``ignore | irrelevant | low`` (the rule baseline trusted a
   fact it should not have);
4. "only this fact": every fact listed, one used (``high``), the others ignored.

Ties go to the earlier candidate, so the rule baseline's own state wins whenever nothing beats it. The
answer key only picks among states; it never appears in them (a target that would disclose the answer
is skipped by the same gate the reward uses). Held-out instances never pass through here.

``style="facts"`` drops the RULE lines from every candidate: the reader never reads rules, so the
reward (and hence the choice) is the same, and the target is 2-3x shorter for a CPU policy to learn
and to write.

``style="described"`` is ``facts`` with every line rewritten role first, the role being what the
memory record says the fact *is* (``policy.warmup.descriptive_role``: historical for a superseded or
expired fact, constraint, evidence, current-preference) and the decision carried by use/ignore and
priority alone (a fact the chosen state takes as ``irrelevant`` becomes ``ignore``: the reader weighs
both 0, so the reward is unchanged). Why: the first field of every line is then a copy of that line's
state and kind, the same on every row, and the decision after it is conditioned on what was just
copied; with ``facts`` targets SmolLM2 learned request-type layouts ("F1: ignore") instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from retrieval.retrieve import components
from graph.rules import EVIDENCE_HOLDERS
from policy.rewards import AnswerModel, BaselineCache, RewardConfig, state_reward
from policy.rule import RulePolicy
from policy.state import FactUse, ReasoningState, parse_state
from policy.warmup import descriptive_role
from training_data.base import TrainingInstance

if TYPE_CHECKING:
    from policy.config import WarmupSettings


TargetStyle = Literal["full", "facts", "described"]


def candidate_states(inst: TrainingInstance, rule: RulePolicy | None = None, style: TargetStyle = "full") -> list[str]:
    """The candidates above, rule state first; every one parses against the instance's aliases."""
    rule = rule or RulePolicy()
    base = parse_state(rule.state_text(inst.request, inst.bundle()), inst.aliases)
    if style != "full":
        base = ReasoningState(facts=base.facts)
    out = [base.render()]
    group = relation_groups(inst)
    for it in inst.evidence:  # one side of a relation group taken, the rest of the group set aside
        mates = {a for a, g in group.items() if g == group[it.alias] and a != it.alias}
        if mates and any(f.alias == it.alias for f in base.facts):
            facts = [FactUse(alias=f.alias, use=True, role=f.role, priority="high") if f.alias == it.alias
                     else FactUse(alias=f.alias, use=False, role="irrelevant", priority="low") if f.alias in mates
                     else f for f in base.facts]
            out.append(ReasoningState(facts=tuple(facts), rules=base.rules).render())
    for k, f in enumerate(base.facts):
        if f.use:
            facts = list(base.facts)
            facts[k] = FactUse(alias=f.alias, use=False, role="irrelevant", priority="low")
            out.append(ReasoningState(facts=tuple(facts), rules=base.rules).render())
    for it in inst.evidence:
        only = tuple(FactUse(alias=o.alias, use=o.alias == it.alias, role=descriptive_role(o) if o.alias == it.alias
                              else "irrelevant", priority="high" if o.alias == it.alias else "low")
                      for o in inst.evidence)
        out.append(ReasoningState(facts=only).render())
    return out


def relation_groups(inst: TrainingInstance) -> dict[str, str]:
    """Alias -> its group: facts joined by SUPERSEDES/CONFLICTS_WITH edges among the instance's facts."""
    alias = {it.fact.fact_id: it.alias for it in inst.evidence}
    edges = [(it.fact.fact_id, o) for it in inst.evidence
             for o in (*it.state.supersedes, *it.state.superseded_by, *it.state.conflicts_with) if o in alias]
    comp = components(list(alias), edges)
    return {alias[f]: str(comp[f]) for f in alias}


def sets_aside_evidence(text: str, inst: TrainingInstance) -> bool:
    """True when ``text`` ignores a disputed fact held by outside evidence (the assistant, a document): the
    side of an evidence-vs-belief conflict that the graph's precedence (graph/rules.py) says outranks the
    user's belief (tests/test_state_cases.py has the table)."""
    outside = {it.alias for it in inst.evidence if it.fact.holder in EVIDENCE_HOLDERS and it.state.validity == "disputed"}
    decided = fact_decisions(parse_state(text, inst.aliases))
    return any(decided.get(a) == "ignore" for a in outside)


def target_state(inst: TrainingInstance, model: AnswerModel, baseline: BaselineCache,
                 cfg: RewardConfig | None = None, style: TargetStyle = "full", margin: float = 0.0,
                 evidence_first: bool = False) -> tuple[str, float]:
    """(best candidate, its reward) — the first candidate among those with the highest reward.

    ``margin`` > 0: a later candidate replaces the one kept so far only when it earns more than
    ``margin`` above it. On open rows (token F1) the corrections win by a few hundredths, by picking the
    fact whose words happen to overlap the hidden reference — a choice the prompt gives no handle on;
    with a margin those rows keep the rule baseline's state and the warm-up spends itself on the
    decisions that change the answer (two-option rows win by 1.0).

    ``evidence_first``: a correction that sets aside disputed outside evidence (``sets_aside_evidence``) is
    never chosen. On MemSyco conflict rows the reader often scores "take the user's side of the group" as
    high as "take the document's side" (neither option's words are in the task line it keeps), and the
    earlier alias won the tie: 19 of the 76 disputed outside reports in one build's targets were taught
    ``ignore``, the other 57 ``use | high``, so the policy learned no stable decision for such a report."""
    cfg = cfg or RewardConfig(max_state_tokens=10**6)
    best, best_r = "", float("-inf")
    for k, text in enumerate(candidate_states(inst, style=style)):
        if evidence_first and k and sets_aside_evidence(text, inst):  # k=0, the rule state, is always a candidate
            continue
        r = state_reward(text, inst, model, baseline, cfg).reward
        if r is not None and r > best_r + (margin if best else 0.0):
            best, best_r = text, r
    return (described(best, inst) if style == "described" else best), best_r


def described(text: str, inst: TrainingInstance) -> str:
    """``text`` (a state over ``inst``'s facts) role first, with descriptive roles (the module doc)."""
    items = {it.alias: it for it in inst.evidence}
    state = parse_state(text, items)
    return ReasoningState(facts=tuple(
        FactUse(alias=f.alias, use=f.use and f.role != "irrelevant", role=descriptive_role(items[f.alias]),  # type: ignore[arg-type]
                priority=f.priority) for f in state.facts)).render(role_first=True)


def warmup_targets(instances: Sequence[TrainingInstance], model: AnswerModel, baseline: BaselineCache,
                   warmup: WarmupSettings) -> list[tuple[str, float]]:
    """(target, reward) per instance as ``warmup`` (targets=answer-key) asks: the one place training and
    bench/policy_cost.py build the warm-up targets, so a new target option reaches both."""
    return [target_state(i, model, baseline, style=warmup.target_style, margin=warmup.target_margin,
                         evidence_first=warmup.target_evidence_first) for i in instances]


# --- does a policy name the deciding facts? ------------------------------------------------------------


def fact_decisions(state: ReasoningState) -> dict[str, str]:
    """How the reader takes each named fact: ``use`` (weighs by priority) or ``ignore`` (ignored or role
    irrelevant: weight 0, or against its options in reader-v2). Facts not named are absent (weight 0).

    >>> fact_decisions(parse_state("F1: use | evidence | high\\nF2: use | irrelevant | low"))
    {'F1': 'use', 'F2': 'ignore'}
    """
    return {f.alias: "use" if f.use and f.role != "irrelevant" else "ignore" for f in state.facts}


def deciding_facts(target: ReasoningState, rule: ReasoningState) -> set[str]:
    """Facts on which an answer-key target decides differently from the rule state: the facts whose
    use/ignore differs (named in one only counts); where more than two differ (an "only this fact" target
    ignores every other one) also the facts the target still uses — the one it rests the answer on. So
    "use everything" never names an "only this fact" target's decision.

    >>> r = parse_state("F1: use | evidence | high\\nF2: use | evidence | low\\nF3: use | evidence | low")
    >>> sorted(deciding_facts(parse_state("F1: use | evidence | high\\nF2: ignore | irrelevant | low"), r))
    ['F2', 'F3']
    >>> r4 = parse_state("\\n".join(f"F{k}: use | evidence | low" for k in range(1, 5)))
    >>> sorted(deciding_facts(parse_state("\\n".join(f"F{k}: ignore | irrelevant | low" for k in range(1, 4))
    ...                                   + "\\nF4: use | evidence | high"), r4))
    ['F1', 'F2', 'F3', 'F4']
    """
    a, b = fact_decisions(target), fact_decisions(rule)
    changed = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
    if len(changed) <= 2:
        return changed
    return changed | {k for k, v in a.items() if v == "use"}


def names_deciding(policy: ReasoningState, target: ReasoningState, rule: ReasoningState) -> bool | None:
    """True when ``policy`` takes every deciding fact (``deciding_facts``) as the target does; None when the
    target decides nothing the rule state does not (no row to count).

    >>> r = parse_state("F1: use | evidence | high\\nF2: use | evidence | low")
    >>> t = parse_state("F1: use | evidence | high\\nF2: ignore | irrelevant | low")
    >>> names_deciding(t, t, r), names_deciding(r, t, r), names_deciding(r, r, r)
    (True, False, None)
    """
    keys = deciding_facts(target, rule)
    if not keys:
        return None
    p, t = fact_decisions(policy), fact_decisions(target)
    return all(p.get(k) == t.get(k) for k in keys)
