"""The MiniLM readers (policy/xreader_fast.py, the shipped one; policy/xreader.py, the cross-encoder; issue 48
item 1 fallback).

Training refuses held-out rows (by label and by the 30 % row hash); a short run of each writes an artefact that
loads offline and reproduces its probe; the shipped reader follows the Reasoning State on a toy instance from
no benchmark (and the same check fails for a reader that ignores the state); the GRPO preset swaps it in.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from policy.lmreader import LMAnswerModel, LMReader
from policy.option_scoring import OptionReader, OptionScoring
from policy.reader_tune import oracle_state
from policy.state import ReasoningState
from policy.xreader import (XReader, XReaderConfig, heldout_row, is_xreader, refuse_heldout, render_pair,
                            train_xreader)
from policy.xreader_fast import XFAST_ARTEFACT, XFastConfig, XFastReader, load_any, memory_lines, train_xfast
from training_data.base import FactSpec, TrainingInstance, assemble
from training_data.neutral import NeutralSource

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def neutral(bench_data: Path) -> list[TrainingInstance]:
    return list(NeutralSource(bench_data / "memsyco-bench", limit_per_task=6, expiry_n=8).instances(0))


def _write(rows: list[TrainingInstance], path: Path) -> Path:
    path.write_text("".join(r.model_dump_json() + "\n" for r in rows))
    return path


def toy_holders(swap_order: bool = False) -> TrainingInstance:
    """A belief-vs-document instance written here (no benchmark row): the document is right."""
    specs = [FactSpec(key="belief", kind="belief", days=40, statement="Believes that bats are completely blind."),
             FactSpec(key="doc", kind="event", holder="document", days=5,
                      statement="A reference the user shared states: bats can see, and many also use echolocation."),
             FactSpec(key="d0", days=60, statement="Enjoys hiking in the hills on weekends.")]
    items, gold, _ = assemble("toy-bats", "toy-bats", specs, [("CONFLICTS_WITH", "doc", "belief")], random.Random(3))
    right, wrong = "The answer is: bats can see.", "The answer is: bats are completely blind."
    return TrainingInstance(instance_id="toy:bats", source="toy", category="belief-vs-evidence", user_id="toy-bats",
                            request="Are bats blind? Answer briefly.", evidence=items, reference_answer=right,
                            choices=(wrong, right) if swap_order else (right, wrong), scorer="choice", gold=gold,
                            metadata={"family": "holders", "split": "train"})


def follows_state(reader: Any, inst: TrainingInstance) -> bool:
    """The state decides: the right roles give the right option clearly, the swapped roles the wrong one."""
    bundle = inst.bundle()
    ok = oracle_state(inst)
    bad = oracle_state(inst, wrong=True)
    assert inst.choices
    ref = list(inst.choices).index(inst.reference_answer)
    p_ok = pow(2.718281828, reader.option_logprobs(inst.request, bundle, inst.choices, ok)[ref])
    p_bad = pow(2.718281828, reader.option_logprobs(inst.request, bundle, inst.choices, bad)[ref])
    return p_ok > 0.5 > p_bad and p_ok - p_bad > 0.2


def test_the_held_out_split_is_refused_by_label_and_by_row_hash(neutral: list[TrainingInstance], tmp_path: Path) -> None:
    held = [i for i in neutral if i.metadata["split"] == "heldout"]
    train = [i for i in neutral if i.metadata["split"] == "train"]
    assert held and train and not any(heldout_row(i) for i in train) and all(heldout_row(i) for i in held)
    relabelled = held[0].model_copy(update={"metadata": {**held[0].metadata, "split": "train"}})
    assert heldout_row(relabelled)  # the hash catches a mislabelled row
    with pytest.raises(ValueError, match="held-out"):
        refuse_heldout(train + [relabelled])
    data = _write(train + held, tmp_path / "all.jsonl")
    with pytest.raises(ValueError, match="held-out"):
        train_xreader(XReaderConfig(train_path=str(data), output_dir=str(tmp_path / "r"), steps=1))
    with pytest.raises(ValueError, match="held-out"):
        train_xfast(XFastConfig(train_path=str(data), output_dir=str(tmp_path / "f"), epochs=1))


def test_the_state_is_read_where_its_fact_is_and_rules_come_first() -> None:
    inst = toy_holders()
    st = oracle_state(inst, rules=True)
    text = render_pair(inst.request, inst.bundle(), st, 400)
    doc = next(it.alias for it in inst.evidence if it.fact.fact_id.endswith("::doc"))
    assert f"[{doc} use evidence high]" in text
    assert text.startswith("RULE: ") and text.rstrip().endswith(inst.request)
    plain = render_pair(inst.request, inst.bundle(), "evidence", 400)
    assert f"[{doc}]" in plain and "RULE" not in plain and "use evidence" not in plain
    assert render_pair(inst.request, inst.bundle(), "none", 400) == f"Request: {inst.request}"


def test_a_short_run_writes_an_artefact_that_loads_offline(neutral: list[TrainingInstance], tmp_path: Path) -> None:
    train = _write([i for i in neutral if i.metadata["split"] == "train"], tmp_path / "train.jsonl")
    cfg = XReaderConfig(train_path=str(train), output_dir=str(tmp_path / "run"), artefact=str(tmp_path / "art"),
                        steps=1, batch=2, val_fraction=0.3, val_limit=2, eval_every=1, max_len=128, train_layers=1)
    res = train_xreader(cfg, command="pytest")
    man = json.loads((tmp_path / "art" / "manifest.json").read_text())
    assert man["command"] == "pytest" and man["data"]["train_rows"] > 0 and res["steps_run"] == 1
    assert is_xreader(tmp_path / "art") and not is_xreader(tmp_path)
    r = XReader.load(tmp_path / "art")  # the probe is reproduced, or load raises
    assert r.max_len == 128
    man["probe"]["logits"] = [v + 1.0 for v in man["probe"]["logits"]]
    (tmp_path / "art" / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(ValueError, match="probe"):
        XReader.load(tmp_path / "art")


def test_a_short_fast_run_writes_an_artefact_that_loads_offline(neutral: list[TrainingInstance], tmp_path: Path) -> None:
    train = _write([i for i in neutral if i.metadata["split"] == "train"], tmp_path / "train.jsonl")
    cfg = XFastConfig(train_path=str(train), output_dir=str(tmp_path / "run"), artefact=str(tmp_path / "art"),
                      epochs=2, val_fraction=0.3)
    res = train_xfast(cfg, command="pytest")
    man = json.loads((tmp_path / "art" / "manifest.json").read_text())
    assert man["command"] == "pytest" and man["data"]["samples"] == 6 * man["data"]["train_rows"] > 0
    assert len(man["val_history"]) == 3 and res["best_epoch"] in (0, 1, 2)
    assert isinstance(load_any(tmp_path / "art"), XFastReader) and load_any(tmp_path) is None
    man["probe"]["vector"] = [v + 0.1 for v in man["probe"]["vector"]]
    (tmp_path / "art" / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(ValueError, match="probe"):
        XFastReader.load(tmp_path / "art")


def test_memory_lines_are_the_rendered_lines_by_alias() -> None:
    inst = toy_holders()
    lines = dict(memory_lines(inst.bundle(), 400))
    assert set(lines) == set(inst.aliases)
    assert any("bats can see" in t for t in lines.values()) and not any(t.startswith("[F") for t in lines.values())


def test_the_shipped_reader_follows_the_state_and_a_state_blind_reader_fails_the_same_check() -> None:
    art = ROOT / XFAST_ARTEFACT
    size = sum(p.stat().st_size for p in art.iterdir())
    assert size <= 10 * 2**20
    man = json.loads((art / "manifest.json").read_text())
    assert man["best_epoch"] > 0 and man["config"]["train_path"].endswith("train.jsonl")
    reader = load_any(art)
    assert isinstance(reader, XFastReader)
    for swap in (False, True):  # the option order carries nothing
        assert follows_state(reader, toy_holders(swap))

    class Blind:
        def option_logprobs(self, request: str, bundle: Any, choices: Any, state: ReasoningState | str) -> list[float]:
            return reader.option_logprobs(request, bundle, choices, "evidence")

    assert not follows_state(Blind(), toy_holders())


def test_the_grpo_preset_swaps_in_the_cross_encoder_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    from policy import train as train_mod
    from policy.config import load_config

    cfg = load_config("grpo-cpu-smollm2-neutral-xreader")
    assert cfg.answer.kind == "lm" and cfg.answer.reader_adapter == XFAST_ARTEFACT and cfg.reward.graded
    seen: list[str] = []

    def fake(folder: str, base: str | None = None) -> XFastReader:
        seen.append(str(folder))
        return XFastReader(None, None)  # type: ignore[arg-type]

    monkeypatch.setattr(XFastReader, "load", staticmethod(fake))
    model, judge = train_mod.build_answer_model(cfg)
    assert isinstance(model, LMAnswerModel) and isinstance(model.reader, XFastReader) and judge is None and seen == [XFAST_ARTEFACT]


def test_the_three_readers_share_one_option_scoring(neutral: list[TrainingInstance]) -> None:
    """graded = softmax P(reference) of option_logprobs, answer_text = the best option (ties: the first), open
    rows 0.0 / "" unless the reader says otherwise; every reader satisfies the protocol LMAnswerModel takes."""

    class Fixed(OptionScoring):
        name = "fixed"

        def __init__(self, lps: list[float]):
            self.lps = lps

        def option_logprobs(self, request: str, bundle: Any, choices: Any, state: ReasoningState | str) -> list[float]:
            return self.lps

    inst = neutral[0]
    assert inst.choices
    ref = [c.lower() for c in inst.choices].index(inst.reference_answer.lower())
    lps = [0.0, 0.0]
    lps[ref] = 1.0
    assert abs(Fixed(lps).graded(inst, "evidence") - 0.7310585786) < 1e-6  # e / (1 + e)
    assert Fixed(lps).answer_text(inst.request, inst.bundle(), inst.choices, "evidence") == inst.choices[ref]
    assert Fixed([0.0, 0.0]).answer_text(inst.request, inst.bundle(), inst.choices, "none") == inst.choices[0]
    model = LMAnswerModel(Fixed(lps))
    assert model.answer(inst, None) == inst.reference_answer and model.graded(inst, None) > 0.7
    assert Fixed(lps).graded(inst.model_copy(update={"choices": None}), "evidence") == 0.0
    assert Fixed(lps).answer_text(inst.request, inst.bundle(), None, "evidence") == ""
    for cls in (LMReader, XReader, XFastReader):
        assert issubclass(cls, OptionScoring) and "graded" not in vars(cls) and "answer_text" not in vars(cls)
    assert isinstance(Fixed(lps), OptionReader)
