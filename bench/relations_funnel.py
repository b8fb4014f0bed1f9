"""Where a labelled phrasing pair is lost, stage by stage (issue 44, item 2 diagnosis). TUNE half only by
default: the test half is never looked at case by case.

For every case with a pair (SUPERSEDES / CONFLICTS_WITH / none), the cases are ingested with the default
ingestion and the model adjudicator's inputs are recorded (a wrapper around ``ModelAdjudicator._decide``).
Stages for a (later turn, earlier turn) pair:

  facts      both turns have at least one fact
  candidate  some fact of one turn has a fact of the other among its scored candidates
  model      the model's probability for the gold label reaches its threshold on such a candidate
  gates      ... and the cue gates let it through (change_evidenced / may_replace / person_ok / cue_ok)
  rules      ... and graph.rules allows it for the two facts' kinds (the extractor's) and holders
             (may_supersede / may_conflict; a conflict of one holder against its stricter threshold)
  edge       the edge is in the store after ingestion

The thresholds are the adjudicator's own (for the cross kind: its manifest's or ``cross_thresholds``; before
session 5 this bench read the ingest config's defaults, which the cross kind replaces at load).

    python bench/relations_funnel.py [--half tune] [--set supersede_threshold=0.3 ...] [--cases] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.phrasing import CASES_FILE, load_cases  # noqa: E402
from evaluation.phrasing_eval import score_case  # noqa: E402
from evomem.settings import Settings  # noqa: E402
from induction.config import IngestConfig  # noqa: E402
from induction.pipeline import make_ingestor  # noqa: E402
from induction.adjudication import model as adj_mod  # noqa: E402
from induction.relations.features import LABELS  # noqa: E402
from graph.rules import may_conflict, may_supersede  # noqa: E402
from memcore.memory import Memory  # noqa: E402

SUP, CONF = LABELS.index("supersedes"), LABELS.index("conflicts_with")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--half", default="tune", choices=["tune", "all", "test"])
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=JSON")
    ap.add_argument("--cases", action="store_true", help="Print one line per case (tune half only).")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    if a.cases and a.half != "tune":
        raise SystemExit("per-case lines only on the tune half")
    records: list[dict[str, Any]] = []
    orig = adj_mod.ModelAdjudicator._decide

    def spy(self: Any, d: Any, kind: str, certain: bool, holder: str, cands: list[Any], P: np.ndarray, *args: Any,
            **kw: Any) -> None:
        before = (list(d.supersedes), list(d.conflicts_with))
        orig(self, d, kind, certain, holder, cands, P, *args, **kw)
        res, by_id = args[0], args[1]

        def info(fid: str) -> tuple[str, str]:
            if fid in by_id:
                return by_id[fid].candidate.kind, by_id[fid].candidate.holder
            return res.existing[fid].kind, res.existing[fid].holder

        records.append({"new": d.fact_id, "cands": [c.fact_id for c in cands], "P": P.tolist(),
                        "kind": kind, "holder": holder, "older": [c.older for c in cands],
                        "partner": [info(c.fact_id) for c in cands],
                        "evidenced": list(kw.get("evidenced", ())), "stateful": list(kw.get("stateful", ())),
                        "person_ok": list(kw.get("person_ok", ())), "cue_ok": list(kw.get("cue_ok", ())),
                        "sup": d.supersedes, "conf": d.conflicts_with, "before": before})

    adj_mod.ModelAdjudicator._decide = spy  # type: ignore[method-assign]
    s = Settings()
    s.store.path = str(Path(tempfile.mkdtemp(prefix="evomem-funnel-")) / "store")
    mem = Memory.from_settings(s)
    cfg = IngestConfig()
    over = {k: json.loads(v) for k, v in (x.split("=", 1) for x in a.set)}
    cfg.relations = cfg.relations.model_validate(cfg.relations.model_dump() | over)
    ing = make_ingestor(mem, cfg)
    adj = getattr(ing, "adjudicator", None)
    rc = getattr(adj, "cfg", None) or cfg.relations  # the adjudicator's thresholds (the cross kind's are the manifest's)
    print(f"thresholds: supersede {rc.supersede_threshold}, conflict {rc.conflict_threshold}, "
          f"same-holder conflict {rc.same_holder_conflict_threshold}")
    cases = [c for c in load_cases(CASES_FILE, a.half) if c.pair is not None]
    funnel: dict[str, Counter[str]] = {}
    rows = []
    for case in cases:
        records.clear()
        user = f"funnel-{case.id}"
        for sess in case.to_sessions(user):
            ing.ingest(sess)
        snap = mem.store.load_snapshot(user)
        assert case.pair is not None
        L = {f.fact_id for f in snap.facts.values() if case.turn_id(case.pair.later) in f.source_turn_ids}
        E = {f.fact_id for f in snap.facts.values() if case.turn_id(case.pair.earlier) in f.source_turn_ids}
        gold = case.pair.relation
        res = score_case(case, snap)
        st = {"facts": bool(L and E), "candidate": False, "model_sup": False, "model_conf": False,
              "gate_sup": False, "gate_conf": False, "rules_sup": False, "rules_conf": False,
              "edge_sup": res.sup, "edge_conf": res.conf}
        best_sup = best_conf = 0.0
        for r in records:
            for k, c in enumerate(r["cands"]):
                if not ((r["new"] in L and c in E) or (r["new"] in E and c in L)):
                    continue
                st["candidate"] = True
                ps, pc = r["P"][k][SUP], r["P"][k][CONF]
                best_sup, best_conf = max(best_sup, ps), max(best_conf, pc)
                if r["new"] in L and ps >= rc.supersede_threshold:
                    st["model_sup"] = True
                    if (not r["evidenced"] or r["evidenced"][k]) and (not r["stateful"] or r["stateful"][k]):
                        st["gate_sup"] = True
                        okind, oholder = r["partner"][k]
                        if may_supersede(r["kind"], okind, r["holder"], oholder, r["older"][k]):
                            st["rules_sup"] = True
                if pc >= min(rc.conflict_threshold, rc.same_holder_conflict_threshold):
                    st["model_conf"] = True
                    if (not r["person_ok"] or r["person_ok"][k]) and (not r["cue_ok"] or r["cue_ok"][k]
                                                                      or pc >= rc.model_overrides_cues):
                        st["gate_conf"] = True
                        okind, oholder = r["partner"][k]
                        bar = rc.same_holder_conflict_threshold if oholder == r["holder"] else rc.conflict_threshold
                        if pc >= bar and may_conflict(r["kind"], okind, r["holder"], oholder):
                            st["rules_conf"] = True
        f = funnel.setdefault(gold, Counter())
        f["n"] += 1
        for key, v in st.items():
            f[key] += int(v)
        rows.append({"id": case.id, "gold": gold, **st, "p_sup": round(best_sup, 3), "p_conf": round(best_conf, 3),
                     "nL": len(L), "nE": len(E)})
        if a.cases:
            print(f"{case.id:<10} {gold:<15} " + " ".join(f"{k}={int(v)}" for k, v in st.items())
                  + f" p_sup={best_sup:.2f} p_conf={best_conf:.2f} L={len(L)} E={len(E)}")
    order = ["n", "facts", "candidate", "model_sup", "gate_sup", "rules_sup", "edge_sup", "model_conf", "gate_conf",
             "rules_conf", "edge_conf"]
    print(f"\nfunnel, half {a.half} ({len(cases)} pair cases); settings {over or 'default'}")
    print(f"{'gold':<16}" + "".join(f"{k:>11}" for k in order))
    for label, f in funnel.items():
        print(f"{label:<16}" + "".join(f"{f[k]:>11}" for k in order))
    if a.json:
        Path(a.json).write_text(json.dumps({"funnel": {g: dict(f) for g, f in funnel.items()}, "cases": rows}, indent=1))
    mem.close()


if __name__ == "__main__":
    main()
