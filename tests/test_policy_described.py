"""Role-first Reasoning-State lines and the 'described' warm-up targets (policy/state.py, policy/targets.py)."""

from __future__ import annotations

import pytest

from policy.reader import AnswerReader
from policy.rewards import BaselineCache, ReaderAnswerModel, RewardConfig, state_reward
from policy.state import StateParseError, parse_state
from policy.targets import fact_decisions, target_state
from policy.warmup import descriptive_role
from training_data.synthetic import SyntheticConfig, SyntheticSource


@pytest.mark.parametrize("written, use_first, role_first", [
    ("F1: historical | ignore | low", "F1: ignore | historical | low", "F1: historical | ignore | low"),
    ("F2: constraint | use | high", "F2: use | constraint | high", "F2: constraint | use | high"),
    ("f3 : Evidence|USE|medium", "F3: use | evidence | medium", "F3: evidence | use | medium"),
])
def test_role_first_lines_parse_to_the_same_state(written: str, use_first: str, role_first: str) -> None:
    state = parse_state(written)
    assert state == parse_state(use_first) and state.render() == use_first
    assert state.render(role_first=True) == role_first


@pytest.mark.parametrize("bad", ["F1: historical | maybe | low", "F1: use | ignore | low", "F1: historical | use"])
def test_role_first_keeps_the_grammar_strict(bad: str) -> None:
    with pytest.raises(StateParseError):
        parse_state(bad)


@pytest.mark.parametrize("seed", [0, 1])
def test_described_targets_copy_the_record_and_keep_decisions_and_reward(seed: int) -> None:
    insts = list(SyntheticSource(SyntheticConfig(n=12)).instances(seed))
    answer, cache, cfg = ReaderAnswerModel(AnswerReader(1.0)), BaselineCache(), RewardConfig(max_state_tokens=10**6)
    for inst in insts:
        facts, r_facts = target_state(inst, answer, cache, style="facts")
        text, r = target_state(inst, answer, cache, style="described")
        assert r == pytest.approx(r_facts)
        assert state_reward(text, inst, answer, cache, cfg).reward == pytest.approx(r_facts)
        items = {it.alias: it for it in inst.evidence}
        lines = text.splitlines()
        assert all(ln.split(": ", 1)[1].split(" | ")[0] == descriptive_role(items[ln.split(":")[0]]) for ln in lines)
        assert fact_decisions(parse_state(text)) == fact_decisions(parse_state(facts))  # same use/ignore per fact
