"""The cross-encoder relation model (induction/relations/cross.py, training_data/relations_cross.py): the split
MiniLM reads a statement as the base model does, a short fine-tune learns and round-trips through its small
artefact, a foreign base model is refused, and at ingest the model proposes while graph.rules disposes (the
reading cues veto nothing when ``cue_gates`` is off). Loads the shipped MiniLM package from disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graph.snapshot import Snapshot
from induction.adjudication.model import ModelAdjudicator
from induction.config import RelationModelConfig
from induction.relations.features import LABELS, STRUCT_NAMES
from llmclients.embeddings import HashEmbedder
from tests.test_relations_model import _Always, _cand, _fact, _resolution

torch = pytest.importorskip("torch")

PAIRS = [  # (older, newer, label)
    ("I love hiking in the mountains.", "These days I'd much rather lie on a beach than hike.", 1),
    ("I drive to work every day.", "Sold the car, I take the train now.", 1),
    ("I'm allergic to peanuts.", "Ate a peanut butter sandwich, felt totally fine.", 2),
    ("I never drink coffee.", "Had three espressos this morning, love the stuff.", 2),
    ("I love hiking in the mountains.", "My sister lives in Lyon.", 0),
    ("I drive to work every day.", "What time is it in Tokyo?", 0),
    ("I'm allergic to peanuts.", "My cat is called Miso.", 0),
    ("I never drink coffee.", "I started a pottery class.", 0),
]


def _data(n_rep: int = 4) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    rows = PAIRS * n_rep
    return {"X": rng.standard_normal((len(rows), len(STRUCT_NAMES))).astype(np.float32) * 0.01,
            "y": np.asarray([r[2] for r in rows]), "source": np.asarray(["synthetic/x"] * len(rows)),
            "group": np.asarray([str(i) for i in range(len(rows))]),
            "text_old": np.asarray([r[0] for r in rows]), "text_new": np.asarray([r[1] for r in rows])}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    from training_data.relations_cross import CrossModelConfig, train_cross

    d = _data()
    mask = np.ones(len(d["y"]), bool)
    cc = CrossModelConfig(split=5, hidden=32, epochs=12, batch_size=8, lr=2e-4, head_lr=5e-3, threads=1,
                          max_minutes=5, negatives={}, oversample={})
    model, vs = train_cross(d, mask, mask, cc, seed=0, log=lambda row: None)
    x0 = model.mean.tolist()
    p0 = model.predict_pairs([PAIRS[2][1]], [PAIRS[2][0]], np.asarray([x0], np.float32))[0]
    model.manifest = {"kind": "cross", "labels": list(LABELS), "features": list(STRUCT_NAMES), "config": cc.model_dump(),
                      "probe": {"old": PAIRS[2][0], "new": PAIRS[2][1], "x": x0, "p": p0.tolist()}, "validation": vs}
    where = tmp_path_factory.mktemp("cross")
    model.save(where, "c")
    return model, where


def test_the_split_model_reads_a_statement_as_the_base_model_does() -> None:
    from transformers import AutoModel, AutoTokenizer

    from induction.relations.cross import _additive, _out, base_path, build_net

    net = build_net(4, 16, len(STRUCT_NAMES))
    tok = AutoTokenizer.from_pretrained(base_path())
    enc = tok(["I'm allergic to shellfish.", "Had shrimp tacos, felt great."], padding=True, return_tensors="pt")
    h = net.lower_states(enc["input_ids"], enc["attention_mask"])
    for layer in net.upper:
        h = _out(layer(h, attention_mask=_additive(enc["attention_mask"], h.dtype)))
    ref = AutoModel.from_pretrained(base_path()).eval()(**enc).last_hidden_state
    m = enc["attention_mask"].bool()
    assert float((h - ref)[m].abs().max()) < 1e-4
    assert all(not p.requires_grad for p in net.lower.parameters())
    assert all(p.requires_grad for p in net.upper.parameters())


def test_a_short_fine_tune_learns_its_pairs(trained: tuple[Any, Path]) -> None:
    model, _ = trained
    X = np.zeros((len(PAIRS), len(STRUCT_NAMES)), np.float32)
    P = model.predict_pairs([p[1] for p in PAIRS], [p[0] for p in PAIRS], X)
    assert P.shape == (len(PAIRS), len(LABELS)) and np.allclose(P.sum(1), 1, atol=1e-5)
    assert (P.argmax(1) == np.asarray([p[2] for p in PAIRS])).mean() >= 0.75


def test_the_artefact_is_small_round_trips_and_refuses_another_base(trained: tuple[Any, Path], tmp_path: Path) -> None:
    from induction.relations.cross import CrossRelationModel

    model, where = trained
    npz = where / "c.npz"
    assert npz.stat().st_size < 8 * 2 ** 20  # one fine-tuned layer and the head, float16; the base is the package
    back = CrossRelationModel.load(where, "c")
    X = np.zeros((len(PAIRS), len(STRUCT_NAMES)), np.float32)
    a = model.predict_pairs([p[1] for p in PAIRS], [p[0] for p in PAIRS], X)
    b = back.predict_pairs([p[1] for p in PAIRS], [p[0] for p in PAIRS], X)
    assert np.abs(a - b).max() < 0.02
    man = json.loads((where / "c.json").read_text())
    man["probe"]["p"] = [0.0, 0.0, 0.0, 1.0]  # as if fine-tuned on another base
    (tmp_path / "c.json").write_text(json.dumps(man))
    (tmp_path / "c.npz").write_bytes(npz.read_bytes())
    with pytest.raises(ValueError):
        CrossRelationModel.load(tmp_path, "c")
    man["kind"] = "logistic"
    (tmp_path / "c.json").write_text(json.dumps(man))
    with pytest.raises(ValueError):
        CrossRelationModel.load(tmp_path, "c")


def test_the_adjudicator_loads_the_cross_kind_and_the_rules_dispose(trained: tuple[Any, Path]) -> None:
    _, where = trained
    adj = ModelAdjudicator.load(HashEmbedder(8), RelationModelConfig(kind="cross", artefact_dir=str(where),
                                                                      artefact_name="c", cue_gates=False))
    assert getattr(adj.model, "kind", "") == "cross"
    new = _cand("new", PAIRS[2][1], "event", seq=2, cues=())
    d = adj.adjudicate(_resolution(new, [_fact("old", PAIRS[2][0], "preference")]), Snapshot(user_id="u")).decisions[0]
    assert d.supersedes == []  # an event never replaces a preference (graph.rules), whatever the model says
    # never backwards in time: the older side cannot be replaced by or set against what came before it
    d = adj.adjudicate(_resolution(new, [_fact("old", PAIRS[2][0], "preference")], older=False),
                       Snapshot(user_id="u")).decisions[0]
    assert d.supersedes == [] and d.conflicts_with == []


def test_without_cue_gates_the_cues_veto_nothing() -> None:
    """A restatement with more detail carries no contrast cue: the gates veto the model's conflict; with
    ``cue_gates`` off the model's word stands (graph.rules still disposes)."""
    old = [_fact("old", "I'm using Bootstrap 5.3.0 for my layout.", "circumstance")]
    more = _cand("new", "I'm using Bootstrap 5.3.0 and I've added tabindex to my buttons.", "circumstance", seq=2, cues=())
    on = ModelAdjudicator(_Always("conflicts_with", 0.85), HashEmbedder(8), RelationModelConfig())
    off = ModelAdjudicator(_Always("conflicts_with", 0.85), HashEmbedder(8),
                           RelationModelConfig(cue_gates=False, same_holder_conflict_threshold=0.8))
    assert on.adjudicate(_resolution(more, old), Snapshot(user_id="u")).decisions[0].conflicts_with == []
    assert off.adjudicate(_resolution(more, old), Snapshot(user_id="u")).decisions[0].conflicts_with == ["old"]


class _Recorder:
    """A cross model that records the older statements it is asked about and says 'supersedes' to each."""

    kind = "cross"
    pair_embedding = False

    def __init__(self) -> None:
        self.asked: list[str] = []

    def predict_pairs(self, new: list[str], old: list[str], X: np.ndarray) -> np.ndarray:
        self.asked += list(old)
        P = np.zeros((len(old), len(LABELS)), np.float32)
        P[:, LABELS.index("supersedes")] = 1.0
        return P


class _Screen:
    n_features = len(STRUCT_NAMES)

    def __init__(self, related: list[float]):
        self.related = np.asarray(related, np.float32)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        P = np.zeros((len(X), len(LABELS)), np.float32)
        P[:, 0] = 1.0 - self.related
        P[:, LABELS.index("supersedes")] = self.related
        return P


def test_the_cross_pass_reads_only_the_screens_top_candidates() -> None:
    olds = ["a", "b", "c", "d", "e"]
    X = np.zeros((len(olds), len(STRUCT_NAMES)), np.float32)
    X[:, STRUCT_NAMES.index("same_holder")] = 1  # one holder: the rules could join every pair (edge_possible)
    rec = _Recorder()
    adj = ModelAdjudicator(rec, HashEmbedder(8), RelationModelConfig(kind="cross", cross_top_k=2))  # type: ignore[arg-type]
    adj.screen = _Screen([0.1, 0.9, 0.05, 0.6, 0.3])  # type: ignore[assignment]
    P = adj._cross("new", olds, X)
    assert sorted(rec.asked) == ["b", "d"]
    sup = LABELS.index("supersedes")
    assert P[1, sup] == 1.0 and P[3, sup] == 1.0 and (P[[0, 2, 4], 0] == 1.0).all()  # the rest: unrelated
    rec.asked.clear()
    adj.cfg = RelationModelConfig(kind="cross", cross_top_k=0, cross_screen_floor=0.2)
    adj._cross("new", olds, X)
    assert sorted(rec.asked) == ["b", "d", "e"]
    rec.asked.clear()
    adj.cfg, adj.screen = RelationModelConfig(kind="cross", cross_top_k=3), None  # no screen: closest first
    adj._cross("new", olds, X)
    assert rec.asked == ["a", "b", "c"]


def test_the_cross_kind_takes_its_thresholds_from_the_manifest(trained: tuple[Any, Path], tmp_path: Path) -> None:
    _, where = trained
    man = json.loads((where / "c.json").read_text())
    man["thresholds"] = [0.7, 0.6, 0.9]
    (tmp_path / "c.json").write_text(json.dumps(man))
    (tmp_path / "c.npz").write_bytes((where / "c.npz").read_bytes())
    adj = ModelAdjudicator.load(HashEmbedder(8), RelationModelConfig(kind="cross", artefact_dir=str(tmp_path),
                                                                      artefact_name="c"))
    assert (adj.cfg.supersede_threshold, adj.cfg.conflict_threshold, adj.cfg.same_holder_conflict_threshold) == (0.7, 0.6, 0.9)
    assert adj.screen is not None  # the shipped logistic model screens the candidates
    mine = ModelAdjudicator.load(HashEmbedder(8), RelationModelConfig(kind="cross", artefact_dir=str(tmp_path),
                                                                       artefact_name="c", cross_thresholds=(0.5, 0.4, 0.3)))
    assert mine.cfg.conflict_threshold == 0.4


# (label, new kind/holder, stored kind/holder, stored is older, retype on: supersedes, conflicts, the new fact's kind)
RETYPE = [
    # "I started eating fish again, so I'm pescatarian now" is an event to the extractor: it takes the replaced kind
    ("supersedes", ("event", "user"), ("constraint", "user"), True, ["old"], [], "constraint"),
    ("supersedes", ("preference", "user"), ("circumstance", "user"), True, ["old"], [], "circumstance"),
    ("supersedes", ("event", "Ann"), ("circumstance", "Bob"), True, [], [], "event"),  # still one holder only
    ("supersedes", ("event", "user"), ("circumstance", "user"), False, [], [], "event"),  # still never backwards
    # the user's claim the assistant's evidence disputes counts as a belief, whatever its guessed kind
    ("conflicts_with", ("belief", "assistant"), ("event", "user"), True, [], ["old"], "belief"),
    ("conflicts_with", ("plan", "user"), ("belief", "assistant"), True, [], ["old"], "plan"),
    ("conflicts_with", ("belief", "assistant"), ("belief", "document"), True, [], [], "belief"),  # evidence vs evidence
    ("conflicts_with", ("belief", "Ann"), ("event", "Bob"), True, [], [], "belief"),  # two people may differ
]


@pytest.mark.parametrize("label,new,old,older,sup,conf,kind", RETYPE)
def test_cross_retype_lets_the_model_read_the_kind_and_the_rules_keep_holders_and_time(
        label: str, new: tuple[str, str], old: tuple[str, str], older: bool, sup: list[str], conf: list[str],
        kind: str) -> None:
    def decide(cfg: RelationModelConfig) -> Any:
        c = _cand("new", "I started eating fish again, so I'm pescatarian now.", new[0], new[1], seq=2)
        res = _resolution(c, [_fact("old", "I'm a vegetarian.", old[0], old[1])], older=older)
        return ModelAdjudicator(_Always(label, 0.9), HashEmbedder(8), cfg).adjudicate(res, Snapshot(user_id="u")).decisions[0]

    on = decide(RelationModelConfig(kind="cross", cue_gates=False, cross_retype=True))
    assert (on.supersedes, on.conflicts_with, on.kind or new[0]) == (sup, conf, kind)
    # off (the default), or with the logistic kind, the extractor's kinds decide as before: none of these pass
    for cfg in (RelationModelConfig(kind="cross", cue_gates=False), RelationModelConfig(cue_gates=False, cross_retype=True)):
        off = decide(cfg)
        assert (off.supersedes, off.conflicts_with) == ([], [])
