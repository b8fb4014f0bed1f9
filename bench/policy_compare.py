"""Paired comparison of reader conditions on the same held-out rows, with bootstrap 95 % CIs (issue 48 item 2).

Reads ``bench/policy_reader.py`` outputs (per-row JSONL) for the same rows: a base file with the no-memory /
evidence / rule conditions and one learned file per policy (``--learned NAME=FILE``, each with the ``learned``
condition, e.g. the warm start and the GRPO checkpoint). Per row and condition: accuracy (the LM reader's
argmax is the reference) and reward = graded score with the condition minus graded score with evidence and no
state (Eq. 10 with P(reference option) as the score). Prints per family and overall the means, then the paired
differences asked for (``--pairs A-B``; default: every learned policy minus the rule, the rule minus no state,
and the learned policies minus each other) with a percentile bootstrap over rows (``--boot`` resamples, seeded).

    python bench/policy_compare.py --base runs/neutral-bench/reader-base.jsonl \
        --learned warm=runs/neutral-bench/reader-shipped.jsonl grpo=runs/neutral-bench/reader-grpo.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path


def load(path: str) -> dict[str, dict[str, object]]:
    return {d["instance_id"]: d for d in (json.loads(x) for x in Path(path).read_text().splitlines() if x.strip())}


def table(base: dict[str, dict[str, object]], learned: dict[str, dict[str, dict[str, object]]]) -> dict[str, dict[str, dict[str, float]]]:
    """{condition: {instance_id: {"acc", "reward", "family"}}} on the rows every file has."""
    ids = sorted(set(base).intersection(*[set(v) for v in learned.values()]))
    out: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for i in ids:
        b = base[i]
        ev = float(b["lm/evidence/graded"])  # type: ignore[arg-type]
        for cond in base_conditions(base):
            out[cond][i] = {"acc": float(b[f"lm/{cond}/acc"]), "reward": float(b[f"lm/{cond}/graded"]) - ev}  # type: ignore[arg-type]
        for name, rows in learned.items():
            r = rows[i]
            out[name][i] = {"acc": float(r["lm/learned/acc"]), "reward": float(r["lm/learned/graded"]) - ev}  # type: ignore[arg-type]
    return out


def base_conditions(base: dict[str, dict[str, object]]) -> list[str]:
    """Every condition every base row has (none / evidence / rule, and oracle / wrong / learned when present).

    >>> base_conditions({"a": {"lm/none/acc": 1, "lm/oracle/acc": 0}, "b": {"lm/none/acc": 0}})
    ['none']
    """
    cols = [{k.split("/")[1] for k in r if k.startswith("lm/") and k.endswith("/acc")} for r in base.values()]
    common = set.intersection(*cols) if cols else set()
    order = ["none", "evidence", "rule"]
    return [c for c in order if c in common] + sorted(common - set(order))


def boot_ci(diffs: list[float], n: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(mean, 2.5 %, 97.5 %) of the mean of ``diffs`` under a seeded percentile bootstrap.

    >>> boot_ci([1.0, 1.0, 1.0])
    (1.0, 1.0, 1.0)
    """
    rng = random.Random(seed)
    k = len(diffs)
    means = sorted(sum(diffs[rng.randrange(k)] for _ in range(k)) / k for _ in range(n))
    return sum(diffs) / k, means[int(0.025 * n)], means[int(0.975 * n) - 1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="policy_reader output with none/evidence/rule (and any other "
                    "conditions it has: oracle, wrong, learned).")
    ap.add_argument("--learned", nargs="+", default=[], help="NAME=FILE: policy_reader output with learned.")
    ap.add_argument("--pairs", nargs="*", default=None, help="A-B differences to report (default: see doc).")
    ap.add_argument("--boot", type=int, default=2000)
    ns = ap.parse_args(argv)
    learned = {k: load(v) for k, v in (x.split("=", 1) for x in ns.learned)}
    base = load(ns.base)
    t = table(base, learned)
    fam = {i: str(base[i]["family"]) for i in t["none"]}
    res: dict[str, object] = {"n": len(fam)}
    per: dict[str, dict[str, object]] = {}
    for f in sorted(set(fam.values())) + ["all"]:
        ids = [i for i in fam if f in ("all", fam[i])]
        per[f] = {"n": len(ids), **{f"{c}/{m}": round(sum(t[c][i][m] for i in ids) / len(ids), 3)
                                   for c in t for m in ("acc", "reward")}}
    res["families"] = per
    names = list(learned)
    pairs = ns.pairs if ns.pairs is not None else (
        [f"{n}-rule" for n in names] + ["rule-none", "rule-evidence"] + [f"{b}-{a}" for k, a in enumerate(names)
                                                                         for b in names[k + 1:]])
    diffs: dict[str, dict[str, list[float]]] = {}
    for p in pairs:
        a, b = p.split("-", 1)
        ids = sorted(fam)
        diffs[p] = {m: [round(v, 3) for v in boot_ci([t[a][i][m] - t[b][i][m] for i in ids], ns.boot)]
                    for m in ("acc", "reward")}
    res["paired"] = diffs
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
