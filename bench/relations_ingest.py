"""Offline ingest with the relation model vs the rules: sessions/s, edges per 100 facts, an edge sample.

Ingests the first LoCoMo conversations session by session (offline extractor, MiniLM, embedded store),
once per adjudicator, alternating the order per repetition so machine load hits both alike. Prints
sessions/s for each and the time per session of the model over the rules (issue 44's bar: <= 1.25x), and the
number of SUPERSEDES / CONFLICTS_WITH edges per 100 facts; ``--audit FILE`` writes a seeded sample of the
model's edges with both statements (``--audit-n 0``: every edge; for the hand audit in docs/results/).
``--set KEY=JSON`` configures the model (``induction.config.RelationModelConfig``: another artefact or kind).

    python bench/relations_ingest.py --conversations 2 --sessions 8 --repeat 2          # the ingest-time ratio
    python bench/relations_ingest.py --conversations 10 --sessions 99 --repeat 1 --only model --audit-n 0 --audit runs/edges.md
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evomem.settings import Settings  # noqa: E402
from induction.adapters import load_locomo  # noqa: E402
from induction.config import IngestConfig  # noqa: E402
from induction.pipeline import make_ingestor  # noqa: E402
from memcore.memory import Memory  # noqa: E402


Edge = tuple[str, str, str, str, str, str]


def _where(f: Any) -> str:
    """Source turns, date said, kind and holder of a fact (for the hand audit)."""
    day = f.observed_at.date().isoformat() if f.observed_at else "?"
    return f"{','.join(f.source_turn_ids) or '?'} {day} {f.kind}/{f.holder}"


def run(adjudicator: str, convs: list, n_sessions: int, relations: dict[str, Any] | None = None,
        ) -> tuple[float, int, dict[str, int], list[Edge]]:
    s = Settings()
    s.store.path = str(Path(tempfile.mkdtemp(prefix="evomem-relbench-")) / "store")
    mem = Memory.from_settings(s)
    cfg = IngestConfig(adjudicator=adjudicator)  # type: ignore[arg-type]
    if relations:
        cfg.relations = cfg.relations.model_validate(cfg.relations.model_dump() | relations)
    ing = make_ingestor(mem, cfg)
    if adjudicator == "model" and getattr(ing.adjudicator, "fallback_reason", None):
        raise SystemExit(str(getattr(ing.adjudicator, "fallback_reason")))
    mem.embedder.embed(["warm up"])
    n = 0
    t0 = time.perf_counter()
    for conv in convs:
        for sess in conv.sessions[:n_sessions]:
            ing.ingest(sess)
            n += 1
    dt = time.perf_counter() - t0
    facts, edges = 0, {"SUPERSEDES": 0, "CONFLICTS_WITH": 0}
    sample: list[Edge] = []
    for conv in convs:
        snap = mem.store.load_snapshot(conv.user_id)
        facts += len(snap.facts)
        for r in snap.relations.values():
            edges[r.type] = edges.get(r.type, 0) + 1
            a, b = snap.facts[r.src], snap.facts[r.dst]
            sample.append((r.type, a.statement, b.statement, r.reason, _where(a), _where(b)))
    mem.close()
    return n / dt, facts, edges, sample


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"))
    ap.add_argument("--conversations", type=int, default=2)
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--pick", default="", help="Comma-separated LoCoMo sample ids to ingest (e.g. conv-44), instead of the first N.")
    ap.add_argument("--audit", default=None, help="Write a sample of the model's edges here (markdown).")
    ap.add_argument("--audit-n", type=int, default=30, help="Edges in the audit sample (0 = every edge).")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=JSON",
                    help="Relation-model settings (induction.config.RelationModelConfig), e.g. 'artefact_dir=\"runs/x\"'.")
    ap.add_argument("--bar", type=float, default=1.25, help="Bar on model/rules time per session (issue 44: 1.25).")
    ap.add_argument("--only", choices=["rules", "model"], default=None, help="Run one adjudicator (no overhead figure).")
    a = ap.parse_args()
    convs = load_locomo(a.data, user_prefix="bench-")[: a.conversations]
    if a.pick:
        convs = [c for c in convs if c.user_id.removeprefix("bench-") in a.pick.split(",")]
    over = {k: json.loads(v) for k, v in (x.split("=", 1) for x in a.set)}
    rates: dict[str, list[float]] = {"rules": [], "model": []}
    last: dict[str, tuple[int, dict[str, int], list[Edge]]] = {}
    for rep in range(a.repeat):
        for adj in ((a.only,) if a.only else ("rules", "model") if rep % 2 == 0 else ("model", "rules")):
            r, facts, edges, sample = run(adj, convs, a.sessions, over)
            rates[adj].append(r)
            last[adj] = (facts, edges, sample)
            print(f"rep {rep} {adj:<5} {r:.3f} sessions/s  facts={facts} edges={edges}", flush=True)
    mean = {k: sum(v) / len(v) for k, v in rates.items() if v}
    if len(mean) == 2:
        print(f"sessions/s  rules={mean['rules']:.3f}  model={mean['model']:.3f}  "
              f"overhead={(mean['rules'] / mean['model'] - 1) * 100:+.1f}% time per session")
        ratio = mean["rules"] / mean["model"]
        print(f"time per session model/rules = {ratio:.3f} (bar <= {a.bar}: {'MET' if ratio <= a.bar else 'NOT MET'})")
    for adj, (facts, edges, _) in last.items():
        per = {k: round(100 * v / max(1, facts), 2) for k, v in edges.items()}
        print(f"{adj}: edges per 100 facts {per} (facts={facts})")
    if a.audit and "model" in last:
        sample = last["model"][2]
        random.Random(0).shuffle(sample)
        n = a.audit_n or len(sample)
        lines = ["# Relation model on LoCoMo: a seeded sample of created edges (hand audit)", "",
                 f"{len(sample)} edges over {last['model'][0]} facts; sample of {min(n, len(sample))}.", "",
                 "| # | type | newer / a (turns date kind/holder) | older / b (turns date kind/holder) | reason | verdict |",
                 "|---|---|---|---|---|---|"]
        for k, (typ, src, dst, why, wa, wb) in enumerate(sample[:n], 1):
            esc = [x.replace("|", "/")[:200] for x in (src, dst, why)]
            lines.append(f"| {k} | {typ} | {esc[0]} ({wa}) | {esc[1]} ({wb}) | {esc[2]} | |")
        Path(a.audit).parent.mkdir(parents=True, exist_ok=True)
        Path(a.audit).write_text("\n".join(lines) + "\n")
        print(f"wrote {a.audit}")


if __name__ == "__main__":
    main()
