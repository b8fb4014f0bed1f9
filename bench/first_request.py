"""The first request after ingestion: with and without the background warm-up of ``evomem serve``.

Retrieval reads a per-user route index (retrieval/seeds/index.py) that is rebuilt when the user's
version moves: the first request after a commit embeds the new facts' retrieval texts and turns and
re-clusters every fact. ``evomem serve`` starts that rebuild in the background when a session commits
(``ApiSettings.warm_after_ingest``, ``RouteIndexCache.warm``). This script replays one conversation
session by session into two users of one store (default embedder, the offline extractor and the
trained relation model: what ``evomem serve`` runs):

- ``cold``: ingest, then the first request (the baseline: the request pays for the rebuild);
- ``warmed``: ingest, warm-up (timed on its own, off the request path), then the first request;
- ``steady``: a second request at the same version (nothing to rebuild).

    python bench/first_request.py                                   # LoCoMo conv-26, all sessions
    python bench/first_request.py --benchmark beam --conversation 0  # a BEAM 100K conversation

Prints p50 / p95 / max (ms) of each, from the same run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.locomo import locomo_file  # noqa: E402
from evomem.settings import Settings  # noqa: E402
from induction.adapters import load_beam, load_locomo  # noqa: E402
from induction.config import IngestConfig  # noqa: E402
from induction.pipeline import make_ingestor  # noqa: E402
from induction.session import Session  # noqa: E402
from memcore.memory import Memory  # noqa: E402


def _ms(t: float) -> float:
    return (time.perf_counter() - t) * 1e3


def _summary(xs: list[float]) -> dict[str, float]:
    a = np.asarray(xs)
    return {"p50": round(float(np.percentile(a, 50)), 1), "p95": round(float(np.percentile(a, 95)), 1),
            "max": round(float(a.max()), 1), "n": len(xs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmark", choices=["locomo", "beam"], default="locomo")
    ap.add_argument("--conversation", type=int, default=0, help="Which conversation of the dev data.")
    ap.add_argument("--data", help="default ../shared/data/<benchmark>")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    data = Path(a.data or ROOT.parent / "shared" / "data" / a.benchmark)

    def sessions(prefix: str) -> tuple[list[Session], list[str]]:
        if a.benchmark == "locomo":
            conv = load_locomo(locomo_file(data), user_prefix=prefix)[a.conversation]
        else:
            conv = load_beam(data / "100K", user_prefix=prefix)[a.conversation]  # type: ignore[assignment]
        return list(conv.sessions), [q.question for q in conv.questions]

    s = Settings()
    s.store.path = str(Path(tempfile.mkdtemp(prefix="evomem-first-")) / "store")
    mem = Memory.from_settings(s)
    ing = make_ingestor(mem, IngestConfig())
    out: dict[str, list[float]] = {"cold": [], "warmed": [], "warm_up": [], "steady": [], "ingest": []}
    (cold_s, qs), (warm_s, _) = sessions("cold-"), sessions("warm-")
    for n, (sc, sw) in enumerate(zip(cold_s, warm_s)):
        q = qs[n % len(qs)]
        t = time.perf_counter()
        ing.ingest(sc)
        out["ingest"].append(_ms(t))
        t = time.perf_counter()
        mem.retrieve(sc.user_id, q)
        out["cold"].append(_ms(t))
        t = time.perf_counter()
        mem.retrieve(sc.user_id, q)
        out["steady"].append(_ms(t))
        ing.ingest(sw)
        t = time.perf_counter()
        mem.routes.warm(mem.store, sw.user_id).result()
        out["warm_up"].append(_ms(t))
        t = time.perf_counter()
        mem.retrieve(sw.user_id, q)
        out["warmed"].append(_ms(t))
    mem.close()
    res = {"benchmark": a.benchmark, "conversation": a.conversation, "sessions": len(cold_s)} | {
        k: _summary(v) for k, v in out.items()}
    if a.json:
        print(json.dumps(res))
        return
    print(f"{a.benchmark} conversation {a.conversation}: {len(cold_s)} sessions")
    for k in ("cold", "warmed", "steady", "warm_up", "ingest"):
        print(f"  {k:8s} p50 {res[k]['p50']:9.1f} ms   p95 {res[k]['p95']:9.1f} ms   max {res[k]['max']:9.1f} ms")


if __name__ == "__main__":
    main()
