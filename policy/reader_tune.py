"""A reader fine-tuned here to read the memory and the Reasoning State, then frozen (issue 48 item 1, fallback).

Measured last session: SmolLM2-135M-Instruct as it ships does not read the memory (held-out neutral rows:
no memory 0.50, evidence 0.35, rule state 0.45), so a policy trained against it had nothing to learn. Here a
LoRA adapter on the same model is trained on the *training* split of the neutral-option instances
(``training_data.neutral``) to maximise the softmax probability of the target option over the options' mean
log-probabilities per token — exactly the quantity ``LMReader.graded`` returns — with the prompt
``LMReader.prompt_text`` builds (same tokenisation of head and tail), under a mix of conditions:

=============  ==================================================  ========
condition      state shown                                          target
=============  ==================================================  ========
evidence       none (rendered evidence only)                        right
rule           the rule baseline's state (``policy.rule``)           right
oracle         per-fact lines with the right roles                  right
oracle_rules   the same plus RULE lines naming the deciding facts   right
wrong          per-fact lines with the roles of the two sides       wrong
               swapped (the superseded item current, the belief
               as evidence, the plan not expired ...)
wrong_rules    the same plus RULE lines saying so                   wrong
=============  ==================================================  ========

The ``wrong`` conditions are what make it read the state: the evidence alone points to the right option,
so a reader that ignored the state lines (and their RULE lines) would be wrong on them. The states never
name an option; they name facts by alias, as a policy's state does. A validation split is carved from the
training rows by id hash (``val_fraction``; held-out rows are never read) and the adapter with the best
validation score (mean P(target) over the evidence / oracle / wrong conditions) is kept.

    evomem train-reader --config reader-smollm2 [--set seed=1 steps=40]
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from policy.option_scoring import choice_index
from policy.state import FactUse, ReasoningState, fit_state
from training_data.base import TrainingInstance

if TYPE_CHECKING:
    from policy.lmreader import LMReader

READER_VERSION = "reader-neutral-v1"
CONDITIONS: tuple[str, ...] = ("evidence", "rule", "oracle", "oracle_rules", "wrong", "wrong_rules")
VAL_CONDITIONS: tuple[str, ...] = ("evidence", "oracle", "wrong")
ARTEFACT_MANIFEST = "reader_manifest.json"


class ReaderTuneConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "reader-smollm2"
    output_dir: str = "runs/reader-smollm2"
    artefact: str | None = Field(default=None, description="Copy the best adapter here (e.g. policy/artefact/"
                                 "smollm2-reader-v1); None: only output_dir/best.")
    train_path: str = "runs/neutral/train.jsonl"
    val_fraction: float = Field(default=0.1, gt=0, lt=1, description="Training rows set aside (by id hash) for "
                                "early stopping.")
    val_limit: int = Field(default=30, ge=1, description="Validation rows scored per check (balanced by family).")
    train_limit: int = Field(default=0, ge=0, description="At most N training rows (0: all; smoke tests).")
    seed: int = 0
    steps: int = Field(default=120, ge=1, description="Optimizer steps.")
    batch: int = Field(default=4, ge=1, description="(instance, condition) samples per step (accumulated).")
    learning_rate: float = 5e-4
    weights: dict[str, float] = Field(default_factory=lambda: {c: 1.0 for c in CONDITIONS},
                                      description="Sampling weight of each condition.")
    lora_r: int = 8
    lora_alpha: int = 16
    top_layers: int = Field(default=8, ge=1, description="LoRA on the top N decoder layers only (cheap backward).")
    target_modules: list[str] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                               "up_proj", "down_proj"])
    evidence_budget: int = 160
    prompt: str = Field(default="reader", description="Answer prompt (policy/answer_prompts); the reader is used "
                        "with this one only.")
    eval_every: int = Field(default=20, ge=1)
    paired: bool = Field(default=False, description="Draw a state condition together with its swapped twin on the "
                         "same instance (oracle+wrong, oracle_rules+wrong_rules) in one step, so the evidence "
                         "cancels out of the gradient and only the state lines tell the targets apart.")
    num_threads: int = 2
    tiny_model: bool = Field(default=False, description="A random 2-layer model with the SmolLM2 tokenizer "
                             "(smoke tests only: seconds, meaningless scores).")


class ReaderTuneResult(BaseModel):
    output_dir: str
    best_step: int
    best_val: float
    val_history: list[dict[str, float]]
    seconds: float
    artefact: str | None


# --- states ---------------------------------------------------------------------------------------------

_IGN = ("ignore", "irrelevant", "low")


def _key(fact_id: str) -> str:
    return fact_id.split("::", 1)[1] if "::" in fact_id else fact_id


def _line(use: str, role: str, prio: str, alias: str) -> FactUse:
    return FactUse(alias=alias, use=use == "use", role=role, priority=prio)  # type: ignore[arg-type]


def oracle_state(inst: TrainingInstance, wrong: bool = False, rules: bool = False) -> ReasoningState:
    """The state a perfect policy writes for a neutral instance (``wrong``: the two sides' roles swapped, the
    state that supports the wrong option); ``rules`` adds RULE lines naming the deciding facts by alias.

    Roles by family, from the fact keys ``training_data.neutral`` gives (right / wrong):
    updates old/new, conflicts m*/evidence/side, scope pref/limit, holders belief/doc, expiry plan*/home;
    the ``sd-*`` families of ``training_data.state_decides`` right/wrong with their lines in ``metadata['roles']``;
    every other fact (distractors) is ``ignore | irrelevant | low`` either way."""
    fam = str(inst.metadata.get("family", ""))
    alias = {_key(it.fact.fact_id): it.alias for it in inst.evidence}
    right: dict[str, tuple[str, str, str]] = {}
    bad: dict[str, tuple[str, str, str]] = {}
    rule_right: list[str] = []
    rule_wrong: list[str] = []
    A = alias.get
    if fam == "updates":
        right = {"old": ("ignore", "historical", "low"), "new": ("use", "current-preference", "high")}
        bad = {"old": right["new"], "new": right["old"]}
        rule_right = [f"{A('new')} replaces {A('old')}; go by {A('new')}."]
        rule_wrong = [f"{A('old')} replaces {A('new')}; go by {A('old')}."]
    elif fam == "conflicts":
        ms = [k for k in alias if k.startswith("m") and k[1:].isdigit()]
        right = {**{m: ("use", "current-preference", "low") for m in ms}, "evidence": ("use", "evidence", "high"),
                 "side": ("use", "evidence", "medium")}
        bad = {**{m: ("use", "current-preference", "high") for m in ms}, "evidence": _IGN,
               "side": ("use", "evidence", "high")}
        mm = "/".join(str(A(m)) for m in ms)
        rule_right = [f"The search results {A('evidence')} outweigh the preference {mm}; follow the evidence."]
        rule_wrong = [f"The preference {mm} outweighs the search results {A('evidence')}; follow the preference."]
    elif fam == "scope":
        right = {"pref": ("use", "current-preference", "medium"), "limit": ("use", "constraint", "high")}
        bad = {"pref": ("use", "current-preference", "high"), "limit": _IGN}
        rule_right = [f"{A('pref')} decides only the part inside its scope; {A('limit')} is outside it."]
        rule_wrong = [f"Let {A('pref')} decide what {A('limit')} is about; set {A('limit')} aside."]
    elif fam == "holders":
        right = {"belief": _IGN, "doc": ("use", "evidence", "high")}
        bad = {"belief": ("use", "evidence", "high"), "doc": _IGN}
        rule_right = [f"The document {A('doc')} outweighs the belief {A('belief')}; follow the document."]
        rule_wrong = [f"The belief {A('belief')} outweighs the document {A('doc')}; follow the belief."]
    elif fam == "expiry":
        plans = [k for k in alias if k in ("plan", "plan2")]
        right = {**{p: ("ignore", "historical", "low") for p in plans}, "home": ("use", "evidence", "high")}
        bad = {**{p: ("use", "current-preference", "high") for p in plans}, "home": ("ignore", "historical", "low")}
        pp = "/".join(str(A(p)) for p in plans)
        rule_right = [f"{pp} expired; go by {A('home')}."]
        rule_wrong = [f"{A('home')} is outdated; go by {pp}."]
    elif fam.startswith("sd-"):  # training_data.state_decides: the perfect lines of both sides in metadata
        roles_md = inst.metadata["roles"]
        right = {"right": tuple(roles_md["right"]), "wrong": tuple(roles_md["wrong"])}  # type: ignore[dict-item]
        bad = {"right": right["wrong"], "wrong": right["right"]}
        rule_right = [f"Go by {A('right')}; set {A('wrong')} aside."]
        rule_wrong = [f"Go by {A('wrong')}; set {A('right')} aside."]
    else:
        raise ValueError(f"{inst.instance_id}: no oracle for family {fam!r}")
    roles = bad if wrong else right
    facts = [_line(*roles.get(_key(it.fact.fact_id), _IGN), alias=it.alias) for it in inst.evidence]
    return ReasoningState(facts=tuple(facts), rules=tuple((rule_wrong if wrong else rule_right) if rules else ()))


def condition_state(inst: TrainingInstance, cond: str) -> tuple[ReasoningState | str, bool]:
    """(what the reader is shown, whether the target is the right option) for one training condition."""
    if cond == "evidence":
        return "evidence", True
    if cond == "rule":
        from policy.rule import RulePolicy

        return fit_state(RulePolicy().state(inst.request, inst.bundle())), True
    wrong = cond.startswith("wrong")
    return fit_state(oracle_state(inst, wrong=wrong, rules=cond.endswith("_rules"))), not wrong


def split_val(rows: Sequence[TrainingInstance], fraction: float) -> tuple[list[TrainingInstance], list[TrainingInstance]]:
    """(train, validation): an instance is validation when sha256("reader-val:" + id) falls under ``fraction``."""
    def h(i: TrainingInstance) -> float:
        return int(hashlib.sha256(f"reader-val:{i.instance_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF

    return [i for i in rows if h(i) >= fraction], [i for i in rows if h(i) < fraction]


def balanced(rows: Sequence[TrainingInstance], n: int) -> list[TrainingInstance]:
    """At most ``n`` rows, round-robin over families (each family in id-hash order)."""
    by: dict[str, list[TrainingInstance]] = {}
    for i in sorted(rows, key=lambda i: hashlib.sha256(i.instance_id.encode()).hexdigest()):
        by.setdefault(str(i.metadata.get("family", i.category)), []).append(i)
    out: list[TrainingInstance] = []
    while len(out) < n and any(by.values()):
        for fam in sorted(by):
            if by[fam] and len(out) < n:
                out.append(by[fam].pop(0))
    return out


# --- the differentiable score ---------------------------------------------------------------------------

def option_logprobs_grad(reader: LMReader, inst: TrainingInstance, shown: ReasoningState | str) -> Any:
    """Mean log-probability per token of each option (a tensor with grad), tokenised as ``LMReader`` does
    (head and tail apart, each option + EOS after the prompt's KV cache)."""
    import torch

    assert inst.choices
    text = reader.prompt_text(inst.request, inst.bundle(), inst.choices, shown)  # type: ignore[arg-type]
    head = reader.split_head(text)
    pre = torch.cat([reader._ids(head), reader._ids(text[len(head):])], 1) if head else reader._ids(text)
    out = reader.model(pre, use_cache=True, logits_to_keep=1)  # only the last position's logits are read
    first = torch.log_softmax(out.logits[0, -1].float(), -1)
    cache, n = out.past_key_values, pre.shape[1]
    scores = []
    for c in inst.choices:
        ids = reader._ids(c + reader.eos)
        lp = [first[ids[0, 0]]]
        if ids.shape[1] > 1:
            o = reader.model(ids, past_key_values=cache, use_cache=True)
            logp = torch.log_softmax(o.logits[0, :-1].float(), -1)
            lp.append(logp.gather(1, ids[0, 1:, None])[:, 0].sum())
            cache.crop(-ids.shape[1])
        scores.append(torch.stack([x.reshape(()) for x in lp]).sum() / ids.shape[1])
    return torch.stack(scores)


TWIN = {"oracle": "wrong", "wrong": "oracle", "oracle_rules": "wrong_rules", "wrong_rules": "oracle_rules"}


def draw_batch(train: Sequence[TrainingInstance], conds: Sequence[str], wts: Sequence[float], n: int,
               rng: random.Random, paired: bool = False) -> list[tuple[TrainingInstance, str]]:
    """``n`` (instance, condition) samples; ``paired``: a drawn oracle/wrong condition brings its twin on the
    same instance (the pair counts as two of the ``n``; the last one may be cut to keep ``n``)."""
    out: list[tuple[TrainingInstance, str]] = []
    while len(out) < n:
        inst, cond = rng.choice(train), rng.choices(list(conds), list(wts))[0]
        out.append((inst, cond))
        if paired and cond in TWIN and len(out) < n:
            out.append((inst, TWIN[cond]))
    return out


def target_index(inst: TrainingInstance, right: bool) -> int:
    assert inst.choices
    ref = choice_index(inst.choices, inst.reference_answer)
    if ref is None:
        raise ValueError(f"{inst.instance_id}: its reference answer is none of its options")
    return ref if right else next(k for k in range(len(inst.choices)) if k != ref)


# --- training -------------------------------------------------------------------------------------------

def _load_model(cfg: ReaderTuneConfig) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM

    from policy.models import load_smollm2_tokenizer, smollm2_hf_dir

    tok = load_smollm2_tokenizer()
    if cfg.tiny_model:
        from transformers import LlamaConfig, LlamaForCausalLM

        torch.manual_seed(cfg.seed)
        mc = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048)
        return LlamaForCausalLM(mc), tok
    return AutoModelForCausalLM.from_pretrained(str(smollm2_hf_dir()), dtype=torch.float32), tok


def data_hash(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def validate(reader: LMReader, rows: Sequence[TrainingInstance]) -> dict[str, float]:
    """Mean P(target) and accuracy per validation condition (no grad); ``score`` = mean P(target)."""
    import torch

    res: dict[str, float] = {}
    with torch.no_grad():
        for cond in VAL_CONDITIONS:
            ps, acc = [], []
            for inst in rows:
                shown, right = condition_state(inst, cond)
                p = torch.softmax(option_logprobs_grad(reader, inst, shown), 0)
                t = target_index(inst, right)
                ps.append(float(p[t]))
                acc.append(float(int(p.argmax()) == t))
            res[f"{cond}/p"], res[f"{cond}/acc"] = sum(ps) / len(ps), sum(acc) / len(acc)
    res["score"] = sum(res[f"{c}/p"] for c in VAL_CONDITIONS) / len(VAL_CONDITIONS)
    return res


def train_reader(cfg: ReaderTuneConfig, command: str = "") -> ReaderTuneResult:
    import shutil

    import torch
    from peft import LoraConfig, get_peft_model

    from policy.lmreader import LMReader

    t0 = time.time()
    torch.set_num_threads(cfg.num_threads)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    rows = [TrainingInstance.model_validate_json(x) for x in Path(cfg.train_path).read_text().splitlines() if x.strip()]
    if any(r.metadata.get("split") == "heldout" for r in rows):
        raise ValueError(f"{cfg.train_path} holds held-out instances; the reader trains on the training split only")
    rows = [r for r in rows if r.choices]
    train, val = split_val(rows, cfg.val_fraction)
    if cfg.train_limit:
        train = balanced(train, cfg.train_limit)
    val = balanced(val, cfg.val_limit)
    model, tok = _load_model(cfg)
    n_layers = model.config.num_hidden_layers
    lcfg = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0, target_modules=cfg.target_modules,
                      layers_to_transform=list(range(max(0, n_layers - cfg.top_layers), n_layers)), task_type="CAUSAL_LM")
    model = get_peft_model(model, lcfg)
    reader = LMReader(model, tok, prompt=cfg.prompt, evidence_budget=cfg.evidence_budget)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.learning_rate)
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    conds = [c for c in CONDITIONS if cfg.weights.get(c, 0) > 0]
    wts = [cfg.weights[c] for c in conds]
    log = (out / "metrics.jsonl").open("w")
    model.eval()  # no dropout; LoRA params still train
    best = validate(reader, val)
    best_step, history = 0, [{"step": 0.0, **best}]
    log.write(json.dumps(history[-1]) + "\n")
    model.save_pretrained(str(out / "best"))
    for step in range(1, cfg.steps + 1):
        opt.zero_grad()
        total, per = 0.0, []
        for inst, cond in draw_batch(train, conds, wts, cfg.batch, rng, cfg.paired):
            shown, right = condition_state(inst, cond)
            lps = option_logprobs_grad(reader, inst, shown)
            loss = -torch.log_softmax(lps, 0)[target_index(inst, right)] / cfg.batch
            loss.backward()
            total += float(loss.detach())
            per.append([cond, round(float(loss.detach()) * cfg.batch, 4)])
        opt.step()
        log.write(json.dumps({"step": step, "loss": round(total, 4), "samples": per,
                              "seconds": round(time.time() - t0, 1)}) + "\n")
        log.flush()
        if step % cfg.eval_every == 0 or step == cfg.steps:
            v = validate(reader, val)
            history.append({"step": float(step), **v})
            log.write(json.dumps(history[-1]) + "\n")
            log.flush()
            if v["score"] > best["score"]:
                best, best_step = v, step
                model.save_pretrained(str(out / "best"))
    log.close()
    manifest = {"version": READER_VERSION, "base": "tiny-random" if cfg.tiny_model else "smollm2-135m-instruct",
                "data": {"path": cfg.train_path, "sha256": data_hash(cfg.train_path), "train_rows": len(train),
                         "val_rows": len(val)},
                "seed": cfg.seed, "command": command, "config": cfg.model_dump(), "best_step": best_step,
                "val": best, "evidence_budget": cfg.evidence_budget, "prompt": cfg.prompt, "seconds": round(time.time() - t0, 1)}
    (out / "best" / ARTEFACT_MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    art = None
    if cfg.artefact:
        dst = Path(cfg.artefact)
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(out / "best", dst, ignore=shutil.ignore_patterns("README.md"))  # PEFT's model-card stub
        art = str(dst)
    return ReaderTuneResult(output_dir=str(out), best_step=best_step, best_val=best["score"], val_history=history,
                            seconds=round(time.time() - t0, 1), artefact=art)


__all__ = ["CONDITIONS", "TWIN", "ReaderTuneConfig", "ReaderTuneResult", "condition_state", "draw_batch", "option_logprobs_grad", "oracle_state",
           "split_val", "target_index", "validate",
           "train_reader"]
