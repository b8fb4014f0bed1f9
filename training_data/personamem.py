"""PersonaMem (v1 release format) from local files, as preference-use / update / scope instances.

Files (as released; nothing is downloaded): ``questions_<size>.csv`` with columns ``question_id``,
``question_type``, ``topic``, ``user_question_or_message``, ``correct_answer`` (e.g. "(c)"),
``all_options`` (a Python/JSON list of "(a) ..." strings), ``shared_context_id``,
``end_index_in_shared_context``; and ``shared_contexts_<size>.jsonl`` whose lines are
``{context_id: [{"role", "content"}, ...]}``.

PersonaMem does not ship fact-level annotations, so the facts here are the user's own messages from the
shared context *before* the question (``end_index_in_shared_context`` — later messages would leak the
future): the most recent ones that share words with the question's topic, oldest first, so preference
changes appear in time order. D.1 distractors: one or two of the same user's messages on unrelated
subjects. Question types map to categories (evolution/updates -> update, new scenarios -> scope, the
rest -> preference-use); the gold per fact is unknown and left empty.
"""

from __future__ import annotations

import ast
import csv
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from training_data.base import Category, FactSpec, TrainingInstance, assemble

QTYPE_CATEGORY: dict[str, Category] = {
    "track_full_preference_evolution": "update",
    "revisit_reasons_behind_preference_updates": "update",
    "acknowledge_latest_user_preferences": "update",
    "generalize_to_new_scenarios": "scope",
}
_WORD = re.compile(r"[a-z]{4,}")
_OPT = re.compile(r"^\(([a-z])\)\s*", re.I)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def parse_options(raw: str) -> list[str]:
    """The all_options cell: a Python or JSON list literal.

    >>> parse_options("['(a) tea', '(b) coffee']")
    ['(a) tea', '(b) coffee']
    """
    try:
        val = json.loads(raw)
    except json.JSONDecodeError:
        val = ast.literal_eval(raw)
    return [str(v) for v in val]


class PersonaMemSource:
    """Instances from PersonaMem question + shared-context files (see module doc)."""

    name = "personamem"

    def __init__(self, questions_path: str | Path, contexts_path: str | Path, max_facts: int = 4,
                 max_chars: int = 400, limit: int | None = None):
        self.questions_path, self.contexts_path = Path(questions_path), Path(contexts_path)
        self.max_facts, self.max_chars, self.limit = max_facts, max_chars, limit
        self.skipped = 0

    def _contexts(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for line in self.contexts_path.read_text().splitlines():
            if line.strip():
                out.update(json.loads(line))
        return out

    def instances(self, seed: int) -> Iterator[TrainingInstance]:
        contexts = self._contexts()
        with self.questions_path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        rows = rows[: self.limit] if self.limit else rows
        self.skipped = 0
        for r in rows:
            inst = self.make(r, contexts, seed)
            if inst is None:
                self.skipped += 1
            else:
                yield inst

    def make(self, r: dict[str, str], contexts: dict[str, list[dict[str, Any]]], seed: int) -> TrainingInstance | None:
        ctx = contexts.get(r["shared_context_id"])
        if not ctx:
            return None
        rng = random.Random(f"personamem:{seed}:{r['question_id']}")
        history = [m for m in ctx[: int(r["end_index_in_shared_context"] or len(ctx))]
                   if m.get("role") == "user" and str(m.get("content", "")).strip()]
        query = _words(r["user_question_or_message"] + " " + r.get("topic", "").replace("_", " "))
        related = [(i, m) for i, m in enumerate(history) if _words(m["content"]) & query]
        unrelated = [(i, m) for i, m in enumerate(history) if not _words(m["content"]) & query]
        picked = related[-self.max_facts:]
        if not picked:
            return None
        extra = rng.sample(unrelated, min(len(unrelated), rng.randint(1, 2)))
        n = len(history)
        specs = [FactSpec(key=f"t{i}", statement=m["content"].strip()[: self.max_chars], days=max(1, (n - i) * 3))
                 for i, m in sorted(picked + extra, key=lambda x: x[0])]
        options = [_OPT.sub("", o).strip() for o in parse_options(r["all_options"])]
        letters = [(m.group(1).lower() if (m := _OPT.match(o)) else chr(97 + k))
                   for k, o in enumerate(parse_options(r["all_options"]))]
        want = r["correct_answer"].strip().strip("()").lower()
        if want not in letters:
            return None
        reference = options[letters.index(want)]
        key = f"personamem-{r['question_id']}"
        items, _, _ = assemble(key, f"personamem-{r['shared_context_id'][:16]}", specs, [], rng)
        return TrainingInstance(instance_id=f"personamem:{r['question_id']}", source=self.name,
                                category=QTYPE_CATEGORY.get(r["question_type"], "preference-use"),
                                user_id=f"personamem-{r['shared_context_id'][:16]}",
                                request=r["user_question_or_message"], evidence=items, reference_answer=reference,
                                choices=tuple(options), scorer="choice",
                                metadata={"question_type": r["question_type"], "topic": r.get("topic", "")})
