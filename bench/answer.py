"""Answer-pipeline benchmark: per-stage timings (retrieve, traverse, policy, answer) as reported by
``explain``, over the shipped example history's requests.

In-process by default (embedded store in a temp dir, the shipped example history, rule policy,
SmolLM2 in-process); or against a running ``evomem serve`` (``--api``), reading the same numbers from
``POST /v1/users/{u}/explain``.

    python bench/answer.py                              # MiniLM + SmolLM2, 3 rounds
    python bench/answer.py --embedder hash --no-answer  # retrieval + policy only (milliseconds)
    python bench/answer.py --answer-url http://127.0.0.1:8000/v1 --answer-model qwen3-8b   # vLLM
    python bench/answer.py --api http://127.0.0.1:8080 --api-key KEY
    python bench/answer.py --save out.json ; python bench/answer.py --baseline out.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STAGES = ("embed", "retrieve", "traverse", "policy", "answer", "total")


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p)) if xs else float("nan")


def summarize(samples: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    return {s: {"mean": float(np.mean([x[s] for x in samples])), "p50": pct([x[s] for x in samples], 50),
                "p95": pct([x[s] for x in samples], 95), "max": max(x[s] for x in samples)}
            for s in STAGES if samples and s in samples[0]}


def run_in_process(args: argparse.Namespace) -> tuple[list[dict[str, float]], list[dict[str, int]], dict[str, Any]]:
    from evomem.examples import load_fixture, load_history
    from memcore.memory import Memory
    from evomem.settings import Settings
    from llmclients.config import ModelsConfig
    from serving.pipeline import AnswerPipeline, PipelineConfig, build_models, make_policy

    settings = Settings.from_env(os.environ, store={"backend": "embedded",
                                                    "path": str(Path(tempfile.mkdtemp(prefix="bench-answer-")) / "s")},
                                 embedder={"kind": args.embedder})
    t0 = time.perf_counter()
    mem = Memory.from_settings(settings)
    history = load_history()
    load_fixture(mem, history)
    load_s = time.perf_counter() - t0
    models = ModelsConfig.from_env(os.environ, answer={"base_url": args.answer_url, "model": args.answer_model})
    t1 = time.perf_counter()
    if args.no_answer:  # no answer model is loaded at all: the numbers are retrieval + policy only
        policy, answer_model = make_policy(models.policy), None
    else:
        policy, answer_model = build_models(models)
    model_s = time.perf_counter() - t1
    pipe = AnswerPipeline(mem, policy, answer_model,  # type: ignore[arg-type]
                          PipelineConfig(k=args.k, max_answer_tokens=args.max_tokens, prompt=args.prompt))
    samples, tokens = [], []
    for r in range(args.rounds):
        for req in history["requests"]:
            res = pipe.answer(req["user_id"], req["request"], generate=not args.no_answer)
            if r or args.rounds == 1:  # the first round warms caches (tokenizer, matrices)
                samples.append(res.timings_ms)
                tokens.append(res.tokens)
    mem.close()
    return samples, tokens, {"mode": "in-process", "store_and_history_load_s": load_s, "model_load_s": model_s,
                             "answer_model": getattr(answer_model, "name", "none"), "policy": policy.name,
                             "embedder": args.embedder}


def run_over_http(args: argparse.Namespace) -> tuple[list[dict[str, float]], list[dict[str, int]], dict[str, Any]]:
    import httpx

    from evomem.examples import load_history

    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    samples, tokens = [], []
    with httpx.Client(base_url=args.api, headers=headers, timeout=600, trust_env=False) as c:
        for r in range(args.rounds):
            for req in load_history()["requests"]:
                resp = c.post(f"/v1/users/{req['user_id']}/explain",
                              json={"query": req["request"], "k": args.k, "answer": not args.no_answer,
                                    "max_tokens": args.max_tokens})
                resp.raise_for_status()
                if r or args.rounds == 1:
                    samples.append(resp.json()["timings_ms"])
                    tokens.append(resp.json()["tokens"])
    return samples, tokens, {"mode": f"http {args.api}"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="Passes over the example requests (the first warms up).")
    ap.add_argument("--k", type=int, default=4, help="Seed facts.")
    ap.add_argument("--embedder", default="minilm", choices=["minilm", "hash"], help="In-process embedder.")
    ap.add_argument("--no-answer", action="store_true", help="Stop before the answer model (explain only).")
    ap.add_argument("--max-tokens", type=int, default=64, help="Answer length cap.")
    ap.add_argument("--prompt", default="default", help="Answer prompt.")
    ap.add_argument("--answer-url", default=None, help="OpenAI-compatible answer server (default: SmolLM2 in-process).")
    ap.add_argument("--answer-model", default=None, help="Served answer model name.")
    ap.add_argument("--api", default=None, help="Benchmark a running evomem serve instead (its /explain).")
    ap.add_argument("--api-key", default=os.environ.get("EVOMEM_API_KEY"), help="Key for --api.")
    ap.add_argument("--save", default=None, help="Write the summary as JSON.")
    ap.add_argument("--baseline", default=None, help="Compare with a summary saved earlier.")
    ap.add_argument("--json", action="store_true", help="Print JSON only.")
    args = ap.parse_args(argv)
    samples, tokens, meta = run_over_http(args) if args.api else run_in_process(args)
    summary = {"meta": meta | {"requests": len(samples), "rounds": args.rounds, "k": args.k},
               "stages_ms": summarize(samples),
               "tokens_mean": {k: float(np.mean([t[k] for t in tokens])) for k in tokens[0]} if tokens else {}}
    if args.save:
        Path(args.save).write_text(json.dumps(summary, indent=2))
    base = json.loads(Path(args.baseline).read_text()) if args.baseline else None
    if args.json:
        print(json.dumps(summary | ({"baseline": base} if base else {}), indent=2))
        return 0
    print(f"answer pipeline — {meta.get('mode')}, {len(samples)} timed requests, k={args.k}")
    for k, v in meta.items():
        if k != "mode":
            print(f"  {k}: {v:.2f}" if isinstance(v, float) else f"  {k}: {v}")
    print(f"  {'stage':<10}{'mean ms':>11}{'p50 ms':>11}{'p95 ms':>11}{'max ms':>11}" + ("   Δp50 vs baseline" if base else ""))
    for stage, s in summary["stages_ms"].items():
        delta = ""
        if base and stage in base.get("stages_ms", {}):
            b = base["stages_ms"][stage]["p50"]
            delta = f"   {s['p50'] - b:+.2f} ms" + (f" ({(s['p50'] / b - 1) * 100:+.0f}%)" if b else "")
        print(f"  {stage:<10}{s['mean']:>11.2f}{s['p50']:>11.2f}{s['p95']:>11.2f}{s['max']:>11.2f}{delta}")
    print("  tokens (mean): " + ", ".join(f"{k} {v:.0f}" for k, v in summary["tokens_mean"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
