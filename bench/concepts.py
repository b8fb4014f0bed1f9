"""The living ontology over the LoCoMo development conversations (issue 46 bars).

Ingests each conversation session by session with the default ingestion (offline extractor, MiniLM,
relation model, concepts in the commit path; embedded store) and prints, per conversation, the tree's
depth and top-level count and the CREATE / MERGE / SPLIT edits ingestion made; then the totals against
the bars (depth >= 2, <= 30 top-level concepts, >= 10 MERGE and >= 10 SPLIT in total) and a seeded
sample of induced concept names for the hand audit (``--names FILE`` writes it as a markdown table).

    python bench/concepts.py                       # all 10 conversations
    python bench/concepts.py --timing 2 --sessions 8   # ingest time with concepts on vs off, same run
    python bench/concepts.py --conversations 1 --snapshots 1 5 10 19 --svg-dir docs/img   # the docs picture
    python bench/concepts.py --conversations 3 --step-timing   # concept-step ms per session, kept state vs rebuilt

Exit status 1 when a bar fails (not the name audit, which is by hand).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evomem.settings import Settings  # noqa: E402
from graph.concept_tree import concept_edits, describe_edit, live_tree, render_svg, render_text, tree_depth  # noqa: E402
from induction.adapters import LocomoConversation, load_locomo  # noqa: E402
from induction.config import IngestConfig, LivingConceptsConfig  # noqa: E402
from induction.naming import is_unnamed  # noqa: E402
from induction.ontology import INDUCED, ConceptStateCache  # noqa: E402
from induction.pipeline import make_ingestor  # noqa: E402
from memcore.memory import Memory  # noqa: E402


STEP_MS: dict[str, float] = {}  # the concept step's own time and the sessions' total, from the ingest reports


def _memory() -> Memory:
    s = Settings()
    s.store.path = str(Path(tempfile.mkdtemp(prefix="evomem-concepts-")) / "store")
    return Memory.from_settings(s)


def ingest(mem: Memory, conv: LocomoConversation, n_sessions: int | None, on: bool,
           snapshots: tuple[int, ...] = (), svg_dir: Path | None = None, rebuild: bool = False,
           steps: list[tuple[int, float]] | None = None) -> tuple[float, list[str]]:
    """``rebuild``: the concept step builds its state from scratch every session (no kept state);
    ``steps``: gets (facts before the session, concept-step ms) per session."""
    cfg = IngestConfig(concepts=LivingConceptsConfig(enabled=on))
    ing = make_ingestor(mem, cfg)
    if rebuild:
        ing.concept_state = ConceptStateCache(users=0)
    t = 0.0
    shots: list[str] = []
    seen = 0
    for k, sess in enumerate(conv.sessions[:n_sessions], 1):
        before = len(mem.store.load_snapshot(conv.user_id).facts) if steps is not None else 0
        t0 = time.perf_counter()
        rep = ing.ingest(sess)
        t += time.perf_counter() - t0
        if steps is not None:
            steps.append((before, rep.timings_ms.get("concepts", 0.0)))
        for step in ("concepts", "total"):
            STEP_MS[step] = STEP_MS.get(step, 0.0) + rep.timings_ms.get(step, 0.0)
        if k in snapshots:
            snap = mem.store.load_snapshot(conv.user_id)
            log = concept_edits(snap)
            new = [e for e in log[seen:] if e.op in ("MERGE", "SPLIT") or INDUCED in str(e.payload.get("concept_id", ""))]
            seen = len(log)
            shots.append(f"### After session {k}\n\n```text\n{render_text(snap, edits=0)}\n```\n\n"
                         f"Concept edits since the previous picture ({len(new)} CREATE of an induced concept, "
                         f"MERGE or SPLIT):\n\n```text\n" + ("\n".join(describe_edit(snap, e) for e in new) or "(none)")
                         + "\n```\n")
            if svg_dir is not None:
                svg_dir.mkdir(parents=True, exist_ok=True)
                (svg_dir / f"concepts-{conv.user_id}-s{k}.svg").write_text(
                    render_svg(snap, f"{conv.user_id} after session {k}"))
    return t, shots


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"))
    ap.add_argument("--conversations", type=int, default=10)
    ap.add_argument("--sessions", type=int, default=None, help="first n sessions of each conversation (all)")
    ap.add_argument("--timing", type=int, default=0, help="repetitions of on/off ingest timing (alternating order)")
    ap.add_argument("--names", default=None, help="write the name-audit sample here (markdown)")
    ap.add_argument("--sample", type=int, default=30)
    ap.add_argument("--seed", type=int, default=46, help="seed of the name-audit draw (state it with the audit)")
    ap.add_argument("--snapshots", type=int, nargs="*", default=(), help="sessions after which to print the tree")
    ap.add_argument("--svg-dir", default=None)
    ap.add_argument("--doc", default=None, help="write the snapshots as a markdown fragment here")
    ap.add_argument("--step-timing", action="store_true", help="concept-step time per session at growing history, "
                    "state kept between sessions vs rebuilt from scratch each session (same run)")
    a = ap.parse_args()
    convs = load_locomo(a.data, user_prefix="")[: a.conversations]
    if a.step_timing:
        return step_timing(convs, a.sessions)
    if a.timing:
        times = {True: 0.0, False: 0.0}
        sessions = 0
        for rep in range(a.timing):
            for on in ((True, False) if rep % 2 == 0 else (False, True)):
                mem = _memory()
                mem.embedder.embed(["warm up"])
                for conv in convs:
                    dt, _ = ingest(mem, conv, a.sessions, on)
                    times[on] += dt
                    sessions += len(conv.sessions[: a.sessions]) if on else 0
                mem.close()
                print(f"rep {rep} concepts {'on ' if on else 'off'}: {times[on]:.1f} s so far", flush=True)
        ratio = times[True] / max(times[False], 1e-9)
        print(f"ingest time: on {times[True]:.1f} s, off {times[False]:.1f} s over {sessions} sessions "
              f"-> ratio {ratio:.3f} (bar <= 1.15)")
        return 0 if ratio <= 1.15 else 1
    mem = _memory()
    tot = {"CREATE": 0, "MERGE": 0, "SPLIT": 0, "RENAME": 0}
    ok = True
    names: list[tuple[str, str, str, list[str]]] = []
    for ci, conv in enumerate(convs):
        # the pictures are of the first conversation only
        dt, shots = ingest(mem, conv, a.sessions, True, tuple(a.snapshots) if ci == 0 else (),
                           Path(a.svg_dir) if a.svg_dir else None)
        snap = mem.store.load_snapshot(conv.user_id)
        tree = live_tree(snap)
        ops = {"CREATE": 0, "MERGE": 0, "SPLIT": 0, "RENAME": 0}
        for e in concept_edits(snap):
            if e.undone_at is None and (e.op != "CREATE" or INDUCED in str(e.payload.get("concept_id", ""))):
                ops[e.op] += 1
        for k in ops:
            tot[k] += ops[k]
        depth = tree_depth(tree)
        good = depth >= 2 and len(tree) <= 30
        ok &= good
        print(f"{conv.user_id}: sessions={len(conv.sessions[: a.sessions])} facts={len(snap.facts)} depth={depth} "
              f"top-level={len(tree)} induced CREATE={ops['CREATE']} MERGE={ops['MERGE']} SPLIT={ops['SPLIT']} "
              f"RENAME={ops['RENAME']} "
              f"ingest={dt:.1f}s {'ok' if good else 'FAIL'}", flush=True)
        inside: dict[str, list[str]] = {}
        for f, c in sorted(snap.fact_concept.items()):
            if snap.facts[f].retracted_at is None:
                inside.setdefault(c, []).append(snap.facts[f].statement)
        for n in (n for top in tree for n in top.walk()):
            if INDUCED in n.concept_id:
                own = inside.get(n.concept_id) or [x for d in n.walk() for x in inside.get(d.concept_id, [])]
                pick3 = random.Random(f"{n.concept_id}").sample(own, min(3, len(own)))
                names.append((conv.user_id, n.name, n.description, pick3))
        if shots:
            text = "\n".join(shots)
            print(text)
            if a.doc:
                Path(a.doc).write_text(text)
    ok &= tot["MERGE"] >= 10 and tot["SPLIT"] >= 10
    share = STEP_MS.get("concepts", 0.0) / max(STEP_MS.get("total", 0.0), 1e-9)
    print(f"concept step: {STEP_MS.get('concepts', 0.0) / 1e3:.1f} s of {STEP_MS.get('total', 0.0) / 1e3:.1f} s "
          f"ingest ({share:.1%}; the ingest time ratio on/off is at most 1 + {share / (1 - share):.3f})")
    print(f"total induced CREATE={tot['CREATE']} MERGE={tot['MERGE']} (bar >= 10) SPLIT={tot['SPLIT']} (bar >= 10) "
          f"RENAME={tot['RENAME']}")
    unnamed = sum(1 for _, n, _, _ in names if is_unnamed(n))
    print(f"live induced concepts: {len(names)}, of them shown unnamed (the namer found no name): {unnamed}")
    random.Random(a.seed).shuffle(names)
    pick = names[: a.sample]
    print(f"\n{len(pick)} of {len(names)} live induced concept names (seed {a.seed}) for the hand audit:")
    for user, name, desc, three in pick:
        print(f"  {user:<8} {name:<32} {desc[:110]}")
        for x in three:
            print(f"  {'':<8}   - {x[:120]}")
    if a.names:
        lines = ["| # | conversation | name | three member facts | apt? |", "|---|---|---|---|---|"]
        lines += [f"| {i} | {u} | {n} | {' / '.join(x.replace('|', '/')[:110] for x in three)} | |"
                  for i, (u, n, _, three) in enumerate(pick, 1)]
        Path(a.names).write_text("\n".join(lines) + "\n")
    mem.close()
    print("bars:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


def step_timing(convs: list[LocomoConversation], n_sessions: int | None) -> int:
    """The concept step's own time per session as the user's history grows, with the state kept between
    sessions (the default) and rebuilt from scratch every session, each on its own store, same run."""
    rows: dict[bool, list[tuple[int, float]]] = {False: [], True: []}
    for conv in convs:
        for rebuild in (False, True):
            mem = _memory()
            ingest(mem, conv, n_sessions, True, rebuild=rebuild, steps=rows[rebuild])
            mem.close()
            print(f"{conv.user_id} {'rebuilt' if rebuild else 'kept   '}: " + " ".join(
                f"{ms:.0f}" for _, ms in rows[rebuild][-len(conv.sessions[:n_sessions]):]) + " ms per session", flush=True)
    print("facts before the session | concept step ms, state kept | rebuilt each session (median per bucket)")
    for lo, hi in ((0, 200), (200, 500), (500, 1000), (1000, 1500), (1500, 10**9)):
        got = {r: sorted(ms for n, ms in rows[r] if lo <= n < hi) for r in rows}
        if got[False]:
            med = {r: v[len(v) // 2] if v else float("nan") for r, v in got.items()}
            print(f"{lo:>5}-{hi if hi < 10**9 else '':<5} | {med[False]:8.0f} (n={len(got[False])}) | {med[True]:8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
