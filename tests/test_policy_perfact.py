"""A Reasoning State assembled from one policy call per fact (policy/perfact.py, prompt policy_fact_v1)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from policy.config import load_config
from policy.perfact import assemble, fact_line_text, fact_messages, fact_targets, is_per_fact
from policy.reader import AnswerReader
from policy.rewards import BaselineCache, ReaderAnswerModel, RewardConfig, state_reward
from policy.state import StateParseError, parse_state
from policy.targets import candidate_states, described, fact_decisions, target_state
from policy.train import StateRewardFn, policy_calls
from training_data.synthetic import SyntheticConfig, SyntheticSource


def _instances(n: int = 12, seed: int = 0) -> list:
    return list(SyntheticSource(SyntheticConfig(n=n)).instances(seed))


def test_only_the_fact_prompt_is_per_fact() -> None:
    assert is_per_fact("policy_fact_v1") and is_per_fact("policy_fact_v2")
    assert not is_per_fact("policy_described_v1") and not is_per_fact("policy_short_v1")


@pytest.mark.parametrize("prompt", ["policy_fact_v1", "policy_fact_v2"])
def test_a_fact_prompt_shows_that_fact_and_only_its_linked_partners(prompt: str) -> None:
    checked = 0
    for inst in _instances():
        bundle = inst.bundle()
        ids = {it.fact.fact_id: it.alias for it in bundle.items}
        for it in bundle.items:
            user = fact_messages(inst.request, bundle, it.alias, inst.choices, prompt=prompt)[1].content
            memory = re.split(r"Memory(?: \([^)]*\))?: ", user, maxsplit=1)[1]
            assert memory.startswith(f"[{it.alias}]") and inst.request in user
            linked = {ids[f] for f in (*it.state.supersedes, *it.state.superseded_by, *it.state.conflicts_with)
                      if f in ids}
            shown = {o.alias for o in bundle.items if f"\n[{o.alias}]" in memory}
            assert shown == linked
            checked += bool(linked)
    assert checked  # the synthetic dialogues do contain updates and conflicts


def test_v2_names_whose_memory_before_the_statement_and_drops_partner_marks() -> None:
    """The astronauts' report and the user's belief it contradicts: in v1 their prompts differ only in where
    "(said by the assistant)" sits; in v2 the heading differs before either statement."""
    from retrieval.evidence import EvidenceBundle, EvidenceItem, Explain
    from graph.models import Fact, RelationalState

    belief = Fact(fact_id="b", user_id="u", statement="Believes the Great Wall is visible from space",
                  kind="belief", holder="user")
    report = Fact(fact_id="r", user_id="u", statement="Astronauts report it is not visible",
                  kind="belief", holder="assistant")
    item = lambda a, f, other: EvidenceItem(alias=a, fact=f, seed=True, group=0,  # noqa: E731
                                            state=RelationalState(fact_id=f.fact_id, validity="disputed",
                                                                  conflicts_with=(other,)))
    bundle = EvidenceBundle(user_id="u", query="q", items=[item("F1", belief, "r"), item("F2", report, "b")],
                            explain=Explain(query="q", k=2, seeds=[], added_by_traversal=[]))
    req = "Is the Great Wall visible from space?"
    v1 = [fact_messages(req, bundle, a)[1].content for a in ("F1", "F2")]
    v2 = [fact_messages(req, bundle, a, prompt="policy_fact_v2")[1].content for a in ("F1", "F2")]
    assert "conflicts with F2 (said by the assistant)" in v1[0]
    assert "Memory (the user's own): [F1]" in v2[0] and "(said by the assistant);" not in v2[0]
    assert "Memory (outside evidence, said by the assistant): [F2]" in v2[1]
    assert "conflicts with F2;" in v2[0] and "conflicts with F1;" in v2[1]


@pytest.mark.parametrize("out, line", [
    ("historical | ignore | low", "historical | ignore | low"),
    ("F3: evidence | use | high\nanything after", "evidence | use | high"),
    ("\n  [F2]: constraint | use | medium", "constraint | use | medium"),
    ("", ""),
])
def test_fact_line_text_takes_the_first_line_without_a_handle(out: str, line: str) -> None:
    assert fact_line_text(out) == line


def test_assembled_states_stay_strict() -> None:
    assert parse_state(assemble(["F1", "F2"], ["historical | ignore | low", "evidence | use | high"]), ["F1", "F2"])
    with pytest.raises(StateParseError):  # one bad line fails the whole state: serving falls back
        parse_state(assemble(["F1", "F2"], ["historical | ignore | low", "the answer is B"]), ["F1", "F2"])


def test_per_fact_targets_reassemble_to_the_chosen_state_with_its_reward() -> None:
    answer, cache, cfg = ReaderAnswerModel(AnswerReader(1.0)), BaselineCache(), RewardConfig(max_state_tokens=10**6)
    for inst in _instances():
        text, r = target_state(inst, answer, cache, style="described")
        lines = fact_targets(text, inst.aliases)
        again = assemble(inst.aliases, [lines[a] for a in inst.aliases])
        assert parse_state(again) == parse_state(text)
        assert state_reward(again, inst, answer, cache, cfg).reward == pytest.approx(r)


def test_training_gives_one_prompt_per_fact_and_scores_a_line_inside_the_rule_state() -> None:
    cfg = load_config("grpo-cpu-smollm2-fact")
    insts = _instances(6)
    answer, cache = ReaderAnswerModel(AnswerReader(1.0)), BaselineCache()
    fn = StateRewardFn(insts, answer, cache, cfg)
    for inst in insts:
        calls = policy_calls(inst, cfg)
        assert calls is not None and [a for a, _ in calls] == inst.aliases
        rule = described(candidate_states(inst, style="facts")[0], inst)
        rule_lines = fact_targets(rule, inst.aliases)
        a = inst.aliases[0]
        flipped = "irrelevant | ignore | low" if fact_decisions(parse_state(rule))[a] == "use" else "evidence | use | high"
        got = fn.in_context(flipped, inst, a)
        assert got.splitlines()[0] == f"{a}: {flipped}"
        assert got.splitlines()[1:] == [f"{b}: {rule_lines[b]}" for b in inst.aliases[1:]]
        # the reward is the whole state's: the rule state's own reward when the line is the rule's
        same = fn(prompts=[None], completions=[rule_lines[a]], instance_id=[inst.instance_id], alias=[a])[0]
        assert same == pytest.approx(state_reward(rule, inst, answer, cache, cfg.reward).reward)
    assert fn.in_context("F1: use | evidence | high", insts[0], "") == "F1: use | evidence | high"


def test_per_fact_prompts_refuse_shuffled_copies() -> None:
    with pytest.raises(ValueError, match="per fact"):
        load_config("grpo-cpu-smollm2-fact", ["warmup.shuffle_copies=1"])


@pytest.mark.slow
def test_a_per_fact_checkpoint_answers_one_capped_line_per_fact(tmp_path) -> None:
    """A real (freshly initialised) LoRA on the shipped SmolLM2, saved with the per-fact prompt: the loaded
    policy makes one call per fact, each capped at FACT_LINE_TOKENS, and assembles one line per fact in order;
    whatever the base writes, state() either parses or raises StateParseError (serving then falls back)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from policy.learned import FACT_LINE_TOKENS, SMOLLM2_BASE, LocalLearnedPolicy, PolicyMeta, write_meta
    from policy.models import smollm2_hf_dir

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(str(smollm2_hf_dir())),
                           LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"]))
    model.save_pretrained(str(tmp_path))
    write_meta(tmp_path, PolicyMeta(base_model=SMOLLM2_BASE, prompt="policy_fact_v1", prompt_version="1"))
    pol = LocalLearnedPolicy.from_checkpoint(tmp_path, temperature=0.0, max_new_tokens=192)
    assert pol.per_fact
    seen: list[int] = []
    real = pol.generate

    def counted(prompts: list[str], **kw: Any) -> list[str]:
        seen.append(kw["max_new_tokens"])
        return real(prompts, **kw)

    pol.generate = counted  # type: ignore[method-assign]
    inst = _instances(1)[0]
    text = pol.state_texts([(inst.request, inst.bundle(), inst.choices)], batch_size=4)[0]
    assert [ln.split(":", 1)[0] for ln in text.splitlines()] == inst.aliases
    assert seen and set(seen) == {FACT_LINE_TOKENS} and len(seen) == -(-len(inst.aliases) // 4)
    try:
        pol.state(inst.request, inst.bundle(), inst.choices)
    except StateParseError:
        pass
