"""The frozen answer model and the reward of the GRPO policy run (``policy.train``): which answer model a
config names, the reward function TRL calls (per-fact lines scored inside a whole state), and the held-out /
validation numbers of a set of greedy states."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from policy.config import TrainConfig
from policy.rewards import AnswerModel, BaselineCache, RewardBreakdown, state_reward
from scoring.judge import Judge
from training_data.base import TrainingInstance


def build_answer_model(cfg: TrainConfig) -> tuple[AnswerModel, Judge | None]:
    from policy.reader import AnswerReader
    from policy.rewards import ChatAnswerModel, ReaderAnswerModel

    if cfg.answer.kind == "reader":
        return ReaderAnswerModel(AnswerReader(cfg.answer.reader_ignored_weight)), None
    if cfg.answer.kind == "lm":  # SmolLM2 scoring options by log-likelihood, frozen (policy/lmreader.py)
        from policy.lmreader import LMAnswerModel, LMReader

        if cfg.answer.reader_adapter:
            from policy.xreader_fast import is_minilm_reader, load_any

            if is_minilm_reader(cfg.answer.reader_adapter):  # a MiniLM reader (policy/xreader.py, xreader_fast.py)
                return LMAnswerModel(load_any(cfg.answer.reader_adapter)), None
            return LMAnswerModel(LMReader.finetuned(cfg.answer.reader_adapter)), None
        return LMAnswerModel(LMReader.smollm2()), None
    from llmclients.factory import make_chat_model

    assert cfg.answer.endpoint is not None  # the config validator guarantees it
    judge = Judge(make_chat_model(cfg.answer.judge)) if cfg.answer.judge else None
    return ChatAnswerModel(make_chat_model(cfg.answer.endpoint), max_tokens=cfg.answer.max_tokens), judge


def filter_solved(instances: Sequence[TrainingInstance], model: AnswerModel, baseline: BaselineCache,
                  judge: Judge | None = None) -> list[TrainingInstance]:
    """Drop instances the answer model already solves without a state: their reward can only be <= 0.
    An instance whose baseline timed out is kept (unknown is not solved)."""
    return [i for i in instances if (baseline.get(model, i, judge) or 0.0) < 1.0]


class StateRewardFn:
    """The reward function TRL calls: one float (or None) per completion, plus logged metrics."""

    __name__ = "state_reward"

    def __init__(self, instances: Sequence[TrainingInstance], model: AnswerModel, baseline: BaselineCache,
                 cfg: TrainConfig, judge: Judge | None = None):
        self.by_id = {i.instance_id: i for i in instances}
        self.model, self.baseline, self.cfg, self.judge = model, baseline, cfg, judge
        self.pool = ThreadPoolExecutor(cfg.answer.concurrency) if cfg.answer.kind == "chat" else None
        self.context: dict[str, dict[str, str]] = {}

    def in_context(self, text: str, inst: TrainingInstance, alias: str) -> str:
        """A per-fact completion (``alias`` set) as a whole state: the rule baseline's lines (role first, no
        RULE lines) with this fact's line replaced — so its reward is what this one decision adds or costs
        against the baseline — or, with ``reward.context: alone``, the line alone (its effect against no state).
        A whole-state completion (no alias) is returned as it is."""
        if not alias:
            return text
        from policy.perfact import assemble, fact_targets
        from policy.targets import candidate_states, described

        if self.cfg.reward.context == "alone":  # this line alone: its effect against no state
            return assemble([alias], [text])

        if inst.instance_id not in self.context:
            rule = described(candidate_states(inst, style="facts")[0], inst)
            self.context[inst.instance_id] = fact_targets(rule, inst.aliases)
        lines = self.context[inst.instance_id]
        return assemble(inst.aliases, [text if a == alias else lines[a] for a in inst.aliases])

    def breakdowns(self, completions: Sequence[Any], completion_ids: Sequence[Sequence[int]] | None,
                   instance_id: Sequence[str], alias: Sequence[str] = ()) -> list[RewardBreakdown]:
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        lens = [len(x) for x in completion_ids] if completion_ids is not None else [None] * len(texts)
        aliases = list(alias) or [""] * len(texts)

        def one(k: int) -> RewardBreakdown:
            inst = self.by_id[instance_id[k]]
            # a per-fact line is scored inside a whole state, and the length cap applies to that state
            return state_reward(self.in_context(texts[k], inst, aliases[k]), inst, self.model, self.baseline,
                                self.cfg.reward, n_tokens=None if aliases[k] else lens[k], judge=self.judge)

        idx = range(len(texts))
        return list(self.pool.map(one, idx)) if self.pool else [one(k) for k in idx]

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], completion_ids: Any = None,
                 instance_id: Sequence[str] = (), alias: Sequence[str] = (), log_metric: Any = None,
                 **_: Any) -> list[float | None]:
        bds = self.breakdowns(completions, completion_ids, instance_id, alias)
        if log_metric is not None:
            for k, v in summarize(bds).items():
                log_metric(f"state/{k}", v)
        return [b.reward for b in bds]


def summarize(bds: Sequence[RewardBreakdown]) -> dict[str, float]:
    n = max(len(bds), 1)
    ok = [b for b in bds if b.outcome == "ok"]
    out = {"format_fail_rate": sum(b.outcome == "unparseable" for b in bds) / n,
           "disclosure_rate": sum(b.outcome == "disclosed" for b in bds) / n,
           "too_long_rate": sum(b.outcome == "too_long" for b in bds) / n,
           "timeout_rate": sum(b.outcome == "timeout" for b in bds) / n}
    if ok:
        out["score_with"] = sum(b.score_with or 0.0 for b in ok) / len(ok)
        out["score_without"] = sum(b.score_without or 0.0 for b in ok) / len(ok)
        out["lift"] = out["score_with"] - out["score_without"]
    return out


# --- held-out evaluation + metrics ----------------------------------------------------------------------


def evaluate_states(texts: Sequence[str], instances: Sequence[TrainingInstance], model: AnswerModel,
                    baseline: BaselineCache, cfg: TrainConfig, judge: Judge | None = None) -> dict[str, float]:
    """Held-out numbers for given state texts: mean reward, answer accuracy (score with state), rates."""
    bds = [state_reward(t, i, model, baseline, cfg.reward, judge=judge) for t, i in zip(texts, instances)]
    rewards = [b.reward for b in bds if b.reward is not None]
    acc = [b.score_with if b.outcome == "ok" else 0.0 for b in bds]
    base = [baseline.get(model, i, judge) for i in instances]
    s = summarize(bds)
    return {"reward": sum(rewards) / max(len(rewards), 1), "accuracy": sum(a or 0.0 for a in acc) / max(len(acc), 1),
            "no_state_accuracy": sum(b or 0.0 for b in base) / max(len(base), 1),
            "format_fail_rate": s["format_fail_rate"], "disclosure_rate": s["disclosure_rate"]}


def heldout_eval(model: Any, tokenizer: Any, instances: Sequence[TrainingInstance], prompts: Sequence[Any],
                 answer: AnswerModel, baseline: BaselineCache, cfg: TrainConfig, judge: Judge | None = None,
                 batch_size: int = 50) -> dict[str, float]:
    """Greedy states for the held-out set with the current weights, then ``evaluate_states``."""
    from policy.learned import LocalLearnedPolicy

    pol = LocalLearnedPolicy(model, tokenizer, prompt=cfg.data.prompt, temperature=0.0,
                             max_new_tokens=cfg.eval_max_new_tokens or cfg.max_completion_length,
                             chat_template_kwargs=cfg.chat_template_kwargs)
    was_training = model.training
    model.eval()
    texts: list[str] = []
    if pol.per_fact:  # prompts are built per fact from the instances themselves
        texts = pol.state_texts([(i.request, i.bundle(), i.choices) for i in instances], batch_size)
    else:
        for s in range(0, len(prompts), batch_size):
            batch = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True,
                                                   **cfg.chat_template_kwargs) for p in prompts[s:s + batch_size]]
            texts.extend(pol.generate(batch))
    if was_training:
        model.train()
    return evaluate_states(texts, instances, answer, baseline, cfg, judge)


__all__ = ["StateRewardFn", "build_answer_model", "evaluate_states", "filter_solved", "heldout_eval", "summarize"]
