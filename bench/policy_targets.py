"""Before a long warm-up: do the answer-key targets teach anything the rule baseline does not, and how short
can the prompt be without losing the facts that decide?

    python bench/policy_targets.py --data runs/policy-retrieved --config grpo-cpu-smollm2-ship \
        --margins 0 0.5 --budgets 384 512 768 1024

Reads ``train.jsonl`` (the training split, validation rows included: the warm-up sees the rest) and prints
one JSON object:

- per ``warmup.target_margin``: how many targets differ from the rule baseline's state (fact lines only, the
  ``target_style: facts`` form), their mean reward against the rule state's, and the same per task family.
  A target equal to the rule state teaches the policy to copy the rule, nothing more;
- "deciding facts" (``policy.targets.deciding_facts``): a flipped fact, or the fact an "only this fact"
  target uses; per ``max_prompt_tokens`` budget: the prompt tokens (p50 / max)
  and the share of differing targets whose deciding facts all survive the prompt's truncation
  (``policy.train.prompt_messages``: whole relation groups are dropped from the end).

The baseline is the rule state itself (difference 0 by definition); the answer-key ceiling is the mean
target reward at margin 0.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="Folder from `evomem build-instances` (train.jsonl).")
    ap.add_argument("--config", default="grpo-cpu-smollm2-ship", help="Training config (prompt, reader, style).")
    ap.add_argument("--margins", type=float, nargs="+", default=[0.0, 0.5])
    ap.add_argument("--budgets", type=int, nargs="*", default=[384, 512, 768, 1024],
                    help="max_prompt_tokens values to check (policy tokens).")
    ns = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from policy.config import load_config
    from policy.models import load_tokenizer
    from policy.rewards import BaselineCache, RewardConfig, state_reward
    from policy.state import parse_state
    from policy.targets import candidate_states, deciding_facts, target_state
    from policy.train import build_answer_model, prompt_messages, read_instances

    cfg = load_config(ns.config)
    insts = read_instances(Path(ns.data) / "train.jsonl")
    fams = [str(i.metadata.get("family", i.category)) for i in insts]
    answer, judge = build_answer_model(cfg)
    cache = BaselineCache()
    style = cfg.warmup.target_style
    judge_cfg = RewardConfig(max_state_tokens=10**6)
    rules = [candidate_states(i, style=style)[0] for i in insts]
    rule_r = [state_reward(t, i, answer, cache, judge_cfg).reward or 0.0 for t, i in zip(rules, insts)]
    out: dict[str, object] = {"train_n": len(insts), "style": style, "rule_mean_reward": round(statistics.fmean(rule_r), 4)}
    decide: dict[float, list[set[str]]] = {}
    for m in ns.margins:
        picked = [target_state(i, answer, cache, style=style, margin=m) for i in insts]
        differ = [t != r for (t, _), r in zip(picked, rules)]
        decide[m] = [deciding_facts(parse_state(t, i.aliases), parse_state(r, i.aliases)) if d else set()
                     for i, (t, _), r, d in zip(insts, picked, rules, differ)]
        by: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for f, d in zip(fams, differ):
            by[f][0] += d
            by[f][1] += 1
        out[f"margin_{m:g}"] = {
            "differ": sum(differ), "differ_share": round(sum(differ) / len(insts), 4),
            "target_mean_reward": round(statistics.fmean(r for _, r in picked), 4),
            "gain_over_rule_where_differ": round(statistics.fmean(
                [r - rr for (_, r), rr, d in zip(picked, rule_r, differ) if d] or [0.0]), 4),
            "deciding_facts_p50": statistics.median([len(s) for s in decide[m] if s] or [0]),
            "per_family_differ": {f: f"{a}/{n}" for f, (a, n) in sorted(by.items())},
            "target_lines_p50": statistics.median(t.count("\n") + 1 for t, _ in picked)}
    if ns.budgets:
        tok = load_tokenizer(cfg.model)

        def count(text: str) -> int:
            return len(tok(text, add_special_tokens=False).input_ids)

        full = [sum((count(m["content"]) for m in prompt_messages(i, cfg) or []), 0) for i in insts]
        out["prompt_tokens_untruncated"] = {"p50": statistics.median(full), "max": max(full)}
        m0 = min(ns.margins)
        for b in ns.budgets:
            c = cfg.model_copy(update={"data": cfg.data.model_copy(update={"max_prompt_tokens": b})})
            kept_n, sizes, fit = 0, [], 0
            for i, s in zip(insts, decide[m0]):
                msgs = prompt_messages(i, c, count)
                if msgs is None:
                    continue
                fit += 1
                text = msgs[1]["content"]
                sizes.append(sum(count(x["content"]) for x in msgs))
                kept_n += bool(s) and all(f"[{a}]" in text for a in s)
            n_dec = sum(bool(s) for s in decide[m0])
            out[f"budget_{b}"] = {"fit": fit, "tokens_p50": statistics.median(sizes) if sizes else 0,
                                  "tokens_max": max(sizes) if sizes else 0,
                                  f"deciding_kept_margin_{m0:g}": f"{kept_n}/{n_dec}"}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
