"""Fine-tuning the cross-encoder relation model (induction/relations/cross.py) on CPU.

The pairs are the ones every relation model trains on (``relations_train.build_pairs``: the same sources and
source-selection fields of ``RelationTrainConfig``, so a leave-one-source-out run drops a source for this
kind exactly as for the logistic one). Of the many MemSyco and LoCoMo negatives a fixed random sample is
kept (``negatives``); every positive and every pair of the small sources stays, the phrasing tuning half and
BEAM repeated (``oversample``). The lower MiniLM layers are frozen: each distinct statement is read through
them once, then the upper layers and the head train for a few epochs on its cached states. Deterministic
given the seed and the thread count.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from induction.relations.features import LABELS, STRUCT_NAMES
from induction.relations.model import scores

PROBE_PAIR = ("I'm allergic to shellfish.", "Had shrimp tacos last night and felt totally fine.")


class CrossModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    split: int = Field(default=4, ge=0, le=6, description="MiniLM layers that read each statement alone (frozen); "
                       "the rest read the pair together and are fine-tuned.")
    hidden: int = Field(default=128, ge=8, le=1024, description="Hidden units of the head.")
    max_tokens: int = Field(default=48, ge=8, le=256, description="Tokens kept of each statement (a pair: twice this).")
    epochs: int = Field(default=3, ge=1, le=50, description="Passes over the sampled pairs.")
    batch_size: int = Field(default=32, ge=1, le=512)
    lr: float = Field(default=5e-5, gt=0, description="AdamW rate of the fine-tuned layers.")
    head_lr: float = Field(default=1e-3, gt=0, description="AdamW rate of the head and the role vectors.")
    balance: float = Field(default=0.5, ge=0, le=1, description="Class weight = (1/frequency)^balance.")
    negatives: dict[str, int] = Field(default_factory=lambda: {"memsyco": 3000, "locomo": 600},
                                      description="Source -> unrelated pairs sampled (the other sources keep all).")
    oversample: dict[str, int] = Field(default_factory=lambda: {"phrasing": 4, "beam": 2},
                                       description="Source -> times its pairs are repeated per epoch.")
    threads: int = Field(default=2, ge=1, le=64, description="torch threads while training.")
    max_minutes: float = Field(default=14.0, gt=0, description="Training stops after this (the 20-minute preset bar).")
    val_negatives: int = Field(default=1500, ge=0, description="Unrelated validation pairs scored (all positives are).")
    infer_batch: int = Field(default=64, ge=1, description="Pairs per forward at ingest.")
    lower_cache: str | None = Field(default=None, description="File that keeps the frozen lower states of every "
                                    "statement read (float16, keyed by the base model, max_tokens and split): a rerun "
                                    "on the same statements skips reading them (minutes on a loaded 2-core box).")
    thresholds: tuple[float, float, float] | None = Field(default=None, description="(supersede, conflict, same-holder "
                                                          "conflict) thresholds written into the manifest, used at "
                                                          "ingest (RelationModelConfig.cross_thresholds); chosen on the "
                                                          "phrasing tuning half only.")


def sample(y: np.ndarray, source: np.ndarray, mask: np.ndarray, cc: CrossModelConfig, seed: int) -> np.ndarray:
    """Indices trained on (within ``mask``), with repeats for ``oversample``."""
    rng = np.random.default_rng(seed)
    src = np.asarray([str(s).split("/", 1)[0] for s in source])
    keep: list[int] = []
    for s in sorted(set(src[mask])):
        idx = np.flatnonzero(mask & (src == s))
        neg = idx[y[idx] == 0]
        cap = cc.negatives.get(s)
        if cap is not None and len(neg) > cap:
            neg = np.sort(rng.choice(neg, cap, replace=False))
        chosen = np.concatenate([idx[y[idx] != 0], neg])
        keep += list(chosen) * max(1, cc.oversample.get(s, 1))
    return np.asarray(sorted(keep), dtype=np.int64)


def _val_sample(y: np.ndarray, mask: np.ndarray, n_neg: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1)
    idx = np.flatnonzero(mask)
    neg = idx[y[idx] == 0]
    if len(neg) > n_neg:
        neg = rng.choice(neg, n_neg, replace=False)
    return np.sort(np.concatenate([idx[y[idx] != 0], neg]))


def train_cross(d: dict[str, Any], train_mask: np.ndarray, val_mask: np.ndarray, cc: CrossModelConfig, seed: int,
                log: Callable[[dict[str, Any]], None]) -> tuple[Any, dict[str, float]]:
    """Fine-tune on ``d`` (``build_pairs``' arrays) rows of ``train_mask``; score on a sample of ``val_mask``."""
    import torch

    from induction.relations.cross import CrossRelationModel, build_net, pad

    t0 = time.perf_counter()
    torch.manual_seed(seed)
    old_threads = torch.get_num_threads()
    torch.set_num_threads(cc.threads)
    try:
        X = np.asarray(d["X"], dtype=np.float32)[:, : len(STRUCT_NAMES)]
        y = np.asarray(d["y"], dtype=np.int64)
        tn, to = [str(t) for t in d["text_new"]], [str(t) for t in d["text_old"]]
        tr = sample(y, d["source"], train_mask, cc, seed)
        va = _val_sample(y, val_mask, cc.val_negatives, seed) if val_mask.any() else np.zeros(0, np.int64)
        mean = X[np.unique(tr)].mean(0)
        std = X[np.unique(tr)].std(0) + 1e-4
        net = build_net(cc.split, cc.hidden, len(STRUCT_NAMES))
        model = CrossRelationModel(net, _tokenizer(), mean, std, {"config": cc.model_dump()}, cache_size=10 ** 9)
        texts = list(dict.fromkeys([tn[i] for i in np.concatenate([tr, va])] + [to[i] for i in np.concatenate([tr, va])]))
        order = sorted(texts, key=len)  # similar lengths in a batch: less padding
        _load_lower(model, cc)
        fresh = [t for t in order if t not in model._cache]
        model._lower(order)
        if fresh:
            _save_lower(model, cc)
        log({"phase": "cross/data", "pairs": int(len(tr)), "distinct_pairs": int(len(np.unique(tr))),
             "statements": len(texts), "val_pairs": int(len(va)), "seconds": round(time.perf_counter() - t0, 1),
             **{f"count/{lab}": int((y[tr] == i).sum()) for i, lab in enumerate(LABELS)}})
        freq = np.bincount(y[tr], minlength=len(LABELS)).astype(np.float64) / len(tr)
        cw = torch.tensor(np.where(freq > 0, (1.0 / np.maximum(freq, 1e-9)) ** cc.balance, 0.0), dtype=torch.float32)
        cw = cw / (cw[torch.from_numpy(y[tr])].mean())
        Z = torch.from_numpy(model.standardize(X))
        upper = [p for n, p in net.named_parameters() if p.requires_grad and n.startswith("upper.")]
        rest = [p for n, p in net.named_parameters() if p.requires_grad and not n.startswith("upper.")]
        opt = torch.optim.AdamW([{"params": upper, "lr": cc.lr}, {"params": rest, "lr": cc.head_lr}], weight_decay=0.01)
        steps = cc.epochs * math.ceil(len(tr) / cc.batch_size)
        t_fit, budget = time.perf_counter(), cc.max_minutes * 60 - (time.perf_counter() - t0)

        def rate(s: int) -> float:  # warm-up, then linear decay to 0 by the last step or the time limit, first reached
            done = max(s / max(1, steps), (time.perf_counter() - t_fit) / max(1.0, budget))
            return min(1.0, (s + 1) / max(1, steps // 10)) * max(0.0, 1.0 - done)

        sched = torch.optim.lr_scheduler.LambdaLR(opt, rate)
        rng = np.random.default_rng(seed)
        step, stopped = 0, False
        for ep in range(cc.epochs):
            net.train()
            perm = rng.permutation(tr)
            # batches of similar length, in random order
            chunks = [perm[i:i + cc.batch_size * 20] for i in range(0, len(perm), cc.batch_size * 20)]
            batches = []
            for ch in chunks:
                ch = ch[np.argsort([len(tn[i]) + len(to[i]) for i in ch], kind="stable")]
                batches += [ch[i:i + cc.batch_size] for i in range(0, len(ch), cc.batch_size)]
            run = 0.0
            for k in rng.permutation(len(batches)):
                b = batches[k]
                ha, ma = pad(model._lower([to[i] for i in b]))
                hb, mb = pad(model._lower([tn[i] for i in b]))
                logits = net(ha, ma, hb, mb, Z[b])
                loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(y[b]), weight=cw)
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
                opt.step()
                sched.step()
                step += 1
                run = 0.9 * run + 0.1 * float(loss) if step > 1 else float(loss)
                if step % 25 == 0:
                    log({"phase": "final", "step": step, "epoch": ep, "train_loss": round(run, 5),
                         "seconds": round(time.perf_counter() - t0, 1)})
                if time.perf_counter() - t0 > cc.max_minutes * 60:
                    stopped = True
                    break
            if stopped:
                break
        net.eval()
        vs: dict[str, float] = {}
        if len(va):
            P = model.predict_pairs([tn[i] for i in va], [to[i] for i in va], X[va])
            vs = scores(y[va], P.argmax(1))
        log({"phase": "cross/done", "steps": step, "of_steps": steps, "stopped_early": stopped,
             "seconds": round(time.perf_counter() - t0, 1)})
        model._cache.clear()
        model.cache_size = 20000
        return model, vs
    finally:
        torch.set_num_threads(old_threads)


def _lower_key(cc: CrossModelConfig) -> str:
    from induction.relations.cross import base_path

    return f"{Path(base_path()).name}:{cc.split}:{cc.max_tokens}"


def _load_lower(model: Any, cc: CrossModelConfig) -> None:
    """Fill the model's statement cache from ``cc.lower_cache`` (another base, split or length: ignored)."""
    import torch

    if not cc.lower_cache or not Path(cc.lower_cache).is_file():
        return
    data = torch.load(cc.lower_cache, weights_only=True)
    if data.get("key") == _lower_key(cc):
        model._cache.update({t: h.float() for t, h in data["states"].items()})


def _save_lower(model: Any, cc: CrossModelConfig) -> None:
    import torch

    if cc.lower_cache:
        Path(cc.lower_cache).parent.mkdir(parents=True, exist_ok=True)
        torch.save({"key": _lower_key(cc), "states": {t: h.half() for t, h in model._cache.items()}}, cc.lower_cache)


def _tokenizer() -> Any:
    from transformers import AutoTokenizer

    from induction.relations.cross import base_path

    return AutoTokenizer.from_pretrained(base_path())
