"""Retrieval-only benchmark loop for tuning: ingest once into a persistent store, then rerun.

    python scripts/eval-cached.py locomo [RETRIEVAL_JSON] [HARNESS_JSON]
    python scripts/eval-cached.py beam '{"holder_weights": {"assistant": 1.0}}'

Same harness as ``evomem eval`` (K 50, 600-token budget, every ablation and every route left out in
turn), without the turn baselines and bootstrap intervals; sessions already in the store
(``--store``, default /tmp/evomem-eval-cached-<benchmark>) are skipped as unchanged, so a second run
only pays for retrieval. Prints the summary rows; the full report goes to ``--out`` if given.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.harness import Harness, HarnessConfig  # noqa: E402
from evaluation.report import build_report  # noqa: E402
from evomem.commands.eval_cmds import open_cached  # noqa: E402
from retrieval.retrieve import RetrievalConfig  # noqa: E402
from induction.pipeline import make_ingestor  # noqa: E402

M = ("hit_rate", "coverage", "complete_retrieval_rate", "answer_token_recall", "context_tokens_mean", "items_mean",
     "tokens_per_item")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("benchmark", choices=["locomo", "beam"])
    ap.add_argument("retrieval", nargs="?", default="{}", help="RetrievalConfig overrides (JSON)")
    ap.add_argument("harness", nargs="?", default="{}", help="HarnessConfig overrides (JSON)")
    ap.add_argument("--data", help="default ../shared/data/<benchmark>")
    ap.add_argument("--store")
    ap.add_argument("--out", help="write report.json here")
    ap.add_argument("--records", help="write one JSON line per question (its outcomes per system) here")
    a = ap.parse_args()
    mem, opts, eps = open_cached(a.benchmark, a.data, a.store)
    try:
        ing = make_ingestor(mem, opts.ingest_config(), opts.chat_model())
        rcfg = RetrievalConfig.model_validate(mem.retrieval.model_dump() | {"k": 50} | json.loads(a.retrieval))
        cfg = HarnessConfig(k=50, budget=600, baseline_k=10, baselines=(), retrieval=rcfg, **json.loads(a.harness))
        t0 = time.time()
        run = Harness(ing, cfg).run(eps)
        rep = build_report(run, a.benchmark, {}, n_boot=0)
        if a.records:
            Path(a.records).write_text("".join(q.model_dump_json() + "\n" for q in run.questions))
    finally:
        mem.close()
    print("wall_s", round(time.time() - t0), "retrieval p50/p95 ms", rep.get("retrieval_p50_ms"), rep.get("retrieval_p95_ms"),
          "tokens p10/p50/p90", rep.get("context_tokens_p10_p50_p90"))
    print(f"{'system':28s}", " ".join(f"{m[:10]:>10s}" for m in M))
    for n, v in {"evomem": rep, **rep["ablations"]}.items():
        print(f"{n:28s}", " ".join(f"{v.get(m)!s:>10s}" for m in M))
    for c, v in rep["by_category"].items():
        print("category", c, [v["evomem"].get(m) for m in M[:3]])
    if a.out:
        Path(a.out).write_text(json.dumps(rep, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
