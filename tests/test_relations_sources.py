"""The phrasing and BEAM relation sources (training_data/relations_sources.py, issue 44 item 2)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from evaluation.phrasing import CASES_FILE, load_cases, split
from induction.offline import OfflineExtractor
from induction.relations.features import LABELS
from llmclients.embeddings import HashEmbedder
from training_data.relations_sources import beam_pairs, phrasing_half, phrasing_pairs
from training_data.relations_train import source_counts


def _embed(texts: Sequence[str]) -> np.ndarray:
    return np.asarray(HashEmbedder(64).embed(list(texts)), dtype=np.float32)


def test_the_training_half_is_the_evaluations_tune_half() -> None:
    cases = load_cases(CASES_FILE, "all")
    assert len(cases) >= 300
    assert all(phrasing_half(c.id) == split(c) for c in cases)
    assert {phrasing_half(c.id) for c in cases} == {"tune", "test"}


def _case(cid: str, relation: str) -> dict[str, object]:
    return {"id": cid, "category": "update", "style": "plain",
            "sessions": [{"at": "2025-01-01T10:00:00Z", "turns": [{"role": "user", "text": "I live in Leeds and I love it."}]},
                         {"at": "2025-06-01T10:00:00Z", "turns": [{"role": "user", "text":
                                                                   "I moved to Sheffield, I live in Sheffield now."}]}],
            "pair": {"later": [1, 0], "earlier": [0, 0], "relation": relation}}


def test_phrasing_pairs_take_the_tune_half_and_label_the_pair(tmp_path: Path) -> None:
    tune = next(f"t{i}" for i in range(100) if phrasing_half(f"t{i}") == "tune")
    test = next(f"t{i}" for i in range(100) if phrasing_half(f"t{i}") == "test")
    f = tmp_path / "cases.jsonl"
    f.write_text(json.dumps(_case(tune, "SUPERSEDES")) + "\n" + json.dumps(_case(test, "SUPERSEDES")) + "\n")
    ps = phrasing_pairs(f, "tune", _embed, OfflineExtractor(), False, -1.0, 12)
    assert ps.y and all(g == f"phrasing/{tune}" for g in ps.group)
    assert LABELS.index("supersedes") in ps.y
    with pytest.raises(ValueError):
        phrasing_pairs(f, "test", _embed, OfflineExtractor(), False, -1.0, 12)
    counts = source_counts(np.asarray(ps.source), np.asarray(ps.y))
    assert set(counts) == {"phrasing"} and counts["phrasing"]["supersedes"] >= 1


def test_beam_pairs_label_one_pair_per_question(tmp_path: Path) -> None:
    conv = tmp_path / "100K" / "1"
    conv.mkdir(parents=True)
    msgs = [{"role": "user", "id": 1, "content": "My API answers in 400ms on average."},
            {"role": "assistant", "id": 2, "content": "Caching could help."},
            {"role": "user", "id": 3, "content": "After caching, my API now answers in 250ms on average."}]
    (conv / "chat.json").write_text(json.dumps([{"batch_number": 1, "turns": [msgs]}]))
    (conv / "probing_questions.json").write_text(json.dumps({"knowledge_update": [
        {"question": "How fast is the API?", "conversation_references": ["API answers in 400ms", "API now 250ms"],
         "source_chat_ids": {"original_info": [1], "updated_info": [3]}}]}))
    ps = beam_pairs(tmp_path, _embed, OfflineExtractor(), False, -1.0, 12)
    assert ps.y == [LABELS.index("supersedes")]
    assert ps.source == ["beam/knowledge_update"]


def test_source_weights_weigh_the_loss() -> None:
    from induction.relations.model import FitParams, fit
    from training_data.relations_train import row_weights

    src = np.asarray(["memsyco/a", "phrasing/update", "beam/x"])
    assert row_weights(src, {}) is None
    w20 = row_weights(src, {"phrasing": 20.0})
    assert w20 is not None and w20.tolist() == [1.0, 20.0, 1.0]
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3)).astype(np.float32)
    y = np.where(rng.random(200) < 0.5, 0, 1)
    p = FitParams(epochs=200, lr=0.05, balance=0.0)
    w = np.where(y == 1, 10.0, 1.0)
    plain = fit(X, y, p).predict_proba(X)[:, 1].mean()
    heavy = fit(X, y, p, sample_weight=w).predict_proba(X)[:, 1].mean()
    assert heavy > plain + 0.2
