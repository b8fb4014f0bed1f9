"""The judge-free MemSyco check (evaluation/memsyco_selection.py): fields, matching rule, and behaviour on
hand-written update dialogues with the real MiniLM embedder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memcore.memory import Memory
from graph.embedded import EmbeddedStore
from evaluation.memsyco_selection import MemsycoEvalConfig, evaluate_memsyco
from induction.pipeline import make_ingestor
from llmclients.embeddings import HashEmbedder


def _row(rid: str, turns: list[str], question: str, current: str, outdated: str) -> dict[str, Any]:
    dialogue = []
    for t in turns:
        dialogue += [{"role": "user", "content": t}, {"role": "assistant", "content": "I understand."}]
    return {"id": rid, "task": "valid_memory_selection", "dialogue": dialogue, "question": question,
            "memory": {"policy": "update", "items": [{"content": outdated, "type": "preference", "status": "outdated"},
                                                     {"content": current, "type": "preference", "status": "current"}]},
            "evaluation": {"reference_answer": "x", "rubric": {"a": "b"}}, "metadata": {"subtype": "reversal"}}


ROWS = [
    _row("r1", ["I love hiking in the mountains every weekend, it is my favourite way to relax.",
                "My sister lives in Lisbon and works as a nurse.",
                "These days I no longer enjoy hiking; I now prefer lazy beach trips with a good book."],
         "Can you suggest a relaxing weekend trip for me?",
         "Now prefers lazy beach trips with a book.", "Loves hiking in the mountains every weekend."),
    _row("r2", ["I always drink black coffee in the morning, strong and without sugar.",
                "I switched to green tea because coffee makes me jittery, so no more coffee for me."],
         "What should I drink tomorrow morning?",
         "Drinks green tea instead of coffee.", "Drinks strong black coffee every morning."),
]


def _mem(tmp_path: Path, embedder: Any) -> Memory:
    s = EmbeddedStore(tmp_path / "store")
    s.setup()
    return Memory(s, embedder)


def test_dev_slice_floor(tmp_path: Path, bench_data: Path) -> None:
    """The first 20 dev rows (valid_memory_selection) with the hashing embedder: the harness's fields,
    progress and annotations, fast. The shipped relation model reads MiniLM vectors, so with word hashes
    the default ingestion falls back to the rules (checked below); the shipped model's floors are in the
    MiniLM test below.

    Measured 2026-12-06 (rules, hashing): current_hit 0.20, order 0.20, current_valid 0.20; gold turns
    current_hit 0.75. Deterministic (word hashes, rules). The floors are those figures: a retrieval that
    loses the current item (or an extractor that keeps nothing) scores 0 here.
    """
    m = _mem(tmp_path, HashEmbedder(256))
    default = make_ingestor(m)
    assert default.adjudicator.name == "rules" and "embedder" in (getattr(default.adjudicator, "fallback_reason", None)
                                                                    or "")
    seen: list[int] = []
    rep = evaluate_memsyco(bench_data / "memsyco-bench", default, MemsycoEvalConfig(limit=20),
                           lambda n, t: seen.append(n))
    assert rep.n_rows == 20 and seen == list(range(1, 21)) and rep.errors == 0 and rep.extractor == "offline"
    assert all(r.facts > 0 for r in rep.rows) and rep.match_threshold == 0.45
    assert rep.current_hit >= 0.2 and rep.order >= 0.2 and rep.current_valid >= 0.2
    # the dev rows are annotated (evaluation/annotations/): every row gets gold-turn figures
    assert rep.matching == "ordered" and rep.gold_turns is not None and rep.gold_turns.n_rows == 20
    assert rep.gold_turns.current_hit >= 0.75
    assert all(r.annotated_items == 2 for r in rep.rows) and rep.matching_agreement is not None


@pytest.mark.slow
def test_updates_are_found_and_marked_with_minilm(tmp_path: Path) -> None:
    from llmclients.embeddings import EmbedderConfig, make_embedder

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "valid_memory_selection.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS))
    m = _mem(tmp_path, make_embedder(EmbedderConfig()))
    ing = make_ingestor(m)  # the default ingestion: offline extractor, shipped relation model
    assert ing.adjudicator.name == "model"
    rep = evaluate_memsyco(tmp_path / "d", ing, MemsycoEvalConfig())
    assert rep.n_rows == 2
    for r in rep.rows:
        assert r.current_hit and r.current_valid, r
        assert not r.outdated_leak and r.outdated_fact, r  # the old preference was stored and arrives superseded
        assert r.order


@pytest.mark.slow
def test_dev_slice_floor_with_minilm(tmp_path: Path, bench_data: Path) -> None:
    """The same 20 dev rows as shipped: the CPU default embedder (MiniLM) and the default ingestion
    (offline extractor, the trained relation model in induction/relations/artefact/).

    Measured 2026-12-06 (the same at 32a332a and with the artefact then in the working tree; CPU,
    deterministic): current_hit 1.00, order 0.95, current_valid 0.85, outdated_marked 0.85,
    outdated_leak 0.10, wrong_way 0.15; gold turns current_valid 1.00, wrong_way 0.00. (The rules
    adjudicator on the same rows: current_valid 0.80, outdated_marked 0.70, leak 0.20, wrong way 0.20.)
    The floors and ceilings are those figures, no margin: one row lost fails the test.
    """
    from llmclients.embeddings import EmbedderConfig, make_embedder

    m = _mem(tmp_path, make_embedder(EmbedderConfig()))
    ing = make_ingestor(m)
    assert ing.adjudicator.name == "model" and getattr(ing.adjudicator, "fallback_reason", None) is None
    rep = evaluate_memsyco(bench_data / "memsyco-bench", ing, MemsycoEvalConfig(limit=20))
    assert rep.n_rows == 20 and rep.errors == 0
    assert rep.current_hit >= 1.0 and rep.order >= 0.95 and rep.current_valid >= 0.85 and rep.outdated_marked >= 0.85
    assert rep.outdated_leak <= 0.1 and rep.wrong_way <= 0.15
    assert rep.gold_turns is not None and rep.gold_turns.current_valid >= 1.0 and rep.gold_turns.wrong_way == 0.0


def _keyword_embed(texts: list[str]) -> Any:
    import numpy as np

    # a fake embedder for the matching logic only: one axis per topic word
    v = np.array([[float("hik" in t.lower()), float("beach" in t.lower()), 0.1] for t in texts], dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("old_pos,new_pos,out_of_order", [
    (0, 2, False),  # the old view, then the change: a later-replaces-earlier relation can mark it
    (4, 2, True),   # the old view recounted after the change
    (2, 2, True),   # one turn names both ("I used to love hiking, but now beach trips")
])
def test_out_of_order_rows_are_told_apart(old_pos: int, new_pos: int, out_of_order: bool) -> None:
    from types import SimpleNamespace

    from evaluation.memsyco_selection import score_row
    from induction.adapters import MemsycoRow

    row = MemsycoRow.model_validate({"id": "r", "task": "valid_memory_selection", "question": "q", "policy": "update",
                                     "session": {"session_id": "s", "user_id": "u", "turns": [{"role": "user", "text": "x"}]},
                                     "items": [{"content": "Loves hiking.", "type": "preference", "status": "outdated"},
                                               {"content": "Prefers beach trips.", "type": "preference", "status": "current"}]})
    statements = {"f_old": "I love hiking.", "f_new": "I prefer beach trips."}
    items = [SimpleNamespace(fact=SimpleNamespace(fact_id=f, statement=t, kind="preference"),
                             state=SimpleNamespace(validity="current")) for f, t in statements.items()]
    bundle = SimpleNamespace(items=items, explain=SimpleNamespace(seeds=[SimpleNamespace(fact_id=f) for f in statements]))
    r = score_row(row, bundle, statements, _keyword_embed, 0.45,  # type: ignore[arg-type]
                  {"f_old": "current", "f_new": "current"}, {"f_old": old_pos, "f_new": new_pos})
    assert r.current_hit and r.outdated_leak  # both retrieved, the old one unmarked
    assert r.out_of_order is out_of_order
    assert score_row(row, bundle, statements, _keyword_embed, 0.45).out_of_order is False  # type: ignore[arg-type]


@pytest.mark.parametrize("sims,matching,expected", [
    # the current item restates the old view: its most similar fact is the old sentence (0.75 > 0.70)
    ([[0.80, 0.75], [0.50, 0.70]], "greedy", {1: "f0", 0: "f1"}),
    ([[0.80, 0.75], [0.50, 0.70]], "nearest_item", {0: "f0", 1: "f1"}),
    # below the threshold nothing stands for an item, under either rule
    ([[0.40, 0.30], [0.20, 0.44]], "nearest_item", {}),
    ([[0.40, 0.30], [0.20, 0.44]], "greedy", {}),
    # a fact as near to the outdated item as to the current one stands for neither
    ([[0.60, 0.60]], "nearest_item", {}),
    ([[0.60, 0.60]], "greedy", {1: "f0"}),
])
def test_gold_items_match_the_facts_nearest_them(sims: list[list[float]], matching: str, expected: dict[int, str]) -> None:
    import numpy as np

    from evaluation.memsyco_selection import match_items

    ids = [f"f{n}" for n in range(len(sims))]
    assert match_items(["outdated", "current"], ids, np.asarray(sims), 0.45, matching) == expected  # type: ignore[arg-type]


def test_a_part_of_the_outdated_item_claims_its_fact() -> None:
    from types import SimpleNamespace

    import numpy as np

    from evaluation.memsyco_selection import score_row
    from induction.adapters import MemsycoRow

    old = "Enjoys a mix of classic and modern horror; Enjoys screaming at jump scares with a crowd"
    vec = {old: [1, 1, 0, 0.3], "Enjoys a mix of classic and modern horror": [1, 0, 0, 0.3],
           "Enjoys screaming at jump scares with a crowd": [0, 1, 0, 0], "Prefers classic horror alone.": [0.8, 0, 0.5, 1],
           "We watched a mix of classic and modern horror films.": [1, 0, 0, 0.4],
           "I'd rather watch old horror films alone.": [0, 0, 1, 0.5]}

    def embed(texts: list[str]) -> Any:  # axes: mix, crowd, alone, classic
        v = np.asarray([vec[t] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    row = MemsycoRow.model_validate({"id": "r", "task": "valid_memory_selection", "question": "q", "policy": "update",
                                     "session": {"session_id": "s", "user_id": "u", "turns": [{"role": "user", "text": "x"}]},
                                     "items": [{"content": old, "type": "preference", "status": "outdated"},
                                               {"content": "Prefers classic horror alone.", "type": "preference",
                                                "status": "current"}]})
    statements = {"f_old": "We watched a mix of classic and modern horror films.",
                  "f_new": "I'd rather watch old horror films alone."}
    validity = {"f_old": "superseded", "f_new": "current"}
    items = [SimpleNamespace(fact=SimpleNamespace(fact_id=f, statement=t, kind="preference"),
                             state=SimpleNamespace(validity=validity[f])) for f, t in statements.items()]
    bundle = SimpleNamespace(items=items, explain=SimpleNamespace(seeds=[SimpleNamespace(fact_id=f) for f in statements]))
    # the old sentence is nearer the current item (0.81) than the outdated item's whole text (0.72), but
    # nearest of all to the outdated item's first part (1.00)
    greedy = score_row(row, bundle, statements, embed, 0.45, validity, matching="greedy")  # type: ignore[arg-type]
    assert greedy.wrong_way and greedy.current_fact == statements["f_old"]
    near = score_row(row, bundle, statements, embed, 0.45, validity)  # type: ignore[arg-type]
    assert not near.wrong_way and near.current_valid and near.current_fact == statements["f_new"]
    assert near.outdated_fact == statements["f_old"] and not near.outdated_leak
