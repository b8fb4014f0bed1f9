"""The GRPO reward path the GPU presets use, end to end on CPU without a policy model: instances from
build-data JSONL, the chat answer model (``answer.kind: chat``) behind a real OpenAI-compatible
server on 127.0.0.1, ``filter_solved``, and ``StateRewardFn`` called the way TRL calls it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from policy.config import load_config
from policy.rewards import BaselineCache, ChatAnswerModel, state_reward
from policy.train import StateRewardFn, build_answer_model, filter_solved, load_instances
from servers import FaultServer
from training_data.base import TrainingInstance
from training_data.synthetic import SyntheticConfig, SyntheticSource


def _instances() -> list[TrainingInstance]:
    return [i for i in SyntheticSource(SyntheticConfig(n=6, max_distractors=0)).instances(0) if i.scorer == "choice"]


def _scripted(instances: list[TrainingInstance], solved_without_state: str) -> Any:
    """The answer model's behaviour: the right option when the prompt carries a Reasoning State (or for
    the one instance it solves on its own), else a wrong option."""
    def reply(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        inst = next(i for i in instances if i.request in user)
        if "Reasoning State:" in user or inst.instance_id == solved_without_state:
            return inst.reference_answer
        return next(c for c in inst.choices if c != inst.reference_answer)
    return reply


def _gold_state(inst: TrainingInstance) -> str:
    return "\n".join(f"{a}: {'use' if g.use else 'ignore'} | {g.role} | {g.priority}" for a, g in inst.gold.items())


def test_rewards_trl_receives_equal_state_reward(tmp_path: Path) -> None:
    insts = _instances()
    assert len(insts) >= 3
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.jsonl").write_text("".join(i.model_dump_json() + "\n" for i in insts))
    (data / "heldout.jsonl").write_text("".join(i.model_dump_json() + "\n" for i in insts[:2]))
    solved = insts[0].instance_id
    with FaultServer("ok", reply=_scripted(insts, solved)) as fs:
        cfg = load_config("grpo-qwen3-4b", [
            f"data.train_path={data / 'train.jsonl'}", f"data.eval_path={data / 'heldout.jsonl'}",
            "data.filter_solved=true", f"answer.endpoint.base_url={fs.url}", "answer.endpoint.model=stand-in",
            "answer.concurrency=4", "answer.max_tokens=32"])
        train_set, heldout = load_instances(cfg)  # the JSONL round trip build-data -> training
        assert [i.instance_id for i in train_set] == [i.instance_id for i in insts]
        assert [i.model_dump() for i in heldout] == [i.model_dump() for i in insts[:2]]

        answer, judge = build_answer_model(cfg)  # the chat branch: an OpenAI client to the server above
        assert isinstance(answer, ChatAnswerModel) and judge is None
        baseline = BaselineCache(tmp_path / "baseline.jsonl")
        kept = filter_solved(train_set, answer, baseline, judge)
        assert [i.instance_id for i in kept] == [i.instance_id for i in insts[1:]]  # the solved one is dropped
        calls_after_baseline = fs.hits

        fn = StateRewardFn(kept, answer, baseline, cfg, judge)
        # what GRPOTrainer passes: conversational completions, token ids, the dataset's extra column
        texts = [_gold_state(kept[0]), "no state at all", _gold_state(kept[1])]
        completions = [[{"role": "assistant", "content": t}] for t in texts]
        ids = [kept[0].instance_id, kept[1].instance_id, kept[1].instance_id]
        logged: dict[str, float] = {}
        rewards = fn(prompts=[[{"role": "user", "content": "p"}]] * 3, completions=completions,
                     completion_ids=[[1] * 5] * 3, instance_id=ids, log_metric=logged.__setitem__)

        by_id = {i.instance_id: i for i in kept}
        expected = [state_reward(t, by_id[k], answer, baseline, cfg.reward, n_tokens=5).reward
                    for t, k in zip(texts, ids)]
    assert rewards == expected
    # and by hand: a gold state turns a wrong answer into the right one (1 - 0), garbage is penalized
    assert rewards == [1.0, cfg.reward.format_penalty, 1.0]
    assert fs.hits > calls_after_baseline  # the states' answers really went through the server
    assert logged["state/format_fail_rate"] == 1 / 3 and logged["state/lift"] == 1.0
    assert all(len(r["messages"]) == 2 and r["model"] == "stand-in" and r["max_tokens"] == 32 for r in fs.requests)
