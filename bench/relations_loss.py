"""Where each labelled phrasing pair of the TUNE half is lost (first stage that drops it), which stage lets each false
look-alike edge through, and every scored pair's probabilities (issue 44; written by H2 in session 7 as
runs/h2/loss.py, committed unchanged in session 8). Built on bench/relations_funnel.py's spy; adds the cross kind's
screen (candidates the screen drops count as unrelated) and the texts of each pair. bench/relations_thresholds.py
picks the cross kind's thresholds from its dump.

    python bench/relations_loss.py OUT.json [KEY=JSON ...]     # tune half only
"""
from __future__ import annotations
import json, sys, tempfile
from collections import Counter
from pathlib import Path
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluation.phrasing import CASES_FILE, load_cases
from evaluation.phrasing_eval import score_case
from evomem.settings import Settings
from induction.config import IngestConfig
from induction.pipeline import make_ingestor
from induction.adjudication import model as adj_mod
from induction.adjudication import cross as cross_mod
from induction.relations.features import LABELS
from graph.rules import may_conflict, may_supersede
from memcore.memory import Memory

SUP, CONF = LABELS.index("supersedes"), LABELS.index("conflicts_with")
out_path = sys.argv[1]
over = {k: json.loads(v) for k, v in (x.split("=", 1) for x in sys.argv[2:])}
records: list[dict] = []
kept_log: list[list[int]] = []
orig_cp = adj_mod.cross_probabilities

def cp(model, screen, cfg, statement, olds, X):
    kept_log.append([int(k) for k in cross_mod.kept(screen, cfg, X)])
    return orig_cp(model, screen, cfg, statement, olds, X)

adj_mod.cross_probabilities = cp
orig = adj_mod.ModelAdjudicator._decide

def spy(self, d, kind, certain, holder, cands, P, *args, **kw):
    orig(self, d, kind, certain, holder, cands, P, *args, **kw)
    res, by_id = args[0], args[1]
    def info(fid):
        if fid in by_id:
            return by_id[fid].candidate.kind, by_id[fid].candidate.holder
        return res.existing[fid].kind, res.existing[fid].holder
    records.append({"new": d.fact_id, "cands": [c.fact_id for c in cands], "P": P.tolist(), "kind": kind,
                    "certain": certain, "holder": holder, "older": [c.older for c in cands],
                    "partner": [info(c.fact_id) for c in cands],
                    "kept": kept_log[-1] if kept_log and getattr(self.model, "kind", "") == "cross" else None,
                    "evidenced": list(kw.get("evidenced", ())), "stateful": list(kw.get("stateful", ())),
                    "person_ok": list(kw.get("person_ok", ())), "cue_ok": list(kw.get("cue_ok", ())),
                    "sup": list(d.supersedes), "conf": list(d.conflicts_with)})

adj_mod.ModelAdjudicator._decide = spy
s = Settings(); s.store.path = str(Path(tempfile.mkdtemp(prefix="evomem-loss-")) / "store")
mem = Memory.from_settings(s)
cfg = IngestConfig()
cfg.relations = cfg.relations.model_validate(cfg.relations.model_dump() | over)
ing = make_ingestor(mem, cfg)
rc = getattr(getattr(ing, "adjudicator", None), "cfg", None) or cfg.relations
print("thresholds", rc.supersede_threshold, rc.conflict_threshold, rc.same_holder_conflict_threshold, flush=True)
rows = []
for case in load_cases(CASES_FILE, "tune"):
    if case.pair is None:
        continue
    records.clear(); kept_log.clear()
    user = f"loss-{case.id}"
    for sess in case.to_sessions(user):
        ing.ingest(sess)
    snap = mem.store.load_snapshot(user)
    L = {f.fact_id for f in snap.facts.values() if case.turn_id(case.pair.later) in f.source_turn_ids}
    E = {f.fact_id for f in snap.facts.values() if case.turn_id(case.pair.earlier) in f.source_turn_ids}
    facts = {f.fact_id: (f.statement, f.kind, f.holder) for f in snap.facts.values()}
    gold = case.pair.relation
    res = score_case(case, snap)
    stages = Counter()
    best = {"sup": 0.0, "conf": 0.0}
    pairs = []
    for r in records:
        for k, c in enumerate(r["cands"]):
            fwd, bwd = r["new"] in L and c in E, r["new"] in E and c in L
            if not (fwd or bwd):
                continue
            stages["candidate"] += 1
            screened = r["kept"] is not None and k not in r["kept"]
            ps, pc = r["P"][k][SUP], r["P"][k][CONF]
            okind, oholder = r["partner"][k]
            pairs.append({"new": r["new"], "old": c, "fwd": fwd, "p": [round(x, 3) for x in r["P"][k]], "screened": screened,
                          "kind": r["kind"], "certain": r["certain"], "holder": r["holder"], "okind": okind, "oholder": oholder})
            if screened:
                stages["screened"] += 1; continue
            stages["scored"] += 1
            best["sup"] = max(best["sup"], ps if fwd else 0.0); best["conf"] = max(best["conf"], pc)
            if fwd and ps >= rc.supersede_threshold:
                stages["model_sup"] += 1
                if (not r["evidenced"] or r["evidenced"][k]) and (not r["stateful"] or r["stateful"][k]):
                    stages["gate_sup"] += 1
                    if may_supersede(r["kind"], okind, r["holder"], oholder, r["older"][k]):
                        stages["rules_sup"] += 1
            bar = rc.same_holder_conflict_threshold if oholder == r["holder"] else rc.conflict_threshold
            if pc >= bar:
                stages["model_conf"] += 1
                if (not r["person_ok"] or r["person_ok"][k]) and (not r["cue_ok"] or r["cue_ok"][k] or pc >= rc.model_overrides_cues):
                    stages["gate_conf"] += 1
                    if may_conflict(r["kind"], okind, r["holder"], oholder):
                        stages["rules_conf"] += 1
    want = {"SUPERSEDES": "sup", "CONFLICTS_WITH": "conf"}.get(gold)
    if want:
        found = res.sup if want == "sup" else res.conf
        if found:
            loss = "found"
        elif not (L and E):
            loss = "extraction: a turn has no fact"
        elif not stages["candidate"]:
            loss = "no candidate pair (candidates.py)"
        elif not stages["scored"]:
            loss = "cross screen dropped it"
        elif not stages[f"model_{want}"]:
            other = "sup" if want == "conf" else "conf"
            loss = "model below threshold" + (f" (model says {other})" if stages[f"model_{other}"] else "")
        elif not stages[f"gate_{want}"]:
            loss = "cue gate refused"
        elif not stages[f"rules_{want}"]:
            loss = "kind/holder rule refused"
        else:
            loss = "decided, edge lost later (ranking / turn / validator)"
        if res.predicted not in ("none", gold) and loss != "found":
            loss += f" [wrong edge: {res.predicted}]"
    else:
        bad = res.sup or res.conf or res.sup_reversed
        loss = ("false " + res.predicted) if bad else "ok"
    rows.append({"id": case.id, "category": case.category, "gold": gold, "loss": loss, "predicted": res.predicted,
                 "best": best, "stages": dict(stages), "pairs": pairs,
                 "later": [facts[f] for f in L], "earlier": [facts[f] for f in E]})
    print(f"{case.id:<9} {gold:<15} {loss}  p_sup={best['sup']:.2f} p_conf={best['conf']:.2f}", flush=True)
tab = Counter((r["gold"], r["loss"]) for r in rows)
print()
for (g, l), n in sorted(tab.items()):
    print(f"{g:<15} {n:>3}  {l}")
Path(out_path).write_text(json.dumps({"over": over, "rows": rows}, indent=1))
mem.close()
