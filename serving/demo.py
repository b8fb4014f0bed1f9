"""The main job's answering half: answer the shipped example requests with the rule policy and the
SmolLM2 engine, printing evidence, relational states, the Reasoning State and the answer.

SmolLM2-135M is a plumbing model: its answers are often weak. What the demo shows is the pipeline —
traversal bringing back the superseded and conflicting facts, the states, and the rules the answer
model is given — on a machine without a GPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from llmclients.chat import ChatModel
from memcore.memory import Memory
from policy.base import Policy
from policy.needs import StateNeeds
from policy.rule import RulePolicy
from serving.pipeline import AnswerPipeline, AnswerResult, PipelineConfig


def run_demo_answers(memory: Memory, history_requests: Iterable[Mapping[str, Any]], *,
                     answer_model: ChatModel | None = None, policy: Policy | None = None,
                     config: PipelineConfig | None = None, out: Callable[[str], None] = print) -> list[AnswerResult]:
    """Answer each ``{"user_id", "request"}``; returns the results (also printed through ``out``).

    ``answer_model`` defaults to SmolLM2-135M-Instruct in-process (converted from the package's GGUF
    on first use, ~30 s once; ~1 s per later load)."""
    if answer_model is None:
        from llmclients.local_engine import LocalChatEngine

        t0 = time.perf_counter()
        engine = LocalChatEngine.smollm2()
        out(f"answer model: {engine.name} loaded in {time.perf_counter() - t0:.1f}s"
            + (f" (first run: converted the GGUF in {engine.converted_seconds:.1f}s)" if engine.converted_seconds else ""))
        answer_model = engine
        out("  (a 135M model: it shows the plumbing, memory -> Reasoning State -> answer, not answer quality, and its "
            "text may contradict the memory it was given; `evomem demo --answer-url URL --answer-model NAME` answers "
            "with a real model)")
        note = " — a 135M plumbing model, not answer quality"
    else:
        note = ""
    pipe = AnswerPipeline(memory, policy or RulePolicy(), answer_model,
                          config or PipelineConfig(k=4, max_answer_tokens=64))
    results = []
    for req in history_requests:
        res = pipe.answer(req["user_id"], req["request"])
        results.append(res)
        out(res.describe(answer_note=note))
        if "needs" in req:
            out(state_check_line(req, res))
        out("")
    return results


def state_check_line(request: Mapping[str, Any], result: AnswerResult) -> str:
    """One plain line: what the check looked at (the Reasoning State, not the answer text), and whether it passed."""
    needs = StateNeeds.model_validate(request.get("needs") or {})
    missed = state_misses(request, result)
    what = ("does the Reasoning State use " + ", ".join(repr(t) for t in needs.use)
            + (" and keep " + ", ".join(repr(t) for t in needs.not_first) + " below them" if needs.not_first else "")
            + "? (the state only; the answer text is not checked)")
    return f"  state check — {what}: " + ("PASSED" if not missed else "FAILED: " + "; ".join(missed))


def state_misses(request: Mapping[str, Any], result: AnswerResult) -> list[str]:
    """What the result's Reasoning State gets wrong against the request's ``needs`` (policy/needs.py)."""
    needs = StateNeeds.model_validate(request.get("needs") or {})
    return needs.misses([(e.alias, e.statement) for e in result.evidence], result.reasoning_state_parsed)
