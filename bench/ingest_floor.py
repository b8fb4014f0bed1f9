"""Offline ingestion against its embedding floor, per LoCoMo session (issue 45, item 5).

The floor of a session is the time to embed that session's facts and turns with the same embedder
(one batched call over the facts the session added and the session's turn texts), measured right after
the session in the same run, so a loaded box slows both alike. Ingestion is the default offline path
(offline extractor, relation model, concepts in the commit path, embedded store, MiniLM), timed per
session as ``Ingestor.ingest``; ``index`` is the route index brought up to date afterwards (what the
first request after the session would pay; retrieval/seeds/index.py), reported beside it.

    python bench/ingest_floor.py                          # conv-26, first 6 sessions
    python bench/ingest_floor.py --conversations 2 --sessions 0   # every session of two conversations

Prints one row per session (ingest, index, floor, ratios) and the medians. The commit path embeds the
facts only (the turns are embedded by the index update), so the bar is judged on ingest + index, the
whole cost before the session is searchable: median <= 1.5x the floor (and the share of sessions under
it). Exit status 1 when that median fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.locomo import locomo_file  # noqa: E402
from evomem.settings import Settings  # noqa: E402
from induction.adapters import load_locomo  # noqa: E402
from induction.config import IngestConfig  # noqa: E402
from induction.pipeline import make_ingestor  # noqa: E402
from memcore.memory import Memory  # noqa: E402
from training_data.paths import data_dir  # noqa: E402

BAR = 1.5


def floor_texts(mem: Memory, user_id: str, fact_ids: list[str], turn_texts: list[str]) -> list[str]:
    """The session's texts a vector is made of: each added fact's statement (the holder's "Name: " prefix
    off, as its identity vector; induction/resolve.py) and each turn."""
    facts = mem.store.fetch(user_id, fact_ids).facts
    out = []
    for fid in fact_ids:
        f = facts.get(fid)
        if f is None:
            continue
        prefix = f"{f.holder}: "
        out.append(f.statement[len(prefix):] if f.holder != "user" and f.statement.startswith(prefix) else f.statement)
    return out + turn_texts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None, help="locomo10.json (default: the dev data)")
    ap.add_argument("--conversations", type=int, default=1)
    ap.add_argument("--sessions", type=int, default=6, help="first n sessions of each conversation (0 = all)")
    ap.add_argument("--floor-repeats", type=int, default=3, help="the floor is the fastest of this many embeds")
    ap.add_argument("--json", default=None, help="also write the rows and summary here")
    a = ap.parse_args()
    convs = load_locomo(locomo_file(a.data or data_dir() / "locomo"), user_prefix="")[: a.conversations]
    s = Settings()
    s.store.path = str(Path(tempfile.mkdtemp(prefix="evomem-ingest-floor-")) / "store")
    mem = Memory.from_settings(s, load_embedder=True)
    mem.embedder.embed(["warm up the embedder"])
    ing = make_ingestor(mem, IngestConfig())
    rows: list[dict[str, float | str | int]] = []
    print(f"{'session':<22}{'turns':>6}{'facts':>6}{'ingest s':>10}{'index s':>9}{'floor s':>9}{'ingest/floor':>14}"
          f"{'(+index)/floor':>16}", flush=True)
    for conv in convs:
        for sess in conv.sessions[: a.sessions or None]:
            t0 = time.perf_counter()
            rep = ing.ingest(sess)
            t_ingest = time.perf_counter() - t0
            t1 = time.perf_counter()
            mem.routes.get(mem.store, conv.user_id)
            t_index = time.perf_counter() - t1
            texts = floor_texts(mem, conv.user_id, rep.fact_ids, [t.text for t in sess.turns])
            floors = []
            for _ in range(a.floor_repeats):
                t2 = time.perf_counter()
                mem.embedder.embed(texts)
                floors.append(time.perf_counter() - t2)
            t_floor = min(floors)
            row = {"session": f"{conv.user_id}/{sess.session_id}", "turns": len(sess.turns), "facts": len(rep.fact_ids),
                   "ingest_s": t_ingest, "index_s": t_index, "floor_s": t_floor, "ratio": t_ingest / t_floor,
                   "ratio_with_index": (t_ingest + t_index) / t_floor, "loadavg_1m": os.getloadavg()[0]}
            rows.append(row)
            print(f"{row['session']:<22}{row['turns']:>6}{row['facts']:>6}{t_ingest:>10.2f}{t_index:>9.2f}"
                  f"{t_floor:>9.3f}{row['ratio']:>13.1f}x{row['ratio_with_index']:>15.1f}x", flush=True)
    mem.close()
    med = statistics.median(float(r["ratio"]) for r in rows)
    med_idx = statistics.median(float(r["ratio_with_index"]) for r in rows)
    under = sum(float(r["ratio_with_index"]) <= BAR for r in rows)
    tot = {k: sum(float(r[k]) for r in rows) for k in ("ingest_s", "index_s", "floor_s")}
    la = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{len(rows)} sessions; load average {la} on {os.cpu_count()} CPUs")
    print(f"totals: ingest {tot['ingest_s']:.1f} s, index {tot['index_s']:.1f} s, floor {tot['floor_s']:.2f} s "
          f"-> {tot['ingest_s'] / tot['floor_s']:.1f}x (ingest), {(tot['ingest_s'] + tot['index_s']) / tot['floor_s']:.1f}x "
          f"(with index)")
    print(f"median ingest/floor {med:.2f}x, (ingest + index)/floor {med_idx:.2f}x; sessions with (ingest + index) "
          f"<= {BAR}x: {under}/{len(rows)}; bar (ingest + index) median <= {BAR}x: {'PASS' if med_idx <= BAR else 'FAIL'}")
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows, "median_ratio": med, "median_ratio_with_index": med_idx,
                                            "totals": tot, "loadavg": os.getloadavg(), "cpus": os.cpu_count()},
                                           indent=1))
    return 0 if med_idx <= BAR else 1


if __name__ == "__main__":
    sys.exit(main())
