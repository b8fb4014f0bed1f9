"""The phrasing set through ingestion with relation-model overrides (what ``evomem eval phrasing --half H`` runs,
plus ``induction.config.RelationModelConfig`` settings, e.g. another kind or artefact):

    python bench/relations_phrasing.py test 'kind="cross"' 'artefact_dir="runs/h1/cross-b"' cue_gates=false
    python bench/relations_phrasing.py tune 'kind="cross"' ... 'cross_thresholds=[0.4,0.4,0.5]'   # pick on tune only
    python bench/relations_phrasing.py tune --dump=runs/h2/tune.json   # per-case results as JSON
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.phrasing import CASES_FILE, load_cases  # noqa: E402
from evaluation.phrasing_eval import run_phrasing, table  # noqa: E402
from evomem.settings import Settings  # noqa: E402
from induction.config import IngestConfig  # noqa: E402
from induction.pipeline import make_ingestor  # noqa: E402
from memcore.memory import Memory  # noqa: E402


def main() -> None:
    half = sys.argv[1]
    dump = next((a.split("=", 1)[1] for a in sys.argv[2:] if a.startswith("--dump=")), None)
    over = {k: json.loads(v) for k, v in (x.split("=", 1) for x in sys.argv[2:] if not x.startswith("--dump="))}
    s = Settings()
    s.store.path = str(Path(tempfile.mkdtemp(prefix="evomem-phr-")) / "store")
    mem = Memory.from_settings(s)
    cfg = IngestConfig()
    cfg.relations = cfg.relations.model_validate(cfg.relations.model_dump() | over)
    ing = make_ingestor(mem, cfg)
    t = time.time()
    summ, results = run_phrasing(load_cases(CASES_FILE, half), ing, "phrasing-")  # type: ignore[arg-type]
    print(half, over)
    print(table(summ))
    print("wall", round(time.time() - t, 1))
    if dump:  # per-case results (tuning half only for diagnosis; never read the test half's cases to write rules)
        Path(dump).write_text(json.dumps([r.model_dump() for r in results], indent=1))
    mem.close()


if __name__ == "__main__":
    main()
