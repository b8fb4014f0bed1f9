"""The policy model of the GRPO run (``policy.train``): seeds and deterministic kernels, the tokenizer and
base model, and the format / answer-key warm-up that gives GRPO its start (a LoRA adapter on a pretrained
base, or full weights saved for a config-built one)."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from policy.config import TrainConfig
from policy.metrics import MetricsWriter
from policy.perfact import is_per_fact
from policy.rewards import BaselineCache
from policy.train_data import policy_calls, prompt_messages
from policy.train_reward import build_answer_model
from training_data.base import TrainingInstance


def _set_seed(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def pin_determinism(cfg: TrainConfig) -> dict[str, Any]:
    """Seeds, thread count and deterministic kernels from the config; returns what a rerun must match.

    Measured (docs/design-notes.md): two runs of the demo with the same seed and thread count give
    byte-identical metrics.jsonl, also under another PYTHONHASHSEED and a fresh HOME; one thread vs two
    differs in the 7th digit of the first warm-up loss and the runs drift apart from there (sampled GRPO
    amplifies it). A different CPU (another SIMD path in the BLAS) can do the same; the ``env`` row of
    metrics.jsonl records what to compare."""
    import platform

    import torch

    _set_seed(cfg.seed)
    if cfg.use_cpu or not torch.cuda.is_available():
        torch.set_num_threads(cfg.num_threads)
    if cfg.deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
    return {"seed": cfg.seed, "threads": torch.get_num_threads(), "deterministic": cfg.deterministic,
            "torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "machine": platform.machine()}


def build_policy_model(cfg: TrainConfig, data: Sequence[tuple[TrainingInstance, list[dict[str, str]]]], out: Path,
                       log: MetricsWriter | None = None) -> tuple[Any, Any, str]:
    """Tokenizer + model, after the format warm-up when configured. Returns (model, tokenizer, base path)
    where base path is what a saved adapter's base_model points at."""
    from policy.models import load_model, load_tokenizer, smollm2_dir, smollm2_hf_dir
    from policy.warmup import descriptive_role, format_warmup, random_state

    rng = random.Random(f"corpus:{cfg.seed}")
    prompts = [p for _, p in data]
    aliases = [i.aliases for i, _ in data]
    roles = None
    if cfg.warmup.roles == "descriptive":
        roles = [[descriptive_role(it) for it in i.evidence] for i, _ in data]
    corpus = None
    if cfg.model.tokenizer == "bpe":  # train on what the model will read and write
        corpus = [m["content"] for p in prompts for m in p] + [random_state(a, rng) for a in aliases]
    tok = load_tokenizer(cfg.model, corpus)
    model = load_model(cfg.model, tok, cfg.seed)
    pretrained_base = None
    if cfg.model.source in ("hf", "checkpoint") and cfg.model.name_or_path:
        pretrained_base = cfg.model.name_or_path
    elif cfg.model.source == "gguf":
        default = cfg.model.name_or_path is None and cfg.model.gguf_file is None
        pretrained_base = str((smollm2_hf_dir() if default else Path(cfg.model.name_or_path or smollm2_dir())).resolve())
    if cfg.lora.init_adapter and pretrained_base:  # the warm start is a saved adapter: GRPO continues it
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, cfg.lora.init_adapter, is_trainable=True)
        return model, tok, pretrained_base
    if cfg.warmup.steps == 0 and pretrained_base:
        return model, tok, pretrained_base
    if pretrained_base and cfg.lora.enabled and cfg.warmup.steps:
        # A pretrained base stays frozen and shared: the warm-up trains the LoRA adapter, GRPO continues it.
        model = lora_warmup(cfg, model, tok, data, log)
        return model, tok, pretrained_base
    if cfg.warmup.steps:
        t0 = time.time()
        losses = format_warmup(model, tok, prompts, aliases, targets=cfg.warmup.targets, roles=roles,
                               subset_max=cfg.warmup.subset_max, decisions=cfg.warmup.decisions,
                               steps=cfg.warmup.steps, lr=cfg.warmup.learning_rate, batch_size=cfg.warmup.batch_size,
                               seed=cfg.seed)
        if log:
            for row in losses:
                log.write({"phase": "warmup", **row})
            log.write({"phase": "warmup", "seconds": time.time() - t0})
    base = out / "base_model"  # config-built or warmed-up weights: the adapter's base must exist on disk
    model.save_pretrained(str(base))
    tok.save_pretrained(str(base))
    # TRL builds the KL reference model (full fine-tuning, beta > 0) from config._name_or_path, which a
    # config-built model leaves empty: point it at the weights just saved (the warmed-up start).
    model.config._name_or_path = model.name_or_path = str(base.resolve())  # also what PEFT records as the base
    return model, tok, str(base.resolve())


def lora_warmup(cfg: TrainConfig, model: Any, tok: Any, data: Sequence[tuple[TrainingInstance, list[dict[str, str]]]],
                log: MetricsWriter | None) -> Any:
    """Wrap ``model`` in a fresh LoRA adapter and train it on the warm-up targets; returns the PeftModel."""
    from peft import get_peft_model

    from policy.targets import warmup_targets
    from policy.warmup import format_warmup

    model = get_peft_model(model, cfg.lora.peft_config(getattr(model.config, "num_hidden_layers", None)))
    target_fn = None
    groups: list[str] = []  # per-fact examples' state signatures, for sampling: balanced
    if cfg.warmup.targets == "answer-key":
        answer, judge = build_answer_model(cfg)
        cache = BaselineCache()
        targets = warmup_targets([i for i, _ in data], answer, cache, cfg.warmup)
        if cfg.warmup.shuffle_copies:  # same decisions, facts elsewhere: position stops carrying the answer
            from policy.warmup import remap_state, shuffled_instance

            rng = random.Random(f"shuffle:{cfg.seed}")
            extra, extra_targets = [], []
            for _ in range(cfg.warmup.shuffle_copies):
                for (inst, _), (text, r) in zip(data, targets):
                    moved, amap = shuffled_instance(inst, rng)
                    msgs = prompt_messages(moved, cfg)
                    if msgs:
                        extra.append((moved, msgs))
                        extra_targets.append((remap_state(text, amap), r))
            data = [*data, *extra]
            targets = [*targets, *extra_targets]
        if is_per_fact(cfg.data.prompt):  # one example per fact: its line of the chosen state, without the handle
            from policy.perfact import fact_targets
            from policy.warmup import state_signature

            per_data, per_targets = [], []
            for (inst, _), (text, r) in zip(data, targets):
                lines = fact_targets(text, inst.aliases)
                items = {it.alias: it for it in inst.evidence}
                for alias, msgs in policy_calls(inst, cfg) or []:
                    per_data.append((inst, msgs))
                    per_targets.append((lines[alias or ""], r))
                    groups.append(state_signature(items[alias or ""]))
            data, targets = per_data, per_targets
        target_fn = lambda k, rng: targets[k][0]  # noqa: E731 - the index is the prompt's
        if log:
            log.write({"phase": "warmup", "targets": len(targets),
                       "target_mean_reward": sum(r for _, r in targets) / max(len(targets), 1)})
    t0 = time.time()
    losses = format_warmup(model, tok, [p for _, p in data], [i.aliases for i, _ in data], steps=cfg.warmup.steps,
                           targets="all" if cfg.warmup.targets == "answer-key" else cfg.warmup.targets,
                           subset_max=cfg.warmup.subset_max, decisions=cfg.warmup.decisions,
                           lr=cfg.warmup.learning_rate, batch_size=cfg.warmup.batch_size, seed=cfg.seed,
                           log_every=1, target_fn=target_fn, sampling=cfg.warmup.sampling, groups=groups or None)
    if log:
        for row in losses:
            log.write({"phase": "warmup", **row})
        log.write({"phase": "warmup", "seconds": time.time() - t0})
    return model


__all__ = ["build_policy_model", "lora_warmup", "pin_determinism"]
