"""Format warm-up: a short supervised pass that teaches a from-scratch tiny model the state *format*.

A randomly initialised model emits noise, so every GRPO sample would fail the format gate and all
group advantages would be zero. The warm-up targets are well-formed states that carry **no decision
about which fact matters**: the facts they name are drawn at random, and so are use/ignore and
priority — so whatever held-out reward the policy gains afterwards is learned from the GRPO reward,
and bench/policy_learning.py measures the warmed-up model as the "untrained" baseline to show it.

Knobs (``WarmupSettings``):
- ``targets``: ``subset`` names 1..``subset_max`` random facts in random order (the model learns to
  copy a fact's handle from the prompt — a pointer GRPO can then aim), ``all`` lists every fact;
- ``decisions``: ``random`` use/ignore and priority per line, or ``use`` ("use | … | high"): with
  ``subset_max=1`` the state is then a bare pointer and *which* fact is the only free choice — the
  cleanest credit assignment for a tiny policy, used by the CPU learning demo;
- ``roles``: ``random``, or ``descriptive`` — copied from what the memory record says a fact *is*
  (``descriptive_role``). This makes the model look a handle up in the prompt, the one skill every
  state line needs, without teaching a decision: the reader ignores roles except ``irrelevant``,
  which the warm-up never writes.
Real pretrained policies (Qwen3-4B, SmolLM2) skip this; the prompt's instructions teach them the format.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from retrieval.retrieve import EvidenceItem
from graph.rules import EVIDENCE_HOLDERS
from policy.state import PRIORITIES, ROLES
from training_data.base import TrainingInstance

ALIAS = re.compile(r"\bF(\d+)\b")


def shuffled_instance(inst: TrainingInstance, rng: random.Random) -> tuple[TrainingInstance, dict[str, str]]:
    """``inst`` with its facts in a random order and aliases renumbered F1.. in the order the prompt shows them
    (relation groups stay together, as the renderer keeps them); returns it with the old -> new alias map.

    Why: in retrieval order the outdated or contested fact often sits at the same position, and a warm-up
    on those prompts teaches layouts ("ignore F1") instead of reading each fact's line."""
    items = list(inst.evidence)
    rng.shuffle(items)
    groups: dict[int, list[EvidenceItem]] = {}
    for it in items:
        groups.setdefault(it.group, []).append(it)
    ordered = [it for g in groups.values() for it in g]
    amap = {it.alias: f"F{n}" for n, it in enumerate(ordered, 1)}
    evidence = tuple(it.model_copy(update={"alias": amap[it.alias]}) for it in ordered)
    gold = {amap[a]: g for a, g in inst.gold.items()}
    return inst.model_copy(update={"evidence": evidence, "gold": gold}), amap


def remap_state(text: str, amap: dict[str, str]) -> str:
    """A state text with every alias renamed by ``amap``; fact lines re-sorted by their new alias number
    (states list facts in prompt order), rule lines kept after them in their order.

    >>> remap_state("F1: ignore | historical | low\\nF2: use | evidence | high\\nRULE: F1 is old", {"F1": "F2", "F2": "F1"})
    'F1: use | evidence | high\\nF2: ignore | historical | low\\nRULE: F2 is old'
    """
    def sub(line: str) -> str:
        return ALIAS.sub(lambda m: amap.get(m.group(0), m.group(0)), line)

    lines = [sub(ln) for ln in text.splitlines()]
    facts = [ln for ln in lines if ALIAS.match(ln)]
    rest = [ln for ln in lines if not ALIAS.match(ln)]
    facts.sort(key=lambda ln: int(ALIAS.match(ln).group(1)))  # type: ignore[union-attr]
    return "\n".join(facts + rest)


def random_state(aliases: Sequence[str], rng: random.Random, roles: Sequence[str] | None = None,
                 decisions: str = "random") -> str:
    """A well-formed state for every alias, in order: use/ignore and priority uniformly random (or
    ``decisions="use"``: use, high); the role random too, or the given descriptive role per alias.

    >>> random_state(["F1", "F2"], random.Random(0)).count("\\n")
    1
    >>> random_state(["F1"], random.Random(0), ["historical"]).split(" | ")[1]
    'historical'
    >>> random_state(["F2"], random.Random(0), ["evidence"], decisions="use")
    'F2: use | evidence | high'
    """
    lines = []
    for k, a in enumerate(aliases):
        role = roles[k] if roles else rng.choice(ROLES)
        use, prio = ("use", "high") if decisions == "use" else (rng.choice(("use", "ignore")), rng.choice(PRIORITIES))
        lines.append(f"{a}: {use} | {role} | {prio}")
    return "\n".join(lines)


def descriptive_role(item: EvidenceItem) -> str:
    """What the memory record says a fact *is* — from its relational state, kind and holder — never
    whether to use it for this request, and never ``irrelevant`` (the reader drops irrelevant facts,
    so that would be a decision in disguise).

    superseded/expired/retracted or a past experience -> historical; a constraint -> constraint;
    an event, a circumstance, a belief (a claim about the world, the user's or anyone's: the rule
    baseline weighs it as evidence too) or someone else's statement -> evidence; the user's own
    preference or plan -> current-preference.
    """
    if item.state.validity in ("superseded", "expired", "retracted") or item.fact.kind == "experience":
        return "historical"
    if item.fact.kind == "constraint":
        return "constraint"
    if item.fact.kind in ("event", "circumstance", "belief") or item.fact.holder != "user":
        return "evidence"
    return "current-preference"


def warmup_target(aliases: Sequence[str], rng: random.Random, targets: str,
                  roles: Sequence[str] | None = None, subset_max: int = 3, decisions: str = "random") -> str:
    """``targets``: subset (1..subset_max random facts, random order) or all (every fact, in order);
    ``roles``: descriptive role per alias, or None for random roles. Use/ignore and priority are always
    random.

    >>> warmup_target(["F1", "F2", "F3"], random.Random(1), "subset", subset_max=1).count("\\n")
    0
    """
    if targets == "subset":
        k = rng.randint(1, min(subset_max, len(aliases)))
        idx = rng.sample(range(len(aliases)), k)
        return random_state([aliases[i] for i in idx], rng, [roles[i] for i in idx] if roles else None, decisions)
    return random_state(aliases, rng, roles, decisions)


def state_signature(item: EvidenceItem) -> str:
    """The kind of memory line a per-fact example reads: validity, relation sides, holder class.

    >>> from graph.models import Fact, RelationalState
    >>> f = Fact(fact_id="u::a", user_id="u", statement="Is sure of it", holder="assistant")
    >>> state_signature(EvidenceItem(alias="F1", fact=f, seed=True, group=0, state=RelationalState(
    ...     fact_id="u::a", validity="disputed", conflicts_with=("u::b",))))
    'disputed/conflict/outside'
    """
    s, h = item.state, item.fact.holder
    who = "user" if h == "user" else "outside" if h in EVIDENCE_HOLDERS else "other"
    rel = "+".join(k for k, v in (("replaces", s.supersedes), ("replaced", s.superseded_by),
                                  ("conflict", s.conflicts_with)) if v)
    return f"{s.validity}/{rel or '-'}/{who}"


class PromptSampler:
    """Which prompt the next warm-up example comes from: ``replacement`` (uniform draws, the original
    behaviour, same rng calls as before), ``epochs`` (each prompt once per pass, reshuffled per pass) or
    ``balanced`` (a group drawn with probability proportional to the square root of its size, then its
    prompts once per pass): the few lines that decide a conflict or an update — an outside report
    against a belief, the new side of an update — are otherwise a few percent of the draws.

    >>> s = PromptSampler(3, random.Random(0), "epochs")
    >>> sorted(s.draw() for _ in range(3)), sorted(s.draw() for _ in range(3))
    ([0, 1, 2], [0, 1, 2])
    >>> b = PromptSampler(101, random.Random(0), "balanced", groups=["big"] * 100 + ["rare"])
    >>> sum(b.draw() == 100 for _ in range(1100)) > 50   # uniform draws would give it about 11
    True
    """

    def __init__(self, n: int, rng: random.Random, sampling: str = "replacement",
                 groups: Sequence[str] | None = None):
        self.n, self.rng, self.sampling = n, rng, sampling
        self.order: list[int] = []
        self.members: dict[str, list[int]] = {}
        if sampling == "balanced":
            if groups is None or len(groups) != n:
                raise ValueError("balanced warm-up sampling needs one group per prompt (a per-fact prompt)")
            for k, g in enumerate(groups):
                self.members.setdefault(g, []).append(k)
            self.keys = sorted(self.members)
            self.weights = [len(self.members[g]) ** 0.5 for g in self.keys]
            self.orders: dict[str, list[int]] = {g: [] for g in self.keys}

    def draw(self) -> int:
        if self.sampling == "balanced":
            g = self.rng.choices(self.keys, self.weights)[0]
            if not self.orders[g]:
                self.orders[g] = self.rng.sample(self.members[g], len(self.members[g]))
            return self.orders[g].pop()
        if self.sampling != "epochs":
            return self.rng.randrange(self.n)
        if not self.order:
            self.order = self.rng.sample(range(self.n), self.n)
        return self.order.pop()


def format_warmup(model: Any, tokenizer: Any, prompts: Sequence[list[dict[str, str]]],
                  aliases: Sequence[Sequence[str]], *, steps: int, targets: str = "subset",
                  roles: Sequence[Sequence[str]] | None = None, subset_max: int = 3, decisions: str = "random",
                  lr: float = 1e-3, batch_size: int = 8, seed: int = 0, log_every: int = 25,
                  target_fn: Callable[[int, random.Random], str] | None = None,
                  sampling: str = "replacement", groups: Sequence[str] | None = None) -> list[dict[str, float]]:
    """Train ``model`` in place for ``steps`` batches; returns the loss log (step, loss).

    ``target_fn(prompt_index, rng)`` replaces the random targets — bench/policy_probe.py uses it to
    train on the answer key, asking whether the model can represent the skill GRPO has to find.
    ``sampling``: ``replacement`` draws prompts uniformly; ``epochs`` takes every prompt once per pass
    (a fresh shuffle each pass), so a short warm-up over a few hundred instances covers all of them;
    ``balanced`` draws by ``groups`` (one label per prompt, ``PromptSampler``)."""
    import torch

    rng = random.Random(f"warmup:{seed}")
    torch.manual_seed(seed)
    device = next(model.parameters()).device
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    model.train()
    log: list[dict[str, float]] = []
    eos = tokenizer.eos_token
    sampler = PromptSampler(len(prompts), rng, sampling, groups)
    from tqdm.auto import tqdm

    bar = tqdm(total=steps, desc="warm-up", unit="step", mininterval=10, leave=False)
    for step in range(1, steps + 1):
        idx = [sampler.draw() for _ in range(batch_size)]
        rows = []
        for i in idx:
            p = tokenizer.apply_chat_template(prompts[i], tokenize=False, add_generation_prompt=True)
            rows.append((tokenizer(p, add_special_tokens=False).input_ids,
                         tokenizer((target_fn(i, rng) if target_fn else
                                    warmup_target(aliases[i], rng, targets, roles[i] if roles else None,
                                                  subset_max, decisions)) + eos,
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
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
    bar.close()
    model.eval()
    return log
