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
policy=<output_dir>/final`` and by ``policy.learned.LocalLearnedPolicy.from_checkpoint``).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from policy.config import TrainConfig, load_config
from policy.learned import PolicyMeta, write_meta
from policy.prompt import as_dicts, load_prompt, policy_messages
from policy.rewards import AnswerModel, BaselineCache, JudgeScorer, RewardBreakdown, state_reward
from training_data.base import TrainingInstance


class TrainResult(BaseModel):
    output_dir: str
    final_dir: str
    metrics_path: str
    plot_path: str | None
    steps: int
    train_instances: int
    heldout: dict[str, float] | None = None
    seconds: float


# --- data ---------------------------------------------------------------------------------------------


def read_instances(path: str | Path) -> list[TrainingInstance]:
    return [TrainingInstance.model_validate_json(line) for line in Path(path).read_text().splitlines() if line.strip()]


def load_instances(cfg: TrainConfig) -> tuple[list[TrainingInstance], list[TrainingInstance]]:
    from training_data.synthetic import SyntheticSource

    if cfg.data.train_path:
        train = read_instances(cfg.data.train_path)
    else:
        train = list(SyntheticSource(cfg.data.synthetic).instances(cfg.seed))
    if cfg.data.eval_path:
        heldout = read_instances(cfg.data.eval_path)[: cfg.data.n_eval]
    else:
        ev = cfg.data.synthetic.model_copy(update={"n": max(cfg.data.n_eval, 1)})
        heldout = list(SyntheticSource(ev).instances(cfg.data.eval_seed))[: cfg.data.n_eval]
    return train, heldout


def prompt_messages(inst: TrainingInstance, cfg: TrainConfig, count_tokens: Any = None) -> list[dict[str, str]] | None:
    """Chat messages for ``inst``; shrinks the facts block to fit max_prompt_tokens, None if it cannot."""
    msgs = as_dicts(policy_messages(inst.request, inst.bundle(), inst.choices, prompt=cfg.data.prompt))
    if count_tokens is None:
        return msgs
    total = sum(count_tokens(m["content"]) for m in msgs) + 16
    if total <= cfg.data.max_prompt_tokens:
        return msgs
    fixed = total - count_tokens(msgs[1]["content"])
    budget = cfg.data.max_prompt_tokens - fixed
    if budget <= 0:
        return None
    msgs = as_dicts(policy_messages(inst.request, inst.bundle(), inst.choices, prompt=cfg.data.prompt,
                                    facts_budget=budget, count_tokens=count_tokens))
    return msgs if "[F" in msgs[1]["content"] else None


# --- answer model + reward ------------------------------------------------------------------------------


def build_answer_model(cfg: TrainConfig) -> tuple[AnswerModel, JudgeScorer | None]:
    from policy.rewards import ChatAnswerModel, ReaderAnswerModel

    if cfg.answer.kind == "reader":
        return ReaderAnswerModel(), None
    from llmclients.config import make_chat_model

    assert cfg.answer.endpoint is not None  # the config validator guarantees it
    judge = JudgeScorer(make_chat_model(cfg.answer.judge)) if cfg.answer.judge else None
    return ChatAnswerModel(make_chat_model(cfg.answer.endpoint), max_tokens=cfg.answer.max_tokens), judge


class StateRewardFn:
    """The reward function TRL calls: one float (or None) per completion, plus logged metrics."""

    __name__ = "state_reward"

    def __init__(self, instances: Sequence[TrainingInstance], model: AnswerModel, baseline: BaselineCache,
                 cfg: TrainConfig, judge: JudgeScorer | None = None):
        self.by_id = {i.instance_id: i for i in instances}
        self.model, self.baseline, self.cfg, self.judge = model, baseline, cfg, judge
        self.pool = ThreadPoolExecutor(cfg.answer.concurrency) if cfg.answer.kind == "chat" else None

    def breakdowns(self, completions: Sequence[Any], completion_ids: Sequence[Sequence[int]] | None,
                   instance_id: Sequence[str]) -> list[RewardBreakdown]:
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        lens = [len(x) for x in completion_ids] if completion_ids is not None else [None] * len(texts)

        def one(k: int) -> RewardBreakdown:
            return state_reward(texts[k], self.by_id[instance_id[k]], self.model, self.baseline, self.cfg.reward,
                                n_tokens=lens[k], judge=self.judge)

        idx = range(len(texts))
        return list(self.pool.map(one, idx)) if self.pool else [one(k) for k in idx]

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], completion_ids: Any = None,
                 instance_id: Sequence[str] = (), log_metric: Any = None, **_: Any) -> list[float | None]:
        bds = self.breakdowns(completions, completion_ids, instance_id)
        if log_metric is not None:
            for k, v in summarize(bds).items():
                log_metric(f"state/{k}", v)
        return [b.reward for b in bds]


def summarize(bds: Sequence[RewardBreakdown]) -> dict[str, float]:
    n = max(len(bds), 1)
    ok = [b for b in bds if b.outcome == "ok"]
    out = {"format_fail_rate": sum(b.outcome == "unparseable" for b in bds) / n,
           "disclosure_rate": sum(b.outcome == "disclosed" for b in bds) / n,
           "too_long_rate": sum(b.outcome == "too_long" for b in bds) / n,
           "timeout_rate": sum(b.outcome == "timeout" for b in bds) / n}
    if ok:
        out["score_with"] = sum(b.score_with or 0.0 for b in ok) / len(ok)
        out["score_without"] = sum(b.score_without or 0.0 for b in ok) / len(ok)
        out["lift"] = out["score_with"] - out["score_without"]
    return out


# --- held-out evaluation + metrics ----------------------------------------------------------------------


def evaluate_states(texts: Sequence[str], instances: Sequence[TrainingInstance], model: AnswerModel,
                    baseline: BaselineCache, cfg: TrainConfig, judge: JudgeScorer | None = None) -> dict[str, float]:
    """Held-out numbers for given state texts: mean reward, answer accuracy (score with state), rates."""
    bds = [state_reward(t, i, model, baseline, cfg.reward, judge=judge) for t, i in zip(texts, instances)]
    rewards = [b.reward for b in bds if b.reward is not None]
    acc = [b.score_with if b.outcome == "ok" else 0.0 for b in bds]
    base = [baseline.get(model, i, judge) for i in instances]
    s = summarize(bds)
    return {"reward": sum(rewards) / max(len(rewards), 1), "accuracy": sum(a or 0.0 for a in acc) / max(len(acc), 1),
            "no_state_accuracy": sum(b or 0.0 for b in base) / max(len(base), 1),
            "format_fail_rate": s["format_fail_rate"], "disclosure_rate": s["disclosure_rate"]}


def heldout_eval(model: Any, tokenizer: Any, instances: Sequence[TrainingInstance], prompts: Sequence[Any],
                 answer: AnswerModel, baseline: BaselineCache, cfg: TrainConfig, judge: JudgeScorer | None = None,
                 batch_size: int = 50) -> dict[str, float]:
    """Greedy states for the held-out set with the current weights, then ``evaluate_states``."""
    from policy.learned import LocalLearnedPolicy

    pol = LocalLearnedPolicy(model, tokenizer, prompt=cfg.data.prompt, temperature=0.0,
                             max_new_tokens=cfg.eval_max_new_tokens or cfg.max_completion_length,
                             chat_template_kwargs=cfg.chat_template_kwargs)
    was_training = model.training
    model.eval()
    texts: list[str] = []
    for s in range(0, len(prompts), batch_size):
        batch = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True, **cfg.chat_template_kwargs)
                 for p in prompts[s:s + batch_size]]
        texts.extend(pol.generate(batch))
    if was_training:
        model.train()
    return evaluate_states(texts, instances, answer, baseline, cfg, judge)


class MetricsWriter:
    """Appends every log line (TRL's and ours) to metrics.jsonl; draws metrics.png at the end."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")

    def write(self, row: dict[str, Any]) -> None:
        with self.path.open("a") as fh:
            fh.write(json.dumps(row, default=float) + "\n")


def plot_metrics(metrics_path: Path, out: Path, title: str) -> Path | None:
    """Train reward, lift, format failures, KL and held-out reward/accuracy against the step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(x) for x in metrics_path.read_text().splitlines() if x.strip()]
    if not rows:
        return None

    def series(key: str) -> tuple[list[float], list[float]]:
        pts = [(r["step"], r[key]) for r in rows if r.get(key) is not None and "step" in r]
        return [p[0] for p in pts], [p[1] for p in pts]

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for key, label in (("reward", "train reward"), ("state/lift", "train lift over no state"),
                       ("heldout/reward", "held-out reward"), ("heldout/accuracy", "held-out accuracy")):
        xs, ys = series(key)
        if xs:
            axes[0].plot(xs, ys, label=label, marker="o" if key.startswith("heldout") else None)
    for key, label in (("baseline/untrained/accuracy", "untrained"), ("baseline/rule/accuracy", "rule baseline"),
                       ("baseline/no_state/accuracy", "no state")):
        vals = [r[key] for r in rows if r.get(key) is not None]
        if vals:
            axes[0].axhline(vals[-1], linestyle="--", linewidth=1, label=f"{label} acc", color=None)
    axes[0].set_title("reward / accuracy")
    axes[0].legend(fontsize=7)
    for key in ("state/format_fail_rate", "state/disclosure_rate"):
        xs, ys = series(key)
        if xs:
            axes[1].plot(xs, ys, label=key.split("/")[-1])
    axes[1].set_title("gates")
    axes[1].legend(fontsize=7)
    for key in ("kl", "entropy"):
        xs, ys = series(key)
        if xs:
            axes[2].plot(xs, ys, label=key)
    axes[2].set_title("KL / entropy")
    axes[2].legend(fontsize=7)
    for ax in axes:
        ax.set_xlabel("step")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


# --- the run ------------------------------------------------------------------------------------------------


def _set_seed(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def build_policy_model(cfg: TrainConfig, data: Sequence[tuple[TrainingInstance, list[dict[str, str]]]], out: Path,
                       log: MetricsWriter | None = None) -> tuple[Any, Any, str]:
    """Tokenizer + model, after the format warm-up when configured. Returns (model, tokenizer, base path)
    where base path is what a saved adapter's base_model points at."""
    from policy.models import load_model, load_tokenizer, smollm2_dir
    from policy.warmup import descriptive_role, format_warmup, random_state

    rng = random.Random(f"corpus:{cfg.seed}")
    prompts = [p for _, p in data]
    aliases = [i.aliases for i, _ in data]
    roles = [[descriptive_role(it) for it in i.evidence] for i, _ in data] if cfg.warmup.roles == "descriptive" else None
    corpus = None
    if cfg.model.tokenizer == "bpe":  # train on what the model will read and write
        corpus = [m["content"] for p in prompts for m in p] + [random_state(a, rng) for a in aliases]
    tok = load_tokenizer(cfg.model, corpus)
    model = load_model(cfg.model, tok, cfg.seed)
    if cfg.warmup.steps == 0 and cfg.model.source in ("hf", "checkpoint") and cfg.model.name_or_path:
        return model, tok, cfg.model.name_or_path
    if cfg.warmup.steps == 0 and cfg.model.source == "gguf":
        return model, tok, str(Path(cfg.model.name_or_path or smollm2_dir()).resolve())
    if cfg.warmup.steps:
        t0 = time.time()
        losses = format_warmup(model, tok, prompts, aliases, targets=cfg.warmup.targets, roles=roles, steps=cfg.warmup.steps,
                               lr=cfg.warmup.learning_rate, batch_size=cfg.warmup.batch_size, seed=cfg.seed)
        if log:
            for row in losses:
                log.write({"phase": "warmup", **row})
            log.write({"phase": "warmup", "seconds": time.time() - t0})
    base = out / "base_model"  # config-built or warmed-up weights: the adapter's base must exist on disk
    model.save_pretrained(str(base))
    tok.save_pretrained(str(base))
    return model, tok, str(base.resolve())


def make_callbacks(cfg: TrainConfig, writer: MetricsWriter, eval_fn: Any) -> list[Any]:
    from transformers import TrainerCallback

    class _Metrics(TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
            if state.is_world_process_zero and logs:
                writer.write({"phase": "grpo", "step": state.global_step, **logs})

    class _HeldOut(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
            if cfg.eval_every and state.global_step % cfg.eval_every == 0 and state.is_world_process_zero:
                res = eval_fn(model)
                writer.write({"phase": "heldout", "step": state.global_step, **{f"heldout/{k}": v for k, v in res.items()}})

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
    base_path: str
    out: Path
    train_instances: int
    t_start: float


def prepare(cfg: TrainConfig, *, extra_baselines: dict[str, dict[str, float]] | None = None) -> Run:
    """Data, baseline cache, policy model (after the warm-up), reward function and GRPOTrainer."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    t_start = time.time()
    _set_seed(cfg.seed)
    if cfg.use_cpu:
        torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(cfg.model_dump_json(indent=2))
    writer = MetricsWriter(out / "metrics.jsonl")
    train_set, heldout = load_instances(cfg)
    answer, judge = build_answer_model(cfg)
    baseline = BaselineCache(out / "baseline_scores.jsonl")
    baseline.precompute(answer, train_set + heldout, judge)
    if cfg.data.filter_solved:
        train_set = [i for i in train_set if (baseline.get(answer, i, judge) or 0.0) < 1.0]
    raw = [(i, prompt_messages(i, cfg)) for i in train_set]
    model, tok, base_path = build_policy_model(cfg, [(i, p) for i, p in raw if p], out, writer)

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False).input_ids)

    rows, kept = [], []
    for inst in train_set:
        msgs = prompt_messages(inst, cfg, count)
        if msgs is not None:
            rows.append({"prompt": msgs, "instance_id": inst.instance_id})
            kept.append(inst)
    if not rows:
        raise ValueError("no training instance fits max_prompt_tokens")
    held_prompts = [prompt_messages(i, cfg, count) for i in heldout]
    held = [(i, p) for i, p in zip(heldout, held_prompts) if p is not None]

    def eval_fn(m: Any) -> dict[str, float]:
        return heldout_eval(m, tok, [i for i, _ in held], [p for _, p in held], answer, baseline, cfg, judge)

    for name, vals in (extra_baselines or {}).items():
        writer.write({"phase": "baseline", "step": 0, **{f"baseline/{name}/{k}": v for k, v in vals.items()}})
    if held:
        writer.write({"phase": "heldout", "step": 0, **{f"heldout/{k}": v for k, v in eval_fn(model).items()}})
    reward_fn = StateRewardFn(kept, answer, baseline, cfg, judge)
    peft_config = None
    if cfg.lora.enabled:
        peft_config = LoraConfig(r=cfg.lora.r, lora_alpha=cfg.lora.alpha, lora_dropout=cfg.lora.dropout,
                                 target_modules=cfg.lora.target_modules, task_type="CAUSAL_LM")
    trainer = GRPOTrainer(model=model, reward_funcs=[reward_fn], args=GRPOConfig(**cfg.grpo_args()),
                          train_dataset=Dataset.from_list(rows), processing_class=tok, peft_config=peft_config,
                          callbacks=make_callbacks(cfg, writer, eval_fn))
    return Run(cfg=cfg, trainer=trainer, tokenizer=tok, writer=writer, eval_fn=eval_fn, has_heldout=bool(held),
               base_path=base_path, out=out, train_instances=len(rows), t_start=t_start)


def finish(run: Run) -> TrainResult:
    """Save the adapter (+ tokenizer + evomem_policy.json), evaluate held-out, plot."""
    cfg, trainer = run.cfg, run.trainer
    final = run.out / "final"
    trainer.save_model(str(final))
    heldout_final = None
    plot = None
    if trainer.accelerator.is_main_process:
        run.tokenizer.save_pretrained(str(final))
        write_meta(final, PolicyMeta(base_model=run.base_path, adapter=cfg.lora.enabled, prompt=cfg.data.prompt,
                                     prompt_version=load_prompt(cfg.data.prompt).version,
                                     chat_template_kwargs=cfg.chat_template_kwargs))
        if run.has_heldout:
            heldout_final = run.eval_fn(trainer.model)
            run.writer.write({"phase": "heldout", "step": trainer.state.global_step,
                              **{f"heldout/{k}": v for k, v in heldout_final.items()}})
        plot = plot_metrics(run.writer.path, run.out / "metrics.png", cfg.name)
    return TrainResult(output_dir=str(run.out), final_dir=str(final), metrics_path=str(run.writer.path),
                       plot_path=str(plot) if plot else None, steps=trainer.state.global_step,
                       train_instances=run.train_instances, heldout=heldout_final,
                       seconds=time.time() - run.t_start)


def train(cfg: TrainConfig, *, extra_baselines: dict[str, dict[str, float]] | None = None) -> TrainResult:
    """Run GRPO per ``cfg``; returns where everything was written and the final held-out numbers."""
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


if __name__ == "__main__":
    sys.exit(main())
