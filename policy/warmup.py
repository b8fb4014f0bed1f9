"""Format warm-up: a short supervised pass that teaches a from-scratch tiny model the state *format*.

A randomly initialised model emits noise, so every GRPO sample would fail the format gate and all
group advantages would be zero. The warm-up targets are well-formed states whose **decisions are
random**: use/ignore and priority are drawn uniformly for every line, so after the warm-up the model
writes valid states that carry no knowledge of which fact matters — whatever held-out reward the
policy gains afterwards is learned from the GRPO reward, and bench/policy_learning.py measures the
warmed-up model as the "untrained" baseline to show it.

Two knobs shape the targets (``WarmupSettings``):
- ``targets``: ``subset`` names 1-3 random facts in random order (the model learns to copy a fact's
  handle from the prompt — a pointer GRPO can then aim), ``all`` lists every fact in order;
- ``roles``: ``random``, or ``descriptive`` — copied from what the relational state says a fact *is*
  (superseded -> historical, constraint -> constraint, events/beliefs/other people -> evidence, else
  current-preference). This makes the model look a handle up in the prompt, the one skill every state
  line needs, without teaching a decision: the reader ignores roles except ``irrelevant``, which the
  warm-up never writes.
Real pretrained policies (Qwen3-4B, SmolLM2) skip this; the prompt's instructions teach them the format.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from graph.retrieval import EvidenceItem
from policy.state import PRIORITIES, ROLES


def random_state(aliases: Sequence[str], rng: random.Random, roles: Sequence[str] | None = None) -> str:
    """A well-formed state for every alias, in order: use/ignore and priority uniformly random; the role
    random too, or the given descriptive role per alias.

    >>> random_state(["F1", "F2"], random.Random(0)).count("\\n")
    1
    >>> random_state(["F1"], random.Random(0), ["historical"]).split(" | ")[1]
    'historical'
    """
    return "\n".join(f"{a}: {rng.choice(('use', 'ignore'))} | {roles[k] if roles else rng.choice(ROLES)} | "
                     f"{rng.choice(PRIORITIES)}" for k, a in enumerate(aliases))


def descriptive_role(item: EvidenceItem) -> str:
    """What the relational state says a fact *is* — never whether to use it, and never ``irrelevant``
    (the reader drops irrelevant facts, so that would be a decision in disguise)."""
    if item.state.validity in ("superseded", "expired", "retracted"):
        return "historical"
    if item.fact.kind == "constraint":
        return "constraint"
    if item.fact.kind in ("event", "circumstance", "belief") or item.fact.holder != "user":
        return "evidence"
    return "current-preference"


def warmup_target(aliases: Sequence[str], rng: random.Random, targets: str,
                  roles: Sequence[str] | None = None) -> str:
    """``targets``: subset (1-3 random facts, random order) or all (every fact, in order); ``roles``:
    descriptive role per alias, or None for random roles. Use/ignore and priority are always random."""
    if targets == "subset":
        k = rng.randint(1, min(3, len(aliases)))
        idx = rng.sample(range(len(aliases)), k)
        return random_state([aliases[i] for i in idx], rng, [roles[i] for i in idx] if roles else None)
    return random_state(aliases, rng, roles)


def format_warmup(model: Any, tokenizer: Any, prompts: Sequence[list[dict[str, str]]],
                  aliases: Sequence[Sequence[str]], *, steps: int, targets: str = "subset",
                  roles: Sequence[Sequence[str]] | None = None, lr: float = 1e-3, batch_size: int = 8,
                  seed: int = 0, log_every: int = 25) -> list[dict[str, float]]:
    """Train ``model`` in place for ``steps`` batches; returns the loss log (step, loss)."""
    import torch

    rng = random.Random(f"warmup:{seed}")
    torch.manual_seed(seed)
    device = next(model.parameters()).device
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    model.train()
    log: list[dict[str, float]] = []
    eos = tokenizer.eos_token
    for step in range(1, steps + 1):
        idx = [rng.randrange(len(prompts)) for _ in range(batch_size)]
        rows = []
        for i in idx:
            p = tokenizer.apply_chat_template(prompts[i], tokenize=False, add_generation_prompt=True)
            rows.append((tokenizer(p, add_special_tokens=False).input_ids,
                         tokenizer(warmup_target(aliases[i], rng, targets, roles[i] if roles else None) + eos,
                                   add_special_tokens=False).input_ids))
        width = max(len(a) + len(b) for a, b in rows)
        ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
        labels = torch.full((len(rows), width), -100, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for r, (a, b) in enumerate(rows):  # left-pad, like generation
            seq = a + b
            ids[r, width - len(seq):] = torch.tensor(seq)
            labels[r, width - len(b):] = torch.tensor(b)
            mask[r, width - len(seq):] = 1
        # Only the completion positions need logits: with a large vocabulary the LM head over the whole
        # prompt would dominate the cost of a step.
        keep = max(len(b) for _, b in rows) + 1
        logits = model(input_ids=ids.to(device), attention_mask=mask.to(device), logits_to_keep=keep).logits
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                                 labels[:, -keep + 1:].reshape(-1).to(device), ignore_index=-100)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % log_every == 0 or step == steps:
            log.append({"step": float(step), "loss": float(loss.item())})
    model.eval()
    return log
