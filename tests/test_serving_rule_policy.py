"""The rule-baseline policy over real retrieval from the shipped example history (both backends)."""

from __future__ import annotations

import pytest

from evomem.examples import fact_id, load_history
from memcore.memory import Memory
from graph.edits import EditBatch, Retract
from retrieval.retrieve import EvidenceBundle
from policy.base import Policy
from policy.rule import RulePolicy, scope_applies
from policy.state import MAX_RULES, StateParseError, parse_state


def rows(bundle: EvidenceBundle, text: str) -> dict[str, str]:
    """fact key (e.g. 'hiking') -> 'use|role|priority' from a state text."""
    key = {i.alias: i.fact.fact_id.split("::")[-1] for i in bundle.items}
    out = {}
    for ln in text.splitlines():
        if not ln.startswith("RULE"):
            alias, rest = ln.split(":", 1)
            out[key[alias]] = "|".join(p.strip() for p in rest.split("|"))
    return out


def test_is_a_policy_and_round_trips(memory: Memory) -> None:
    pol = RulePolicy()
    assert isinstance(pol, Policy)
    for req in load_history()["requests"]:
        b = memory.retrieve(req["user_id"], req["request"], k=4)
        text = pol.state_text(req["request"], b)
        state = pol.state(req["request"], b)
        assert parse_state(text, b.alias_of().values()) == state
        assert parse_state(state.render(), b.alias_of().values()) == state
        assert {f.alias for f in state.facts} == {i.alias for i in b.items}  # every fact gets a line
        assert len(state.rules) <= MAX_RULES
        assert pol.state_text(req["request"], b) == text  # deterministic


def test_vacation_case_from_the_paper(memory: Memory) -> None:
    b = memory.retrieve("maya", "Suggest a vacation for me", k=4)
    text = RulePolicy().state_text("Suggest a vacation for me", b)
    r = rows(b, text)
    assert r["hiking"] == "ignore|historical|low"  # superseded by the beach preference
    assert r["beach"] == "use|current-preference|high"
    assert r["knee"] == "use|constraint|high"
    assert "constraints outrank preferences" in text and "describes the past" in text


def test_conflicts_retractions_scope_and_evidence_over_belief(memory: Memory) -> None:
    pol = RulePolicy()
    b = memory.retrieve("leo", "Can I have a peanut snack?", k=6)
    text = pol.state_text("Can I have a peanut snack?", b)
    r = rows(b, text)
    assert r["peanut-allergy"] == "use|evidence|medium" and r["peanut-ok"] == "use|evidence|medium"
    assert "treat neither as settled" in text and "safe side" in text  # the allergy is a constraint
    if "formal" in r:
        assert r["formal"] == "use|evidence|low" and "applies only at work" in text

    b = memory.retrieve("sara", "Is the Great Wall visible from space?", k=4)
    r = rows(b, pol.state_text("Is the Great Wall visible from space?", b))
    assert r["wall-evidence"] == "use|evidence|high" and r["wall-belief"] == "use|evidence|low"
    assert r["berlin"] == "ignore|historical|low"  # expired plan

    memory.apply(EditBatch(user_id="leo", edits=[Retract(fact_id=fact_id("leo", "tea"), reason="wrong")]))
    b = memory.retrieve("leo", "What should I drink this afternoon?", k=6)
    text = pol.state_text("What should I drink this afternoon?", b)
    r = rows(b, text)
    assert r["tea"] == "ignore|irrelevant|low"
    assert r["espresso"] == "use|current-preference|high"  # retracting the replacement brings the old one back
    assert text.splitlines()[len(b.items)].startswith("RULE: Never rely on")  # safety rule first


def test_past_questions_keep_history_in_play(memory: Memory) -> None:
    b = memory.retrieve("maya", "What kind of trips did I use to enjoy?", k=4)
    r = rows(b, RulePolicy().state_text("What kind of trips did I use to enjoy?", b))
    assert r["hiking"] == "use|historical|medium"


def test_empty_evidence_is_refused() -> None:
    from retrieval.retrieve import Explain

    empty = EvidenceBundle(user_id="u", query="q", items=[], explain=Explain(query="q", k=1, seeds=[],
                                                                            added_by_traversal=[]))
    with pytest.raises(StateParseError):
        RulePolicy().state("q", empty)


@pytest.mark.parametrize("scope,request_,expected", [
    ("at work", "Draft an email to my team at work", True),
    ("at work", "Write a note to my friends", False),
    ("with friends", "Text my friend about Saturday", True),
    ("for my son", "What should my son eat?", True),
])
def test_scope_check(scope: str, request_: str, expected: bool) -> None:
    assert scope_applies(scope, request_) is expected
