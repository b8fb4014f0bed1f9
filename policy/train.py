"""GRPO training of the Reasoning-State policy (§3.3, B.3, D.5 of the EvoMemState paper).

What GRPO is here. For each training instance (request q, retrieved facts with relational states M_q,
reference answer y*), the policy pi_theta samples G candidate Reasoning States Z_1..Z_G. Each is handed,
with the same evidence, to a *frozen* answer model A; a task scorer compares A's answer with y*. The
reward is the improvement over A answering with no state at all,

    r_i = Score(A(q, M_q, Z_i), y*) - Score(A(q, M_q), y*)        (Eq. 10; the 2nd term cached per instance)

gated: unparseable states, states that reveal y*, and over-long states get fixed penalties. Rewards are
normalised within the group (advantage A_i = (r_i - mean) / std) and the policy takes clipped
policy-gradient steps (eps 0.2 low / 0.28 high) with a small KL pull (beta 0.001) towards the reference
policy (Eq. 12). Only pi_theta changes; retrieval, the answer model and the scorer stay fixed. TRL's
``GRPOTrainer`` does the sampling and the update; LoRA adapters (PEFT) are what gets trained and saved.

Launch lines (from the repository root):

    # CPU: smoke (seconds) and the learning demo (minutes)
    evomem train-policy --config configs/grpo-cpu-smoke.yaml
    evomem train-policy --config configs/grpo-cpu-demo.yaml --set max_steps=200 seed=1

    # 1 GPU: Qwen3-4B + LoRA, vLLM colocated for rollouts; answer model Qwen3-8B on its own vLLM server
    vllm serve Qwen/Qwen3-8B --port 8001 --gpu-memory-utilization 0.35 &     # or on a second GPU
    python -m policy.train --config configs/grpo-qwen3-4b.yaml

    # 8 GPUs: rollouts by `trl vllm-serve` on GPU 7, training on GPUs 0-5 (ZeRO-2), answer model on GPU 6
    CUDA_VISIBLE_DEVICES=7 trl vllm-serve --model Qwen/Qwen3-4B --port 8000 --enable-lora &
    CUDA_VISIBLE_DEVICES=6 vllm serve Qwen/Qwen3-8B --port 8001 &
    CUDA_VISIBLE_DEVICES=0,1,2,3,4,5 accelerate launch --config_file configs/accelerate-deepspeed-zero2.yaml \\
        --num_processes 6 -m policy.train --config configs/grpo-qwen3-4b-multigpu.yaml

Outputs in ``output_dir``: ``metrics.jsonl`` (one line per logged step: reward mean/std, lift over the
no-state baseline, format-failure and disclosure rates, KL, entropy, held-out numbers), ``metrics.png``,
``final/`` (LoRA adapter + tokenizer + evomem_policy.json: loadable by vLLM ``--lora-modules
policy=<output_dir>/final`` and by ``policy.learned.LocalLearnedPolicy.from_checkpoint``), and with
``data.n_val`` also ``best/``: the step whose greedy states earned the most on a validation set drawn
with its own seed (the held-out set is reported, never used to choose).

The run is split over four modules: ``policy.train_data`` (instances, splits, policy prompts),
``policy.train_reward`` (answer model, reward function, held-out numbers), ``policy.train_model`` (seeds, model,
warm-up) and this one (trainer, checkpoint selection, saving); their names are re-exported here.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from policy.config import TrainConfig, load_config
from policy.learned import PolicyMeta, write_meta
from policy.metrics import MetricsWriter, plot_metrics
from policy.prompt import load_prompt
from policy.rewards import BaselineCache
from policy.train_data import (PolicyCall, load_instances, load_validation, policy_calls, prompt_messages,
                               read_instances, split_validation, synthetic_set)
from policy.train_model import build_policy_model, lora_warmup, pin_determinism
from policy.train_reward import (StateRewardFn, build_answer_model, evaluate_states, filter_solved, heldout_eval,
                                 summarize)
from training_data.base import TrainingInstance


class TrainResult(BaseModel):
    output_dir: str
    final_dir: str
    metrics_path: str
    plot_path: str | None
    steps: int
    train_instances: int
    heldout: dict[str, float] | None = None
    best_dir: str | None = None
    best_step: int | None = None
    best_val_reward: float | None = None
    seconds: float


class BestKeeper:
    """Keeps the adapter with the best validation reward in ``<output_dir>/best`` (early stopping without
    stopping: GRPO on a tiny policy can drift after its peak, and the held-out set must not pick the peak)."""

    def __init__(self, folder: Path, val_fn: Any, save: Any):
        self.folder, self.val_fn, self.save = folder, val_fn, save
        self.best: float | None = None
        self.step: int | None = None

    def consider(self, model: Any, step: int) -> dict[str, float]:
        res: dict[str, float] = self.val_fn(model)
        if self.best is None or res["reward"] > self.best:
            self.best, self.step = res["reward"], step
            self.save(model, self.folder)
        return res


def make_callbacks(cfg: TrainConfig, writer: MetricsWriter, eval_fn: Any,
                   keeper: BestKeeper | None = None) -> list[Any]:
    from transformers import TrainerCallback

    class _Metrics(TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
            if state.is_world_process_zero and logs:
                writer.write({"phase": "grpo", "step": state.global_step, **logs})

    class _HeldOut(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
            if cfg.eval_every and state.global_step % cfg.eval_every == 0 and state.is_world_process_zero:
                if eval_fn is not None:  # None: no held-out set during training (data.n_eval 0)
                    res = eval_fn(model)
                    writer.write({"phase": "heldout", "step": state.global_step,
                                  **{f"heldout/{k}": v for k, v in res.items()}})
                if keeper is not None:
                    val = keeper.consider(model, state.global_step)
                    writer.write({"phase": "validation", "step": state.global_step,
                                  **{f"val/{k}": v for k, v in val.items()}})

    return [_Metrics(), _HeldOut()]


@dataclass
class Run:
    """A prepared run: the trainer plus what ``finish`` needs. ``trainer.train()`` sits between them."""

    cfg: TrainConfig
    trainer: Any
    tokenizer: Any
    writer: MetricsWriter
    eval_fn: Any
    has_heldout: bool
    keeper: BestKeeper | None
    base_path: str
    out: Path
    train_instances: int
    t_start: float


def prepare(cfg: TrainConfig, *, extra_baselines: dict[str, dict[str, float]] | None = None) -> Run:
    """Data, baseline cache, policy model (after the warm-up), reward function and GRPOTrainer."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    t_start = time.time()
    env = pin_determinism(cfg)
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(cfg.model_dump_json(indent=2))
    writer = MetricsWriter(out / "metrics.jsonl")
    writer.write({"phase": "env", **env})
    train_set, heldout = load_instances(cfg)
    answer, judge = build_answer_model(cfg)
    baseline = BaselineCache(out / "baseline_scores.jsonl")
    if not cfg.reward.graded or cfg.data.filter_solved:  # graded rewards fill their own baseline on first use
        baseline.precompute(answer, train_set + heldout, judge)
    if cfg.data.filter_solved:
        train_set = filter_solved(train_set, answer, baseline, judge)
    # (instance, its first policy prompt): a per-fact warm-up expands the instances itself (lora_warmup)
    raw = [(i, calls[0][1]) for i in train_set if (calls := policy_calls(i, cfg))]
    model, tok, base_path = build_policy_model(cfg, raw, out, writer)

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False).input_ids)

    rows: list[dict[str, Any]] = []
    kept: list[TrainingInstance] = []
    for inst in train_set:
        calls = policy_calls(inst, cfg, count)
        if calls is not None:
            rows.extend({"prompt": msgs, "instance_id": inst.instance_id, "alias": alias or ""} for alias, msgs in calls)
            kept.append(inst)
    if not rows:
        raise ValueError("no training instance fits max_prompt_tokens")
    held = [(i, calls[0][1]) for i in heldout if (calls := policy_calls(i, cfg, count))]

    def eval_fn(m: Any) -> dict[str, float]:
        return heldout_eval(m, tok, [i for i, _ in held], [p for _, p in held], answer, baseline, cfg, judge)

    keeper = None
    validation = load_validation(cfg)
    if validation:
        baseline.precompute(answer, validation, judge)
        val = [(i, calls[0][1]) for i in validation if (calls := policy_calls(i, cfg, count))]

        def val_fn(m: Any) -> dict[str, float]:
            return heldout_eval(m, tok, [i for i, _ in val], [p for _, p in val], answer, baseline, cfg, judge)

        keeper = BestKeeper(out / "best", val_fn, lambda m, folder: save_policy(m, tok, folder, cfg, base_path))

    for name, vals in (extra_baselines or {}).items():
        writer.write({"phase": "baseline", "step": 0, **{f"baseline/{name}/{k}": v for k, v in vals.items()}})
    if held:
        writer.write({"phase": "heldout", "step": 0, **{f"heldout/{k}": v for k, v in eval_fn(model).items()}})
    reward_fn = StateRewardFn(kept, answer, baseline, cfg, judge)
    peft_config = None
    if cfg.lora.enabled and not hasattr(model, "peft_config"):  # a LoRA warm-up already wrapped the model
        peft_config = cfg.lora.peft_config(getattr(model.config, "num_hidden_layers", None))
    trainer = GRPOTrainer(model=model, reward_funcs=[reward_fn], args=GRPOConfig(**cfg.grpo_args()),
                          train_dataset=Dataset.from_list(rows), processing_class=tok, peft_config=peft_config,
                          callbacks=make_callbacks(cfg, writer, eval_fn if held else None, keeper))
    if keeper is not None:  # step 0 competes too: if GRPO never beats the start, best/ is the start
        res0 = keeper.consider(trainer.model, 0)
        writer.write({"phase": "validation", "step": 0, **{f"val/{k}": v for k, v in res0.items()}})
    return Run(cfg=cfg, trainer=trainer, tokenizer=tok, writer=writer, eval_fn=eval_fn, has_heldout=bool(held),
               keeper=keeper, base_path=base_path, out=out, train_instances=len(rows), t_start=t_start)


def save_policy(model: Any, tokenizer: Any, folder: Path, cfg: TrainConfig, base_path: str) -> None:
    """Adapter (or full weights) + tokenizer + evomem_policy.json: what vLLM and policy.learned load."""
    model.save_pretrained(str(folder))
    write_sidecars(folder, tokenizer, cfg, base_path)


def write_sidecars(folder: Path, tokenizer: Any, cfg: TrainConfig, base_path: str) -> None:
    """The tokenizer and evomem_policy.json next to saved weights."""
    tokenizer.save_pretrained(str(folder))
    write_meta(folder, PolicyMeta(base_model=base_path, adapter=cfg.lora.enabled, prompt=cfg.data.prompt,
                                  prompt_version=load_prompt(cfg.data.prompt).version,
                                  chat_template_kwargs=cfg.chat_template_kwargs))


def finish(run: Run) -> TrainResult:
    """Save the adapter (+ tokenizer + evomem_policy.json), evaluate held-out, plot."""
    cfg, trainer = run.cfg, run.trainer
    final = run.out / "final"
    trainer.save_model(str(final))
    heldout_final = None
    plot = None
    if trainer.accelerator.is_main_process:
        write_sidecars(final, run.tokenizer, cfg, run.base_path)
        if run.has_heldout:
            heldout_final = run.eval_fn(trainer.model)
            run.writer.write({"phase": "heldout", "step": trainer.state.global_step,
                              **{f"heldout/{k}": v for k, v in heldout_final.items()}})
        plot = plot_metrics(run.writer.path, run.out / "metrics.png", cfg.name)
    return TrainResult(output_dir=str(run.out), final_dir=str(final), metrics_path=str(run.writer.path),
                       plot_path=str(plot) if plot else None, steps=trainer.state.global_step,
                       train_instances=run.train_instances, heldout=heldout_final,
                       best_dir=str(run.keeper.folder) if run.keeper else None,
                       best_step=run.keeper.step if run.keeper else None,
                       best_val_reward=run.keeper.best if run.keeper else None,
                       seconds=time.time() - run.t_start)


def train(cfg: TrainConfig, *, extra_baselines: dict[str, dict[str, float]] | None = None) -> TrainResult:
    """Run GRPO per ``cfg``; returns where everything was written and the final held-out numbers."""
    from policy.preflight import check_inputs

    check_inputs(cfg)  # absent data or weights: one sentence now, not a traceback after model loading
    run = prepare(cfg, extra_baselines=extra_baselines)
    run.trainer.train()
    return finish(run)


def main(argv: list[str] | None = None) -> int:
    """``python -m policy.train --config X.yaml [--set key=value ...]`` (what accelerate launch runs)."""
    import argparse

    ap = argparse.ArgumentParser(prog="policy.train", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="YAML path or preset name (configs/<name>.yaml).")
    ap.add_argument("--set", nargs="*", default=[], dest="overrides", help="Overrides, e.g. lora.r=8 max_steps=3.")
    ns = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    res = train(load_config(ns.config, ns.overrides))
    print(res.model_dump_json(indent=2))
    return 0


__all__ = ["BestKeeper", "PolicyCall", "Run", "StateRewardFn", "TrainResult", "build_answer_model",
           "build_policy_model", "evaluate_states", "filter_solved", "finish", "heldout_eval", "load_instances",
           "load_validation", "lora_warmup", "main", "make_callbacks", "pin_determinism", "policy_calls", "prepare",
           "prompt_messages", "read_instances", "save_policy", "split_validation", "summarize", "synthetic_set",
           "train", "write_sidecars"]


if __name__ == "__main__":
    sys.exit(main())
