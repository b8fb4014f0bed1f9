"""The fine-tuned reader (policy/reader_tune.py, `evomem train-reader`; issue 48 item 1 fallback).

Oracle / wrong states name facts only (never an option) and disagree on the deciding facts; a tiny-model
training run writes an adapter with a manifest in seconds; training refuses held-out rows; the shipped
reader artefact loads offline and is a trained adapter, not an initialised one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from policy.reader_tune import (CONDITIONS, TWIN, ReaderTuneConfig, condition_state, draw_batch, oracle_state,
                                split_val, target_index, train_reader)
from policy.state import parse_state
from training_data.base import TrainingInstance
from training_data.neutral import NeutralSource

ARTEFACT = Path(__file__).resolve().parent.parent / "policy" / "artefact" / "smollm2-reader-v1"


@pytest.fixture(scope="module")
def neutral(bench_data: Path) -> list[TrainingInstance]:
    return list(NeutralSource(bench_data / "memsyco-bench", limit_per_task=6, expiry_n=8).instances(0))


def test_oracle_and_wrong_states_name_facts_only_and_disagree_on_the_deciding_facts(neutral: list[TrainingInstance]) -> None:
    fams = set()
    for inst in neutral:
        fams.add(inst.metadata["family"])
        right, wrong = oracle_state(inst, rules=True), oracle_state(inst, wrong=True, rules=True)
        assert {f.alias for f in right.facts} == set(inst.aliases) == {f.alias for f in wrong.facts}
        assert parse_state(right.render(), inst.aliases) == right  # a state a policy could write
        changed = [a for a, b in zip(right.facts, wrong.facts) if a != b]
        assert len(changed) >= 2, inst.instance_id  # both sides of the decision flip
        assert right.rules and wrong.rules and right.rules != wrong.rules
        for text in (right.render(), wrong.render()):
            assert all(c.lower() not in text.lower() for c in inst.choices or ())  # no option is disclosed
        assert target_index(inst, True) != target_index(inst, False)
    assert fams == {"updates", "conflicts", "scope", "holders", "expiry"}


def test_every_condition_builds_and_only_wrong_ones_target_the_wrong_option(neutral: list[TrainingInstance]) -> None:
    inst = next(i for i in neutral if i.metadata["family"] == "updates")
    targets = {c: condition_state(inst, c)[1] for c in CONDITIONS}
    assert targets == {"evidence": True, "rule": True, "oracle": True, "oracle_rules": True, "wrong": False,
                       "wrong_rules": False}
    train, val = split_val(neutral, 0.3)
    assert val and train and not {i.instance_id for i in train} & {i.instance_id for i in val}
    assert split_val(neutral, 0.3) == (train, val)  # by id hash, not by order or chance


def test_paired_batches_bring_each_state_with_its_swapped_twin_on_the_same_instance(
        neutral: list[TrainingInstance]) -> None:
    """paired: the evidence is the same within a pair and the targets differ, so only the state lines can
    lower the pair's loss; unpaired draws are what they were (same rng order)."""
    import random

    conds, wts = list(CONDITIONS), [1.0] * len(CONDITIONS)
    batch = draw_batch(neutral, conds, wts, 40, random.Random(1), paired=True)
    assert len(batch) == 40
    pairs, k = 0, 0
    while k < len(batch) - 1:  # walk the batch unit by unit: a single, or a condition and its twin
        inst, cond = batch[k]
        if cond not in TWIN:
            k += 1
            continue
        twin_inst, twin = batch[k + 1]
        assert twin_inst is inst and twin == TWIN[cond]
        assert condition_state(inst, cond)[1] != condition_state(inst, twin)[1]  # one right, one wrong target
        pairs, k = pairs + 1, k + 2
    assert pairs >= 5
    rng, ref = random.Random(2), random.Random(2)
    plain = draw_batch(neutral, conds, wts, 6, rng)
    assert plain == [(ref.choice(neutral), ref.choices(conds, wts)[0]) for _ in range(6)]


def _write(rows: list[TrainingInstance], path: Path) -> Path:
    path.write_text("".join(r.model_dump_json() + "\n" for r in rows))
    return path


def test_tiny_training_run_writes_an_adapter_with_its_manifest(neutral: list[TrainingInstance], tmp_path: Path) -> None:
    train = _write([i for i in neutral if i.metadata["split"] == "train"], tmp_path / "train.jsonl")
    cfg = ReaderTuneConfig(tiny_model=True, train_path=str(train), output_dir=str(tmp_path / "run"),
                           artefact=str(tmp_path / "art"), steps=2, batch=2, val_fraction=0.3, val_limit=2,
                           eval_every=1, evidence_budget=48, top_layers=1)
    res = train_reader(cfg, command="pytest")
    art = tmp_path / "art"
    man = json.loads((art / "reader_manifest.json").read_text())
    assert man["seed"] == 0 and man["command"] == "pytest" and man["base"] == "tiny-random"
    assert man["data"]["sha256"] and man["data"]["train_rows"] > 0 and man["data"]["val_rows"] > 0
    assert (art / "adapter_model.safetensors").is_file() and (art / "adapter_config.json").is_file()
    assert [h["step"] for h in res.val_history] == [0.0, 1.0, 2.0]
    losses = [json.loads(x)["loss"] for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
              if "loss" in json.loads(x)]
    assert len(losses) == 2 and all(v > 0 for v in losses)


def test_training_refuses_held_out_rows(neutral: list[TrainingInstance], tmp_path: Path) -> None:
    data = _write(neutral, tmp_path / "all.jsonl")  # both splits
    with pytest.raises(ValueError, match="held-out"):
        train_reader(ReaderTuneConfig(tiny_model=True, train_path=str(data), output_dir=str(tmp_path / "r"), steps=1))


def test_the_preset_loads_and_names_the_shipped_artefact() -> None:
    from evomem.commands.policy_cmds import load_reader_config

    cfg = load_reader_config("reader-smollm2", ["seed=3"])
    assert cfg.seed == 3 and cfg.artefact == "policy/artefact/smollm2-reader-v1" and cfg.prompt == "reader"


def test_the_shipped_reader_loads_offline_from_the_artefact_and_is_trained(neutral: list[TrainingInstance]) -> None:
    """The artefact alone (plus the installed SmolLM2) gives the reader: no hub, no training run."""
    from safetensors.torch import load_file

    from policy.lmreader import LMReader

    man = json.loads((ARTEFACT / "reader_manifest.json").read_text())
    assert man["base"] == "smollm2-135m-instruct" and man["seed"] == 0 and "train-reader" in man["command"]
    size = sum(p.stat().st_size for p in ARTEFACT.iterdir())
    assert size <= 10 * 2**20
    lora_b = [t for k, t in load_file(str(ARTEFACT / "adapter_model.safetensors")).items() if "lora_B" in k]
    # PEFT starts B at 0: the adapter is trained exactly when validation picked a step after 0
    assert lora_b and any(float(t.abs().max()) > 0 for t in lora_b) == (man["best_step"] > 0)
    os.environ["HF_HUB_OFFLINE"] = "1"
    reader = LMReader.finetuned(str(ARTEFACT))
    assert reader.prompt == man["prompt"] and reader.evidence_budget == man["evidence_budget"]
    inst = next(i for i in neutral if i.metadata["family"] == "holders")
    lps = reader.option_logprobs(inst.request, inst.bundle(), inst.choices or [], "evidence")
    assert len(lps) == 2 and all(v < 0 for v in lps)


def test_the_grpo_preset_swaps_in_the_fine_tuned_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    from policy import train as train_mod
    from policy.config import load_config
    from policy.lmreader import LMAnswerModel, LMReader

    cfg = load_config("grpo-cpu-smollm2-neutral-reader")
    assert cfg.answer.kind == "lm" and cfg.answer.reader_adapter == "policy/artefact/smollm2-reader-v1"
    assert cfg.reward.graded and cfg.num_generations >= 4
    seen: list[str] = []

    def fake(adapter: str, **kw: object) -> LMReader:
        seen.append(adapter)
        return LMReader(None, type("T", (), {"eos_token": ""})(), prompt="reader")

    monkeypatch.setattr(LMReader, "finetuned", staticmethod(fake))
    model, judge = train_mod.build_answer_model(cfg)
    assert isinstance(model, LMAnswerModel) and judge is None and seen == [cfg.answer.reader_adapter]
    cfg0 = load_config("grpo-cpu-smollm2-neutral")
    assert cfg0.answer.reader_adapter is None  # the base-reader preset is unchanged
