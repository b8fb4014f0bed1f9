"""The policy benches run end to end at toy size (their full runs are minutes: see their docstrings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
TOY = ["max_steps=2", "data.synthetic.n=48", "data.n_eval=8", "data.n_val=8", "warmup.steps=5", "eval_every=1",
       "model.bpe_vocab_size=400", "per_device_train_batch_size=16"]


def _run(args: list[str], tmp_path: Path) -> dict:
    env = {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    start = out.stdout.rindex('{\n  "')  # the JSON summary is printed last; TRL logs dicts before it
    return json.loads(out.stdout[start:])


def test_policy_learning_bench_reports_every_baseline(tmp_path: Path) -> None:
    s = _run(["bench/policy_learning.py", "--json", "--out", str(tmp_path / "run"), "--set", *TOY], tmp_path)
    assert set(s["heldout"]) == {"no_state", "rule", "oracle", "random_states", "fixed_position", "untrained",
                                 "trained", "final"}
    h = s["heldout"]
    assert h["oracle"]["accuracy"] == 1.0 and h["no_state"]["reward"] == 0.0
    # the oracle's states are the gold ones: no policy earns more reward on the same held-out set
    assert all(h["oracle"]["reward"] >= v["reward"] for v in h.values())
    # the verdict is the bench's claim: "learned" iff the trained policy beats every rival on both metrics
    rivals = ("untrained", "rule", "random_states", "fixed_position")
    best_rival = {m: max(h[r][m] for r in rivals) for m in ("reward", "accuracy")}
    if s["learned"]:  # values are rounded to 4 places, so a strict win may show as a tie
        assert all(h["trained"][m] >= best_rival[m] for m in best_rival), s
    else:
        assert not all(h["trained"][m] > best_rival[m] for m in best_rival), s
    assert s["steps"] == 2 and s["best_step"] in (0, 1, 2)
    assert s["heldout_in_retrieval_order"] is not None  # the demo config shuffles facts
    assert Path(s["plot"]).stat().st_size > 1000 and Path(tmp_path / "run" / "summary.json").is_file()


def test_supervised_probe_runs(tmp_path: Path) -> None:
    s = _run(["bench/policy_probe.py", "--steps", "2", "--set", *TOY], tmp_path)
    assert s["examples_seen"] == 32
    assert s["final_loss"] is not None and 0.0 < s["final_loss"] < 20.0  # a real cross-entropy, not nan/inf
    assert set(s["heldout_before"]) == set(s["heldout_after_supervised"])  # one evaluation, before and after
