"""The deterministic rule-baseline policy: a Reasoning State from relational states alone.

It lets the pipeline run without a trained policy, and gives the learned one a baseline to beat.
Per fact (first matching row wins):

    retracted                       -> ignore | irrelevant        | low    + RULE never rely on it
    superseded / expired            -> ignore | historical        | low    (use | historical | medium when
                                                                           the request asks about the past)
    disputed: user belief vs outside
      evidence (holder not the user)-> belief: use | evidence | low, evidence: use | evidence | high
                                       + RULE the evidence outweighs the belief
    disputed (otherwise)            -> use    | evidence          | medium + RULE present both sides
    scoped, scope not in request    -> use    | evidence          | low    + RULE only within its scope
    constraint                      -> use    | constraint        | high   + RULE constraints outrank preferences
    preference of the user          -> use    | current-preference| high
    anything else                   -> use    | evidence          | medium

Rules are emitted in safety order (retractions, conflicts, constraints, history, scope) and capped
at ``policy.state.MAX_RULES``; the output is built as text and parsed back with ``parse_state`` so
it is valid by the same grammar a learned policy must meet.
"""

from __future__ import annotations

import re

from retrieval.retrieve import EvidenceBundle, EvidenceItem
from policy.state import MAX_RULE_WORDS, MAX_RULES, ReasoningState, StateParseError, parse_state

PAST_CUES = re.compile(r"\b(used to|previously|in the past|history|formerly|originally|at first|did i|was i|"
                       r"last (year|month|week|time)|when did|how long ago|changed?)\b", re.I)
SCOPE_STOPWORDS = frozenset({"at", "in", "on", "for", "with", "to", "my", "the", "a", "an", "of", "when", "while",
                             "during", "only", "about", "his", "her", "their", "our", "your", "me", "i"})
MAX_ALIASES_PER_RULE = 8


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower())}


def scope_applies(scope: str, request: str) -> bool:
    """True when the request mentions the scope's content words (a crude, lexical check — a scoped
    fact that fails it is kept with low priority, never dropped, because the request may be in scope
    without naming it)."""
    keys = {w.rstrip("s") for w in _words(scope) - SCOPE_STOPWORDS}
    req = {w.rstrip("s") for w in _words(request)}
    return not keys or bool(keys & req)


def _list(aliases: list[str]) -> str:
    shown = aliases[:MAX_ALIASES_PER_RULE]
    extra = len(aliases) - len(shown)
    return ", ".join(shown) + (f" and {extra} more" if extra else "")


def _fit(rule: str) -> str:
    words = rule.split()
    return rule if len(words) <= MAX_RULE_WORDS else " ".join(words[:MAX_RULE_WORDS - 1]) + " …"


def _is_user_belief(it: EvidenceItem) -> bool:
    return it.fact.kind == "belief" and it.fact.holder == "user"


def _is_outside(it: EvidenceItem) -> bool:
    """Evidence not held by the user (an assistant's or a source's statement)."""
    return it.fact.holder != "user"


class RulePolicy:
    """``policy.base.Policy`` from relational states; no model, deterministic, microseconds."""

    name = "rule-baseline"

    def state_text(self, request: str, bundle: EvidenceBundle) -> str:
        if not bundle.items:
            raise StateParseError("no evidence: a Reasoning State needs at least one retrieved fact")
        past = bool(PAST_CUES.search(request))
        alias_of = bundle.alias_of()
        lines: list[str] = []
        retracted: list[str] = []
        constraints: list[str] = []
        historical: list[tuple[str, list[str]]] = []
        scoped: list[tuple[str, str]] = []
        conflict_pairs: list[tuple[str, str]] = []
        evidence_over_belief: list[tuple[str, str]] = []
        constraint_in_conflict: list[str] = []
        by_id = bundle.by_id()
        for it in bundle.items:
            use, role, prio = self._row(it, request, past, by_id)
            lines.append(f"{it.alias}: {'use' if use else 'ignore'} | {role} | {prio}")
            s = it.state
            if s.validity == "retracted":
                retracted.append(it.alias)
            elif s.validity in ("superseded", "expired"):
                historical.append((it.alias, [alias_of[i] for i in s.superseded_by if i in alias_of]))
            elif s.validity == "disputed":
                for other in s.conflicts_with:
                    if other not in alias_of:
                        continue
                    if _is_user_belief(it) and _is_outside(by_id[other]):
                        evidence_over_belief.append((alias_of[other], it.alias))
                    elif _is_outside(it) and _is_user_belief(by_id[other]):
                        continue  # recorded from the belief's side
                    elif (alias_of[other], it.alias) not in conflict_pairs:
                        conflict_pairs.append((it.alias, alias_of[other]))
                if it.fact.kind == "constraint":
                    constraint_in_conflict.append(it.alias)
            elif role == "constraint":
                constraints.append(it.alias)
            if s.validity not in ("retracted", "superseded", "expired") and s.scope and role == "evidence" \
                    and prio == "low":
                scoped.append((it.alias, s.scope))
        rules: list[str] = []
        if retracted:
            rules.append(f"Never rely on {_list(retracted)}: the user retracted {'it' if len(retracted) == 1 else 'them'}.")
        if conflict_pairs:
            pairs = _list([f"{a}/{b}" for a, b in conflict_pairs])
            rule = f"Conflicting facts {pairs}: mention both sides and treat neither as settled"
            if constraint_in_conflict:
                rule += f"; when unsure, stay on the safe side of {_list(constraint_in_conflict)}"
            rules.append(rule + ".")
        if evidence_over_belief:
            ev = _list(sorted({e for e, _ in evidence_over_belief}))
            bel = _list(sorted({b for _, b in evidence_over_belief}))
            rules.append(f"Outside evidence {ev} outweighs the user's belief {bel}: follow the evidence and say so "
                         "politely; do not confirm the belief.")
        if constraints:
            rules.append(f"Respect {_list(constraints)}: constraints outrank preferences.")
        if historical and not past:
            repl = [f"{a} (replaced by {', '.join(by)})" if by else a for a, by in historical]
            rules.append(f"{_list(repl)} {'describes' if len(repl) == 1 else 'describe'} the past; "
                         f"do not base the answer on {'it' if len(repl) == 1 else 'them'}.")
        for alias, scope in scoped:
            rules.append(f"{alias} applies only {scope}; use it only if the request is in that context.")
        text = "\n".join(lines + [f"RULE: {_fit(r)}" for r in rules[:MAX_RULES]])
        parse_state(text, alias_of.values())  # our own output meets the grammar, or we fail loudly here
        return text

    def state(self, request: str, bundle: EvidenceBundle) -> ReasoningState:
        return parse_state(self.state_text(request, bundle), bundle.alias_of().values())

    @staticmethod
    def _row(it: EvidenceItem, request: str, past: bool, by_id: dict[str, EvidenceItem]) -> tuple[bool, str, str]:
        s, f = it.state, it.fact
        if s.validity == "retracted":
            return False, "irrelevant", "low"
        if s.validity in ("superseded", "expired"):
            return (True, "historical", "medium") if past else (False, "historical", "low")
        if s.validity == "disputed":
            others = [by_id[o] for o in s.conflicts_with if o in by_id]
            if _is_user_belief(it) and any(_is_outside(o) for o in others):
                return True, "evidence", "low"
            if _is_outside(it) and any(_is_user_belief(o) for o in others):
                return True, "evidence", "high"
            return True, "evidence", "medium"
        if s.scope and not scope_applies(s.scope, request):
            return True, "evidence", "low"
        if f.kind == "constraint":
            return True, "constraint", "high"
        if f.kind == "preference" and f.holder == "user":
            return True, "current-preference", "high"
        return True, "evidence", "medium"
