"""Can the frozen answer model read a Reasoning State? (issue 48 item 1)

Per held-out instance and per condition — no memory / evidence without a state / evidence + rule state /
evidence + learned state (states from ``--states``, a JSONL of {instance_id, state} written by
``bench/policy_fast.py --states-out``) — the LM reader (``policy/lmreader.py``, SmolLM2-135M-Instruct by
default) scores every option by mean log-probability; the bag-of-words reader (``policy/reader.py``) runs
beside it as the fast check. Prints per family: accuracy (argmax = reference) and the graded score
(P(reference option); exp mean log-prob of the reference on open rows), with n.

    python bench/policy_reader.py --data runs/inst/heldout.jsonl [--states runs/learned_states.jsonl] \
        --out runs/reader.jsonl [--limit 40] [--evidence-budget 160]

A fine-tuned reader (``evomem train-reader``, ``policy/reader_tune.py``) with ``--reader FOLDER``; on neutral
instances the conditions ``oracle`` / ``wrong`` (and ``oracle_rules`` / ``wrong_rules``) show the state a
perfect policy writes and the one with the two sides' roles swapped — a reader that reads states scores
oracle > evidence > none and oracle > wrong:

    python bench/policy_reader.py --data runs/neutral/heldout-bench.jsonl --per-family 2 \
        --reader policy/artefact/smollm2-reader-v1 --conditions none,evidence,rule,oracle,wrong --out runs/r.jsonl

A MiniLM reader (``policy/xreader_fast.py`` or the cross-encoder ``policy/xreader.py``) with ``--xreader FOLDER``.
``--policy CHECKPOINT`` writes a policy checkpoint's greedy states as the learned condition (per-fact prompts
as in training); the rows' ``learned_state`` keeps them. The instances where the state decides:

    python bench/policy_reader.py --data runs/state-decides/heldout.jsonl --xreader policy/artefact/xreader-fast-text-v1 \
        --conditions none,evidence,rule,oracle,wrong,learned --policy policy/artefact/smollm2-read-v1 --out runs/sd/warm.jsonl

Rows already in ``--out`` are skipped, so a run can be resumed (the box is shared).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="+", required=True, help="heldout.jsonl file(s).")
    ap.add_argument("--states", default=None, help="JSONL {instance_id, state}: the learned policy's states.")
    ap.add_argument("--out", required=True, help="Per-row JSONL (appended; rows present are skipped).")
    ap.add_argument("--limit", type=int, default=0, help="At most N rows (0: all).")
    ap.add_argument("--per-family", type=int, default=0, help="At most N rows per family (0: all), first by id.")
    ap.add_argument("--conditions", default="none,evidence,rule,learned",
                    help="Comma list of the conditions to run (learned needs --states).")
    ap.add_argument("--evidence-budget", type=int, default=None, help="Reader's evidence budget (words).")
    ap.add_argument("--reader", default=None, help="A fine-tuned reader adapter (evomem train-reader, e.g. "
                    "policy/artefact/smollm2-reader-v1); default: the base SmolLM2. Conditions oracle / wrong "
                    "(policy.reader_tune.oracle_state: right roles / the two sides swapped) need neutral instances.")
    ap.add_argument("--xreader", default=None, help="A MiniLM reader artefact (policy/xreader_fast.py, e.g. "
                    "policy/artefact/xreader-fast-v1, or the cross-encoder of policy/xreader.py) instead of an LM "
                    "reader; its scores go in the lm/* columns.")
    ap.add_argument("--policy", default=None, help="A policy checkpoint (evomem train-policy's best/ or final/, or "
                    "policy/artefact/smollm2-read-v1): its greedy states are the learned condition (instead of --states).")
    ap.add_argument("--prompt", default=None, help="Answer prompt of the base reader (default memsyco; a fine-tuned "
                    "reader uses the one its manifest names).")
    ap.add_argument("--summary-only", action="store_true", help="Only print the summary of --out.")
    ns = ap.parse_args(argv)
    out = Path(ns.out)
    if not ns.summary_only:
        run(ns, out)
    print(json.dumps(summary([json.loads(x) for x in out.read_text().splitlines() if x.strip()]), indent=1))
    return 0


def run(ns: argparse.Namespace, out: Path) -> None:
    import torch

    from policy.lmreader import EVIDENCE_BUDGET, LMReader
    from policy.option_scoring import OptionScoring, best_index, choice_index
    from policy.reader import AnswerReader
    from policy.rule import RulePolicy
    from policy.state import fit_state, parse_state
    from training_data.base import TrainingInstance

    torch.set_num_threads(1)
    rows = [TrainingInstance.model_validate_json(x) for f in ns.data for x in Path(f).read_text().splitlines() if x.strip()]
    rows.sort(key=lambda i: (not i.choices, i.instance_id))  # option rows first: they give accuracy
    if ns.per_family:
        seen: dict[str, int] = defaultdict(int)
        keep = []
        for i in rows:
            fam = str(i.metadata.get("family", i.category))
            if seen[fam] < ns.per_family:
                seen[fam] += 1
                keep.append(i)
        rows = keep
    if ns.limit:
        rows = rows[: ns.limit]
    states = {}
    if ns.states:
        for x in Path(ns.states).read_text().splitlines():
            if x.strip():
                d = json.loads(x)
                states[d["instance_id"]] = d["state"]
    done = {json.loads(x)["instance_id"] for x in out.read_text().splitlines() if x.strip()} if out.is_file() else set()
    if ns.policy:  # greedy states of a checkpoint, as the GRPO run's validation writes them
        from policy.learned import LocalLearnedPolicy

        pol = LocalLearnedPolicy.from_checkpoint(ns.policy, temperature=0.0)
        todo = [i for i in rows if i.instance_id not in done]
        states.update(zip([i.instance_id for i in todo],
                          pol.state_texts([(i.request, i.bundle(), i.choices) for i in todo], 16)))
    reader: Any
    if ns.xreader:
        from policy.xreader_fast import load_any

        reader = load_any(ns.xreader)
        if reader is None:
            raise SystemExit(f"{ns.xreader}: no MiniLM reader artefact (policy/xreader.py, policy/xreader_fast.py)")
    elif ns.reader:
        reader = LMReader.finetuned(ns.reader, **({"evidence_budget": ns.evidence_budget} if ns.evidence_budget else {}))
    else:
        reader = LMReader.smollm2(evidence_budget=ns.evidence_budget or EVIDENCE_BUDGET, prompt=ns.prompt or "memsyco")
    bow = AnswerReader(1.0)
    rule = RulePolicy()
    for inst in rows:
        if inst.instance_id in done:
            continue
        bundle = inst.bundle()
        wanted = set(ns.conditions.split(","))
        conds: dict[str, object] = {k: k for k in ("none", "evidence") if k in wanted}
        if "rule" in wanted:
            conds["rule"] = fit_state(rule.state(inst.request, bundle))
        for k in ("oracle", "wrong", "oracle_rules", "wrong_rules"):
            if k in wanted:
                from policy.reader_tune import oracle_state

                conds[k] = fit_state(oracle_state(inst, wrong=k.startswith("wrong"), rules=k.endswith("_rules")))
        if inst.instance_id in states and "learned" in wanted:
            try:
                conds["learned"] = fit_state(parse_state(states[inst.instance_id], inst.aliases))
            except ValueError:  # an unparseable state: serving falls back to no state, so does the bench
                conds["learned"] = "evidence"
        rec: dict[str, object] = {"instance_id": inst.instance_id, "family": inst.metadata.get("family", inst.category),
                                  "choices": bool(inst.choices)}
        t0 = time.time()
        for name, cond in conds.items():
            if inst.choices:
                lps = reader.option_logprobs(inst.request, bundle, inst.choices, cond)  # type: ignore[arg-type]
                ref = choice_index(inst.choices, inst.reference_answer)
                if ref is None:
                    raise ValueError(f"{inst.instance_id}: its reference answer is none of its options")
                rec[f"lm/{name}/acc"] = float(best_index(lps) == ref)
                rec[f"lm/{name}/graded"] = OptionScoring.graded_choice(lps, inst.choices, inst.reference_answer)
                if name != "none":
                    st = None if name == "evidence" else cond
                    ans = bow.answer(inst.request, inst.evidence, inst.choices, st)  # type: ignore[arg-type]
                    rec[f"bow/{name}/acc"] = float(ans.strip().lower() == inst.reference_answer.strip().lower())
            else:
                rec[f"lm/{name}/graded"] = reader.graded(inst, cond)  # type: ignore[arg-type]
        if "learned" in conds:
            rec["learned_state"] = states[inst.instance_id]
            rec["learned_parsed"] = conds["learned"] != "evidence"
        rec["seconds"] = round(time.time() - t0, 1)
        if ns.xreader:
            rec["truncated_so_far"] = reader.truncated
        with out.open("a") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(json.dumps(rec), flush=True)


def summary(recs: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    """Per family and overall: mean of every measured column, with n."""
    by: dict[str, list[dict[str, object]]] = defaultdict(list)
    for r in recs:
        by[str(r["family"])].append(r)
        by["all"].append(r)
    res: dict[str, dict[str, object]] = {}
    for fam, rs in sorted(by.items()):
        cols = sorted({k for r in rs for k in r if k.startswith(("lm/", "bow/"))})
        res[fam] = {"n": len(rs), **{c: round(sum(float(r[c]) for r in rs if c in r)  # type: ignore[arg-type,misc]
                                              / max(sum(c in r for r in rs), 1), 3) for c in cols}}
    return res


if __name__ == "__main__":
    sys.exit(main())
