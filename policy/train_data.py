"""Training data of the GRPO policy run (``policy.train``): instance files, the synthetic generator, the
checkpoint-selection split, and the policy prompts each instance takes (shrunk to the prompt budget, or one
per fact with a per-fact prompt)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from policy.config import TrainConfig
from policy.perfact import fact_messages, is_per_fact
from policy.prompt import as_dicts, policy_messages
from training_data.base import TrainingInstance


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
    ``prompt_messages`` does; None when it cannot fit) or, with a per-fact prompt, one per fact (with
    ``data.deciding_only``, only the facts ``metadata['deciding']`` names, when it names any)."""
    if is_per_fact(cfg.data.prompt):
        bundle = inst.bundle()
        deciding = set(inst.metadata.get("deciding") or ()) if cfg.data.deciding_only else set()
        return [(it.alias, as_dicts(fact_messages(inst.request, bundle, it.alias, inst.choices, prompt=cfg.data.prompt)))
                for it in bundle.items if not deciding or it.alias in deciding]
    msgs = prompt_messages(inst, cfg, count_tokens)
    return [(None, msgs)] if msgs is not None else None


__all__ = ["PolicyCall", "load_instances", "load_validation", "policy_calls", "prompt_messages", "read_instances",
           "split_validation", "synthetic_set"]
