"""The shipped relation model's outdated leak on MemSyco development rows it was never trained on (the held-out
block its manifest names), and the partial-turn leak the MemSyco report gives beside the one-fact leak."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from evaluation.memsyco_annotations import ItemTurns, RowTurns
from evaluation.memsyco_selection import MemsycoEvalConfig, evaluate_memsyco, partial_turn_leak

ARTEFACT = Path(__file__).resolve().parent.parent / "induction" / "relations" / "artefact"


def _item(fid: str, kind: str, validity: str) -> Any:
    return SimpleNamespace(fact=SimpleNamespace(fact_id=fid, kind=kind), state=SimpleNamespace(validity=validity))


LABELS = RowTurns(id="r", items=(ItemTurns(k=0, status="outdated", turns=(2, 4), primary=2),
                                 ItemTurns(k=1, status="current", turns=(6,), primary=6)))


@pytest.mark.parametrize("items,position,leak", [
    ([_item("a", "preference", "superseded"), _item("b", "circumstance", "current")], {"a": 2, "b": 2}, True),
    ([_item("a", "preference", "superseded"), _item("b", "circumstance", "superseded")], {"a": 2, "b": 2}, False),
    ([_item("a", "preference", "superseded"), _item("e", "event", "current")], {"a": 2, "e": 2}, False),  # happened
    ([_item("c", "preference", "current")], {"c": 6}, False),  # the current turn's fact
    ([_item("d", "preference", "current")], {"d": 4}, False),  # another annotated turn, not the primary one
    ([_item("x", "belief", "disputed")], {"x": 2}, True),  # disputed is not marked outdated
])
def test_partial_turn_leak(items: list[Any], position: dict[str, int], leak: bool) -> None:
    assert partial_turn_leak(LABELS, SimpleNamespace(items=items), position) is leak  # type: ignore[arg-type]


def test_a_change_turn_annotated_for_both_items_is_left_out() -> None:
    both = RowTurns(id="r", items=(ItemTurns(k=0, status="outdated", turns=(3,), primary=3),
                                   ItemTurns(k=1, status="current", turns=(3,), primary=3)))
    bundle = SimpleNamespace(items=[_item("a", "preference", "current")])
    assert partial_turn_leak(both, bundle, {"a": 3}) is False  # type: ignore[arg-type]
    only_current = RowTurns(id="r", items=(ItemTurns(k=1, status="current", turns=(3,), primary=3),))
    assert partial_turn_leak(only_current, bundle, {"a": 3}) is None  # type: ignore[arg-type]


def _heldout() -> tuple[int, int]:
    manifest = json.loads((ARTEFACT / "relations-v1.json").read_text())
    block = manifest["train_config"]["memsyco_heldout"]
    assert block and block[1] > block[0], "the shipped relation model's manifest names no held-out MemSyco rows"
    return int(block[0]), int(block[1])


ROWS = 16  # the first rows of the held-out block: about a minute of CPU (4 min wall at load average 13)


@pytest.mark.slow
def test_shipped_model_leak_on_rows_it_was_not_trained_on(tmp_path: Path, bench_data: Path) -> None:
    """The default ingestion (offline extractor, shipped relation model, MiniLM) on the first ROWS rows of the
    held-out block of valid_memory_selection (the manifest's ``memsyco_heldout``; training never reads them).

    Measured 2026-12-07 on rows 40-55 with the artefact of 72f3b56 (ordered matching; `python
    bench/relations_vms_rows.py --skip-rows 40 --rows 50 --quiet`, its first 16 rows): one-fact leak 0.0625,
    partial-turn leak 0.125, any leak 0.94, current still current 0.875. The bounds are the issue's
    leave-one-source-out bar (one-fact leak <= 0.15, current still current >= 0.85) and twice the measured
    partial-turn leak (<= 0.25): a model that only learned the training rows' wording misses them.
    """
    from graph.embedded import EmbeddedStore
    from induction.pipeline import make_ingestor
    from llmclients.embeddings import EmbedderConfig, make_embedder
    from memcore.memory import Memory

    a, b = _heldout()
    store = EmbeddedStore(tmp_path / "store")
    store.setup()
    ing = make_ingestor(Memory(store, make_embedder(EmbedderConfig())))
    assert ing.adjudicator.name == "model" and getattr(ing.adjudicator, "fallback_reason", None) is None
    rep = evaluate_memsyco(bench_data / "memsyco-bench", ing, MemsycoEvalConfig(skip=a, limit=min(ROWS, b - a)))
    assert rep.n_rows == min(ROWS, b - a) and rep.errors == 0
    assert rep.outdated_leak <= 0.15 and rep.current_valid >= 0.85, rep.model_dump(exclude={"rows"})
    assert rep.partial_turn_leak is not None and rep.partial_turn_leak <= 0.25


def test_the_memsyco_report_shows_the_three_leaks() -> None:
    from evaluation.report import memsyco_markdown

    md = memsyco_markdown({"current_hit": 1.0, "outdated_leak": 0.1, "partial_turn_leak": 0.25,
                           "outdated_leak_any": 0.5, "order": 0.9, "n_rows": 50, "matching": "ordered",
                           "baselines": {"naive_rag": {"current_hit": 0.8, "outdated_leak": 0.7, "order": 0.5,
                                                       "n_rows": 50}}})
    head, evomem, base = [line for line in md.splitlines() if line.startswith("| ") and "---" not in line][:3]
    assert "partial-turn leak" in head and "any leak" in head
    assert "| 0.100 | 0.250 | 0.500 | 0.900 | 50 |" in evomem
    assert "| 0.700 | – | – | 0.500 | 50 |" in base  # the baseline has no turn-level figures
    assert "share the order-in-time construction" in md
