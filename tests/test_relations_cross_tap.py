"""The cross kind reuses the ingest embedder's pass (CrossRelationModel.tap, issue 44: ingest <= 1.25x rules): the
lower states it takes from the embedder's hooks are the ones it would compute itself, a long statement or another
embedder takes nothing, and the scores do not change. Loads the shipped MiniLM package from disk."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from induction.relations.features import STRUCT_NAMES
from llmclients.embeddings import EmbedderConfig, HashEmbedder, LazyEmbedder

torch = pytest.importorskip("torch")


def _model(split: int = 5) -> Any:
    from transformers import AutoTokenizer

    from induction.relations.cross import CrossRelationModel, base_path, build_net

    torch.manual_seed(0)
    net = build_net(split, 16, len(STRUCT_NAMES)).eval()
    n = len(STRUCT_NAMES)
    return CrossRelationModel(net, AutoTokenizer.from_pretrained(base_path()), np.zeros(n), np.ones(n),
                              {"config": {"split": split, "max_tokens": 24}})


def test_tapped_states_are_the_ones_the_model_computes_and_scores_do_not_change() -> None:
    texts = ["I'm allergic to shellfish.", "Had shrimp tacos last night and felt totally fine.",
             "My flatmate cooks lentil soup every Sunday, it smells great.",
             "This is a rather long statement that goes on and on about the many different things that happened "
             "at the allotment over the whole of last summer, far beyond the token limit."]
    mine, ref = _model(), _model()
    emb = LazyEmbedder(EmbedderConfig())
    assert mine.tap(emb) and not mine.tap(emb)  # hooked once
    emb.embed(texts)
    got, want = mine._lower(texts), ref._lower(texts)
    assert mine.tap_hits == 3  # the long statement (> max_tokens) is read by the model itself
    assert max(float((a - b).abs().max()) for a, b in zip(got, want)) < 1e-3
    X = np.zeros((2, len(STRUCT_NAMES)), np.float32)
    p, q = mine.predict_pairs(texts[1:3], texts[:2], X), ref.predict_pairs(texts[1:3], texts[:2], X)
    assert np.abs(p - q).max() < 1e-3


def test_another_embedder_is_not_tapped() -> None:
    assert not _model().tap(HashEmbedder(8))
    assert not _model(split=0).tap(LazyEmbedder(EmbedderConfig()))


def test_the_cross_pass_skips_pairs_no_rule_could_join() -> None:
    from induction.adjudication.cross import edge_possible, kept
    from induction.config import RelationModelConfig

    X = np.zeros((4, len(STRUCT_NAMES)), np.float32)
    col = {n: STRUCT_NAMES.index(n) for n in ("same_holder", "new_evidence", "old_evidence")}
    X[0, col["same_holder"]] = 1  # the user's own earlier statement
    X[1, col["old_evidence"]] = 1  # the user against the assistant's evidence
    X[3, col["new_evidence"]] = X[3, col["old_evidence"]] = 1  # two pieces of evidence
    # row 2: two different people ("Ann" vs "Bob")
    assert edge_possible(X).tolist() == [True, True, False, False]
    cfg = RelationModelConfig(kind="cross", cross_top_k=0, cross_screen_floor=0.0)
    assert kept(None, cfg, X).tolist() == [0, 1]
    assert kept(None, cfg.model_copy(update={"cross_holder_screen": False}), X).tolist() == [0, 1, 2, 3]
    assert kept(None, RelationModelConfig(kind="cross", cross_top_k=1), X).tolist() == [0]


def test_load_cross_taps_the_ingest_embedder_unless_told_not_to(monkeypatch: pytest.MonkeyPatch) -> None:
    from induction.adjudication.cross import load_cross
    from induction.config import RelationModelConfig
    from induction.relations import cross as cross_mod

    made: list[Any] = []

    def fake_load(*_a: Any, **_k: Any) -> Any:
        made.append(_model())
        made[-1].manifest["thresholds"] = None
        return made[-1]

    monkeypatch.setattr(cross_mod.CrossRelationModel, "load", staticmethod(fake_load))
    emb = LazyEmbedder(EmbedderConfig())
    load_cross(RelationModelConfig(kind="cross", cross_tap=False), emb)
    load_cross(RelationModelConfig(kind="cross"), emb)
    emb.embed(["I'm allergic to shellfish."])
    assert not made[0]._tapped and len(made[1]._tapped) == 1
