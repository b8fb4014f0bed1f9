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
"""

from __future__ import annotations

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
from policy.metrics import MetricsWriter, plot_metrics
from policy.perfact import fact_messages, is_per_fact
from policy.prompt import as_dicts, load_prompt, policy_messages
from policy.rewards import AnswerModel, BaselineCache, RewardBreakdown, state_reward
from scoring.judge import Judge
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


# --- data ---------------------------------------------------------------------------------------------


def read_instances(path: str | Path) -> list[TrainingInstance]:
    return [TrainingInstance.model_validate_json(line) for line in Path(path).read_text().splitlines() if line.strip()]


def synthetic_set(cfg: TrainConfig, n: int, seed: int) -> list[TrainingInstance]:
    """``n`` instances of the configured synthetic generator drawn with ``seed``."""
    from training_data.synthetic import SyntheticSource

    return list(SyntheticSource(cfg.data.synthetic.model_copy(update={"n": n})).instances(seed)) if n else []


def load_instances(cfg: TrainConfig) -> tuple[list[TrainingInstance], list[TrainingInstance]]:
    """(training set, held-out set): JSONL files when configured, else the synthetic generator."""
    if cfg.data.train_path:
        train = split_validation(read_instances(cfg.data.train_path), cfg.data.val_from_train)[0]
    else:
        train = synthetic_set(cfg, cfg.data.synthetic.n, cfg.seed)
    if cfg.data.eval_path:
        heldout = read_instances(cfg.data.eval_path)[: cfg.data.n_eval]
    else:
        heldout = synthetic_set(cfg, cfg.data.n_eval, cfg.data.eval_seed)
    return train, heldout


def load_validation(cfg: TrainConfig) -> list[TrainingInstance]:
    """The checkpoint-selection set: synthetic instances from ``data.val_seed`` (none when n_val is 0), or
    with ``data.val_from_train`` the training instances ``split_validation`` sets aside."""
    if cfg.data.val_from_train and cfg.data.train_path:
        return split_validation(read_instances(cfg.data.train_path), cfg.data.val_from_train)[1]
    return synthetic_set(cfg, cfg.data.n_val, cfg.data.val_seed)


def split_validation(train: Sequence[TrainingInstance], n: int) -> tuple[list[TrainingInstance], list[TrainingInstance]]:
    """(train, validation): the ``n`` instances with the highest sha256 of their id are validation — a
    split by id only, so it never depends on file order."""
    import hashlib

    if not n:
        return list(train), []
    ranked = sorted(train, key=lambda i: hashlib.sha256(i.instance_id.encode()).hexdigest())
    val = {i.instance_id for i in ranked[-n:]}
    return [i for i in train if i.instance_id not in val], [i for i in train if i.instance_id in val]


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


PolicyCall = tuple[str | None, list[dict[str, str]]]


def policy_calls(inst: TrainingInstance, cfg: TrainConfig, count_tokens: Any = None) -> list[PolicyCall] | None:
    """The policy prompts one state of ``inst`` takes: one whole-state prompt (alias None, shrunk as
    ``prompt_messages`` does; None when it cannot fit) or, with a per-fact prompt, one per fact."""
    if is_per_fact(cfg.data.prompt):
        bundle = inst.bundle()
        return [(it.alias, as_dicts(fact_messages(inst.request, bundle, it.alias, inst.choices, prompt=cfg.data.prompt)))
                for it in bundle.items]
    msgs = prompt_messages(inst, cfg, count_tokens)
    return [(None, msgs)] if msgs is not None else None


# --- answer model + reward ------------------------------------------------------------------------------


def build_answer_model(cfg: TrainConfig) -> tuple[AnswerModel, Judge | None]:
    from policy.reader import AnswerReader
    from policy.rewards import ChatAnswerModel, ReaderAnswerModel

    if cfg.answer.kind == "reader":
        return ReaderAnswerModel(AnswerReader(cfg.answer.reader_ignored_weight)), None
    if cfg.answer.kind == "lm":  # SmolLM2 scoring options by log-likelihood, frozen (policy/lmreader.py)
        from policy.lmreader import LMAnswerModel, LMReader

        if cfg.answer.reader_adapter:
            return LMAnswerModel(LMReader.finetuned(cfg.answer.reader_adapter)), None
        return LMAnswerModel(LMReader.smollm2()), None
    from llmclients.factory import make_chat_model

    assert cfg.answer.endpoint is not None  # the config validator guarantees it
    judge = Judge(make_chat_model(cfg.answer.judge)) if cfg.answer.judge else None
    return ChatAnswerModel(make_chat_model(cfg.answer.endpoint), max_tokens=cfg.answer.max_tokens), judge


def filter_solved(instances: Sequence[TrainingInstance], model: AnswerModel, baseline: BaselineCache,
                  judge: Judge | None = None) -> list[TrainingInstance]:
    """Drop instances the answer model already solves without a state: their reward can only be <= 0.
    An instance whose baseline timed out is kept (unknown is not solved)."""
    return [i for i in instances if (baseline.get(model, i, judge) or 0.0) < 1.0]


class StateRewardFn:
    """The reward function TRL calls: one float (or None) per completion, plus logged metrics."""

    __name__ = "state_reward"

    def __init__(self, instances: Sequence[TrainingInstance], model: AnswerModel, baseline: BaselineCache,
                 cfg: TrainConfig, judge: Judge | None = None):
        self.by_id = {i.instance_id: i for i in instances}
        self.model, self.baseline, self.cfg, self.judge = model, baseline, cfg, judge
        self.pool = ThreadPoolExecutor(cfg.answer.concurrency) if cfg.answer.kind == "chat" else None
        self.context: dict[str, dict[str, str]] = {}

    def in_context(self, text: str, inst: TrainingInstance, alias: str) -> str:
        """A per-fact completion (``alias`` set) as a whole state: the rule baseline's lines (role first, no
        RULE lines) with this fact's line replaced — so its reward is what this one decision adds or costs
        against the baseline. A whole-state completion (no alias) is returned as it is."""
        if not alias:
            return text
        from policy.perfact import assemble, fact_targets
        from policy.targets import candidate_states, described

        if inst.instance_id not in self.context:
            rule = described(candidate_states(inst, style="facts")[0], inst)
            self.context[inst.instance_id] = fact_targets(rule, inst.aliases)
        lines = self.context[inst.instance_id]
        return assemble(inst.aliases, [text if a == alias else lines[a] for a in inst.aliases])

    def breakdowns(self, completions: Sequence[Any], completion_ids: Sequence[Sequence[int]] | None,
                   instance_id: Sequence[str], alias: Sequence[str] = ()) -> list[RewardBreakdown]:
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        lens = [len(x) for x in completion_ids] if completion_ids is not None else [None] * len(texts)
        aliases = list(alias) or [""] * len(texts)

        def one(k: int) -> RewardBreakdown:
            inst = self.by_id[instance_id[k]]
            # a per-fact line is scored inside a whole state, and the length cap applies to that state
            return state_reward(self.in_context(texts[k], inst, aliases[k]), inst, self.model, self.baseline,
                                self.cfg.reward, n_tokens=None if aliases[k] else lens[k], judge=self.judge)

        idx = range(len(texts))
        return list(self.pool.map(one, idx)) if self.pool else [one(k) for k in idx]

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], completion_ids: Any = None,
                 instance_id: Sequence[str] = (), alias: Sequence[str] = (), log_metric: Any = None,
                 **_: Any) -> list[float | None]:
        bds = self.breakdowns(completions, completion_ids, instance_id, alias)
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
                    baseline: BaselineCache, cfg: TrainConfig, judge: Judge | None = None) -> dict[str, float]:
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
                 answer: AnswerModel, baseline: BaselineCache, cfg: TrainConfig, judge: Judge | None = None,
                 batch_size: int = 50) -> dict[str, float]:
    """Greedy states for the held-out set with the current weights, then ``evaluate_states``."""
    from policy.learned import LocalLearnedPolicy

    pol = LocalLearnedPolicy(model, tokenizer, prompt=cfg.data.prompt, temperature=0.0,
                             max_new_tokens=cfg.eval_max_new_tokens or cfg.max_completion_length,
                             chat_template_kwargs=cfg.chat_template_kwargs)
    was_training = model.training
    model.eval()
    texts: list[str] = []
    if pol.per_fact:  # prompts are built per fact from the instances themselves
        texts = pol.state_texts([(i.request, i.bundle(), i.choices) for i in instances], batch_size)
    else:
        for s in range(0, len(prompts), batch_size):
            batch = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True,
                                                   **cfg.chat_template_kwargs) for p in prompts[s:s + batch_size]]
            texts.extend(pol.generate(batch))
    if was_training:
        model.train()
    return evaluate_states(texts, instances, answer, baseline, cfg, judge)


# --- the run ------------------------------------------------------------------------------------------------


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


if __name__ == "__main__":
    sys.exit(main())
