"""State-aware answering (§3.4 / B.4): request -> evidence (seeds + relation traversal) -> Reasoning
State (policy) -> answer model over request + facts + relational states + Reasoning State.

Every stage is timed (retrieve, traverse, policy, answer) and token-counted, and the three ablation
switches of the paper are plain config flags: no traversal, no relational states, no Reasoning State.
The pipeline never writes to the store.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from graph.models import RelationalState
from retrieval.render import render_context
from retrieval.retrieve import EvidenceBundle
from llmclients.chat import ChatError, ChatMessage, ChatModel, ChatResult
from llmclients.config import ModelEndpointConfig, ModelsConfig
from llmclients.factory import make_chat_model
from memcore.memory import Memory
from policy.learned import EndpointLearnedPolicy, LocalLearnedPolicy, is_policy_checkpoint
from policy.base import Policy
from policy.rule import RulePolicy
from policy.state import ReasoningState, StateParseError
from policy.answer_prompts import AnswerPrompt, answer_messages, fill, load_answer_prompt, state_block
# the response models live in serving/wire.py (importable without the server's dependencies: the client uses them)
from serving.config import PipelineConfig as PipelineConfig  # defined with the settings: light to import
from serving.wire import AnswerResult, EvidenceView

log = logging.getLogger(__name__)


def make_policy(cfg: ModelEndpointConfig, prompt: str = "policy_v1", max_tokens: int = 512) -> Policy:
    """Rule baseline (policy_kind=rule); the learned policy shipped in the package (policy_kind=shipped:
    SmolLM2 + its LoRA adapter in process; the rule baseline, with a logged reason, when it is absent or
    broken); a checkpoint of ``evomem train-policy`` in process (connection=local, model_path holding
    evomem_policy.json: base + adapter, with the prompt it was trained on); or a model behind a ChatModel
    (vLLM serving the adapter as ``policy``)."""
    if cfg.policy_kind == "rule":
        return RulePolicy()
    if cfg.policy_kind == "shipped":
        loading_notice("the policy model", "the shipped SmolLM2-135M + its LoRA adapter, in process")
        return load_shipped_policy(cfg, max_tokens)
    if cfg.policy_kind == "head":  # the shipped adapter's decisions distilled (policy/head.py); missing: an error
        from policy.head import HeadPolicy

        return HeadPolicy(cfg.model_path or None)
    if cfg.connection == "local" and cfg.model_path and is_policy_checkpoint(cfg.model_path):
        loading_notice("the policy model", f"{cfg.model_path}, in process")
        return LocalLearnedPolicy.from_checkpoint(cfg.model_path, device=cfg.device, temperature=0.0,
                                                  max_new_tokens=max_tokens)
    return EndpointLearnedPolicy(make_chat_model(cfg), prompt=prompt, temperature=0.0, max_tokens=max_tokens)


def loading_notice(what: str, detail: str) -> None:
    """One line on stderr before a model loads in process (seconds, a minute on a cold cache), so a
    command that must load one does not look hung; stdout (answers, --json) stays clean."""
    print(f"loading {what}… ({detail})", file=sys.stderr, flush=True)


def load_shipped_policy(cfg: ModelEndpointConfig, max_tokens: int = 512) -> Policy:
    """The shipped learned policy, or the rule baseline named with the reason it stands in."""
    from policy.shipped import ShippedPolicyMissing, check_shipped, shipped_policy_dir

    folder = cfg.model_path or str(shipped_policy_dir())
    try:
        check_shipped(Path(folder))
        return LocalLearnedPolicy.from_checkpoint(folder, device=cfg.device, temperature=0.0, max_new_tokens=max_tokens)
    except (ShippedPolicyMissing, OSError, ValueError) as e:
        log.warning("shipped policy unavailable, using the rule baseline: %s", e)
        rule = RulePolicy()
        rule.name = f"rule-baseline (shipped policy unavailable: {e})"
        return rule


def probe_answer_model(model: ChatModel) -> None:
    """Fail fast on an answer server that cannot be reached: one ``GET /models`` for a model behind HTTP,
    nothing for an in-process one. A one-shot command calls it before loading the policy, so a dead
    server is reported before minutes of policy loading, not after. Only "cannot connect" and "timed
    out" raise: a server that answers at all (even without a model list) is left to the real call."""
    list_models = getattr(model, "models", None)
    if not callable(list_models):
        return
    try:
        list_models()
    except ChatError as e:
        if e.kind in ("connection", "timeout"):
            raise
        log.debug("answer server probe: %s (reachable; continuing)", e)


def build_models(models: ModelsConfig, pipeline: PipelineConfig | None = None,
                 probe: bool = False) -> tuple[Policy, ChatModel]:
    """(policy, answer model). Sharing one local engine when both roles name the same weights; a
    model-backed policy gets the pipeline's ``policy_prompt`` and ``policy_max_tokens``. ``probe``: check
    the answer server answers before the policy is built (``probe_answer_model``)."""
    cfg = pipeline or PipelineConfig()
    if models.answer.connection == "local":
        loading_notice("the answer model", f"{models.answer.model_path or 'SmolLM2-135M-Instruct'}, in process")
    answer = make_chat_model(models.answer)
    if probe:
        probe_answer_model(answer)
    same = models.policy.model_copy(update={"model": None}) == models.answer.model_copy(update={"model": None})
    if models.policy.policy_kind == "model" and models.policy.connection == "local" and same:
        return EndpointLearnedPolicy(answer, prompt=cfg.policy_prompt, temperature=0.0,
                                     max_tokens=cfg.policy_max_tokens), answer
    return make_policy(models.policy, cfg.policy_prompt, cfg.policy_max_tokens), answer


def without_states(bundle: EvidenceBundle) -> EvidenceBundle:
    """The 'no relational states' ablation: every fact current, unrelated, unscoped."""
    items = [it.model_copy(update={"state": RelationalState(fact_id=it.fact.fact_id, validity="current")})
             for it in bundle.items]
    return bundle.model_copy(update={"items": items})


class _StateOutcome(BaseModel):
    state: ReasoningState | None
    text: str | None
    fallback: str | None
    ms: float
    prompt_tokens: int = 0
    completion_tokens: int = 0


@contextmanager
def model_role(role: str, model: Any) -> Iterator[None]:
    """Label a ChatError with the model's role, name and URL, so an HTTP 502/504 can say which model
    of this deployment failed (the answer model and the policy may be different servers)."""
    try:
        yield
    except ChatError as e:
        if getattr(e, "model_role", None) is None:
            chat = getattr(model, "chat", model)  # EndpointLearnedPolicy wraps its ChatModel
            e.model_role = role  # type: ignore[attr-defined]
            e.model_name = getattr(chat, "name", None)  # type: ignore[attr-defined]
            e.model_url = getattr(chat, "base_url", None)  # type: ignore[attr-defined]
        raise


class AnswerPipeline:
    def __init__(self, memory: Memory, policy: Policy, answer_model: ChatModel, config: PipelineConfig | None = None):
        self.memory, self.policy, self.answer_model = memory, policy, answer_model
        self.config = config or PipelineConfig()
        self._rule = RulePolicy()

    def with_config(self, **overrides: Any) -> PipelineConfig:
        # validate, not model_copy: a misspelt or out-of-range override must fail, not pass silently
        return PipelineConfig.model_validate(self.config.model_dump() | {k: v for k, v in overrides.items()
                                                                         if v is not None})

    # -- stages --
    def evidence(self, user_id: str, request: str, cfg: PipelineConfig) -> EvidenceBundle:
        bundle = self.memory.retrieve(user_id, request, k=cfg.k, traverse=cfg.traverse, as_of=cfg.as_of,
                                      known_at=cfg.known_at)
        return bundle if cfg.relational_states else without_states(bundle)

    def reason(self, request: str, bundle: EvidenceBundle, cfg: PipelineConfig) -> _StateOutcome:
        if not cfg.reasoning_state:
            return _StateOutcome(state=None, text=None, fallback="ablated", ms=0.0)
        if not bundle.items:
            return _StateOutcome(state=None, text=None, fallback="no evidence", ms=0.0)
        t0 = time.perf_counter()
        state: ReasoningState | None
        try:
            with model_role("policy", self.policy):
                state = self.policy.state(request, bundle)
            fallback = None
        except StateParseError as e:
            if cfg.on_policy_error == "raise":
                raise
            state = self._rule.state(request, bundle) if cfg.on_policy_error == "rule" else None
            fallback = f"policy output invalid ({e}); {'rule baseline used' if state else 'answered without a state'}"
        ms = (time.perf_counter() - t0) * 1e3
        last = getattr(self.policy, "last_result", None)
        return _StateOutcome(state=state, text=state.render() if state else None, fallback=fallback, ms=ms,
                             prompt_tokens=last.usage.prompt_tokens if last else 0,
                             completion_tokens=last.usage.completion_tokens if last else 0)

    def _context(self, bundle: EvidenceBundle, cfg: PipelineConfig) -> tuple[str, int, set[str]]:
        ctx = render_context(bundle, cfg.context_budget, with_state=cfg.relational_states)
        return ctx.text, ctx.tokens, set(ctx.included)

    def messages(self, prompt: AnswerPrompt, request: str, context: str, outcome: _StateOutcome,
                 choices: Sequence[str] | None = None) -> list[ChatMessage]:
        return answer_messages(prompt, request, context, choices, outcome.text or None)

    # -- entry points --
    def answer(self, user_id: str, request: str, *, choices: Sequence[str] | None = None, generate: bool = True,
               **overrides: Any) -> AnswerResult:
        """The whole pipeline; ``generate=False`` stops before the answer model (explain)."""
        cfg = self.with_config(**overrides)
        prompt = load_answer_prompt(cfg.prompt)
        t0 = time.perf_counter()
        bundle = self.evidence(user_id, request, cfg)
        outcome = self.reason(request, bundle, cfg)
        context, ctx_tokens, included = self._context(bundle, cfg)
        res: ChatResult | None = None
        answer_ms = 0.0
        if generate:
            t1 = time.perf_counter()
            with model_role("answer", self.answer_model):
                res = self.answer_model.complete(self.messages(prompt, request, context, outcome, choices),
                                                 max_tokens=cfg.max_answer_tokens or prompt.max_tokens,
                                                 temperature=cfg.temperature)
            answer_ms = (time.perf_counter() - t1) * 1e3
        return self._result(user_id, request, cfg, prompt, bundle, outcome, context, ctx_tokens, included, res,
                            answer_ms, (time.perf_counter() - t0) * 1e3)

    def chat(self, user_id: str, messages: list[ChatMessage], *, max_tokens: int | None = None,
             temperature: float | None = None, stop: list[str] | None = None, json_schema: dict[str, Any] | None = None,
             **overrides: Any) -> tuple[ChatResult, AnswerResult]:
        """An agent's own conversation, with the user's memory injected as a system message built from
        the latest user turn. The client's messages are otherwise passed through unchanged."""
        cfg = self.with_config(**overrides)
        prompt = load_answer_prompt(cfg.prompt)
        request = next((m.content for m in reversed(messages) if m.role == "user"), "")
        t0 = time.perf_counter()
        bundle = self.evidence(user_id, request, cfg)
        outcome = self.reason(request, bundle, cfg)
        context, ctx_tokens, included = self._context(bundle, cfg)
        inject = fill(prompt.inject, context=context or prompt.no_memories,
                      state_block=state_block(prompt, outcome.text or None)).strip()
        # One leading system message: some chat templates (Qwen3) reject a system message elsewhere.
        if messages and messages[0].role == "system":
            msgs = [ChatMessage(role="system", content=f"{messages[0].content}\n\n{inject}"), *messages[1:]]
        else:
            msgs = [ChatMessage(role="system", content=inject), *messages]
        t1 = time.perf_counter()
        with model_role("answer", self.answer_model):
            res = self.answer_model.complete(msgs, max_tokens=max_tokens or cfg.max_answer_tokens or prompt.max_tokens,
                                             temperature=cfg.temperature if temperature is None else temperature,
                                             stop=stop, json_schema=json_schema)
        answer_ms = (time.perf_counter() - t1) * 1e3
        return res, self._result(user_id, request, cfg, prompt, bundle, outcome, context, ctx_tokens, included, res,
                                 answer_ms, (time.perf_counter() - t0) * 1e3)

    def _result(self, user_id: str, request: str, cfg: PipelineConfig, prompt: AnswerPrompt, bundle: EvidenceBundle,
                outcome: _StateOutcome, context: str, ctx_tokens: int, included: set[str], res: ChatResult | None,
                answer_ms: float, total_ms: float) -> AnswerResult:
        t = bundle.explain.timings_ms
        alias_of = bundle.alias_of()
        evidence = [EvidenceView(
            alias=it.alias, fact_id=it.fact.fact_id, statement=it.fact.statement, kind=it.fact.kind, holder=it.fact.holder,
            validity=it.state.validity, scope=it.state.scope, concept_path=list(it.state.concept_path),
            relations=[f"{r.type} {'->' if r.direction == 'out' else '<-'} {alias_of.get(r.other_fact_id, r.other_fact_id)}"
                       for r in it.state.relations],
            observed_at=it.fact.observed_at.isoformat() if it.fact.observed_at else None, seed=it.seed,
            score=it.score, in_context=it.fact.fact_id in included) for it in bundle.items]
        return AnswerResult(
            user_id=user_id, request=request, answer=res.text.strip() if res else None,
            reasoning_state=outcome.text, reasoning_state_parsed=outcome.state,
            policy=getattr(self.policy, "name", type(self.policy).__name__), policy_fallback=outcome.fallback,
            answer_model=getattr(self.answer_model, "name", "?"), prompt=prompt.name, prompt_version=prompt.version,
            context=context, evidence=evidence, explain=bundle.explain,
            ablations={"traverse": cfg.traverse, "relational_states": cfg.relational_states,
                       "reasoning_state": cfg.reasoning_state},
            timings_ms={"embed": t.get("embed", 0.0), "seeds": t.get("seeds", 0.0),
                        "retrieve": t.get("embed", 0.0) + t.get("seeds", 0.0) + t.get("assemble", 0.0),
                        "traverse": t.get("traverse", 0.0), "policy": outcome.ms, "answer": answer_ms,
                        "total": total_ms},
            tokens={"context": ctx_tokens, "policy_prompt": outcome.prompt_tokens,
                    "policy_completion": outcome.completion_tokens,
                    "answer_prompt": res.usage.prompt_tokens if res else 0,
                    "answer_completion": res.usage.completion_tokens if res else 0},
            finish_reason=res.finish_reason if res else None)
