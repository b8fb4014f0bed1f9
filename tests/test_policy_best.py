"""Checkpoint selection on the validation set (policy.train.BestKeeper) and the config rules around it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from policy.config import load_config
from policy.train import BestKeeper


@pytest.mark.parametrize("rewards, best, step, saves", [
    ([0.0, 0.2, 0.1, 0.2], 0.2, 1, [0, 1]),      # a tie does not replace the earlier peak
    ([-0.1, -0.3, -0.2], -0.1, 0, [0]),           # never improving keeps the start
    ([0.1, 0.3, 0.5], 0.5, 2, [0, 1, 2]),
])
def test_best_keeper_saves_only_on_improvement(tmp_path: Path, rewards: list[float], best: float, step: int,
                                               saves: list[int]) -> None:
    it = iter(rewards)
    saved: list[Any] = []
    keeper = BestKeeper(tmp_path / "best", lambda m: {"reward": next(it)}, lambda m, folder: saved.append(m))
    for k in range(len(rewards)):
        keeper.consider(k, k)  # the "model" is its step number here
    assert keeper.best == best and keeper.step == step and saved == saves


def test_validation_needs_distinct_seeds_and_evaluation_steps() -> None:
    with pytest.raises(ValidationError, match="must differ"):
        load_config("grpo-cpu-smoke", ["data.val_seed=10000"])
    with pytest.raises(ValidationError, match="eval_every"):
        load_config("grpo-cpu-smoke", ["data.n_val=10", "eval_every=0"])
    assert load_config("grpo-cpu-smoke", ["data.n_val=10", "eval_every=5"]).data.n_val == 10
