"""Fact-order shuffling for the warm-up (policy/warmup.py): same facts and decisions, new positions."""

from __future__ import annotations

import random

import pytest

from policy.reader import AnswerReader
from policy.rewards import BaselineCache, ReaderAnswerModel, RewardConfig, state_reward
from policy.state import parse_state
from policy.targets import target_state
from policy.warmup import remap_state, shuffled_instance
from training_data.synthetic import SyntheticConfig, SyntheticSource


def _decisions(inst, text):  # type: ignore[no-untyped-def]
    by_alias = {it.alias: it.fact.fact_id for it in inst.evidence}
    return {by_alias[f.alias]: (f.use, f.role, f.priority) for f in parse_state(text, inst.aliases).facts}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shuffle_moves_facts_but_keeps_every_decision_and_its_reward(seed: int) -> None:
    insts = list(SyntheticSource(SyntheticConfig(n=12)).instances(seed))
    answer, cache, cfg = ReaderAnswerModel(AnswerReader(1.0)), BaselineCache(), RewardConfig(max_state_tokens=10**6)
    rng = random.Random(seed)
    moved_any = False
    for inst in insts:
        text, reward = target_state(inst, answer, cache, style="facts")
        moved, amap = shuffled_instance(inst, rng)
        assert moved.aliases == [f"F{n}" for n in range(1, len(inst.evidence) + 1)]  # renumbered in prompt order
        assert {it.fact.fact_id for it in moved.evidence} == {it.fact.fact_id for it in inst.evidence}
        groups = [it.group for it in moved.evidence]  # relation groups stay contiguous
        assert all(groups.index(g) == i or groups[i - 1] == g for i, g in enumerate(groups))
        assert {amap[a]: g for a, g in inst.gold.items()} == moved.gold
        new_text = remap_state(text, amap)
        assert _decisions(moved, new_text) == _decisions(inst, text)
        assert state_reward(new_text, moved, answer, cache, cfg).reward == pytest.approx(reward)
        moved_any |= [it.fact.fact_id for it in moved.evidence] != [it.fact.fact_id for it in inst.evidence]
    assert moved_any  # the shuffle does shuffle
