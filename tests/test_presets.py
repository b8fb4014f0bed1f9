"""Training presets: the shipped ones sit in configs/, the experiments that did not ship in configs/experiments/;
a preset name resolves in either, so every name a test, bench script or note cites still loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from evomem.commands.relations_cmds import load_relations_config
from policy.config import load_config, preset_path

ROOT = Path(__file__).resolve().parent.parent


def test_shipped_presets_stay_at_the_top() -> None:
    for name in ("grpo-cpu-smoke", "grpo-cpu-demo", "grpo-cpu-smollm2-fact-holder", "grpo-qwen3-4b",
                 "grpo-qwen3-4b-multigpu"):
        assert preset_path(name).resolve() == ROOT / "configs" / f"{name}.yaml"
        assert load_config(name).name == name
    assert load_relations_config("relations-smoke").seed is not None


def test_an_experiment_preset_loads_by_name_from_configs_experiments() -> None:
    p = preset_path("grpo-cpu-smollm2-read")
    assert p.resolve() == ROOT / "configs" / "experiments" / "grpo-cpu-smollm2-read.yaml"
    assert load_config("grpo-cpu-smollm2-read").name == "grpo-cpu-smollm2-read"
    assert not (ROOT / "configs" / "grpo-cpu-smollm2-read.yaml").exists()


def test_the_shipped_adapter_names_a_preset_at_the_top() -> None:
    import json
    manifest = json.loads((ROOT / "policy" / "artefact" / "smollm2-read-v1" / "manifest.json").read_text())
    name = manifest["train_config"]["name"]
    assert name == "grpo-cpu-smollm2-fact-holder"
    assert (ROOT / "configs" / f"{name}.yaml").is_file()


def test_an_unknown_preset_names_the_known_ones_including_experiments() -> None:
    with pytest.raises(FileNotFoundError, match="grpo-cpu-smollm2-read"):
        preset_path("no-such-preset")


def test_a_dotted_override_changes_one_entry_of_a_default_dict() -> None:
    """``weights.wrong=0`` once replaced the whole default ``weights`` dict with ``{"wrong": 0}``, so a run
    meant to drop one condition trained on that condition alone (found in the reader training of issue 48)."""
    from policy.config import load_preset
    from policy.reader_tune import CONDITIONS, ReaderTuneConfig

    cfg = load_preset("reader-smollm2", ReaderTuneConfig, ["weights.wrong=0", "steps=3"], family="reader")
    assert cfg.steps == 3
    assert cfg.weights["wrong"] == 0
    assert set(cfg.weights) == set(CONDITIONS)
    assert all(cfg.weights[c] > 0 for c in CONDITIONS if c != "wrong")
