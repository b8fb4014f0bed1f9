"""Score the current ingestion on the hand-written phrasing set (evaluation/phrasing.py, issue 44).

Each case is ingested as its own fresh user (sessions in time order, through the ingestor it is given:
the CLI passes the default one), then the user's facts and relations are read back and scored:

- a labelled pair's relation is *found* when there is an edge of that type between some fact derived
  from the later turn and some fact derived from the earlier turn (``Fact.source_turn_ids``):
  ``SUPERSEDES`` must run later -> earlier, ``CONFLICTS_WITH`` counts in either direction;
- supersession and conflict precision/recall/F1 are taken over every case with a pair (a look-alike's
  stray edge is a false positive);
- expiry: a turn's state is *expired* at the reading date when one of its facts derives validity
  ``expired`` at that date (``graph.rules.derive_validity``); a turn without a fact is a miss;
- scope: one of the turn's facts has a scope containing one of the keywords (empty keywords: none of
  the turn's facts is scoped); a turn without a fact is a miss;
- false-relation rate: look-alike cases with any SUPERSEDES/CONFLICTS_WITH edge between the pair's facts.

    evomem eval phrasing --half test
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from evaluation.phrasing import CATEGORIES, PhrasingCase, split
from graph.models import Fact, Relation
from graph.rules import derive_validity
from graph.snapshot import Snapshot
from induction.pipeline import IngestError, Ingestor


class CaseResult(BaseModel):
    id: str
    category: str
    half: str
    seconds: float = 0.0
    facts: int = 0
    edges: int = 0
    gold: str | None = None
    later_facts: int = 0
    earlier_facts: int = 0
    sup: bool = False  # SUPERSEDES later -> earlier
    sup_reversed: bool = False  # SUPERSEDES earlier -> later
    conf: bool = False  # CONFLICTS_WITH either way
    predicted: str | None = None
    expiry_expected: bool | None = None
    expiry_predicted: bool | None = None
    valid_to: list[str] = []
    valid_to_in_window: bool | None = None
    scope_expected: list[str] | None = None
    scopes: list[str | None] = []
    scope_ok: bool | None = None
    correct: bool = False
    error: str | None = None  # an IngestError: scored on what was written before it, never counted correct


def _facts_of(snap: Snapshot, turn_id: str) -> list[Fact]:
    return [f for f in snap.facts.values() if turn_id in f.source_turn_ids]


def _edge(rels: Sequence[Relation], kind: str, src: set[str], dst: set[str], either: bool = False) -> bool:
    return any(r.type == kind and ((r.src in src and r.dst in dst) or (either and r.src in dst and r.dst in src))
               for r in rels)


def score_case(case: PhrasingCase, snap: Snapshot) -> CaseResult:
    """Score one ingested case from its user's snapshot (pure: no store, no model)."""
    rels = list(snap.relations.values())
    res = CaseResult(id=case.id, category=case.category, half=split(case), facts=len(snap.facts), edges=len(rels))
    oks: list[bool] = []
    if case.pair is not None:
        later = {f.fact_id for f in _facts_of(snap, case.turn_id(case.pair.later))}
        earlier = {f.fact_id for f in _facts_of(snap, case.turn_id(case.pair.earlier))}
        res.gold, res.later_facts, res.earlier_facts = case.pair.relation, len(later), len(earlier)
        res.sup = _edge(rels, "SUPERSEDES", later, earlier)
        res.sup_reversed = _edge(rels, "SUPERSEDES", earlier, later)
        res.conf = _edge(rels, "CONFLICTS_WITH", later, earlier, either=True)
        res.predicted = ("SUPERSEDES" if res.sup else "CONFLICTS_WITH" if res.conf
                         else "SUPERSEDES_REVERSED" if res.sup_reversed else "none")
        oks.append(res.predicted == case.pair.relation)
    if case.expiry is not None:
        ex = case.expiry
        facts = _facts_of(snap, case.turn_id(ex.turn))
        res.expiry_expected = ex.expired
        res.valid_to = sorted(f.valid_to.isoformat() for f in facts if f.valid_to is not None)
        if facts:
            res.expiry_predicted = any(derive_validity(f, [], [], ex.read_at) == "expired" for f in facts)
        if ex.valid_to_after is not None or ex.valid_to_before is not None:
            res.valid_to_in_window = any(
                f.valid_to is not None and (ex.valid_to_after is None or f.valid_to >= ex.valid_to_after)
                and (ex.valid_to_before is None or f.valid_to <= ex.valid_to_before) for f in facts)
        oks.append(res.expiry_predicted is not None and res.expiry_predicted == ex.expired)
    if case.scope is not None:
        facts = _facts_of(snap, case.turn_id(case.scope.turn))
        kws = [k.lower() for k in case.scope.keywords]
        res.scope_expected, res.scopes = list(case.scope.keywords), [f.scope for f in facts]
        if not facts:
            res.scope_ok = False
        elif kws:
            res.scope_ok = any(f.scope and any(k in f.scope.lower() for k in kws) for f in facts)
        else:
            res.scope_ok = all(f.scope is None for f in facts)
        oks.append(res.scope_ok)
    res.correct = all(oks) and bool(oks)
    return res


def run_case(case: PhrasingCase, ingestor: Ingestor, user_prefix: str = "phrasing-") -> CaseResult:
    """Ingest ``case`` as the fresh user ``<prefix><id>`` and score it."""
    t0 = time.perf_counter()
    user = f"{user_prefix}{case.id}"
    error = None
    for s in case.to_sessions(user):
        try:
            ingestor.ingest(s)
        except IngestError as e:
            error = str(e)
            break
    res = score_case(case, ingestor.memory.store.load_snapshot(user))
    res.error, res.correct = error, res.correct and error is None
    res.seconds = round(time.perf_counter() - t0, 3)
    return res


def _prf(tp: int, fp: int, fn: int) -> dict[str, float | int]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(2 * p * r / (p + r), 3) if p + r else 0.0,
            "tp": tp, "fp": fp, "fn": fn}


def _rate(xs: Sequence[bool]) -> float | None:
    return round(sum(xs) / len(xs), 3) if xs else None


def summarize(results: Sequence[CaseResult]) -> dict[str, Any]:
    """Headline figures (supersession F1, conflict F1, expiry and scope accuracy, look-alike false-relation
    rate) and per-category numbers."""
    pairs = [r for r in results if r.gold is not None]

    def prf(flag: str, gold: str) -> dict[str, float | int]:
        return _prf(sum(getattr(r, flag) and r.gold == gold for r in pairs),
                    sum(getattr(r, flag) and r.gold != gold for r in pairs),
                    sum(not getattr(r, flag) and r.gold == gold for r in pairs))

    exp = [r for r in results if r.expiry_expected is not None]
    win = [r.valid_to_in_window for r in results if r.valid_to_in_window is not None]
    sco = [r for r in results if r.scope_ok is not None]
    look = [r for r in results if r.category == "lookalike"]
    per: dict[str, dict[str, Any]] = {}
    for cat in CATEGORIES:
        rs = [r for r in results if r.category == cat]
        if not rs:
            continue
        labelled = [n for r in rs if r.gold is not None for n in (r.later_facts, r.earlier_facts)]
        per[cat] = {"n": len(rs), "correct": _rate([r.correct for r in rs]),
                    "sup_found": _rate([r.sup for r in rs if r.gold is not None]),
                    "conf_found": _rate([r.conf for r in rs if r.gold is not None]),
                    "pair_turns_with_facts": _rate([n > 0 for n in labelled]),
                    "seconds": round(sum(r.seconds for r in rs), 1)}
    return {
        "n": len(results),
        "supersession": prf("sup", "SUPERSEDES"),
        "conflict": prf("conf", "CONFLICTS_WITH"),
        "expiry_accuracy": _rate([r.expiry_predicted is not None and r.expiry_predicted == r.expiry_expected for r in exp]),
        "expiry_n": len(exp),
        "expired_recall": _rate([bool(r.expiry_predicted) for r in exp if r.expiry_expected]),
        "unexpired_kept": _rate([r.expiry_predicted is False for r in exp if not r.expiry_expected]),
        "expiry_no_fact": sum(r.expiry_predicted is None for r in exp),
        "valid_to_in_window": _rate(win),
        "valid_to_window_n": len(win),
        "scope_accuracy": _rate([bool(r.scope_ok) for r in sco]),
        "scope_n": len(sco),
        "lookalike_false_relation_rate": _rate([r.sup or r.conf or r.sup_reversed for r in look]),
        "lookalike_n": len(look),
        "cases_correct": _rate([r.correct for r in results]),
        "ingest_errors": sum(r.error is not None for r in results),
        "per_category": per,
        "seconds": round(sum(r.seconds for r in results), 1),
    }


def run_phrasing(cases: Sequence[PhrasingCase], ingestor: Ingestor, user_prefix: str = "phrasing-",
                 progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, Any], list[CaseResult]]:
    """Ingest and score every case; returns (summary, per-case results)."""
    results = []
    for i, c in enumerate(cases, start=1):
        results.append(run_case(c, ingestor, user_prefix))
        if progress:
            progress(i, len(cases))
    return summarize(results), results


def table(summary: dict[str, Any]) -> str:
    """A small text table: headline figures, then one row per category."""
    def f(x: Any) -> str:
        return "—" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)

    s, c = summary["supersession"], summary["conflict"]
    lines = [f"phrasing set: {summary['n']} cases, {summary['seconds']}s ingest+score",
             f"  supersession  P {f(s['precision'])}  R {f(s['recall'])}  F1 {f(s['f1'])}  (tp {s['tp']} fp {s['fp']} fn {s['fn']})",
             f"  conflict      P {f(c['precision'])}  R {f(c['recall'])}  F1 {f(c['f1'])}  (tp {c['tp']} fp {c['fp']} fn {c['fn']})",
             f"  expiry accuracy {f(summary['expiry_accuracy'])} (n {summary['expiry_n']}, no fact {summary['expiry_no_fact']}): "
             f"expired found {f(summary['expired_recall'])}, unexpired kept {f(summary['unexpired_kept'])}; "
             f"valid_to in window {f(summary['valid_to_in_window'])} (n {summary['valid_to_window_n']})",
             f"  scope accuracy {f(summary['scope_accuracy'])} (n {summary['scope_n']})",
             f"  look-alike false-relation rate {f(summary['lookalike_false_relation_rate'])} (n {summary['lookalike_n']})",
             f"  cases fully correct {f(summary['cases_correct'])}; ingest errors {summary['ingest_errors']}",
             "",
             f"  {'category':<20}{'n':>5}{'correct':>9}{'sup':>7}{'conf':>7}{'facts':>7}{'secs':>8}"]
    for cat, r in summary["per_category"].items():
        lines.append(f"  {cat:<20}{r['n']:>5}{f(r['correct']):>9}{f(r['sup_found']):>7}{f(r['conf_found']):>7}"
                     f"{f(r['pair_turns_with_facts']):>7}{r['seconds']:>8}")
    lines.append("  (sup/conf: share of the category's pairs with that edge; facts: labelled pair turns with >= 1 fact)")
    return "\n".join(lines)
