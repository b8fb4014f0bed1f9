"""MemSyco valid_memory_selection row by row: which outdated fact leaks, which edges exist, which fact the
current item's matching fact was superseded by (the diagnosis behind docs/results/relations.md).

Scores with the eval's own ``score_row`` (same matching, same numbers as ``evomem eval memsyco``;
``--matching greedy`` gives the figures of revisions 1-8).

    python bench/relations_vms_rows.py --skip-rows 40 --rows 50 [--adjudicator rules] [--only v11_000507 ...] > rows.txt

End-to-end cross-validation (docs/results/relations.md, revision 8): train without a block of rows, score it:

    evomem train-relations --config relations-default --set output_dir=runs/cv-0 "memsyco_heldout=[0,48]" "compare=[]"
    python bench/relations_vms_rows.py --skip-rows 0 --rows 48 --quiet --set 'artefact_dir="runs/cv-0"'
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.memsyco_selection import score_row, turn_positions  # noqa: E402
from evomem.settings import Settings  # noqa: E402
from graph.retrieval import RetrievalConfig, retrieve  # noqa: E402
from induction.adapters import load_memsyco  # noqa: E402
from induction.branch import validity_map  # noqa: E402
from induction.config import IngestConfig  # noqa: E402
from induction.pipeline import make_ingestor  # noqa: E402
from memcore.memory import Memory  # noqa: E402


def _turn(f: object) -> int:
    t = str(getattr(f, "source_turn_ids", ("x:0",))[0]).rsplit(":", 1)[-1]
    return int(t) if t.isdigit() else 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "memsyco-bench"))
    ap.add_argument("--skip-rows", type=int, default=40)
    ap.add_argument("--rows", type=int, default=50)
    ap.add_argument("--adjudicator", default="model")
    ap.add_argument("--only", nargs="*", default=None, help="Row ids to run (default: all in the range).")
    ap.add_argument("--quiet", action="store_true", help="Only the per-row line and the totals.")
    ap.add_argument("--matching", default="nearest_item", choices=["nearest_item", "greedy"],
                    help="How a gold item finds its stored fact (evaluation/memsyco_selection.py).")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=JSON",
                    help="Relation-model settings (induction.config.RelationModelConfig), e.g. change_needs_reversal=true.")
    ap.add_argument("--retrieval", nargs="*", default=[], metavar="KEY=JSON",
                    help="Retrieval settings (graph.retrieval.RetrievalConfig), e.g. update_turns=false.")
    a = ap.parse_args()
    rcfg = RetrievalConfig.model_validate({"k": 10} | {k: json.loads(v) for k, v in (x.split("=", 1) for x in a.retrieval)})
    s = Settings()
    s.store.path = str(Path(tempfile.mkdtemp(prefix="evomem-vmsrows-")) / "store")
    mem = Memory.from_settings(s)
    cfg = IngestConfig(adjudicator=a.adjudicator)  # type: ignore[arg-type]
    over = {k: json.loads(v) for k, v in (x.split("=", 1) for x in a.set)}
    cfg.relations = cfg.relations.model_validate(cfg.relations.model_dump() | over)
    ing = make_ingestor(mem, cfg)
    rows = load_memsyco(Path(a.data) / "valid_memory_selection.jsonl")
    rows = [r for r in rows if r.policy == "update" or any(i.status == "current" for i in r.items)]
    rows = rows[a.skip_rows: a.skip_rows + a.rows]
    rows = [r for r in rows if not a.only or r.id in a.only]
    keys = ("current_hit", "outdated_leak", "current_valid", "wrong_way", "outdated_marked", "out_of_order")
    tot = dict.fromkeys(keys, 0.0)

    def emb(t: list[str]) -> np.ndarray:
        return np.asarray(mem.embedder.embed(t))

    for row in rows:
        ing.ingest(row.session)
        user = row.session.user_id
        b = retrieve(mem.store, user, row.question, emb([row.question])[0].tolist(), rcfg)
        snap = mem.store.load_snapshot(user)
        val = validity_map(snap, list(snap.facts))
        r = score_row(row, b, {f: x.statement for f, x in snap.facts.items()}, emb, 0.45, val, turn_positions(row, snap),
                      a.matching)
        user_facts = sorted((f for f in snap.facts.values() if f.holder == "user"), key=lambda f: (_turn(f), f.fact_id))
        for k in keys:
            tot[k] += float(getattr(r, k))
        print("=" * 100)
        print(f"ROW {row.id} " + " ".join(f"{k}={int(getattr(r, k))}" for k in keys))
        if a.quiet:
            continue
        print("Q:", row.question)
        for it in row.items:
            print(f"  ITEM[{it.status}]: {it.content[:200]}")
        ret = {it.fact.fact_id for it in b.items}
        for f in user_facts:
            tag = ("R" if f.fact_id in ret else " ") + {"current": " ", "superseded": "S", "disputed": "D"}.get(val.get(f.fact_id, ""), "?")
            print(f"   {tag} [{f.kind[:5]}] {_turn(f):>3} {f.fact_id[-6:]} {f.statement[:150]}")
        if r.leaked_fact:
            print(f"   LEAKED [{r.leaked_kind}]: {r.leaked_fact[:140]}")
        if r.current_fact:
            print(f"   CURRENT-FACT (retrieved): {r.current_fact[:120]}")
        for rel in snap.relations.values():
            src, dst = snap.facts[rel.src], snap.facts[rel.dst]
            print(f"   EDGE {rel.type} t{_turn(src)}->t{_turn(dst)} {rel.src[-6:]} -> {rel.dst[-6:]}  {rel.reason}")
        sys.stdout.flush()
    n = max(1, len(rows))
    print("TOTAL", {k: round(v / n, 3) for k, v in tot.items()}, f"rows={len(rows)}")
    mem.close()


if __name__ == "__main__":
    main()
