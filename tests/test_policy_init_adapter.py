"""GRPO continuing a saved adapter (``lora.init_adapter``, issue 48): the warm start is that adapter, exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy.config import load_config


def test_init_adapter_needs_a_pretrained_base_and_no_warmup() -> None:
    cfg = load_config("grpo-cpu-smollm2-neutral")
    assert cfg.lora.init_adapter and Path(cfg.lora.init_adapter).is_dir() and cfg.warmup.steps == 0
    with pytest.raises(ValueError, match="init_adapter"):
        load_config("grpo-cpu-smollm2-neutral", ["warmup.steps=10"])
    with pytest.raises(ValueError, match="init_adapter"):
        load_config("grpo-cpu-smollm2-neutral", ["lora.enabled=false"])


@pytest.mark.slow
def test_the_warm_start_is_the_saved_adapter_and_it_trains(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from policy.train import build_policy_model

    cfg = load_config("grpo-cpu-smollm2-neutral", [f"output_dir={tmp_path}"])
    model, _, base = build_policy_model(cfg, [], tmp_path)
    saved = load_file(str(Path(cfg.lora.init_adapter or "") / "adapter_model.safetensors"))
    params = dict(model.named_parameters())
    trainable = [n for n, p in params.items() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    for name, w in saved.items():  # every saved LoRA weight is loaded as it was
        key = name[: -len(".weight")] + ".default.weight"  # PEFT names the loaded adapter "default"
        assert key in params and (params[key].detach() == w).all(), name
    assert Path(base).is_dir()
