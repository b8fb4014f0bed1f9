"""Gold turns of the MemSyco valid-memory-selection dev rows (``evaluation/annotations/``, see its README).

The benchmark names each gold item but not the turn that states it, so the judge-free check finds an item's
stored fact by similarity. These labels say which user turns state each item; the eval reads them only
after ingest and retrieval, to measure how often its matching picks a fact of the right turn and to score
every item through its annotated turn. Nothing under ``induction/``, ``graph/`` or ``training_data/`` reads them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from induction.adapters import MemsycoRow

DEFAULT_TURNS = Path(__file__).resolve().parent / "annotations" / "memsyco_valid_memory_selection_turns.jsonl"


class ItemTurns(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    k: int = Field(ge=0, description="The item's index in the row's memory.items.")
    status: Literal["outdated", "current"]
    turns: tuple[int, ...] = Field(min_length=1, description="Every dialogue index (user turns) that states a part of the item.")
    primary: int = Field(ge=0, description="The turn that states the item best.")

    @model_validator(mode="after")
    def _primary_listed(self) -> ItemTurns:
        if self.primary not in self.turns:
            raise ValueError(f"primary turn {self.primary} is not among turns {list(self.turns)}")
        return self


class RowTurns(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    items: tuple[ItemTurns, ...] = Field(min_length=1)


class AnnotationError(ValueError):
    """An annotation file that cannot be read or does not fit the rows it labels."""


def load_turn_annotations(path: str | Path = DEFAULT_TURNS) -> dict[str, RowTurns]:
    """Row id -> its items' gold turns. Raises ``AnnotationError`` naming the line on any bad line."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise AnnotationError(f"{p}: cannot read: {e.strerror or e}") from None
    out: dict[str, RowTurns] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = RowTurns.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValidationError) as e:
            raise AnnotationError(f"{p}:{n}: {e}") from None
        if r.id in out:
            raise AnnotationError(f"{p}:{n}: row {r.id} is labelled twice")
        out[r.id] = r
    return out


def check_against(rows: Sequence[MemsycoRow], labels: dict[str, RowTurns]) -> None:
    """Every label must name an item of its row with the same status and a user turn of its dialogue."""
    by_id = {r.id: r for r in rows}
    for rid, lab in labels.items():
        row = by_id.get(rid)
        if row is None:
            continue  # labels for rows outside this slice
        turns = row.session.turns
        for it in lab.items:
            if it.k >= len(row.items) or row.items[it.k].status != it.status:
                raise AnnotationError(f"row {rid}: item {it.k} is not a {it.status} item of the row")
            bad = [t for t in it.turns if t >= len(turns) or turns[t].role != "user"]
            if bad:
                raise AnnotationError(f"row {rid}: item {it.k} names turns {bad} that are not user turns of the dialogue")
