"""lora.top_layers: only the last N blocks get an adapter, and the LoRA warm-up moves exactly those
(a config-built 3-block model; ~1 min on a loaded 2-core box, hence slow)."""

from __future__ import annotations

import pytest

MODULES = '["q_proj","k_proj","v_proj","o_proj","gate_proj","up_proj","down_proj"]'


@pytest.mark.slow
def test_top_layers_adapts_only_the_last_blocks_and_the_warmup_moves_them() -> None:
    import torch

    from policy.config import load_config
    from policy.models import load_model, load_tokenizer
    from policy.train import lora_warmup, prompt_messages, synthetic_set

    cfg = load_config("grpo-cpu-smoke", ["lora.top_layers=1", f"lora.target_modules={MODULES}", "warmup.steps=3",
                                         "warmup.batch_size=2", "warmup.targets=all", "warmup.sampling=epochs",
                                         "model.tiny.num_hidden_layers=3", "data.synthetic.n=6"])
    insts = synthetic_set(cfg, 6, cfg.seed)
    data = [(i, p) for i in insts if (p := prompt_messages(i, cfg)) is not None]
    tok = load_tokenizer(cfg.model, [m["content"] for _, p in data for m in p] + ["F1: use | evidence | high"])
    model = load_model(cfg.model, tok, cfg.seed)
    # wrap without training (steps 0), then train and compare: lora_B starts at zero and must move
    wrapped = lora_warmup(cfg.model_copy(update={"warmup": cfg.warmup.model_copy(update={"steps": 0})}), model, tok,
                          data, None)
    names = [n for n, p in wrapped.named_parameters() if p.requires_grad]
    assert names and all(".layers.2." in n and "lora_" in n for n in names), names
    before = {n: p.detach().clone() for n, p in wrapped.named_parameters() if p.requires_grad}
    from policy.warmup import format_warmup

    format_warmup(wrapped, tok, [p for _, p in data], [i.aliases for i, _ in data], steps=3, targets="all",
                  batch_size=2, lr=1e-2, sampling="epochs")
    moved = [n for n, p in wrapped.named_parameters() if n in before and not torch.equal(before[n], p.detach())]
    assert any("lora_B" in n for n in moved)


def test_top_layers_needs_named_modules() -> None:
    from policy.config import LoraSettings

    with pytest.raises(ValueError, match="list of module names"):
        LoraSettings(top_layers=2).peft_config(30)
    cfg = LoraSettings(top_layers=2, target_modules=["q_proj"]).peft_config(30)
    assert list(cfg.layers_to_transform) == [28, 29]
