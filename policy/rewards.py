"""Rewards for Reasoning-State candidates (Eq. 10 of the EvoMemState paper), as plain functions.

    reward_i = Score(A(q, M_q, Z_i), y*) - Score(A(q, M_q), y*)

A is the frozen answer model, Score the task scorer. The second term does not depend on the candidate,
so it is computed once per instance (``BaselineCache``) and reused for all G samples, for filtering and
for reporting lift. Gates before any answer-model call: a state that does not parse gets a fixed
penalty; so does one that reveals the reference answer or runs past the length cap. When the answer
model times out the reward is ``None`` — TRL then drops that sample from the advantage computation
instead of treating it as a zero.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from llmclients.chat import ChatError, ChatModel
from policy.answer_prompts import load_answer_prompt
from policy.prompt import answer_messages
from policy.reader import AnswerReader
from policy.state import ReasoningState, StateParseError, fit_state, parse_state
from scoring.answers import choice_match, exact_match, normalize_answer, token_f1
from scoring.judge import Judge
from training_data.base import TrainingInstance

# --- scorers -------------------------------------------------------------------------------------------


def score(instance: TrainingInstance, answer: str, judge: Judge | None = None) -> float | None:
    """The instance's task score for ``answer`` (0..1); None when a judge is needed but unavailable/failed.

    Without a judge, judge-scored rows fall back to token F1 (documented, so a CPU run still learns
    something from open-ended rows).
    """
    if instance.scorer == "choice":
        return choice_match(answer, instance.reference_answer, instance.choices or ())
    if instance.scorer == "exact":
        return exact_match(answer, instance.reference_answer)
    if instance.scorer == "judge" and judge is not None:
        verdict = judge.grade(instance.request, instance.reference_answer, answer)
        return None if verdict is None else float(verdict.correct)
    return token_f1(answer, instance.reference_answer)


# --- gates -----------------------------------------------------------------------------------------------


def discloses_answer(state_text: str, reference: str, ngram: int = 8) -> bool:
    """True when the state gives the reference answer away: the whole normalised reference appears in it,
    or — for long references — any ``ngram``-word run of it does.

    >>> discloses_answer("F1: use | evidence | high\\nRULE: suggest a relaxing beach holiday", "A relaxing beach holiday")
    True
    >>> discloses_answer("F1: use | current-preference | high", "A relaxing beach holiday")
    False
    """
    s, r = normalize_answer(state_text).split(), normalize_answer(reference).split()
    if not r:
        return False
    runs = [r] if len(r) <= ngram else [r[i:i + ngram] for i in range(len(r) - ngram + 1)]
    return any(_contains(s, run) for run in runs)


def _contains(seq: list[str], run: list[str]) -> bool:
    n = len(run)
    return any(seq[i:i + n] == run for i in range(len(seq) - n + 1))


class RewardConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format_penalty: float = Field(default=-1.0, description="Reward of an unparseable state (no answer call).")
    disclosure_penalty: float = Field(default=-1.0, description="Reward of a state that reveals the reference answer.")
    length_penalty: float = Field(default=-1.0, description="Reward of a state longer than max_state_tokens.")
    max_state_tokens: int = Field(default=512, ge=1, description="Length cap on a state, in policy tokens.")
    disclosure_ngram: int = Field(default=8, ge=1, description="Run length that counts as disclosing a long answer.")
    graded: bool = Field(default=False, description="Score by the answer model's graded score (``graded``: P(reference "
                         "option) for the LM reader, policy/lmreader.py) instead of right/wrong, so candidates that move "
                         "the answer model without flipping its choice still differ: groups get reward spread.")
    context: Literal["rule", "alone"] = Field(default="rule", description="What a per-fact line is scored inside: "
                                              "'rule' — the rule baseline's state with this fact's line replaced "
                                              "(what the decision adds to the rule); 'alone' — a state of this "
                                              "line only, so the reward is the line's effect against no state "
                                              "(issue 48: the rule context was already right, nothing to earn).")


class RewardBreakdown(BaseModel):
    reward: float | None
    outcome: str = Field(description="ok | unparseable | disclosed | too_long | timeout")
    score_with: float | None = None
    score_without: float | None = None
    answer: str | None = None

    @property
    def lift(self) -> float | None:
        if self.outcome != "ok" or self.score_with is None or self.score_without is None:
            return None
        return self.score_with - self.score_without


def gate(text: str, aliases: Sequence[str], reference: str, n_tokens: int,
         cfg: RewardConfig) -> tuple[ReasoningState | None, RewardBreakdown | None]:
    """Format, length and disclosure gates; returns the parsed state, or the penalty breakdown.

    >>> cfg = RewardConfig()
    >>> gate("nonsense", ["F1"], "beach", 3, cfg)[1].outcome
    'unparseable'
    >>> gate("F1: use | evidence | high", ["F1"], "beach", 600, cfg)[1].outcome
    'too_long'
    >>> gate("F1: use | evidence | high", ["F1"], "beach", 9, cfg)[0].facts[0].alias
    'F1'
    """
    if n_tokens > cfg.max_state_tokens:
        return None, RewardBreakdown(reward=cfg.length_penalty, outcome="too_long")
    try:
        state = parse_state(text, aliases)
    except StateParseError:
        return None, RewardBreakdown(reward=cfg.format_penalty, outcome="unparseable")
    if discloses_answer(text, reference, cfg.disclosure_ngram):
        return None, RewardBreakdown(reward=cfg.disclosure_penalty, outcome="disclosed")
    return fit_state(state), None  # the one state length limit (policy.state.MAX_STATE_WORDS), as serving cuts it


# --- answer models ---------------------------------------------------------------------------------------


@runtime_checkable
class AnswerModel(Protocol):
    """The frozen personal agent A: an answer, or None when it timed out (sample dropped)."""

    name: str

    def answer(self, instance: TrainingInstance, state: ReasoningState | None) -> str | None: ...


class ReaderAnswerModel:
    """The deterministic CPU reader (policy/reader.py) as an answer model."""

    def __init__(self, reader: AnswerReader | None = None):
        self.reader = reader or AnswerReader()
        self.name = self.reader.name

    def answer(self, instance: TrainingInstance, state: ReasoningState | None) -> str | None:
        return self.reader.answer(instance.request, instance.evidence, instance.choices, state)


class ChatAnswerModel:
    """An LLM answer model behind the ChatModel protocol (vLLM serving Qwen3-8B in the paper's setup)."""

    def __init__(self, chat: ChatModel, prompt: str = "default", max_tokens: int = 512):
        self.chat, self.prompt, self.max_tokens = chat, prompt, max_tokens
        self.name = f"chat:{chat.name}:{load_answer_prompt(prompt).version}"

    def answer(self, instance: TrainingInstance, state: ReasoningState | None) -> str | None:
        msgs = answer_messages(instance.request, instance.bundle(), instance.choices, state, prompt=self.prompt)
        try:
            return self.chat.complete(msgs, max_tokens=self.max_tokens, temperature=0.0).text.strip()
        except ChatError as e:
            if e.kind == "timeout":
                return None
            raise


# --- the baseline term, cached -----------------------------------------------------------------------------


class BaselineCache:
    """Score(A(q, M_q), y*) per (answer model, instance): computed once, optionally persisted as JSONL."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else None
        self.scores: dict[str, float] = {}
        if self.path and self.path.is_file():
            for line in self.path.read_text().splitlines():
                row = json.loads(line)
                self.scores[row["key"]] = row["score"]

    @staticmethod
    def key(model: AnswerModel, instance: TrainingInstance) -> str:
        return f"{model.name}|{instance.instance_id}"

    def get(self, model: AnswerModel, instance: TrainingInstance, judge: Judge | None = None) -> float | None:
        k = self.key(model, instance)
        if k not in self.scores:
            ans = model.answer(instance, None)
            s = score(instance, ans, judge) if ans is not None else None
            if s is None:
                return None  # not cached: a timeout is retried next time
            self.scores[k] = s
            if self.path:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a") as fh:
                    fh.write(json.dumps({"key": k, "score": s}) + "\n")
        return self.scores[k]

    def precompute(self, model: AnswerModel, instances: Sequence[TrainingInstance],
                   judge: Judge | None = None) -> int:
        """Fill the cache; returns how many instances have a baseline."""
        return sum(self.get(model, i, judge) is not None for i in instances)


def state_reward(text: str, instance: TrainingInstance, model: AnswerModel, baseline: BaselineCache,
                 cfg: RewardConfig, n_tokens: int | None = None, judge: Judge | None = None,
                 count_tokens: Callable[[str], int] = lambda t: len(t.split())) -> RewardBreakdown:
    """The full reward of one candidate state for one instance (Eq. 10 plus gates). ``n_tokens`` (the
    completion's generated tokens, from the trainer) is what ``max_state_tokens`` caps; a state assembled by
    code (per-fact lines, the bench) has no generation length and is only cut to ``MAX_STATE_WORDS`` by
    ``gate`` — the cut serving makes."""
    state, penalty = gate(text, instance.aliases, instance.reference_answer, n_tokens or 0, cfg)
    if penalty is not None:
        return penalty
    graded = getattr(model, "graded", None) if cfg.graded else None
    if graded is not None:  # graded reward: P(reference) with the state minus without it (cached per instance)
        key = f"{BaselineCache.key(model, instance)}|graded"
        if key not in baseline.scores:
            baseline.scores[key] = float(graded(instance, None))
        g_without, g_with = baseline.scores[key], float(graded(instance, state))
        return RewardBreakdown(reward=g_with - g_without, outcome="ok", score_with=g_with, score_without=g_without)
    without = baseline.get(model, instance, judge)
    ans = model.answer(instance, state)
    with_ = score(instance, ans, judge) if ans is not None else None
    if without is None or with_ is None:
        return RewardBreakdown(reward=None, outcome="timeout", answer=ans)
    return RewardBreakdown(reward=with_ - without, outcome="ok", score_with=with_, score_without=without, answer=ans)
