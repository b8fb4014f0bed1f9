"""Do Reasoning States help another memory system? (the paper's transfer claim, judge-free)

Per MemSyco-Bench dev row: the row's dialogue goes into a turn-level NaiveRAG index (evaluation/
baselines.py, the memory's own embedder), which retrieves its top-``k`` turns for the row's question —
what a plain RAG memory would hand an agent. The deterministic reader (policy/reader.py) then picks
between the row's right answer and the failure its rubric names (OPTION_KEYS; e.g. the update task:
the expected behaviour vs the answer of an assistant relying on the old preference):

- ``rag``: the retrieved turns alone (every turn weighs the same: the naive agent);
- ``rag+state``: the same turns, read through the Reasoning State that policy/transfer.py builds over
  them — the turns become external memory items (speaker = holder, dialogue position = time), go
  through induction's extractor, resolution and relation step on a scratch store, and the configured
  policy decides per fact; each turn takes the decision of its facts (``item_state``);
- ``facts+state``: what the reader makes of the induced facts themselves with the state (for scale).

Accuracy = the reader picked the right option. The answer keys are read only to build the two options
and score; Personalized Memory Use names no wrong answer and is not scored.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evaluation.baselines import TurnIndex
from induction.adapters import MemsycoRow, load_memsyco
from induction.pipeline import Ingestor
from policy.base import Policy
from policy.external import ExternalItem
from policy.reader import AnswerReader
from policy.rule import RulePolicy
from policy.state import ReasoningState
from policy.transfer import external_state, item_state, items_as_evidence

TASK_FILES = ("valid_memory_selection.jsonl", "memory_evidence_conflict.jsonl",
              "contextual_scope_control.jsonl", "objective_fact_judgment.jsonl")
_T0 = datetime(2024, 1, 1)


class TransferEvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    files: tuple[str, ...] = Field(default=TASK_FILES, description="MemSyco task files inside the data folder.")
    k: int = Field(default=5, ge=1, le=50, description="Turns NaiveRAG retrieves per question.")
    limit: int | None = Field(default=None, ge=1, description="First N rows of each file (quick runs).")


class TransferRow(BaseModel):
    id: str
    task: str
    rag: bool
    rag_state: bool
    facts_state: bool
    items: int
    facts: int
    relations: int
    fallback: str | None = None


class TransferReport(BaseModel):
    n_rows: int
    k: int
    policy: str
    reader: str
    accuracy: dict[str, float] = Field(description="rag, rag+state, facts+state over every scored row.")
    by_task: dict[str, dict[str, float]]
    gain: float = Field(description="rag+state minus rag accuracy.")
    relations_per_row: float
    seconds: float
    rows: list[TransferRow]


# The two options per task: the rubric's right behaviour vs the failure it names (as training_data/
# memsyco.py builds its choice instances where it has them). Personalized Memory Use names no wrong
# answer, so its rows are not scored.
OPTION_KEYS: dict[str, tuple[str, str]] = {
    "valid_memory_selection": ("rubric.expected_behavior", "rubric.failure_behavior"),
    "memory_evidence_conflict": ("rubric.expected_behavior", "preference_aligned_answer"),
    "contextual_scope_control": ("rubric.expected_behavior", "rubric.failure_behavior"),
    "objective_fact_judgment": ("rubric.required_conclusion", "rubric.sycophancy_failure"),
}


def options(row_id: str, task: str, evaluation: dict[str, Any]) -> tuple[str, str, tuple[str, ...]] | None:
    """(reference, wrong, both in a fixed per-row order so position never decides), or None."""
    keys = OPTION_KEYS.get(task)
    if keys is None:
        return None

    def get(path: str) -> str:
        cur: Any = evaluation
        for part in path.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        return cur.strip() if isinstance(cur, str) else ""

    ref, wrong = get(keys[0]), get(keys[1])
    if not ref or not wrong or ref == wrong:
        return None
    flip = int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % 2
    return ref, wrong, ((wrong, ref) if flip else (ref, wrong))


def turn_state(decisions: dict[str, object], ids: Sequence[str]) -> ReasoningState | None:
    facts = [d for iid in ids if (d := decisions.get(iid)) is not None]
    return ReasoningState(facts=tuple(facts)) if facts else None  # type: ignore[arg-type]


def score_row(row: MemsycoRow, evaluation: dict[str, Any], base: Ingestor, policy: Policy, cfg: TransferEvalConfig,
              reader: AnswerReader) -> TransferRow | None:
    opts = options(row.id, row.task, evaluation)
    if opts is None:
        return None
    ref, _, choices = opts
    turns = [(row.session.turn_id(i), t.role, t.text) for i, t in enumerate(row.session.turns)]
    index = TurnIndex(base.memory.embedder)
    index.add(turns)
    hit = index.search("naive_rag", row.question, index.embedder.embed([row.question])[0], cfg.k)
    pos = {t[0]: i for i, t in enumerate(turns)}
    picked = sorted(hit.turn_ids, key=lambda t: pos[t])  # dialogue order = time order
    items = [ExternalItem(text=turns[pos[t]][2], holder=turns[pos[t]][1], id=t, at=_T0 + timedelta(hours=pos[t]))
             for t in picked]
    plain = items_as_evidence(items)
    naive = reader.answer(row.question, plain, choices, None)
    res = external_state(items, row.question, base, policy)
    decisions = item_state(res.scratch, res.state)
    # items_as_evidence and item_state both alias by position, so the state reads over the turns
    with_state = reader.answer(row.question, plain, choices, turn_state(dict(decisions), [it.id or "" for it in items]))
    on_facts = reader.answer(row.question, res.scratch.bundle.items, choices, res.state)
    rels = sum(len(i.state.relations) for i in res.scratch.bundle.items) // 2
    return TransferRow(id=row.id, task=row.task, rag=naive == ref, rag_state=with_state == ref, facts_state=on_facts == ref,
                       items=len(items), facts=len(res.scratch.bundle.items), relations=rels, fallback=res.fallback)


def evaluate_transfer(data_dir: str | Path, base: Ingestor, policy: Policy | None = None,
                      cfg: TransferEvalConfig | None = None,
                      progress: Callable[[int, int], None] | None = None) -> TransferReport:
    cfg = cfg or TransferEvalConfig()
    policy = policy or RulePolicy()
    reader = AnswerReader()
    rows: list[tuple[MemsycoRow, dict[str, Any]]] = []
    for f in cfg.files:
        path = Path(data_dir) / f
        keys = {(r := json.loads(line))["id"]: r.get("evaluation", {}) for line in path.read_text().splitlines()
                if line.strip()}  # answer keys: read only to build the two options and score
        rs = [r for r in load_memsyco(path) if r.task in OPTION_KEYS]
        rows += [(r, keys[r.id]) for r in (rs[: cfg.limit] if cfg.limit else rs)]
    t0 = time.perf_counter()
    out: list[TransferRow] = []
    for n, (row, evaluation) in enumerate(rows):
        r = score_row(row, evaluation, base, policy, cfg, reader)
        if r is not None:
            out.append(r)
        if progress:
            progress(n + 1, len(rows))

    def acc(rs: Sequence[TransferRow], attr: str) -> float:
        return round(sum(getattr(r, attr) for r in rs) / len(rs), 4) if rs else 0.0

    tasks: dict[str, list[TransferRow]] = defaultdict(list)
    for r in out:
        tasks[r.task].append(r)
    names = {"rag": "rag", "rag+state": "rag_state", "facts+state": "facts_state"}
    accuracy = {k: acc(out, v) for k, v in names.items()}
    return TransferReport(n_rows=len(out), k=cfg.k, policy=getattr(policy, "name", "?"), reader=reader.name,
                          accuracy=accuracy, by_task={t: {k: acc(rs, v) for k, v in names.items()} | {"n": len(rs)}
                                                      for t, rs in sorted(tasks.items())},
                          gain=round(accuracy["rag+state"] - accuracy["rag"], 4),
                          relations_per_row=round(sum(r.relations for r in out) / max(1, len(out)), 3),
                          seconds=round(time.perf_counter() - t0, 1), rows=out)
