"""MemSyco-Bench with the concept routes in and out, in one run: every row is ingested once, then asked
under each route setting (a second ingestion of a row is 'unchanged', so only retrieval differs).

    python scripts/concept-route-memsyco.py --skip-rows 40 --limit 25
    python scripts/concept-route-memsyco.py --settings '{"in": [], "out": ["concept", "gist"]}'

Prints, per setting, valid-selection current-hit / outdated-leak / order and each other task's
gold-retrieved and marked shares (evaluation/memsyco.py, K 10 as ``evomem eval memsyco``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.memsyco import memsyco_report  # noqa: E402
from evomem.commands.eval_cmds import EvalOptions  # noqa: E402
from induction.pipeline import make_ingestor  # noqa: E402
from memcore.memory import Memory  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data/memsyco-bench")
    ap.add_argument("--skip-rows", type=int, default=40)
    ap.add_argument("--limit", type=int, default=25)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--settings", default='{"in": [], "out": ["concept", "gist"], "no_gist": ["gist"], '
                    '"no_concept": ["concept"]}', help="name -> routes left out (JSON)")
    ap.add_argument("--out", help="write the reports here (JSON)")
    a = ap.parse_args()
    store = tempfile.mkdtemp(prefix="evomem-concept-memsyco-")
    opts = EvalOptions(benchmark="memsyco", data=a.data, k=a.k, store_path=store)
    settings = opts.settings()
    settings.store.path = str(Path(store) / "store")
    mem = Memory.from_settings(settings)
    reports: dict[str, object] = {}
    try:
        ing = make_ingestor(mem, opts.ingest_config(), opts.chat_model())
        full = mem.retrieval
        for name, out in json.loads(a.settings).items():
            mem.retrieval = full.model_copy(update={"routes": tuple(r for r in full.routes if r not in out)})
            t0 = time.time()
            rep = memsyco_report(a.data, ing, k=a.k, limit=a.limit, skip=a.skip_rows)
            reports[name] = rep
            tasks = {t: (v["gold_retrieved"], v["marked"]) for t, v in rep["tasks"].items()}
            print(f"{name:12s} vms hit/leak/order {rep.get('current_hit')} {rep.get('outdated_leak')} {rep.get('order')}"
                  f"  tasks retrieved/marked {tasks}  {time.time() - t0:.0f} s", flush=True)
    finally:
        mem.close()
    if a.out:
        Path(a.out).write_text(json.dumps(reports, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
