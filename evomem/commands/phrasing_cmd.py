"""``evomem eval phrasing --half test|tune|all``: the hand-written phrasing set through the default ingestion.

Every case is its own fresh user in one temporary embedded store (unless ``--store-path`` is given);
the ingestor is the one ``evomem ingest`` builds from the same options (offline extractor, trained
relation model). Scoring: evaluation/phrasing_eval.py.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def run_phrasing_eval(opts: Any) -> int:
    """Run for ``evomem eval phrasing``; ``opts`` is its ``EvalOptions`` (not imported: eval_cmds imports this
    module, and module import cycles are refused by tests/test_architecture.py)."""
    from tqdm import tqdm

    from evaluation.phrasing import CASES_FILE, load_cases
    from evaluation.phrasing_eval import run_phrasing, table
    from induction.pipeline import make_ingestor
    from memcore.memory import Memory

    cases = load_cases(opts.data or CASES_FILE, opts.half)
    if opts.limit_questions:
        cases = cases[: opts.limit_questions]
    settings = opts.settings()
    tmp = None
    if settings.store.backend == "embedded" and opts.store_path is None:
        tmp = tempfile.mkdtemp(prefix="evomem-phrasing-")
        settings.store.path = str(Path(tmp) / "store")
    prefix = "phrasing-" if tmp is not None else f"phrasing{time.strftime('%Y%m%d%H%M%S')}-"
    t0 = time.perf_counter()
    mem = Memory.from_settings(settings)
    try:
        ing = make_ingestor(mem, opts.ingest_config(), opts.chat_model())
        load_s = time.perf_counter() - t0
        bar = tqdm(total=len(cases), desc="phrasing", unit="case", disable=not opts.progress, file=sys.stderr)

        def progress(i: int, n: int) -> None:
            bar.update(1)

        try:
            summary, results = run_phrasing(cases, ing, prefix, progress)
        finally:
            bar.close()
        if tmp is None and not opts.keep_store:
            for c in cases:
                mem.store.purge_user(f"{prefix}{c.id}")
    finally:
        mem.close()
        if tmp is not None and not opts.keep_store:
            shutil.rmtree(tmp, ignore_errors=True)
    summary["meta"] = {"half": opts.half, "cases_file": str(opts.data or CASES_FILE), "extractor": ing.extractor.name,
                       "adjudicator": ing.adjudicator.name, "embedder": settings.embedder.kind,
                       "adjudicator_fallback": getattr(ing.adjudicator, "fallback_reason", None),
                       "model_load_s": round(load_s, 2), "wall_s": round(time.perf_counter() - t0, 2)}
    if opts.out:
        out = Path(opts.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.json").write_text(json.dumps(summary, indent=2))
        (out / "cases.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in results))
    if opts.as_json:
        print(json.dumps(summary))
    else:
        m = summary["meta"]
        print(f"half {m['half']}; extractor {m['extractor']}, adjudicator {m['adjudicator']}, embedder {m['embedder']}; "
              f"model load {m['model_load_s']}s, wall {m['wall_s']}s")
        if m["adjudicator_fallback"]:
            print(f"NOTE {m['adjudicator_fallback']}")
        print(table(summary))
    return 0
