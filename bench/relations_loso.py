"""Leave-one-source-out and k-fold cross-validation of the relation model, scored end to end (issue 44 bars).

Every model here is trained by the training entry's own steps (``evomem train-relations``,
training_data/relations_train.py: its pair builders and per-source cache, its fixed validation split of
MemSyco clusters, its ``fit``), on the pairs of the sources it keeps, and then ingests MemSyco
valid-memory-selection rows it never trained on. They are scored with the MemSyco eval's ``score_row``, as
bench/relations_vms_rows.py does: one-fact leak, partial-turn leak, any leak and current still current, under
both the ``ordered`` and the ``nearest_item`` matching.

- ``cv``: k folds of MemSyco rows (a fold = rows [a, b) of every task file, as ``memsyco_heldout``); each
  fold's model trains on all sources without the fold's rows and scores the fold's valid-memory rows.
  Bars: leak <= 0.06 (``ordered``), <= 0.08 (``nearest_item``).
- ``no-memsyco``: trained without any MemSyco pair, scored on every valid-memory row (or ``--rows``).
  Bars: leak <= 0.15 and current still current >= 0.85, both matchings.
- ``loso``: for each other source, trained without it and without the ``--loso-block`` rows (one of the
  folds, so the all-source row is that fold's model), scored on that block; with ``--phrasing-test`` also
  on the phrasing set's test half (measured, never tuned on).

The sources trained on are all five of the issue (MemSyco dev rows, BEAM, LoCoMo negatives, synthetic
families, phrasing tuning half) unless ``--sources`` says otherwise; the preset gives every other
setting. The model kind is a plug-in: ``--kind structural`` (the shipped numpy classifier, the preset's
``model`` section), ``--kind cross`` (the cross-encoder, ``--config relations-cross``) or ``--kind package.module:function``, called as ``function(cfg, pairs, train_mask, out)``
with the merged pair arrays of ``build_pairs`` (``X``, ``y``, ``group``, ``source``, ``text_new``,
``text_old``, ...), the boolean mask of pairs to train on and a fresh folder; it writes an artefact there and
returns the ``IngestConfig.relations`` overrides that load it (e.g. ``{"artefact_dir": str(out)}``).

CPU bounds: pairs are built once, for every row, in ``--out`` (``pairs-<source>.npz``, the training entry's
cache; ``--reuse-pairs`` keeps a cache whose code hash is stale, e.g. after an unrelated edit under
induction/); every variant ingests in one process through one memoised MiniLM, so a sentence is embedded
once for the whole run.

    python bench/relations_loso.py --mode cv no-memsyco loso --phrasing-test --reuse-pairs
    python bench/relations_loso.py --mode no-memsyco --rows 60          # a quicker no-MemSyco figure
    python bench/relations_loso.py --pool a.json b.json c.log           # pool runs split by block / rows (a
                                                                        # stopped run's log: the rows it scored)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from relations_loso_lib import (Fitter, MemoEmbedder, fit_cross, fit_shipped, fit_structural,  # noqa: E402,F401
                                fitter, load_pairs, memsyco_index, train_mask)
from relations_vms_rows import score_one  # noqa: E402

SOURCES = ("memsyco", "beam", "locomo", "synthetic", "phrasing")
DEFAULT_BLOCKS = ((0, 40), (40, 90), (90, 140), (140, 193))  # 40-89: the shipped model's held-out block
KEYS = ("outdated_leak", "partial_turn_leak", "outdated_leak_any", "current_valid", "current_hit")
BARS = {"cv": {"ordered": {"outdated_leak": ("<=", 0.06)}, "nearest_item": {"outdated_leak": ("<=", 0.08)}},
        "no-memsyco": {m: {"outdated_leak": ("<=", 0.15), "current_valid": (">=", 0.85)}
                       for m in ("ordered", "nearest_item")}}


class Scorer:
    """Ingests rows with a variant's model in a fresh store (shared memoised embedder) and sums the figures."""

    def __init__(self, emb: MemoEmbedder, rows: list[Any], phrasing: list[Any]) -> None:
        from evaluation.memsyco_annotations import load_turn_annotations
        from retrieval.retrieve import RetrievalConfig

        self.emb, self.rows, self.phrasing = emb, rows, phrasing
        self.labels = load_turn_annotations()
        self.rcfg = RetrievalConfig.model_validate({"k": 10})  # as bench/relations_vms_rows.py

    def _ingestor(self, overrides: dict[str, Any] | None) -> tuple[Any, Any]:
        from graph.embedded import EmbeddedStore
        from induction.config import IngestConfig
        from induction.pipeline import make_ingestor
        from memcore.memory import Memory

        store = EmbeddedStore(Path(tempfile.mkdtemp(prefix="evomem-loso-")) / "store")
        store.setup()
        mem = Memory(store, self.emb)
        cfg = IngestConfig(adjudicator="model" if overrides is not None else "rules")
        if overrides:
            cfg.relations = cfg.relations.model_validate(cfg.relations.model_dump() | overrides)
        ing = make_ingestor(mem, cfg)
        if overrides is not None and (ing.adjudicator.name != "model" or getattr(ing.adjudicator, "fallback_reason", None)):
            raise SystemExit(f"the variant's model did not load: {getattr(ing.adjudicator, 'fallback_reason', '')}")
        return mem, ing

    def memsyco(self, overrides: dict[str, Any] | None, ids: set[str]) -> dict[str, Any]:
        """Sums per matching over the rows in ``ids`` (partial-turn leak over the rows that have its label)."""
        mem, ing = self._ingestor(overrides)
        tot: dict[str, dict[str, float]] = {m: dict.fromkeys(KEYS, 0.0) for m in ("ordered", "nearest_item")}
        ptl_n, n, errors, leaks = 0, 0, 0, []
        # rows in a fixed hashed order: a run stopped early has scored a random sample, and each row prints a line
        todo = sorted((r for r in self.rows if r.id in ids), key=lambda r: hashlib.sha256(r.id.encode()).hexdigest())
        for row in todo:
            try:
                res = score_one(mem, ing, row, self.rcfg, self.labels, ("ordered", "nearest_item"))[0]
            except Exception as e:  # noqa: BLE001 - a row that fails to ingest is counted, not fatal
                errors += 1
                print(f"  row {row.id}: {type(e).__name__}: {e}", flush=True)
                continue
            n += 1
            ptl_n += res["ordered"].partial_turn_leak is not None
            for m, r in res.items():
                for k in KEYS:
                    tot[m][k] += float(bool(getattr(r, k)))
            if res["ordered"].outdated_leak:
                leaks.append(row.id)
            print(f"  ROW {row.id} " + " ".join(f"{m}:" + ",".join(f"{k}={int(bool(getattr(r, k)))}" for k in KEYS)
                                                 + (f",ptl_row={int(r.partial_turn_leak is not None)}")
                                                 for m, r in res.items()), flush=True)
        mem.close()
        fig = {m: {k: round(v / max(1, ptl_n if k == "partial_turn_leak" else n), 3) for k, v in t.items()}
               for m, t in tot.items()}
        return {"rows": n, "errors": errors, "partial_turn_rows": ptl_n, "leaked_rows_ordered": leaks,
                "sums": tot, **fig}

    def phrasing_test(self, overrides: dict[str, Any] | None) -> dict[str, Any]:
        from evaluation.phrasing_eval import run_phrasing

        mem, ing = self._ingestor(overrides)
        s, _ = run_phrasing(self.phrasing, ing)
        mem.close()
        return {"supersession_f1": s["supersession"]["f1"], "conflict_f1": s["conflict"]["f1"],
                "expiry_accuracy": s["expiry_accuracy"], "scope_accuracy": s["scope_accuracy"],
                "lookalike_false": s["lookalike_false_relation_rate"], "n": s["n"]}


def pooled(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Fold results summed row by row (a fold of 40 rows weighs 40)."""
    n = sum(p["rows"] for p in parts)
    ptl = sum(p["partial_turn_rows"] for p in parts)
    out: dict[str, Any] = {"rows": n, "errors": sum(p["errors"] for p in parts), "partial_turn_rows": ptl,
                           "leaked_rows_ordered": [x for p in parts for x in p["leaked_rows_ordered"]]}
    for m in ("ordered", "nearest_item"):
        out[m] = {k: round(sum(p["sums"][m][k] for p in parts) / max(1, ptl if k == "partial_turn_leak" else n), 3)
                  for k in KEYS}
    return out


def pair_level(cfg: Any, d: dict[str, np.ndarray], index: dict[str, int], block: tuple[int, int], off: set[str],
               sources: Sequence[str]) -> dict[str, Any]:
    """Cheap leave-one-source-out (no ingestion, structural kind): each variant trained without ``block`` and one
    source, scored pair by pair on the block's MemSyco pairs (supersedes / conflicts_with F1); the no-MemSyco
    variant also on every MemSyco pair."""
    from induction.relations.model import fit, scores
    from training_data.relations_train import _cols, _params, row_weights

    src = np.array([str(s).split("/", 1)[0] for s in d["source"]])
    inb = (src == "memsyco") & np.array([block[0] <= index.get(str(g), -1) < block[1] for g in d["group"]])
    sw = row_weights(d["source"], cfg.source_weights)
    out: dict[str, Any] = {"block": list(block), "pairs": int(inb.sum())}
    print(f"\npair level, MemSyco pairs of rows {block[0]}-{block[1] - 1} ({int(inb.sum())} pairs):\n"
          "| trained without | pairs trained | supersedes F1 | conflicts_with F1 | macro F1 |\n|---|---|---|---|---|")
    for name in ["(nothing)", *sorted(set(sources) - {"memsyco"}), "memsyco"]:
        drop = set() if name == "(nothing)" else {name}
        mask = train_mask(cfg, d, off | drop, block, index)
        m = fit(_cols(d["X"][mask], cfg.model), d["y"][mask], _params(cfg.model, cfg.seed, d["X"].shape[1]),
                sample_weight=None if sw is None else sw[mask])
        r = scores(d["y"][inb], m.predict_proba(_cols(d["X"][inb], cfg.model)).argmax(1))
        out[name] = r
        print(f"| {name} | {int(mask.sum())} | {r['supersedes/f1']} | {r['conflicts_with/f1']} | {r['macro_f1']} |",
              flush=True)
        if name == "memsyco":
            allm = src == "memsyco"
            ra = scores(d["y"][allm], m.predict_proba(_cols(d["X"][allm], cfg.model)).argmax(1))
            out["memsyco_all_pairs"] = ra
            print(f"| memsyco, scored on all {int(allm.sum())} MemSyco pairs | {int(mask.sum())} | "
                  f"{ra['supersedes/f1']} | {ra['conflicts_with/f1']} | {ra['macro_f1']} |", flush=True)
    return out


def rows_of_log(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The per-row lines of a run's log (a run stopped early included), summed per scored variant: (mode, the
    ``Scorer.memsyco`` sums) with mode cv, no-memsyco or loso."""
    out: list[tuple[str, dict[str, Any]]] = []
    for ln in path.read_text().splitlines():
        if ln.startswith("[") and "] trained on" in ln:
            name = ln[1:ln.index("]")]
            mode = "cv" if name.startswith("cv-") else "no-memsyco" if name == "no-memsyco" else "loso"
            out.append((mode, {"rows": 0, "errors": 0, "partial_turn_rows": 0, "leaked_rows_ordered": [],
                               "sums": {m: dict.fromkeys(KEYS, 0.0) for m in ("ordered", "nearest_item")}}))
        elif ln.startswith("  ROW ") and out:
            _, rid, *parts = ln.split()
            cur = out[-1][1]
            cur["rows"] += 1
            for part in parts:
                m, _, kv = part.partition(":")
                f = {k: int(v) for k, v in (x.split("=") for x in kv.split(","))}
                for k in KEYS:
                    cur["sums"][m][k] += f[k]
                if m == "ordered":
                    cur["partial_turn_rows"] += f["ptl_row"]
                    if f["outdated_leak"]:
                        cur["leaked_rows_ordered"].append(rid)
    return out


def wilson(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson interval of k successes in n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return (round(max(0.0, c - h), 3), round(min(1.0, c + h), 3))


def check(mode: str, res: dict[str, Any]) -> list[str]:
    lines = []
    for m, bars in BARS.get(mode, {}).items():
        for k, (op, bar) in bars.items():
            v = res[m][k]
            ok = v <= bar if op == "<=" else v >= bar
            ci = wilson(round(v * res["rows"]), res["rows"])
            lines.append(f"  bar {mode} {m} {k} {v:.3f} (95% CI {ci[0]}-{ci[1]}, {res['rows']} rows) {op} {bar}: "
                         f"{'MET' if ok else 'NOT MET'}")
    return lines


def line(name: str, r: dict[str, Any]) -> str:
    def f(m: str) -> str:
        x = r[m]
        return (f"{x['outdated_leak']:.3f} / {x['partial_turn_leak']:.3f} / {x['outdated_leak_any']:.3f} / "
                f"{x['current_valid']:.3f}")
    return f"| {name} | {r['rows']} | {f('ordered')} | {f('nearest_item')} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="relations-default", help="Training preset (configs/relations-*.yaml).")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="Preset overrides (as train-relations).")
    ap.add_argument("--kind", default="structural", help="structural (the shipped kind; preset relations-default), "
                    "cross (H1's cross-encoder; preset relations-cross), shipped (the packaged artefact, no training), "
                    "or package.module:function (see the docstring).")
    ap.add_argument("--ingest", nargs="*", default=[], metavar="KEY=JSON", help="More IngestConfig.relations settings "
                    "for every variant, e.g. cue_gates=false.")
    ap.add_argument("--sources", nargs="*", default=list(SOURCES), choices=SOURCES, help="Sources of the full model.")
    ap.add_argument("--mode", nargs="*", default=["cv", "no-memsyco", "loso"], choices=["cv", "no-memsyco", "loso", "pairs"])
    ap.add_argument("--blocks", default=json.dumps(DEFAULT_BLOCKS), help="CV folds: JSON list of [a, b) row blocks.")
    ap.add_argument("--loso-block", type=int, default=1, help="Index in --blocks of the block LOSO scores on (the "
                    "all-source row is that fold's cv model; scored here only with --mode cv).")
    ap.add_argument("--loso-sources", nargs="*", default=None, choices=SOURCES, help="Sources left out one at a time "
                    "(default: every source but MemSyco, which --mode no-memsyco leaves out).")
    ap.add_argument("--rows", type=int, default=None, help="no-memsyco: score only N valid-memory rows ...")
    ap.add_argument("--skip-rows", type=int, default=0, help="... after the first SKIP (to split the run; --pool).")
    ap.add_argument("--phrasing-test", action="store_true", help="Also score the phrasing test half (loso, no-memsyco).")
    ap.add_argument("--out", default="runs/loso", help="Pair cache and the variants' artefacts.")
    ap.add_argument("--reuse-pairs", action="store_true", help="Keep cached pairs whose code hash is stale.")
    ap.add_argument("--loso-no-base", action="store_true", help="loso: no phrasing figure for the all-source model "
                    "(another run gives it).")
    ap.add_argument("--skip-memsyco", action="store_true", help="Score no MemSyco rows (with --phrasing-test: the "
                    "phrasing half only; cv is always scored).")
    ap.add_argument("--json", default=None, help="Also write every figure here.")
    ap.add_argument("--pool", nargs="*", default=None, metavar="JSON", help="Only pool the cv folds of earlier runs' "
                    "--json files (one block each, run in parallel) and print the table and bars.")
    a = ap.parse_args()
    if a.pool is not None:
        runs = [json.loads(Path(p).read_text()) for p in a.pool if not p.endswith(".log")]
        logs = [rows_of_log(Path(p)) for p in a.pool if p.endswith(".log")]
        for mode, parts in (("cv", [f for r in runs for f in r.get("cv", {}).get("folds", [])]
                             + [x for lg in logs for m, x in lg if m == "cv"]),
                            ("no-memsyco", [r["no-memsyco"] for r in runs if r.get("no-memsyco", {}).get("rows")]
                             + [x for lg in logs for m, x in lg if m == "no-memsyco"])):
            if parts:
                res = pooled(parts)
                print(line(mode, res) + "\n" + "\n".join(check(mode, res)) + "\n" + json.dumps(res))
        return

    from evomem.commands.relations_cmds import load_relations_config
    from evaluation.phrasing import load_cases
    from induction.adapters import load_memsyco
    from induction.relations.model import PROBE
    from llmclients.embeddings import EmbedderConfig, make_embedder

    t0 = time.perf_counter()
    ingest = {k: json.loads(v) for k, v in (x.split("=", 1) for x in a.ingest)}
    sets = list(a.set) + ["memsyco_heldout=null", f"output_dir={a.out}"]
    if "phrasing" in a.sources:
        sets.append("phrasing=evaluation/phrasing/cases.jsonl")
    if "beam" in a.sources:
        sets.append("beam=../shared/data/beam")  # relative to the repository root, as the preset's memsyco_root
    cfg = load_relations_config(a.config, sets)
    out = Path(a.out)
    emb = MemoEmbedder(make_embedder(EmbedderConfig()))
    d = load_pairs(cfg, out, a.reuse_pairs) if a.kind != "shipped" else {}
    if d:
        d["dim"] = np.asarray(emb.dim)
        d["probe"] = emb.embed([PROBE])[0]
    root = Path(cfg.memsyco_root)
    index = memsyco_index(root)
    rows = load_memsyco(root / "valid_memory_selection.jsonl")
    rows = [r for r in rows if r.policy == "update" or any(i.status == "current" for i in r.items)]
    vindex = {r.id: index[r.id] for r in rows}
    phr = load_cases(ROOT / "evaluation" / "phrasing" / "cases.jsonl", "test") if a.phrasing_test else []
    sc = Scorer(emb, rows, phr)
    fit = fitter(a.kind)
    off = set(SOURCES) - set(a.sources)
    blocks = [tuple(b) for b in json.loads(a.blocks)]
    print(f"pairs {len(d.get('y', []))}; sources {sorted(a.sources)}; kind {a.kind}; preset {a.config} {a.set}", flush=True)
    report: dict[str, Any] = {"kind": a.kind, "config": a.config, "set": a.set, "sources": sorted(a.sources)}

    def variant(name: str, drop: set[str], block: tuple[int, int] | None) -> dict[str, Any]:
        t = time.perf_counter()
        mask = train_mask(cfg, d, off | drop, block, index) if d else np.zeros(0, bool)
        folder = out / "variants" / name
        folder.mkdir(parents=True, exist_ok=True)
        over = fit(cfg, d, mask, folder) | ingest
        print(f"[{name}] trained on {int(mask.sum())} pairs in {time.perf_counter() - t:.0f}s", flush=True)
        return over

    table = ["| model | rows | `ordered` leak / partial-turn / any / current still current | "
             "`nearest_item` same |", "|---|---|---|---|"]
    folds: list[dict[str, Any]] = []
    loso_base: dict[str, Any] = {}
    if "cv" in a.mode or "loso" in a.mode:
        todo = range(len(blocks)) if "cv" in a.mode else [a.loso_block]
        for i in todo:
            b = blocks[i]
            over = variant(f"cv-{b[0]}-{b[1]}", set(), b)
            r: dict[str, Any] = {}
            if "cv" in a.mode:
                t = time.perf_counter()
                r = sc.memsyco(over, {rid for rid, k in vindex.items() if b[0] <= k < b[1]})
                r["block"] = list(b)
                print(f"[cv {b}] {r['rows']} rows in {time.perf_counter() - t:.0f}s: ordered {r['ordered']} "
                      f"nearest_item {r['nearest_item']}", flush=True)
                folds.append(r)
            if i == a.loso_block:
                loso_base = {"over": over, "memsyco": r}
        if "cv" in a.mode:
            cv = pooled(folds)
            report["cv"] = {"pooled": cv, "folds": folds}
            table.append(line(f"k-fold CV, all sources ({len(blocks)} blocks)", cv))
            print("\n".join(check("cv", cv)), flush=True)
    if "pairs" in a.mode:
        report["pairs"] = pair_level(cfg, d, index, blocks[a.loso_block], off, a.loso_sources or a.sources)
    if "no-memsyco" in a.mode:
        over = variant("no-memsyco", {"memsyco"}, None)
        r = {}
        if not a.skip_memsyco:
            ids = {x.id for x in rows[a.skip_rows: a.skip_rows + (a.rows or len(rows))]}
            t = time.perf_counter()
            r = sc.memsyco(over, ids)
            print(f"[no-memsyco] {r['rows']} rows in {time.perf_counter() - t:.0f}s", flush=True)
            table.append(line("without MemSyco", r))
            print("\n".join(check("no-memsyco", r)), flush=True)
        if phr:
            r["phrasing_test"] = sc.phrasing_test(over)
            print(f"[no-memsyco] phrasing {r['phrasing_test']}", flush=True)
        report["no-memsyco"] = r
    if "loso" in a.mode and loso_base:
        b = blocks[a.loso_block]
        ids = {rid for rid, k in vindex.items() if b[0] <= k < b[1]}
        lo: dict[str, Any] = {"block": list(b), "all": loso_base["memsyco"]}
        if phr and not a.loso_no_base:
            lo["all_phrasing_test"] = sc.phrasing_test(loso_base["over"])
            print(f"[all sources] phrasing {lo['all_phrasing_test']}", flush=True)
        if loso_base["memsyco"]:
            table.append(line(f"all sources, block {b[0]}-{b[1] - 1}", loso_base["memsyco"]))
        for s in sorted(set(a.loso_sources or a.sources) - {"memsyco"}):
            over = variant(f"loso-{s}-{b[0]}-{b[1]}", {s}, b)
            r = sc.memsyco(over, ids) if not a.skip_memsyco else {}
            if phr:
                r["phrasing_test"] = sc.phrasing_test(over)
            lo[s] = r
            if not a.skip_memsyco:
                table.append(line(f"without {s}, block {b[0]}-{b[1] - 1}", r))
            print(f"[loso -{s}] ordered {r.get('ordered')} nearest_item {r.get('nearest_item')} "
                  f"phrasing {r.get('phrasing_test')}", flush=True)
        report["loso"] = lo
    print("\n" + "\n".join(table))
    phr_rows = [("all sources", report.get("loso", {}).get("all_phrasing_test"))]
    phr_rows += [(f"without {s}", v.get("phrasing_test")) for s, v in report.get("loso", {}).items()
                 if isinstance(v, dict) and "phrasing_test" in v]
    if "no-memsyco" in report and "phrasing_test" in report["no-memsyco"]:
        phr_rows.append(("without memsyco", report["no-memsyco"]["phrasing_test"]))
    if any(v for _, v in phr_rows):
        print("\n| model | phrasing test: supersession F1 | conflict F1 | expiry | scope | look-alike false |\n"
              "|---|---|---|---|---|---|")
        for name, v in phr_rows:
            if v:
                print(f"| {name} | {v['supersession_f1']} | {v['conflict_f1']} | {v['expiry_accuracy']} | "
                      f"{v['scope_accuracy']} | {v['lookalike_false']} |")
    report["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"\n{report['seconds']}s")
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1, default=float))


if __name__ == "__main__":
    main()
