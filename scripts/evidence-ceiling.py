"""Where the evidence is lost: extraction, ranking or packing, per speaker role of the gold turn.

On a store that scripts/eval-cached.py filled, for every resolvable gold turn of every scored question:
is there a stored fact citing it (the extraction ceiling), is one of those facts among the K fused
seeds (ranking), and is it in the rendered context at the budget (packing). Split by the gold turn's
role (LoCoMo: the speaker's name, shown as "user"; BEAM: user / assistant), so missing assistant
evidence is visible on its own.

    python scripts/evidence-ceiling.py beam --store /tmp/ret/beam
    python scripts/evidence-ceiling.py locomo '{"turn_redundancy": 0.5}' --misses 20
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evomem.commands.eval_cmds import open_cached  # noqa: E402
from retrieval.render import render_context  # noqa: E402
from retrieval.retrieve import RetrievalConfig  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("benchmark", choices=["locomo", "beam"])
    ap.add_argument("retrieval", nargs="?", default="{}", help="RetrievalConfig overrides (JSON)")
    ap.add_argument("--data")
    ap.add_argument("--store")
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--budget", type=int, default=600)
    ap.add_argument("--misses", type=int, default=0, help="print this many missed gold turns (text, best fact rank)")
    a = ap.parse_args()
    mem, _, eps = open_cached(a.benchmark, a.data, a.store, a.k, a.budget)
    mem.retrieval = RetrievalConfig.model_validate(mem.retrieval.model_dump() | {"k": a.k} | json.loads(a.retrieval))
    users = set(mem.store.users())
    # role -> counts of gold turns: total, with a fact, seeded, rendered
    n: dict[str, Counter[str]] = defaultdict(Counter)
    facts_per_turn: dict[str, list[int]] = defaultdict(list)
    misses: list[str] = []
    try:
        for ep in eps:
            if ep.user_id not in users:
                continue
            role_of: dict[str, str] = {}
            text_of: dict[str, str] = {}
            for s in ep.sessions:
                for i, t in enumerate(s.turns):
                    r = t.role.lower()
                    role_of[s.turn_id(i)] = r if r in ("user", "assistant") else "user"
                    text_of[s.turn_id(i)] = t.text
            snap = mem.store.load_snapshot(ep.user_id)
            cites: dict[str, list[str]] = defaultdict(list)
            for f in snap.facts.values():
                for tid in f.source_turn_ids:
                    cites[tid].append(f.fact_id)
            for q in ep.questions:
                gold = [e for e in dict.fromkeys(q.evidence_ids) if e in role_of]
                if not q.scored or not gold:
                    continue
                b = mem.retrieve(ep.user_id, q.question)
                seed_rank = {s.fact_id: r for r, s in enumerate(b.explain.seeds, start=1)}
                ctx = render_context(b, a.budget)
                shown = {b.by_id()[i].fact.fact_id for i in ctx.included}
                for g in gold:
                    c = n[role_of[g]]
                    c["gold"] += 1
                    fs = cites.get(g, [])
                    facts_per_turn[role_of[g]].append(len(fs))
                    if not fs:
                        continue
                    c["stored"] += 1
                    best = min((seed_rank[f] for f in fs if f in seed_rank), default=None)
                    if best is not None:
                        c["seeded"] += 1
                    if any(f in shown for f in fs):
                        c["rendered"] += 1
                    elif len(misses) < a.misses:
                        misses.append(f"[{q.category}] Q: {q.question[:100]}\n   gold {g} ({role_of[g]}, {len(fs)} facts, "
                                      f"best seed rank {best}): {text_of[g][:160]!r}")
    finally:
        mem.close()
    print(f"{'role':10s} {'gold':>6s} {'stored':>7s} {'seeded':>7s} {'rendered':>8s}  facts/turn")
    tot: Counter[str] = Counter()
    for role, c in sorted(n.items()):
        tot.update(c)
        fpt = facts_per_turn[role]
        print(f"{role:10s} {c['gold']:6d} {c['stored'] / c['gold']:7.3f} {c['seeded'] / c['gold']:7.3f} "
              f"{c['rendered'] / c['gold']:8.3f}  {sum(fpt) / max(len(fpt), 1):.2f}")
    print(f"{'all':10s} {tot['gold']:6d} {tot['stored'] / tot['gold']:7.3f} {tot['seeded'] / tot['gold']:7.3f} "
          f"{tot['rendered'] / tot['gold']:8.3f}")
    for m in misses:
        print(m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
