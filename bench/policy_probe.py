"""Can the policy model represent the skill GRPO has to find? A supervised probe.

    python bench/policy_probe.py                         # the demo config (grpo-cpu-demo), seed 0
    python bench/policy_probe.py --set data.synthetic.min_facts=4 data.synthetic.unlinked_update=0.3

Builds exactly the start GRPO gets (config-built tiny model + format warm-up, via
``policy.train.build_policy_model``), then trains it *supervised* on the generator's answer key — the
state "F<k>: use | <role> | high" naming the fact that applies — for ``--steps`` batches of 16, and
reports held-out reward and accuracy with the reader and scorer bench/policy_learning.py uses.
High accuracy here and none after GRPO means the reinforcement signal, not the model, is the limit;
this is a diagnostic, never a policy (it learns from labels GRPO does not see).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="grpo-cpu-demo", help="Preset or YAML (default grpo-cpu-demo).")
    ap.add_argument("--set", nargs="*", default=[], dest="overrides", help="Config overrides KEY=VALUE.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=300, help="Supervised batches (16 examples each).")
    ap.add_argument("--lr", type=float, default=3e-3)
    ns = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from policy.config import load_config
    from policy.rewards import BaselineCache, ReaderAnswerModel
    from policy.train import build_policy_model, heldout_eval, load_instances, prompt_messages
    from policy.warmup import descriptive_role, format_warmup

    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(ns.config, [*ns.overrides, f"seed={ns.seed}", f"output_dir={tmp}"])
        train_set, heldout = load_instances(cfg)
        data = [(i, prompt_messages(i, cfg)) for i in train_set]
        model, tok, _ = build_policy_model(cfg, [(i, p) for i, p in data if p], Path(tmp))
        answer, cache = ReaderAnswerModel(), BaselineCache()
        held_prompts = [prompt_messages(i, cfg) for i in heldout]
        before = heldout_eval(model, tok, heldout, held_prompts, answer, cache, cfg)

        def key_state(inst: object) -> str:
            alias = next(a for a, g in inst.gold.items() if g.use)  # type: ignore[attr-defined]
            item = next(it for it in inst.evidence if it.alias == alias)  # type: ignore[attr-defined]
            return f"{alias}: use | {descriptive_role(item)} | high"

        targets = [key_state(i) for i, p in data if p]
        losses = format_warmup(model, tok, [p for _, p in data if p], [i.aliases for i, p in data if p],
                               steps=ns.steps, lr=ns.lr, batch_size=16, seed=ns.seed,
                               target_fn=lambda k, _rng: targets[k])
        after = heldout_eval(model, tok, heldout, held_prompts, answer, cache, cfg)
    out = {"config": ns.config, "overrides": ns.overrides, "seed": ns.seed, "steps": ns.steps, "lr": ns.lr,
           "examples_seen": ns.steps * 16, "final_loss": losses[-1]["loss"] if losses else None,
           "heldout_before": before, "heldout_after_supervised": after, "seconds": round(time.time() - t0, 1)}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
