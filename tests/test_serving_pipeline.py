"""AnswerPipeline logic: stages, ablations, prompts as data, policy fallbacks, chat injection.
The answer model here is a recording fake (unit tests of logic); real HTTP is covered in test_serving_api."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memcore.memory import Memory
from llmclients.chat import ChatMessage, ChatResult, Usage
from policy.rule import RulePolicy
from policy.state import StateParseError
from policy.learned import EndpointLearnedPolicy
from serving.pipeline import AnswerPipeline, PipelineConfig, without_states
from policy.answer_prompts import AnswerPrompt, fill, known_prompts, load_answer_prompt


class Recorder:
    """A ChatModel that records what it was sent and replies with a fixed text."""

    name = "recorder"

    def __init__(self, reply: str = "A calm beach trip.") -> None:
        self.reply = reply
        self.calls: list[tuple[list[ChatMessage], dict[str, Any]]] = []

    def complete(self, messages: list[ChatMessage], **kw: Any) -> ChatResult:
        self.calls.append((messages, kw))
        return ChatResult(text=self.reply, finish_reason="stop", usage=Usage(prompt_tokens=100, completion_tokens=5))


def test_answer_runs_every_stage(memory: Memory) -> None:
    rec = Recorder()
    res = AnswerPipeline(memory, RulePolicy(), rec, PipelineConfig(k=4)).answer("maya", "Suggest a vacation for me")
    assert res.answer == "A calm beach trip." and res.policy == "rule-baseline" and res.answer_model == "recorder"
    assert set(res.timings_ms) >= {"retrieve", "traverse", "policy", "answer", "total"}
    assert res.timings_ms["total"] >= res.timings_ms["answer"] >= 0
    assert res.tokens["answer_prompt"] == 100 and res.tokens["context"] > 0
    assert res.prompt == "default" and res.prompt_version == "answer-default-v1"
    [(msgs, kw)] = rec.calls
    user = msgs[1].content
    assert "Request: Suggest a vacation for me" in user and "Reasoning State:" in user
    assert "superseded" in user and res.reasoning_state and res.reasoning_state in user
    assert kw["max_tokens"] == 256 and kw["temperature"] == 0.0
    hiking = next(e for e in res.evidence if e.fact_id == "maya::f::hiking")
    assert hiking.validity == "superseded" and not hiking.seed  # traversal brought it
    # what a seed replaced is named by the marker line, not spelled out (retrieval/render.py)
    assert not hiking.in_context and f"↳ {hiking.alias} superseded by" in user
    assert any(r.startswith("SUPERSEDES <-") for r in hiking.relations)


def test_ablations(memory: Memory) -> None:
    rec = Recorder()
    pipe = AnswerPipeline(memory, RulePolicy(), rec, PipelineConfig(k=4))
    full = pipe.answer("maya", "Suggest a vacation for me")
    no_trav = pipe.answer("maya", "Suggest a vacation for me", traverse=False)
    assert full.explain.added_by_traversal and not no_trav.explain.added_by_traversal
    assert all(e.seed for e in no_trav.evidence) and no_trav.ablations["traverse"] is False
    no_states = pipe.answer("maya", "Suggest a vacation for me", relational_states=False)
    assert "superseded" not in rec.calls[-1][0][1].content
    assert all(e.validity == "current" for e in no_states.evidence)
    assert "ignore" not in (no_states.reasoning_state or "")  # the rule policy sees no history either
    no_state = pipe.answer("maya", "Suggest a vacation for me", reasoning_state=False)
    assert no_state.reasoning_state is None and no_state.policy_fallback == "ablated"
    assert "Reasoning State" not in rec.calls[-1][0][1].content
    with pytest.raises(ValueError):
        pipe.answer("maya", "x", k=0)  # overrides are validated


def test_explain_only_does_not_call_the_answer_model(memory: Memory) -> None:
    rec = Recorder()
    res = AnswerPipeline(memory, RulePolicy(), rec).answer("leo", "Can I have a peanut snack?", generate=False)
    assert res.answer is None and not rec.calls and res.reasoning_state and res.timings_ms["answer"] == 0


def test_every_shipped_prompt_loads_and_fills(memory: Memory) -> None:
    assert set(known_prompts()) >= {"default", "locomo", "memsyco"}
    rec = Recorder()
    pipe = AnswerPipeline(memory, RulePolicy(), rec)
    versions = set()
    for name in known_prompts():
        p = load_answer_prompt(name)
        versions.add(p.version)
        res = pipe.answer("sara", "Is the Great Wall visible from space?", prompt=name, choices=["yes", "no"])
        user = rec.calls[-1][0][1].content
        assert res.prompt_version == p.version and "(A) yes" in user and p.options_instruction in user
        assert "{" not in user.replace("{'", "")  # no unfilled placeholder left behind
        assert rec.calls[-1][1]["max_tokens"] == p.max_tokens
    assert len(versions) == len(known_prompts())


def test_prompt_files_are_validated(tmp_path: Path) -> None:
    good = load_answer_prompt("default").model_dump()
    with pytest.raises(ValueError, match="lacks"):
        AnswerPrompt.model_validate(good | {"user": "no placeholders"})
    bad = tmp_path / "p.yaml"
    bad.write_text("name: x\n")
    with pytest.raises(ValueError):
        load_answer_prompt(str(bad))
    with pytest.raises(ValueError, match="known"):
        load_answer_prompt("nope")
    assert fill('{"json": true} {request}', request="r") == '{"json": true} r'


class BadPolicyModel(Recorder):
    name = "bad-policy"


def test_invalid_model_policy_output_falls_back_or_raises(memory: Memory) -> None:
    answer = Recorder()
    policy = EndpointLearnedPolicy(BadPolicyModel(reply="I think you should go to the beach."), temperature=0.0)
    res = AnswerPipeline(memory, policy, answer).answer("maya", "Suggest a vacation for me")
    assert res.policy_fallback and "rule baseline used" in res.policy_fallback
    assert res.reasoning_state and res.reasoning_state.startswith("F1:")
    none = AnswerPipeline(memory, policy, answer, PipelineConfig(on_policy_error="none")).answer("maya", "Suggest a vacation")
    assert none.reasoning_state is None and "without a state" in (none.policy_fallback or "")
    with pytest.raises(StateParseError):
        AnswerPipeline(memory, policy, answer, PipelineConfig(on_policy_error="raise")).answer("maya", "Suggest a vacation")


def test_valid_model_policy_is_used_with_its_token_counts(memory: Memory) -> None:
    bundle = memory.retrieve("maya", "Suggest a vacation for me", k=4)
    good = RulePolicy().state_text("Suggest a vacation for me", bundle)
    res = AnswerPipeline(memory, EndpointLearnedPolicy(Recorder(reply=good), temperature=0.0), Recorder(), PipelineConfig(k=4)).answer(
        "maya", "Suggest a vacation for me")
    assert res.policy_fallback is None and res.reasoning_state == good and res.tokens["policy_prompt"] == 100


def test_chat_injects_memory_into_one_system_message(memory: Memory) -> None:
    rec = Recorder()
    pipe = AnswerPipeline(memory, RulePolicy(), rec)
    msgs = [ChatMessage(role="system", content="You are Agent X."), ChatMessage(role="user", content="Hi"),
            ChatMessage(role="assistant", content="Hello!"), ChatMessage(role="user", content="What should I drink?")]
    res, info = pipe.chat("leo", msgs, max_tokens=9)
    sent, kw = rec.calls[-1]
    assert [m.role for m in sent] == ["system", "user", "assistant", "user"] and kw["max_tokens"] == 9
    assert sent[0].content.startswith("You are Agent X.") and "green tea" in sent[0].content
    assert sent[1:] == msgs[1:] and info.request == "What should I drink?" and res.text == rec.reply


def test_without_states_keeps_facts(memory: Memory) -> None:
    b = memory.retrieve("leo", "peanut", k=3)
    stripped = without_states(b)
    assert [i.fact for i in stripped.items] == [i.fact for i in b.items]
    assert {i.state.validity for i in stripped.items} == {"current"}
