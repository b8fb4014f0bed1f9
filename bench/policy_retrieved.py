"""Held-out MemSyco rows from real retrieval: no state vs rule baseline vs (optionally) a learned policy.

    python bench/policy_retrieved.py --data runs/policy-retrieved
    python bench/policy_retrieved.py --data runs/policy-retrieved --checkpoint runs/grpo-cpu-smollm2/best
    python bench/policy_retrieved.py --data runs/gate --config grpo-cpu-smollm2-fact-holder --no-answer-key \
        --head --learned-states runs/gate/adapter-states.jsonl      # head vs the adapter on the same rows

Reads ``heldout.jsonl`` written by ``evomem build-instances`` (training_data/retrieved.py: the fixed
MemSyco split, never trained on) and scores every policy with the frozen reader the training config
names (reader-v2 by default: ``answer.reader_ignored_weight``), per MemSyco task family:

- no state        the reader alone;
- rule baseline   ``policy.rule.RulePolicy``; its latency per request is timed (p50);
- answer-key best the best of policy/targets.py's candidate states picked *with the answer key* — an
                  upper bound on what a state from that family can earn, not a policy;
- learned         (with --checkpoint) greedy states of the checkpoint; states that do not parse fall back
                  to the rule baseline (as serving does) and are counted; latency p50 per request. Or (with
                  --learned-states) states written elsewhere, e.g. the shipped adapter's serving path, one JSON
                  row per instance (instance_id, state, optional ms);
- head            (with --head) the distilled head (policy/head.py); with --learned-states also head − learned,
                  paired, accuracy and reward, and how many rows get the same state.

Prints one JSON summary: accuracy and reward per policy and family, parse rate, paired bootstrap CIs of
learned − rule and rule − no state (accuracy, resampling rows), latencies.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _table(scores: dict[str, list[float]], fams: Sequence[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, vals in scores.items():
        by: dict[str, list[float]] = defaultdict(list)
        for f, v in zip(fams, vals):
            by[f].append(v)
        out[name] = {"all": round(sum(vals) / max(len(vals), 1), 4),
                     **{f: round(sum(v) / len(v), 4) for f, v in sorted(by.items())}}
    return out


def _paired(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Mean of a − b over the same rows and its paired bootstrap 95 % CI (rows resampled)."""
    from evaluation.metrics import paired_bootstrap_ci

    return {"mean": round((sum(a) - sum(b)) / max(len(a), 1), 4), "ci95": paired_bootstrap_ci(a, b)}


def reads_summary(insts: Sequence[Any], fams: Sequence[str], raw: Sequence[str], parsed: Sequence[bool],
                  rule_texts: Sequence[str], key_texts: Sequence[str]) -> dict[str, Any]:
    """Does the learned policy name the facts that decide, or copy a layout? Over rows where the answer-key
    state decides differently from the rule state (policy.targets.deciding_facts), the share where the
    learned state takes every deciding fact as the answer-key state does — next to the same share for a
    *positional template*: per fact handle, the learned states' most common decision over these rows. A
    policy that copies positions scores about as well as its own template; one that reads scores higher."""
    from collections import Counter

    from policy.state import FactUse, ReasoningState, parse_state
    from policy.targets import fact_decisions, names_deciding

    rows = []
    for i, f, text, ok, rt, kt in zip(insts, fams, raw, parsed, rule_texts, key_texts):
        rule_s, key_s = parse_state(rt, i.aliases), parse_state(kt, i.aliases)
        if names_deciding(key_s, key_s, rule_s) is not None:
            rows.append((f, list(i.aliases), parse_state(text, i.aliases) if ok else None, key_s, rule_s))
    votes: dict[str, Counter[str]] = defaultdict(Counter)
    for *_, st, _, _ in rows:
        for a, d in (fact_decisions(st).items() if st is not None else ()):
            votes[a][d] += 1
    out: dict[str, Any] = {"rows": len(rows)}
    for name in ("learned", "positional_template"):
        hits: dict[str, list[float]] = defaultdict(list)
        for f, aliases, st, key_s, rule_s in rows:
            lines = tuple(FactUse(alias=a, use=votes[a].most_common(1)[0][0] == "use", role="evidence",
                                  priority="high") for a in aliases if votes[a])
            pol = st if name == "learned" else (ReasoningState(facts=lines) if lines else None)
            ok = pol is not None and bool(names_deciding(pol, key_s, rule_s))
            hits["all"].append(float(ok))
            hits[f].append(float(ok))
        out[name] = {k: round(sum(v) / len(v), 4) for k, v in sorted(hits.items())}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="Folder from `evomem build-instances` (heldout.jsonl).")
    ap.add_argument("--config", default="grpo-cpu-smollm2", help="Training config (reader and reward settings).")
    ap.add_argument("--checkpoint", default=None, help="A trained policy folder (best/ or final/).")
    ap.add_argument("--limit", type=int, default=None, help="First N held-out rows.")
    ap.add_argument("--per-family", type=int, default=None, help="First N held-out rows of each family (a small "
                    "stratified sample where generation is slow).")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="Learned policy's cap (default: the config's "
                    "max_completion_length).")
    ap.add_argument("--batch", type=int, default=1, help="Learned policy: held-out prompts per generate call "
                    "(left-padded, greedy). Latency is still timed per request, on --latency-rows rows alone.")
    ap.add_argument("--latency-rows", type=int, default=10, help="With --batch > 1: rows timed one at a time.")
    ap.add_argument("--out", default=None, help="Write summary.json here.")
    ap.add_argument("--head", nargs="?", const="", default=None, help="Also score the distilled head "
                    "(policy/head.py; the shipped head-v1, or the folder given) as policy 'head'.")
    ap.add_argument("--learned-states", default=None, help="Score these states (JSONL of instance_id/state, e.g. "
                    "bench/policy_fast.py --states-out: the shipped adapter's greedy lines) as 'learned' instead "
                    "of generating with --checkpoint.")
    ap.add_argument("--only-stated", action="store_true", help="Score only the rows --learned-states has (every "
                    "policy on the same rows).")
    ap.add_argument("--no-answer-key", action="store_true", help="Skip the answer-key best row (the costliest).")
    ns = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from evaluation.metrics import bootstrap_ci
    from policy.config import load_config
    from policy.rewards import BaselineCache, RewardConfig, state_reward
    from policy.rule import RulePolicy
    from policy.state import StateParseError, parse_state
    from policy.targets import target_state
    from policy.train import build_answer_model, read_instances

    cfg = load_config(ns.config)
    insts = read_instances(Path(ns.data) / "heldout.jsonl")[: ns.limit]
    if ns.per_family:
        seen: dict[str, int] = defaultdict(int)
        keep = []
        for i in insts:
            fam = str(i.metadata.get("family", i.category))
            seen[fam] += 1
            if seen[fam] <= ns.per_family:
                keep.append(i)
        insts = keep
    if ns.only_stated:  # a run of bench/policy_gate_data.py adapter-states cut short: the rows it has, all policies
        if not ns.learned_states:
            raise SystemExit("--only-stated needs --learned-states")
        stated = {json.loads(x)["instance_id"] for x in Path(ns.learned_states).read_text().splitlines() if x.strip()}
        insts = [i for i in insts if i.instance_id in stated]
    fams = [str(i.metadata.get("family", i.category)) for i in insts]
    answer, judge = build_answer_model(cfg)
    cache = BaselineCache()
    judge_cfg = RewardConfig(max_state_tokens=10**6)  # baselines are not held to the policy's length cap
    rule = RulePolicy()
    acc: dict[str, list[float]] = {}
    rew: dict[str, list[float]] = {}
    acc["no_state"] = [cache.get(answer, i, judge) or 0.0 for i in insts]
    rew["no_state"] = [0.0] * len(insts)
    rule_texts, rule_ms = [], []
    for i in insts:
        t0 = time.perf_counter()
        rule_texts.append(rule.state_text(i.request, i.bundle()))
        rule_ms.append((time.perf_counter() - t0) * 1e3)
    key_texts = [] if ns.no_answer_key else [target_state(i, answer, cache)[0] for i in insts]
    for name, texts in (("rule", rule_texts), ("answer_key_best", key_texts)):
        if not texts:
            continue
        bds = [state_reward(t, i, answer, cache, judge_cfg, judge=judge) for t, i in zip(texts, insts)]
        acc[name] = [b.score_with or 0.0 for b in bds]
        rew[name] = [b.reward or 0.0 for b in bds]
    summary: dict[str, Any] = {"heldout_n": len(insts), "reader": answer.name, "data": ns.data,
                               "families": dict(sorted((f, fams.count(f)) for f in set(fams))),
                               "latency_ms_p50": {"rule": round(statistics.median(rule_ms), 3)}}
    if ns.head is not None:
        from policy.head import HeadPolicy

        head = HeadPolicy(ns.head or None)
        head_texts, head_ms = [], []
        for i in insts:
            t0 = time.perf_counter()
            head_texts.append(head.state_text(i.request, i.bundle(), i.choices))
            head_ms.append((time.perf_counter() - t0) * 1e3)
        bds = [state_reward(t, i, answer, cache, cfg.reward, judge=judge) for t, i in zip(head_texts, insts)]
        acc["head"] = [b.score_with or 0.0 for b in bds]
        rew["head"] = [b.reward or 0.0 for b in bds]
        summary["latency_ms_p50"]["head"] = round(statistics.median(head_ms), 1)
        summary["ci_head_minus_rule"] = _paired(acc["head"], acc["rule"])
        summary["head_states"] = [{"id": i.instance_id, "text": t} for i, t in zip(insts, head_texts)]
    if ns.learned_states:
        rows = [json.loads(x) for x in Path(ns.learned_states).read_text().splitlines() if x.strip()]
        given = {r["instance_id"]: r for r in rows}
        missing = [i.instance_id for i in insts if i.instance_id not in given]
        if missing:
            raise SystemExit(f"--learned-states lacks {len(missing)} of the {len(insts)} rows, e.g. {missing[0]}")
        bds = [state_reward(given[i.instance_id]["state"], i, answer, cache, cfg.reward, judge=judge) for i in insts]
        acc["learned"] = [b.score_with or 0.0 for b in bds]
        rew["learned"] = [b.reward or 0.0 for b in bds]
        summary["learned_states"] = ns.learned_states
        given_ms = [float(given[i.instance_id]["ms"]) for i in insts if "ms" in given[i.instance_id]]
        if given_ms:  # timed where the states were written (e.g. the adapter's serving path, one request at a time)
            summary["latency_ms_p50"]["learned"] = round(statistics.median(given_ms), 1)
        summary["ci_learned_minus_rule"] = _paired(acc["learned"], acc["rule"])
        if "head" in acc:
            summary["ci_head_minus_learned"] = _paired(acc["head"], acc["learned"])
            summary["ci_head_minus_learned_reward"] = _paired(rew["head"], rew["learned"])
            pairs = [(parse_state(h, i.aliases).facts, parse_state(given[i.instance_id]["state"], i.aliases).facts)
                     for h, i in zip(head_texts, insts)]
            summary["head_vs_learned"] = {
                "same_state_rows": sum(a == b for a, b in pairs),
                "same_line_facts": [sum(x == y for a, b in pairs for x, y in zip(a, b)), sum(len(b) for _, b in pairs)],
                "same_use_facts": sum(x.use == y.use for a, b in pairs for x, y in zip(a, b))}
    elif ns.checkpoint:
        from policy.learned import LocalLearnedPolicy

        pol = LocalLearnedPolicy.from_checkpoint(ns.checkpoint, temperature=0.0, merge=True,
                                                 max_new_tokens=ns.max_new_tokens or cfg.max_completion_length)
        queries = [(i.request, i.bundle(), i.choices) for i in insts]
        raw: list[str] = []
        ms: list[float] = []
        if ns.batch > 1:
            raw = pol.state_texts(queries, ns.batch)
            for q in queries[: ns.latency_rows]:  # what one request costs: prompt(s) + state, alone
                t0 = time.perf_counter()
                pol.state_texts([q], max(len(q[1].items), 1))
                ms.append((time.perf_counter() - t0) * 1e3)
        else:
            for q in queries:
                t0 = time.perf_counter()
                raw.append(pol.state_texts([q], max(len(q[1].items), 1))[0])
                ms.append((time.perf_counter() - t0) * 1e3)
        texts, parsed = [], []
        for i, rt, text in zip(insts, rule_texts, raw):
            try:
                parse_state(text, i.aliases)
                parsed.append(True)
                texts.append(text)
            except StateParseError:
                parsed.append(False)
                texts.append(rt)  # serving falls back to the rule baseline
        bds = [state_reward(t, i, answer, cache, cfg.reward if ok else judge_cfg, judge=judge)
               for t, i, ok in zip(texts, insts, parsed)]
        acc["learned"] = [b.score_with or 0.0 for b in bds]
        rew["learned"] = [b.reward or 0.0 for b in bds]
        summary["parse_rate"] = round(sum(parsed) / max(len(parsed), 1), 4)
        summary["fallbacks"] = len(parsed) - sum(parsed)
        summary["latency_rows"] = len(ms)
        summary["states"] = [{"id": i.instance_id, "family": f, "parsed": ok, "text": t}
                             for i, f, ok, t in zip(insts, fams, parsed, raw)]
        summary["latency_ms_p50"]["learned"] = round(statistics.median(ms), 1)
        diff = [a - b for a, b in zip(acc["learned"], acc["rule"])]
        summary["ci_learned_minus_rule"] = {"mean": round(sum(diff) / max(len(diff), 1), 4),
                                            "ci95": bootstrap_ci(diff)}
        summary["checkpoint"] = ns.checkpoint
        summary["names_deciding_fact"] = reads_summary(insts, fams, raw, parsed, rule_texts, key_texts)
    d = [a - b for a, b in zip(acc["rule"], acc["no_state"])]
    summary["ci_rule_minus_no_state"] = {"mean": round(sum(d) / max(len(d), 1), 4), "ci95": bootstrap_ci(d)}
    summary["accuracy"] = _table(acc, fams)
    summary["reward"] = _table(rew, fams)
    if ns.out:
        Path(ns.out).mkdir(parents=True, exist_ok=True)
        Path(ns.out, "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k not in ("states", "head_states")}, indent=2))  # in --out
    return 0


if __name__ == "__main__":
    sys.exit(main())
