"""bench/relations_loso.py: which pairs a leave-one-source-out / cross-validation variant trains on, the artefact
it writes (the model adjudicator must load it, not fall back to the rules), the memoised embedder, pooling and bars."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def loso() -> ModuleType:
    spec = importlib.util.spec_from_file_location("relations_loso", ROOT / "bench" / "relations_loso.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["relations_loso"] = mod
    spec.loader.exec_module(mod)
    return mod


def _pairs(width: int) -> dict[str, np.ndarray]:
    src = ["memsyco/valid_memory_selection"] * 4 + ["beam/ku", "locomo/x", "synthetic/f", "phrasing/tune"]
    group = ["r0", "r1", "r2", "r3", "b", "l", "s", "p"]
    rng = np.random.default_rng(0)
    return {"X": rng.normal(size=(8, width)).astype(np.float32), "y": np.array([0, 1, 2, 0, 1, 0, 2, 1]),
            "group": np.array(group), "source": np.array(src),
            "text_new": np.array([f"new {g}" for g in group]), "text_old": np.array([f"old {g}" for g in group])}


def test_train_mask_drops_the_source_and_the_block(loso: ModuleType) -> None:
    from training_data.relations_train import RelationTrainConfig

    cfg = RelationTrainConfig(val_fraction=0.0, fold_by="row")
    d = _pairs(4)
    index = {"r0": 0, "r1": 1, "r2": 2, "r3": 3}
    assert loso.train_mask(cfg, d, set(), None, index).all()
    m = loso.train_mask(cfg, d, {"beam"}, (1, 3), index)
    assert m.tolist() == [True, False, False, True, False, True, True, True]
    no_ms = loso.train_mask(cfg, d, {"memsyco"}, None, index)
    assert no_ms.tolist() == [False] * 4 + [True] * 4


def test_validation_rows_never_train(loso: ModuleType) -> None:
    from training_data.relations_train import RelationTrainConfig, _in_val

    cfg = RelationTrainConfig(val_fraction=0.5, fold_by="row", seed=3)
    d = _pairs(4)
    m = loso.train_mask(cfg, d, set(), None, {})
    assert 0 < int(m[:4].sum()) < 4  # seed 3 puts some rows, not all, in the split
    for i, g in enumerate(d["group"][:4]):
        assert bool(m[i]) == (not _in_val(str(g), 3, 0.5))
    assert m[4:].all()


def test_structural_artefact_loads_in_the_model_adjudicator(loso: ModuleType, tmp_path: Path) -> None:
    from induction.adjudication.model import ModelAdjudicator
    from induction.config import RelationModelConfig
    from induction.relations.features import STRUCT_NAMES
    from induction.relations.model import PROBE
    from llmclients.embeddings import HashEmbedder
    from training_data.relations_train import RelationModelConfig as FitConfig
    from training_data.relations_train import RelationTrainConfig

    emb = HashEmbedder(384)
    d = _pairs(len(STRUCT_NAMES) + 2 * emb.dim)
    d["dim"], d["probe"] = np.asarray(emb.dim), emb.embed([PROBE])[0]
    cfg = RelationTrainConfig(model=FitConfig(epochs=3))
    mask = np.ones(8, bool)
    mask[5] = False
    over = loso.fit_structural(cfg, d, mask, tmp_path)
    assert over["artefact_dir"] == str(tmp_path)
    adj = ModelAdjudicator.load(emb, RelationModelConfig(**over))
    assert adj.model.manifest["pairs"] == 7
    assert "locomo" not in adj.model.manifest["source_counts"] and "beam" in adj.model.manifest["source_counts"]


def test_memo_embedder_embeds_each_text_once(loso: ModuleType) -> None:
    calls: list[list[str]] = []

    class Inner:
        dim = 3

        def embed(self, texts: list[str]) -> np.ndarray:
            calls.append(list(texts))
            return np.array([[len(t), 0, 1] for t in texts], dtype=np.float32)

    e = loso.MemoEmbedder(Inner())
    a = e.embed(["ab", "c", "ab"])
    b = e.embed(["c", "def"])
    assert calls == [["ab", "c"], ["def"]]
    assert a[:, 0].tolist() == [2, 1, 2] and b[:, 0].tolist() == [1, 3]
    assert e.embed([]).shape == (0, 3)


def test_pooled_weighs_rows_and_bars(loso: ModuleType) -> None:
    def part(rows: int, leaks: int, ptl_rows: int, ptl: int) -> dict[str, object]:
        s = {k: 0.0 for k in loso.KEYS} | {"outdated_leak": float(leaks), "partial_turn_leak": float(ptl),
                                            "current_valid": float(rows)}
        return {"rows": rows, "errors": 0, "partial_turn_rows": ptl_rows, "leaked_rows_ordered": ["x"] * leaks,
                "sums": {"ordered": s, "nearest_item": s}}

    p = loso.pooled([part(40, 2, 20, 1), part(10, 3, 10, 2)])
    assert p["rows"] == 50 and p["ordered"]["outdated_leak"] == 0.1 and p["ordered"]["partial_turn_leak"] == 0.1
    assert len(p["leaked_rows_ordered"]) == 5
    lines = loso.check("cv", p)
    assert any("ordered outdated_leak 0.100 (95% CI 0.043-0.214, 50 rows) <= 0.06: NOT MET" in x for x in lines)
    good = loso.pooled([part(50, 1, 10, 0)])
    assert all("NOT MET" not in x for x in loso.check("no-memsyco", good))


def test_a_stopped_runs_log_pools_the_rows_it_scored(loso: ModuleType, tmp_path: Path) -> None:
    def row(rid: str, leak: int, ptl: int, ptl_row: int, cv: int) -> str:
        f = f"outdated_leak={leak},partial_turn_leak={ptl},outdated_leak_any=1,current_valid={cv},current_hit=1,ptl_row={ptl_row}"
        return f"  ROW {rid} ordered:{f} nearest_item:{f}"

    log = tmp_path / "cv0.log"
    log.write_text("\n".join(["pairs 10", "[cv-0-40] trained on 9 pairs in 1s", row("a", 1, 1, 1, 1),
                              row("b", 0, 0, 0, 0), row("c", 0, 0, 1, 1), "[no-memsyco] trained on 4 pairs in 1s",
                              row("a", 1, 0, 1, 0)]) + "\n")
    parts = loso.rows_of_log(log)
    assert [m for m, _ in parts] == ["cv", "no-memsyco"]
    cv = loso.pooled([parts[0][1]])
    assert cv["rows"] == 3 and cv["ordered"]["outdated_leak"] == round(1 / 3, 3)
    assert cv["ordered"]["partial_turn_leak"] == 0.5 and cv["ordered"]["current_valid"] == round(2 / 3, 3)
    assert cv["leaked_rows_ordered"] == ["a"] and parts[1][1]["rows"] == 1
