"""MemSyco-Bench development rows as policy-training instances (read-only: ../shared/data/memsyco-bench,
or $EVOMEM_DATA_DIR/memsyco-bench; see training_data/paths.py).

Each row's ``memory.items`` become the facts (the memory a store would hold after the dialogue);
``status`` outdated/current becomes a SUPERSEDES edge, and in Memory-Evidence Conflict the decisive and
preference-supporting search excerpts (they are in the dialogue's <information> block, so a memory
system can know them) become evidence facts in CONFLICTS_WITH with the preference. D.1 distractors:
memories of *other* rows on a different topic, presented as the same user's unrelated preferences.

Targets: two tasks have a clean short answer and get the ``choice`` scorer — Memory-Evidence Conflict
(expected candidate vs the preference-aligned one) and Objective Fact Judgment (TruthfulQA's best
answer vs the sycophantic one). The others are open-ended and get the ``judge`` scorer (token F1 when
no judge is configured). The rubric and reference are answer keys: they go into ``reference_answer``
and ``metadata`` only, never into the request or the facts.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from graph.models import FactKind
from training_data.base import Category, FactSpec, GoldUse, TrainingInstance, assemble, shuffled_choices
from training_data.paths import memsyco_root

TASKS: dict[str, Category] = {
    "personalized_memory_use": "preference-use",
    "valid_memory_selection": "update",
    "memory_evidence_conflict": "conflict",
    "contextual_scope_control": "scope",
    "objective_fact_judgment": "belief-vs-evidence",
}
_GOLD: dict[str, GoldUse] = {
    "use": GoldUse(use=True, role="current-preference", priority="high"),
    "current": GoldUse(use=True, role="current-preference", priority="high"),
    "outdated": GoldUse(use=False, role="historical", priority="low"),
    "defer_to_evidence": GoldUse(use=True, role="current-preference", priority="low"),
    "constrain_to_scope": GoldUse(use=True, role="current-preference", priority="medium"),
    "ignore_as_evidence": GoldUse(use=False, role="irrelevant", priority="low"),
    "evidence": GoldUse(use=True, role="evidence", priority="high"),
    "side_evidence": GoldUse(use=True, role="evidence", priority="medium"),
    "distractor": GoldUse(use=False, role="irrelevant", priority="low"),
}


def _kind(item_type: str, policy: str) -> FactKind:
    if policy == "ignore_as_evidence":
        return "belief"  # a liked framing of a factual question: the user's belief, not evidence
    return "experience" if item_type == "motivation" else "preference"


class MemSycoSource:
    """Instances from the five MemSyco-Bench task files in ``root``."""

    name = "memsyco"

    def __init__(self, root: str | Path | None = None, tasks: Sequence[str] | None = None,
                 max_distractors: int = 2, limit_per_task: int | None = None):
        self.root = Path(root) if root is not None else memsyco_root()
        self.tasks = list(tasks or TASKS)
        unknown = [t for t in self.tasks if t not in TASKS]
        if unknown:
            raise ValueError(f"unknown MemSyco tasks {unknown}; choose from {sorted(TASKS)}")
        self.max_distractors, self.limit = max_distractors, limit_per_task

    def rows(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for task in self.tasks:
            path = self.root / f"{task}.jsonl"
            if not path.is_file():
                raise FileNotFoundError(f"{path} not found (MemSyco-Bench root is {self.root})")
            rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
            out.extend(rows[: self.limit] if self.limit else rows)
        return out

    def instances(self, seed: int) -> Iterator[TrainingInstance]:
        rows = self.rows()
        pool = [(r["metadata"].get("topic", r["task"]), it["content"]) for r in rows for it in r["memory"]["items"]
                if r["task"] in ("personalized_memory_use", "valid_memory_selection", "contextual_scope_control")]
        for row in rows:
            yield self.make(row, pool, seed)

    def make(self, row: dict[str, Any], pool: Sequence[tuple[str, str]], seed: int) -> TrainingInstance:
        rng = random.Random(f"memsyco:{seed}:{row['id']}")
        task, policy = row["task"], row["memory"]["policy"]
        ev, rubric = row["evaluation"], row["evaluation"]["rubric"]
        specs: list[FactSpec] = []
        rels: list[tuple[str, str, str]] = []
        for n, item in enumerate(row["memory"]["items"]):
            status = item["status"]
            gold = _GOLD[status] if status in ("current", "outdated") else _GOLD[policy]
            specs.append(FactSpec(key=f"m{n}", statement=item["content"], kind=_kind(item["type"], policy), gold=gold,
                                  days=rng.randint(150, 300) if status == "outdated" else rng.randint(5, 120)))
        current = [s.key for s, it in zip(specs, row["memory"]["items"]) if it["status"] == "current"]
        outdated = [s.key for s, it in zip(specs, row["memory"]["items"]) if it["status"] == "outdated"]
        rels += [("SUPERSEDES", c, o) for c in current for o in outdated]
        choices = None
        reference, scorer = ev["reference_answer"], "judge"
        if task == "memory_evidence_conflict":
            specs.append(FactSpec(key="evidence", kind="event", days=rng.randint(1, 4), gold=_GOLD["evidence"],
                                  statement=f"Search results for the user's decision: {rubric['decisive_evidence']}"))
            specs.append(FactSpec(key="side", kind="event", days=rng.randint(1, 4), gold=_GOLD["side_evidence"],
                                  statement=f"Search results also noted: {rubric['preference_supporting_evidence']}"))
            rels += [("CONFLICTS_WITH", "evidence", s.key) for s in specs if s.key.startswith("m")]
            reference = rubric["expected_behavior"]
            choices = shuffled_choices(reference, [ev["preference_aligned_answer"]], rng)
            scorer = "choice"
        elif task == "objective_fact_judgment":
            reference = rubric["required_conclusion"]
            choices = shuffled_choices(reference, [rubric["sycophancy_failure"]], rng)
            scorer = "choice"
        topic = row["metadata"].get("topic", task)
        others = [c for t, c in pool if t != topic]
        for n in range(rng.randint(1 if others else 0, self.max_distractors if others else 0)):
            specs.append(FactSpec(key=f"d{n}", statement=rng.choice(others), days=rng.randint(5, 300),
                                  gold=_GOLD["distractor"]))
        key = f"memsyco-{row['id']}"
        items, gold_uses, _ = assemble(key, key, specs, rels, rng)  # type: ignore[arg-type]
        return TrainingInstance(
            instance_id=f"memsyco:{row['id']}", source=self.name, category=TASKS[task], user_id=key,
            request=row["question"], evidence=items, reference_answer=reference, choices=choices,
            scorer=scorer, gold=gold_uses,
            metadata={"task": task, "policy": policy, "subtype": row["metadata"].get("subtype"), "topic": topic,
                      "reference_long": ev["reference_answer"], "rubric": rubric})
