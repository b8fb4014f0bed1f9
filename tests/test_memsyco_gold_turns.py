"""MemSyco valid selection: the ordered matching, the shipped gold-turn annotations and the figures read
through them (evaluation/memsyco_selection.py, evaluation/memsyco_annotations.py)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from evaluation.memsyco_annotations import (DEFAULT_TURNS, AnnotationError, RowTurns, check_against,
                                            load_turn_annotations)
from evaluation.memsyco_selection import match_items, score_row
from induction.adapters import MemsycoRow, load_memsyco

# Rows of sims are facts; columns are (outdated item, current item).
_POS = {"f0": 1, "f1": 3, "f2": 5}


@pytest.mark.parametrize("sims,pos,eligible,expected", [
    # the old view restated after the change (f2) is the outdated item's most similar fact; the pair in
    # turn order is f0 -> f1
    ([[0.70, 0.50], [0.40, 0.80], [0.85, 0.60]], _POS, None, {0: "f0", 1: "f1"}),
    # no outdated fact before the current one: fall back to the nearest item
    ([[0.40, 0.80], [0.80, 0.50]], {"f0": 2, "f1": 4}, None, {0: "f1", 1: "f0"}),
    # an assistant's sentence (f1) may not stand for the user's item, even if it is the most similar
    ([[0.70, 0.50], [0.40, 0.90], [0.40, 0.70]], _POS, {"f0", "f2"}, {0: "f0", 1: "f2"}),
    # ... nor in the fallback
    ([[0.40, 0.90], [0.80, 0.50]], {"f0": 2, "f1": 4}, {"f1"}, {0: "f1"}),
    # below the threshold nothing stands for an item
    ([[0.44, 0.30], [0.30, 0.40]], _POS, None, {}),
    # a fact nearer the other item cannot stand for this one: f1 is nearer the outdated item
    ([[0.70, 0.50], [0.75, 0.72]], _POS, None, {0: "f1"}),
    # the highest summed similarity wins among ordered pairs (0.7 + 0.9 > 0.8 + 0.6)
    ([[0.80, 0.40], [0.70, 0.50], [0.30, 0.90]], {"f0": 1, "f1": 2, "f2": 3}, None, {0: "f0", 1: "f2"}),
    ([[0.80, 0.40], [0.70, 0.30], [0.30, 0.60], [0.20, 0.90]], {"f0": 3, "f1": 1, "f2": 4, "f3": 2}, None,
     {0: "f1", 1: "f3"}),
])
def test_ordered_matching_pairs_the_earlier_view_with_the_later(sims: list[list[float]], pos: dict[str, int],
                                                                eligible: set[str] | None,
                                                                expected: dict[int, str]) -> None:
    ids = [f"f{n}" for n in range(len(sims))]
    assert match_items(["outdated", "current"], ids, np.asarray(sims), 0.45, "ordered", pos, eligible) == expected


def test_ordered_matching_falls_back_beyond_one_outdated_and_one_current_item() -> None:
    sims = np.asarray([[0.9, 0.1, 0.2], [0.1, 0.8, 0.3], [0.2, 0.3, 0.7]])
    status = ["current", "outdated", "current"]
    ids = ["a", "b", "c"]
    assert match_items(status, ids, sims, 0.45, "ordered", {"a": 0, "b": 5, "c": 9}) == \
        match_items(status, ids, sims, 0.45, "nearest_item")


def _embed(texts: list[str]) -> Any:
    # a fake embedder for the scoring logic only: one axis per topic word
    v = np.array([[float("hik" in t.lower()), float("beach" in t.lower()), 0.1] for t in texts], dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _case(again_holder: str = "user") -> tuple[MemsycoRow, Any, dict[str, str], dict[str, str], dict[str, int], dict[str, str]]:
    row = MemsycoRow.model_validate({"id": "r", "task": "valid_memory_selection", "question": "q", "policy": "update",
                                     "session": {"session_id": "s", "user_id": "u",
                                                 "turns": [{"role": "user", "text": "x"}] * 5},
                                     "items": [{"content": "Loves hiking.", "type": "preference", "status": "outdated"},
                                               {"content": "Prefers beach trips.", "type": "preference", "status": "current"}]})
    statements = {"f_old": "I love hiking.", "f_new": "I prefer beach trips.", "f_again": "Beach days are the best."}
    validity = {"f_old": "superseded", "f_new": "current", "f_again": "disputed"}
    items = [SimpleNamespace(fact=SimpleNamespace(fact_id=f, statement=t, kind="preference"),
                             state=SimpleNamespace(validity=validity[f])) for f, t in statements.items()]
    bundle = SimpleNamespace(items=items, explain=SimpleNamespace(seeds=[SimpleNamespace(fact_id=f) for f in statements]))
    return row, bundle, statements, validity, {"f_old": 0, "f_new": 2, "f_again": 4}, \
        {"f_old": "user", "f_new": "user", "f_again": again_holder}


def test_gold_turns_read_each_item_through_its_annotated_turn() -> None:
    row, bundle, statements, validity, pos, holders = _case()
    # the annotator put the current item at turn 4, where the stored fact ended up disputed
    labels = RowTurns.model_validate({"id": "r", "items": [{"k": 0, "status": "outdated", "turns": [0], "primary": 0},
                                                           {"k": 1, "status": "current", "turns": [4], "primary": 4}]})
    r = score_row(row, bundle, statements, _embed, 0.45, validity, pos, "ordered", holders, labels)  # type: ignore[arg-type]
    assert r.current_valid and not r.wrong_way and not r.outdated_leak  # the matching read f_new (turn 2)
    assert r.annotated_items == 2 and r.matched_in_gold_turn == 1  # f_old is in its turn, f_new is not
    assert r.gold_turns is not None
    assert r.gold_turns.current_hit and not r.gold_turns.current_valid and r.gold_turns.wrong_way
    assert not r.gold_turns.outdated_leak
    # without labels there is no gold-turn judgement
    bare = score_row(row, bundle, statements, _embed, 0.45, validity, pos, "ordered", holders)  # type: ignore[arg-type]
    assert bare.gold_turns is None and bare.annotated_items == 0 and bare.matched_in_gold_turn is None
    # an assistant's sentence in the annotated turn cannot stand for the user's item
    row, bundle, statements, validity, pos, holders = _case(again_holder="assistant")
    r = score_row(row, bundle, statements, _embed, 0.45, validity, pos, "ordered", holders, labels)  # type: ignore[arg-type]
    assert r.gold_turns is not None and not r.gold_turns.current_hit and not r.gold_turns.wrong_way


@pytest.mark.parametrize("line,error", [
    ("not json", "1:"),
    ('{"id": "a", "items": [{"k": 0, "status": "outdated", "turns": [1], "primary": 3}]}', "primary turn 3"),
    ('{"id": "a", "items": [{"k": 0, "status": "stale", "turns": [1], "primary": 1}]}', "status"),
    ('{"id": "a", "items": []}', "items"),
])
def test_a_bad_annotation_line_is_named(tmp_path: Path, line: str, error: str) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(AnnotationError, match=error):
        load_turn_annotations(p)


def test_a_row_labelled_twice_or_against_its_row_is_refused(tmp_path: Path) -> None:
    good = {"id": "a", "items": [{"k": 0, "status": "outdated", "turns": [0], "primary": 0}]}
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(AnnotationError, match="labelled twice"):
        load_turn_annotations(p)
    row = MemsycoRow.model_validate({"id": "a", "task": "t", "question": "q", "policy": "update",
                                     "session": {"session_id": "s", "user_id": "u",
                                                 "turns": [{"role": "user", "text": "x"}, {"role": "assistant", "text": "y"}]},
                                     "items": [{"content": "c", "type": "preference", "status": "current"}]})
    with pytest.raises(AnnotationError, match="not a outdated item"):
        check_against([row], {"a": RowTurns.model_validate(good)})
    at_assistant = {"id": "a", "items": [{"k": 0, "status": "current", "turns": [1], "primary": 1}]}
    with pytest.raises(AnnotationError, match="not user turns"):
        check_against([row], {"a": RowTurns.model_validate(at_assistant)})


def test_the_shipped_annotations_fit_the_dev_rows(bench_data: Path) -> None:
    labels = load_turn_annotations(DEFAULT_TURNS)
    rows = [r for r in load_memsyco(bench_data / "memsyco-bench" / "valid_memory_selection.jsonl")
            if r.policy == "update" or any(i.status == "current" for i in r.items)]
    check_against(rows, labels)
    assert len(labels) == len(rows) == 193 and set(labels) == {r.id for r in rows}
    for lab in labels.values():
        by = {it.status: it for it in lab.items}
        assert sorted(it.status for it in lab.items) == ["current", "outdated"]
        # the task defines the outdated view as the one held before the change
        assert by["outdated"].primary < by["current"].primary, lab.id
