"""The LM reader (policy/lmreader.py) and the one state length limit (policy.state.MAX_STATE_WORDS)."""

from __future__ import annotations

import pytest

from graph.models import Fact
from graph.rules import derive_state
from policy.lmreader import LMReader, visible_state
from policy.rewards import RewardConfig, gate
from policy.state import MAX_STATE_WORDS, fit_state, parse_state, state_words
from retrieval.retrieve import EvidenceBundle, EvidenceItem
from training_data.base import EPOCH, TrainingInstance


def _bundle(statements: list[str]) -> EvidenceBundle:
    items = []
    for k, s in enumerate(statements, start=1):
        f = Fact(fact_id=f"u::{k}", user_id="u", statement=s, kind="preference", observed_at=EPOCH, recorded_at=EPOCH)
        items.append(EvidenceItem(alias=f"F{k}", fact=f, state=derive_state(f, [], {f.fact_id: f}, ("root",), EPOCH),
                                  seed=True, score=1.0 / k, group=k))
    return TrainingInstance(instance_id="t:1", source="test", category="update", user_id="u", request="q",
                            evidence=tuple(items), reference_answer="x", scorer="token_f1").bundle()


def test_fit_state_is_the_one_limit_and_keeps_rules_and_the_first_facts() -> None:
    long = parse_state("\n".join(f"F{k}: use | evidence | low" for k in range(1, 60)) + "\nRULE: prefer F2 over F1")
    assert state_words(long.render()) > MAX_STATE_WORDS
    cut = fit_state(long)
    assert state_words(cut.render()) <= MAX_STATE_WORDS
    assert cut.rules == ("prefer F2 over F1",) and cut.facts == long.facts[: len(cut.facts)] and len(cut.facts) > 20
    short = parse_state("F1: use | evidence | low")
    assert fit_state(short) is short


def test_reward_gate_cuts_an_assembled_state_instead_of_scoring_it_too_long() -> None:
    """A per-fact state over a long bundle used to score the length penalty in the bench (192 words) while
    serving passed it whole; now the gate cuts it exactly as serving does."""
    aliases = [f"F{k}" for k in range(1, 60)]
    text = "\n".join(f"{a}: use | evidence | low" for a in aliases)
    state, penalty = gate(text, aliases, "beach", 0, RewardConfig(max_state_tokens=192))
    assert penalty is None and state is not None and state == fit_state(parse_state(text, aliases))
    # the generation cap still applies to what a policy generated itself
    assert gate(text, aliases, "beach", 500, RewardConfig(max_state_tokens=192))[1].outcome == "too_long"  # type: ignore[union-attr]


def test_visible_state_keeps_shown_facts_and_every_rule() -> None:
    s = parse_state("F1: use | evidence | high\nF2: ignore | historical | low\nRULE: F2 is the past")
    assert visible_state(s, ["F1"]) == "F1: use | evidence | high\nRULE: F2 is the past"


@pytest.mark.slow
def test_lm_reader_reads_rules_and_its_kv_reuse_equals_a_full_forward() -> None:
    import torch

    reader = LMReader.smollm2()
    bundle = _bundle(["I used to love hiking mountain trails.", "I now prefer relaxing beach holidays."])
    choices = ["a relaxing beach holiday", "a strenuous mountain hike"]
    state = parse_state("F1: ignore | historical | low\nF2: use | current-preference | high\n"
                        "RULE: F1 describes the past; follow F2.", ["F1", "F2"])
    prompt = reader.prompt_text("Suggest a vacation for me", bundle, choices, state)
    assert "RULE: F1 describes the past" in prompt and "F2: use | current-preference | high" in prompt
    assert "[F1]" not in reader.prompt_text("Suggest a vacation for me", bundle, choices, "none")
    lps = reader.continuation_logprobs(prompt, choices)
    tok = reader.tokenizer
    for c, lp in zip(choices, lps):  # the same numbers without the shared-prefix cache
        pre = tok(prompt, add_special_tokens=False).input_ids
        ids = tok(c + tok.eos_token, add_special_tokens=False).input_ids
        with torch.no_grad():
            logits = reader.model(torch.tensor([pre + ids])).logits[0].float()
        logp = torch.log_softmax(logits[len(pre) - 1:-1], -1).gather(1, torch.tensor(ids)[:, None])[:, 0]
        assert abs(float(logp.mean()) - lp) < 1e-3
    assert 0.0 < reader.graded_choice(lps, choices, choices[0]) < 1.0
    # the cached head (request + options + evidence, before the state block): same scores, twice in a row
    head = reader.split_head(prompt)
    assert head and prompt.startswith(head) and "Reasoning State:" not in head and "[F2]" in head
    for _ in range(2):
        assert [round(x, 3) for x in reader.continuation_logprobs(prompt, choices, head)] == [round(x, 3) for x in lps]
    bare = reader.prompt_text("Suggest a vacation for me", bundle, choices, "evidence")
    assert reader.split_head(bare) == head  # no state: the same head, so conditions share its cache
    assert len(reader._heads) == 1


def test_graded_reward_uses_the_answer_models_graded_score_and_caches_the_no_state_term() -> None:
    from policy.rewards import BaselineCache, state_reward

    class Graded:
        name = "graded-stub"
        calls: list[object] = []

        def answer(self, instance: TrainingInstance, state: object) -> str:
            return "x"

        def graded(self, instance: TrainingInstance, state: object) -> float:
            self.calls.append(state)
            return 0.25 if state is None else 0.75

    items = _bundle(["I like tea."]).items
    inst = TrainingInstance(instance_id="g:1", source="test", category="update", user_id="u", request="q",
                            evidence=tuple(items), reference_answer="tea", choices=("tea", "coffee"), scorer="choice")
    m, cache = Graded(), BaselineCache()
    for _ in range(2):
        bd = state_reward("F1: use | evidence | high", inst, m, cache, RewardConfig(graded=True))
        assert bd.reward == 0.5 and bd.outcome == "ok"
    assert m.calls.count(None) == 1  # the no-state term once per instance
    assert state_reward("F1: use | evidence | high", inst, m, cache, RewardConfig()).reward == 0.0  # off: right/wrong


def test_lmreader_preset_loads_with_graded_rewards_and_spread_settings() -> None:
    from policy.config import load_config

    cfg = load_config("grpo-cpu-smollm2-lmreader")
    assert cfg.answer.kind == "lm" and cfg.reward.graded and cfg.num_generations >= 8 and cfg.temperature >= 1.0
    assert cfg.data.val_from_train and cfg.eval_every  # the checkpoint is picked on validation, never held-out
