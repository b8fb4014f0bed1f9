"""MemSyco-Bench, judge-free: does the right memory come back, and does the misleading one come back marked?

- ``valid_memory_selection`` (update): ``evaluation.memsyco_selection.evaluate_memsyco`` (current-hit,
  outdated-leak, order; see that module for the matching rule) is reused as is.
- The other four tasks have one remembered (``active``) item each. A stored fact stands for a gold
  item when it is the item's most similar fact at or above the same cosine threshold; the item is
  *retrieved* when that fact is in the bundle. Whether it arrives *marked* depends on what makes it
  misleading in that task:

  ============================  ==========================================  =========================
  task                          why the item misleads                        marked when the fact is
  ============================  ==========================================  =========================
  memory_evidence_conflict      stronger evidence outweighs the preference   disputed or superseded
  contextual_scope_control      the preference holds only inside a scope     scoped (state.scope set)
  objective_fact_judgment       a preference is not evidence about facts     kind preference or belief
  personalized_memory_use       (not misleading: it should be used)          current (usable)
  ============================  ==========================================  =========================

Baseline (NaiveRAG over the row's user turns, the memory's embedder, same K): each gold item is
located at its most similar user turn; retrieved = that turn is in the top K; turns carry no markers.
"""

from __future__ import annotations

import time
from collections import Counter
from types import SimpleNamespace
from functools import partial
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from evaluation.metrics import bootstrap_ci
from retrieval.retrieve import EvidenceItem, RetrievalConfig
from induction.adapters import MemsycoRow, load_memsyco
from induction.branch import validity_map
from evaluation.memsyco_selection import Matching, MemsycoEvalConfig, evaluate_memsyco
from induction.pipeline import IngestError, Ingestor
from induction.session import SessionFormatError

UPDATE_FILE = "valid_memory_selection.jsonl"
OTHER_TASKS: dict[str, tuple[str, Callable[[EvidenceItem], bool]]] = {
    "memory_evidence_conflict": ("disputed or superseded", lambda it: it.state.validity in ("disputed", "superseded")),
    "contextual_scope_control": ("scoped", lambda it: bool(it.state.scope)),
    "objective_fact_judgment": ("kind preference/belief", lambda it: it.fact.kind in ("preference", "belief")),
    "personalized_memory_use": ("current (usable)", lambda it: it.state.validity == "current"),
}


class TaskRow(BaseModel):
    id: str
    gold_retrieved: bool
    marked: bool
    baseline_retrieved: bool
    facts: int
    stored_marked: bool = False
    fact_kind: str | None = None
    fact_validity: str | None = None
    error: str | None = None


def _user_turns(row: MemsycoRow) -> list[str]:
    return [t.text for t in row.session.turns if t.role.lower() == "user"]


def _nearest_turn_ranks(row: MemsycoRow, items: Sequence[str], embed: Callable[[Sequence[str]], np.ndarray]) -> tuple[list[int], list[int]]:
    """Per gold item, the index of its most similar user turn; and the turn ranking for the question."""
    turns = _user_turns(row)
    if not turns:
        return [], []
    tv = embed(turns)
    near = [int(np.argmax(tv @ v)) for v in embed(list(items))]
    qv = embed([row.question])[0]
    return near, [int(i) for i in np.argsort(-(tv @ qv), kind="stable")]


def vms_baseline(rows: Sequence[MemsycoRow], embed: Callable[[Sequence[str]], np.ndarray], k: int) -> dict[str, Any]:
    """NaiveRAG over user turns for valid_memory_selection (turns are never marked superseded)."""
    hit: list[float] = []
    leak: list[float] = []
    order: list[float] = []
    for row in rows:
        cur = [i.content for i in row.items if i.status == "current"]
        old = [i.content for i in row.items if i.status == "outdated"]
        near, ranking = _nearest_turn_ranks(row, cur + old, embed)
        if not near:
            for xs in (hit, leak, order):
                xs.append(0.0)
            continue
        top = ranking[:k]
        rank = {t: r for r, t in enumerate(ranking)}
        c_turns, o_turns = near[: len(cur)], near[len(cur):]
        h = any(t in top for t in c_turns)
        leaked = [t for t in o_turns if t in top]
        hit.append(float(h))
        leak.append(float(bool(leaked)))
        best = min(rank[t] for t in c_turns) if h else None
        order.append(float(h and all(best < rank[t] for t in leaked)))  # type: ignore[operator]
    n = len(rows)
    return {"current_hit": _mean(hit), "outdated_leak": _mean(leak), "order": _mean(order), "n_rows": n,
            "ci": {"current_hit": bootstrap_ci(hit), "outdated_leak": bootstrap_ci(leak), "order": bootstrap_ci(order)}}


def _mean(xs: Sequence[float]) -> float:
    return round(sum(xs) / len(xs), 4) if xs else 0.0


def evaluate_task(rows: Sequence[MemsycoRow], task: str, ingestor: Ingestor, k: int, threshold: float,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    marker, is_marked = OTHER_TASKS[task]
    mem = ingestor.memory
    out: list[TaskRow] = []
    for n, row in enumerate(rows):
        near, ranking = _nearest_turn_ranks(row, [i.content for i in row.items], mem.embedder.embed)
        base = bool(near) and any(t in ranking[:k] for t in near)
        try:
            ingestor.ingest(row.session)
        except IngestError as e:
            out.append(TaskRow(id=row.id, gold_retrieved=False, marked=False, baseline_retrieved=base, facts=0, error=str(e)))
            continue
        user = row.session.user_id
        snap = mem.store.load_snapshot(user)
        ids = list(snap.facts)
        bundle = mem.retrieve(user, row.question, k=k) if ids else None
        got: list[EvidenceItem] = []
        stored = False  # the marker on the gold item's stored fact, retrieved or not (induction, not retrieval)
        if ids and bundle is not None:
            fv = mem.embedder.embed([snap.facts[i].statement for i in ids])
            by_id = bundle.by_id()
            validity = validity_map(snap, ids)
            for v in mem.embedder.embed([it.content for it in row.items]):
                sims = fv @ v
                j = int(np.argmax(sims))
                if sims[j] >= threshold:
                    f = snap.facts[ids[j]]
                    shim = SimpleNamespace(fact=f, state=SimpleNamespace(validity=validity.get(ids[j]), scope=f.scope))
                    stored = stored or bool(is_marked(shim))  # type: ignore[arg-type]
                if sims[j] >= threshold and ids[j] in by_id:
                    got.append(by_id[ids[j]])
        out.append(TaskRow(id=row.id, gold_retrieved=bool(got), marked=any(is_marked(it) for it in got), stored_marked=stored,
                           baseline_retrieved=base, facts=len(ids), fact_kind=got[0].fact.kind if got else None,
                           fact_validity=got[0].state.validity if got else None))
        if progress:
            progress(n + 1, len(rows))
    g = [float(r.gold_retrieved) for r in out]
    m = [float(r.marked) for r in out]
    b = [float(r.baseline_retrieved) for r in out]
    return {"gold_retrieved": _mean(g), "marked": _mean(m), "marker": marker, "n_rows": len(out),
            "stored_marked": _mean([float(r.stored_marked) for r in out]),
            "retrieved_kinds": dict(Counter(r.fact_kind for r in out if r.fact_kind).most_common()),
            "retrieved_validity": dict(Counter(r.fact_validity for r in out if r.fact_validity).most_common()),
            "errors": sum(1 for r in out if r.error), "ci": {"gold_retrieved": bootstrap_ci(g), "marked": bootstrap_ci(m)},
            "baseline": {"naive_rag": {"gold_retrieved": _mean(b), "marked": 0.0}}}


def memsyco_report(data: str | Path, ingestor: Ingestor, k: int = 10, threshold: float = 0.45, limit: int | None = None,
                   skip: int = 0, matching: Matching = "ordered",
                   tasks: Sequence[str] | None = None, user_prefix: str = "memsyco-",
                   progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """All MemSyco-Bench task files found in ``data``; the top level is valid_memory_selection."""
    root = Path(data)
    if not root.is_dir():
        raise SessionFormatError(str(root), None, "", "no such folder (expected the MemSyco-Bench data folder)")
    wanted = list(tasks) if tasks else [UPDATE_FILE[:-6], *OTHER_TASKS]
    present = [t for t in wanted if (root / f"{t}.jsonl").is_file()]
    if not present:
        raise SessionFormatError(str(root), None, "", f"none of {', '.join(f'{t}.jsonl' for t in wanted)} here")
    t0 = time.perf_counter()
    rep: dict[str, Any] = {"benchmark": "memsyco"}
    mem = ingestor.memory
    saved = mem.retrieval
    mem.retrieval = saved.model_copy(update={"k": k}) if isinstance(saved, RetrievalConfig) else saved
    try:
        if UPDATE_FILE[:-6] in present:
            vms = evaluate_memsyco(root, ingestor, MemsycoEvalConfig(file=UPDATE_FILE, k=k, match_threshold=threshold,
                                                                     limit=limit, skip=skip, matching=matching),
                                   (lambda n, tot: progress(UPDATE_FILE[:-6], n, tot)) if progress else None)
            rows = vms.rows
            rep.update(vms.model_dump(mode="json", exclude={"rows"}))
            rep["ci"] = {f: bootstrap_ci([float(getattr(r, f)) for r in rows]) for f in ("current_hit", "outdated_leak", "order")}
            vrows = [r for r in load_memsyco(root / UPDATE_FILE) if r.policy == "update" or any(i.status == "current" for i in r.items)]
            vrows = vrows[skip:]
            rep["baselines"] = {"naive_rag": vms_baseline(vrows[:limit] if limit else vrows, mem.embedder.embed, k)}
        rep["tasks"] = {}
        for task in present:
            if task == UPDATE_FILE[:-6]:
                continue
            task_rows = load_memsyco(root / f"{task}.jsonl", user_prefix=f"{user_prefix}{task}-")
            task_rows = task_rows[skip:]
            task_rows = task_rows[:limit] if limit else task_rows
            rep["tasks"][task] = evaluate_task(task_rows, task, ingestor, k, threshold,
                                               partial(progress, task) if progress else None)
    finally:
        mem.retrieval = saved
    rep["seconds"] = round(time.perf_counter() - t0, 2)
    return rep
