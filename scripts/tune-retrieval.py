"""Sweep retrieval settings over a store that scripts/eval-cached.py already filled (no ingestion).

Questions are embedded once; each setting then costs one ``Memory.retrieve`` + render + score per
question (seconds for LoCoMo), so fusion weights, K and depth can be compared side by side. Scores
are the harness's (hit / coverage / complete over the gold turns of the rendered context). Every
question is asked of the final store, which is what the harness does for LoCoMo and BEAM (their
questions come after all sessions). Compare settings here, then confirm with `evomem eval`.

    python scripts/tune-retrieval.py locomo '[{}, {"route_weights": {"concept": 0.5}}]'
    python scripts/tune-retrieval.py beam '[{}]' --budget 600
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.metrics import score_evidence, turns_of_facts  # noqa: E402
from evomem.commands.eval_cmds import open_cached  # noqa: E402
from retrieval.render import render_context  # noqa: E402
from retrieval.retrieve import RetrievalConfig  # noqa: E402
from scoring.answers import answer_recall  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("benchmark", choices=["locomo", "beam"])
    ap.add_argument("settings", help="JSON list of RetrievalConfig overrides, one per row")
    ap.add_argument("--data")
    ap.add_argument("--store")
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--budget", type=int, default=600)
    ap.add_argument("--categories", action="store_true", help="also print complete per category")
    ap.add_argument("--users", nargs="*", help="only these users' questions (e.g. the conversations a partly filled store holds whole)")
    ap.add_argument("--category-metrics", action="store_true",
                    help="with --categories: hit / coverage / complete per category instead of complete alone")
    ap.add_argument("--records", help="append one JSON line per question and setting (its row number, the question's "
                    "hit / coverage / complete / tokens / answer-token recall) here, for per-question comparisons")
    a = ap.parse_args()
    mem, _, eps = open_cached(a.benchmark, a.data, a.store, a.k, a.budget)
    users = set(mem.store.users()) & set(a.users or mem.store.users())
    gold: dict[str, list[str]] = {}
    qs = []
    for ep in eps:
        turns = {s.turn_id(i) for s in ep.sessions for i in range(len(s.turns))}
        for q in ep.questions:
            g = [e for e in dict.fromkeys(q.evidence_ids) if e in turns]  # the harness's resolvable gold
            if ep.user_id in users and q.scored and g:
                gold[q.qid] = g
                qs.append((ep.user_id, q))
    vecs = mem.embedder.embed([q.question for _, q in qs])
    primed = {q.question: v for (_, q), v in zip(qs, vecs)}
    inner = mem.embedder

    class Primed:
        dim = inner.dim

        def embed(self, texts: list[str]):  # type: ignore[no-untyped-def]
            return vecs[:0] if not texts else (__import__("numpy").stack([primed[t] for t in texts])
                                                if all(t in primed for t in texts) else inner.embed(texts))

    mem.embedder = Primed()  # type: ignore[assignment]
    base = mem.retrieval.model_dump() | {"k": a.k}
    print(f"{len(qs)} questions; {'setting':60s} hit    cov    compl  tokens  s    answer-token recall")
    rec = open(a.records, "a") if a.records else None
    try:
        for row_no, over in enumerate(json.loads(a.settings)):
            mem.retrieval = RetrievalConfig.model_validate(base | over)
            t0 = time.time()
            agg: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
            toks = []
            atr: list[float] = []
            for u, q in qs:
                b = mem.retrieve(u, q.question)
                ctx = render_context(b, a.budget)
                by_id = b.by_id()
                s = score_evidence(gold[q.qid], turns_of_facts(by_id[i].fact for i in ctx.included))
                row = (float(s.hit), s.coverage, float(s.complete))
                agg["all"].append(row)
                agg[q.category].append(row)
                toks.append(ctx.tokens)
                r = answer_recall(ctx.text, q.answer) if q.answer else None
                if r is not None:
                    atr.append(r)
                if rec is not None:
                    rec.write(json.dumps({"row": row_no, "user": u, "qid": q.qid, "category": q.category, "question": q.question,
                                          "hit": row[0], "coverage": row[1], "complete": row[2], "tokens": ctx.tokens,
                                          "answer_recall": r}) + "\n")
            m = [sum(r[i] for r in agg["all"]) / len(agg["all"]) for i in range(3)]
            print(f"{json.dumps(over)[:60]:60s} {m[0]:.3f}  {m[1]:.3f}  {m[2]:.3f}  {sum(toks) / len(toks):6.1f} "
                  f"{time.time() - t0:4.0f}  {sum(atr) / len(atr) if atr else float('nan'):.3f}")
            if a.categories and a.category_metrics:
                print("   ", {c: [round(sum(r[i] for r in v) / len(v), 3) for i in range(3)] + [len(v)]
                              for c, v in sorted(agg.items()) if c != "all"})
            elif a.categories:
                print("   ", {c: round(sum(r[2] for r in v) / len(v), 3) for c, v in sorted(agg.items()) if c != "all"})
    finally:
        mem.close()
        if rec is not None:
            rec.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
