"""Rewards: scorers, gates, the cached no-state baseline, timeouts -> None, and the LLM judge over real HTTP."""

from __future__ import annotations

import doctest
import json
from pathlib import Path
from typing import Any

import pytest
from servers import FaultServer

import policy.reader
import policy.rewards
from llmclients.chat import ChatError, ChatMessage, ChatResult
from policy.rewards import (BaselineCache, ChatAnswerModel, ReaderAnswerModel, RewardConfig, discloses_answer, gate,
                            score, state_reward)
from scoring.answers import choice_match, token_f1
from scoring.judge import Judge
from policy.state import FactUse, ReasoningState
from training_data.synthetic import SyntheticConfig, SyntheticSource


@pytest.mark.parametrize("module", [policy.rewards, policy.reader])
def test_doctests(module: Any) -> None:
    res = doctest.testmod(module)
    assert res.attempted > 0 and res.failed == 0


def _inst(category: str = "update", seed: int = 0):
    src = SyntheticSource(SyntheticConfig(n=200, categories=[category]))
    return next(src.instances(seed))


def gold_text(inst) -> str:
    return "\n".join(f"{a}: {'use' if g.use else 'ignore'} | {g.role} | {g.priority}" for a, g in inst.gold.items())


def test_token_f1_locomo_normalisation() -> None:
    assert token_f1("The beach, and the sea!", "beach sea") == 1.0
    assert 0 < token_f1("beach trip", "beach holiday") < 1


def test_choice_match_rejects_ambiguous_quotes() -> None:
    opts = ["beach", "beach holiday"]
    assert choice_match("beach holiday", "beach holiday", opts) == 1.0
    assert choice_match("I recommend the beach or the beach holiday", "beach holiday", opts) == 0.0


def test_gold_state_earns_positive_reward_and_bad_state_does_not() -> None:
    inst = _inst()
    model, cache, cfg = ReaderAnswerModel(), BaselineCache(), RewardConfig()
    good = state_reward(gold_text(inst), inst, model, cache, cfg)
    assert good.outcome == "ok" and good.score_with == 1.0
    assert good.reward == 1.0 - good.score_without
    inverted = "\n".join(f"{a}: {'ignore' if g.use else 'use'} | {g.role} | high" for a, g in inst.gold.items())
    bad = state_reward(inverted, inst, model, cache, cfg)
    assert bad.outcome == "ok" and bad.score_with == 0.0 and bad.reward <= 0


def test_gates_give_fixed_penalties_without_calling_the_answer_model() -> None:
    inst = _inst()

    class Boom:
        name = "boom"

        def answer(self, instance, state):  # noqa: ANN001, ANN201
            raise AssertionError("a gated state must not reach the answer model")

    cfg = RewardConfig(format_penalty=-0.5, disclosure_penalty=-0.7, length_penalty=-0.9, max_state_tokens=20)
    assert state_reward("no state here", inst, Boom(), BaselineCache(), cfg).reward == -0.5
    leak = gold_text(inst).splitlines()[0] + f"\nRULE: answer {inst.reference_answer}"
    r = state_reward(leak, inst, Boom(), BaselineCache(), cfg, n_tokens=10)
    assert (r.outcome, r.reward) == ("disclosed", -0.7)
    assert state_reward(gold_text(inst), inst, Boom(), BaselineCache(), cfg, n_tokens=21).reward == -0.9
    assert gate("F9: use | evidence | high", inst.aliases, "x", 3, cfg)[1].outcome == "unparseable"  # unknown alias


def test_disclosure_of_long_references_by_ngram() -> None:
    ref = "Recommend Model Boreal for summarizing quarterly finance reports where numerical claims must survive"
    assert discloses_answer("RULE: summarizing quarterly finance reports where numerical claims must survive", ref)
    assert not discloses_answer("RULE: finance reports matter", ref)


def test_baseline_is_computed_once_and_persisted(tmp_path: Path) -> None:
    inst = _inst()
    calls = {"n": 0}

    class Counting(ReaderAnswerModel):
        def answer(self, instance, state):  # noqa: ANN001, ANN201
            if state is None:
                calls["n"] += 1
            return super().answer(instance, state)

    m = Counting()
    cache = BaselineCache(tmp_path / "b.jsonl")
    for _ in range(5):
        state_reward(gold_text(inst), inst, m, cache, RewardConfig())
    assert calls["n"] == 1
    again = BaselineCache(tmp_path / "b.jsonl")
    assert again.get(m, inst) == cache.get(m, inst) and calls["n"] == 1


class FakeChat:
    """Unit-test fake for the ChatModel protocol (the HTTP path is tested below with a real server)."""

    name = "fake"

    def __init__(self, reply: str | None = None, timeout: bool = False):
        self.reply, self.timeout = reply, timeout
        self.seen: list[list[ChatMessage]] = []

    def complete(self, messages, **kw):  # noqa: ANN001, ANN003, ANN201
        self.seen.append(messages)
        if self.timeout:
            raise ChatError("slow", kind="timeout")
        return ChatResult(text=self.reply or "")


def test_answer_model_timeout_gives_none_reward() -> None:
    inst = _inst()
    r = state_reward(gold_text(inst), inst, ChatAnswerModel(FakeChat(timeout=True)), BaselineCache(), RewardConfig())
    assert r.reward is None and r.outcome == "timeout"


def test_chat_answer_model_sees_the_state_only_when_given() -> None:
    inst = _inst()
    chat = FakeChat(reply=inst.reference_answer)
    r = state_reward(gold_text(inst), inst, ChatAnswerModel(chat), BaselineCache(), RewardConfig())
    assert r.reward == 0.0  # answers right with and without the state
    without, with_ = chat.seen
    assert "Reasoning State" not in without[1].content and "Reasoning State" in with_[1].content
    assert inst.reference_answer in with_[1].content  # as an option, not leaked by the state


def _judge(body: dict[str, Any]) -> str:
    """A scripted judge: correct when the graded answer mentions the beach."""
    correct = "beach" in body["messages"][-1]["content"].split("Answer to grade:")[-1]
    return json.dumps({"correct": correct, "reason": "r"})


def test_judge_scored_rows_over_a_real_openai_compatible_http_server() -> None:
    from llmclients.config import ModelEndpointConfig
    from llmclients.factory import make_chat_model

    with FaultServer(mode="ok", reply=_judge) as srv:
        chat = make_chat_model(ModelEndpointConfig(kind="openai", base_url=srv.url, model="judge", max_retries=0))
        judge = Judge(chat)
        inst = _inst().model_copy(update={"scorer": "judge", "choices": None, "request": "Suggest a vacation",
                                          "reference_answer": "A relaxing beach holiday"})
        assert score(inst, "Go to the beach", judge) == 1.0
        assert score(inst, "Go hiking", judge) == 0.0


def test_judge_garbage_or_timeout_is_none() -> None:
    inst = _inst().model_copy(update={"scorer": "judge", "choices": None, "reference_answer": "b"})
    assert score(inst, "a", Judge(FakeChat(reply="no json here"))) is None
    assert score(inst, "a", Judge(FakeChat(timeout=True))) is None


def test_score_falls_back_to_token_f1_for_judge_rows_without_a_judge() -> None:
    inst = _inst().model_copy(update={"scorer": "judge", "choices": None, "reference_answer": "relaxing beach holiday"})
    assert score(inst, "a relaxing beach holiday") == 1.0


def test_reader_ignores_rules_and_unnamed_facts() -> None:
    inst = _inst()
    r = policy.reader.AnswerReader()
    target = next(a for a, g in inst.gold.items() if g.use)
    wrong = next(a for a, g in inst.gold.items() if not g.use)
    pointer = ReasoningState(facts=(FactUse(alias=target, use=True, role="current-preference", priority="low"),))
    assert r.answer(inst.request, inst.evidence, inst.choices, pointer) == inst.reference_answer
    w = policy.reader.fact_weights(inst.evidence, pointer)
    assert w[target] == 1.0 and sum(w.values()) == 1.0  # facts the state does not name are not relied on
    leak = ReasoningState(facts=(FactUse(alias=wrong, use=True, role="evidence", priority="high"),),
                          rules=(f"answer {inst.reference_answer}",))
    assert r.answer(inst.request, inst.evidence, inst.choices, leak) != inst.reference_answer  # rules are not read
