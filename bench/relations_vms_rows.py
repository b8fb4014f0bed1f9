"""MemSyco valid_memory_selection row by row: which outdated fact leaks, which edges exist, which fact the
current item's matching fact was superseded by (the diagnosis behind docs/results/relations.md).

Scores with the eval's own ``score_row`` (same matching, same numbers as ``evomem eval memsyco``;
``--matching nearest_item`` gives the figures of revisions 9-13, ``greedy`` those of revisions 1-8). The
totals are printed for every matching of the same run, and with each item read through its annotated
gold turn (``evaluation/annotations/``), with the share of matched items said in an annotated turn.

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
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.memsyco_annotations import check_against, load_turn_annotations  # noqa: E402
from evaluation.memsyco_selection import score_row, turn_positions  # noqa: E402
from evomem.settings import Settings  # noqa: E402
from retrieval.retrieve import RetrievalConfig, retrieve  # noqa: E402
from induction.adapters import load_memsyco  # noqa: E402
from induction.branch import validity_map  # noqa: E402
from induction.config import IngestConfig  # noqa: E402
from induction.pipeline import make_ingestor  # noqa: E402
from memcore.memory import Memory  # noqa: E402


def _turn(f: object) -> int:
    t = str(getattr(f, "source_turn_ids", ("x:0",))[0]).rsplit(":", 1)[-1]
    return int(t) if t.isdigit() else 0


METHODS = ("ordered", "nearest_item", "greedy")


def score_one(mem: Memory, ing: Any, row: Any, rcfg: RetrievalConfig, labels: dict[str, Any],
              methods: tuple[str, ...] = METHODS) -> tuple[dict[str, Any], Any, Any, dict[str, str], dict[str, int]]:
    """Ingest one row, retrieve for its question and score it with every matching (the eval's ``score_row``):
    (results by matching, bundle, snapshot, validity, turn positions). Shared with bench/relations_loso.py."""
    ing.ingest(row.session)
    user = row.session.user_id
    q = np.asarray(mem.embedder.embed([row.question]))[0]
    b = retrieve(mem.store, user, row.question, q.tolist(), rcfg)
    snap = mem.store.load_snapshot(user)
    val = validity_map(snap, list(snap.facts))
    st, hold = {f: x.statement for f, x in snap.facts.items()}, {f: x.holder for f, x in snap.facts.items()}
    pos = turn_positions(row, snap)

    def emb(t: list[str]) -> np.ndarray:
        return np.asarray(mem.embedder.embed(t))

    res = {m: score_row(row, b, st, emb, 0.45, val, pos, m, hold, labels.get(row.id))  # type: ignore[arg-type]
           for m in methods}
    return res, b, snap, val, pos


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "memsyco-bench"))
    ap.add_argument("--skip-rows", type=int, default=40)
    ap.add_argument("--rows", type=int, default=50)
    ap.add_argument("--adjudicator", default="model")
    ap.add_argument("--only", nargs="*", default=None, help="Row ids to run (default: all in the range).")
    ap.add_argument("--quiet", action="store_true", help="Only the per-row line and the totals.")
    ap.add_argument("--matching", default="ordered", choices=["ordered", "nearest_item", "greedy"],
                    help="How a gold item finds its stored fact (evaluation/memsyco_selection.py).")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=JSON",
                    help="Relation-model settings (induction.config.RelationModelConfig), e.g. change_needs_reversal=true.")
    ap.add_argument("--retrieval", nargs="*", default=[], metavar="KEY=JSON",
                    help="Retrieval settings (retrieval.retrieve.RetrievalConfig), e.g. update_turns=false.")
    ap.add_argument("--dump", default=None, metavar="JSONL",
                    help="Also write each row's stored facts (turn, statement, validity, retrieval rank) as JSON Lines, "
                         "to score another matching without ingesting again.")
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
    keys = ("current_hit", "outdated_leak", "outdated_leak_any", "current_valid", "wrong_way", "outdated_marked",
            "out_of_order")
    gold_keys = ("current_hit", "outdated_leak", "current_valid", "wrong_way")
    labels = load_turn_annotations()
    check_against(rows, labels)
    methods = METHODS
    tot = {m: dict.fromkeys(keys, 0.0) for m in methods}
    agree = {m: [0, 0] for m in methods}  # items matched in an annotated turn, annotated items
    gold_tot, n_gold = dict.fromkeys(gold_keys, 0.0), 0
    turn_leak = {m: [0, 0] for m in methods}  # partial-turn leaks, rows with an outdated item's gold turn

    dump = open(a.dump, "w") if a.dump else None  # noqa: SIM115 - closed after the loop
    for row in rows:
        res, b, snap, val, pos = score_one(mem, ing, row, rcfg, labels)
        r = res[a.matching]
        user_facts = sorted((f for f in snap.facts.values() if f.holder == "user"), key=lambda f: (_turn(f), f.fact_id))
        for m, x in res.items():
            for k in keys:
                tot[m][k] += float(getattr(x, k))
            agree[m][0] += x.matched_in_gold_turn or 0
            if x.partial_turn_leak is not None:
                turn_leak[m][0] += int(x.partial_turn_leak)
                turn_leak[m][1] += 1
            agree[m][1] += x.annotated_items
        if r.gold_turns is not None:
            n_gold += 1
            for k in gold_keys:
                gold_tot[k] += float(getattr(r.gold_turns, k))
        if dump:
            seed = {x.fact_id: i for i, x in enumerate(b.explain.seeds)}
            got = {x.fact.fact_id for x in b.items}
            facts = [{"id": f, "turn": pos.get(f), "statement": x.statement, "holder": x.holder, "kind": x.kind,
                      "validity": val.get(f, "current"), "retrieved": f in got, "seed_rank": seed.get(f)}
                     for f, x in snap.facts.items()]
            dump.write(json.dumps({"id": row.id, "scores": {k: int(getattr(r, k)) for k in keys}, "facts": facts}) + "\n")
        print("=" * 100)
        print(f"ROW {row.id} " + " ".join(f"{k}={int(getattr(r, k))}" for k in keys)
              + (f" partial_turn_leak={int(r.partial_turn_leak)}" if r.partial_turn_leak is not None else "")
              + (" gold:" + " ".join(f"{k}={int(getattr(r.gold_turns, k))}" for k in gold_keys) if r.gold_turns else ""))
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
    for m in methods:
        share = round(agree[m][0] / agree[m][1], 3) if agree[m][1] else None
        ptl = round(turn_leak[m][0] / turn_leak[m][1], 3) if turn_leak[m][1] else None
        print("TOTAL" if m == a.matching else f"TOTAL[{m}]", {k: round(v / n, 3) for k, v in tot[m].items()},
              f"rows={len(rows)} matched_in_gold_turn={share} partial_turn_leak={ptl} (rows={turn_leak[m][1]})")
    print("TOTAL[gold turns]", {k: round(v / max(1, n_gold), 3) for k, v in gold_tot.items()}, f"rows={n_gold}")
    if dump:
        dump.close()
    mem.close()


if __name__ == "__main__":
    main()
