"""The cross kind's thresholds: supersession / conflict F1 and look-alike false rate on the tuning half's threshold
part (training_data.relations_sources.threshold_part, not trained on with phrasing_holdout), simulated from a
bench/relations_loss.py dump at other thresholds (approximate: the rules on the extractor's kinds, the person gate as
recorded by the run). Pick: best sup F1 + conf F1 with look-alike <= 0.05 (issue 44; H2's runs/h2/sim.py, session 7).

    python bench/relations_thresholds.py LOSS.json val      # `train` scores the trained-on part instead
"""
import json, sys, itertools
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from training_data.relations_sources import threshold_part as is_val
from graph.rules import may_conflict, may_supersede

def f1(tp, fp, fn):
    p = tp / (tp + fp) if tp + fp else 0.0; r = tp / (tp + fn) if tp + fn else 0.0
    return 2 * p * r / (p + r) if p + r else 0.0

def score(rows, ts, tc, th):
    c = {"stp": 0, "sfp": 0, "sfn": 0, "ctp": 0, "cfp": 0, "cfn": 0, "look": 0, "nlook": 0}
    for r in rows:
        sup = conf = False
        for p in r["pairs"]:
            if p["screened"]:
                continue
            ps, pc = p["p"][1], p["p"][2]
            if p["fwd"] and ps >= ts and may_supersede(p["kind"], p["okind"], p["holder"], p["oholder"], True):
                sup = True
            bar = th if p["holder"] == p["oholder"] else tc
            if pc >= bar and may_conflict(p["kind"], p["okind"], p["holder"], p["oholder"]) and p.get("person_ok", True):
                conf = True
        g = r["gold"]
        c["stp"] += sup and g == "SUPERSEDES"; c["sfp"] += sup and g != "SUPERSEDES"; c["sfn"] += (not sup) and g == "SUPERSEDES"
        c["ctp"] += conf and g == "CONFLICTS_WITH"; c["cfp"] += conf and g != "CONFLICTS_WITH"; c["cfn"] += (not conf) and g == "CONFLICTS_WITH"
        if r["category"] == "lookalike":
            c["nlook"] += 1; c["look"] += sup or conf
    return f1(c["stp"], c["sfp"], c["sfn"]), f1(c["ctp"], c["cfp"], c["cfn"]), c["look"] / max(1, c["nlook"])

if __name__ == "__main__":
    rows = [r for r in json.load(open(sys.argv[1]))["rows"] if is_val(r["id"]) == (sys.argv[2] == "val")]
    print(len(rows), "cases", sys.argv[2])
    grid = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    res = []
    for ts, tc, th in itertools.product(grid, grid, grid):
        if th < tc:
            continue
        s, c, l = score(rows, ts, tc, th)
        res.append((s + c if l <= 0.05 else -1, s, c, l, (ts, tc, th)))
    for x in sorted(res, reverse=True)[:12]:
        print("sum %.3f sup %.3f conf %.3f look %.3f" % x[:4], x[4])
    for t in [(0.5, 0.5, 0.8), (0.5, 0.5, 0.5)]:
        print("at", t, "sup %.3f conf %.3f look %.3f" % score(rows, *t))
    ok = [x for x in res if x[0] >= 0]
    best = max(ok) if ok else min(res, key=lambda x: (x[3], -(x[1] + x[2])))
    print("PICK", json.dumps(list(best[4])))
