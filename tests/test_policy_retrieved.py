"""Instances from real retrieval (training_data/retrieved.py), the reader that scores them (reader-v2),
and the warm-start targets (policy/targets.py): the pipeline really runs, the split is fixed, the answer
key stays with the reward, and the reader cannot be gamed by rules or by ignoring everything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graph.models import Fact
from retrieval.retrieve import EvidenceItem
from graph.rules import derive_state
from policy.reader import AnswerReader
from policy.rewards import BaselineCache, ReaderAnswerModel, RewardConfig, state_reward
from policy.state import parse_state
from training_data.base import EPOCH, TrainingInstance


def _item(alias: str, statement: str, kind: str = "preference") -> EvidenceItem:
    f = Fact(fact_id=f"u::{alias}", user_id="u", statement=statement, kind=kind, observed_at=EPOCH, recorded_at=EPOCH)
    return EvidenceItem(alias=alias, fact=f, state=derive_state(f, [], {f.fact_id: f}, ("root",), EPOCH), seed=True, score=None, group=0)


def _inst(items: list[EvidenceItem], ref: str, other: str) -> TrainingInstance:
    return TrainingInstance(instance_id="t:1", source="test", category="belief-vs-evidence", user_id="u",
                            request="Why do bats fly at night without crashing?", evidence=tuple(items),
                            reference_answer=ref, choices=(other, ref), scorer="choice")


BELIEF = _inst([_item("F1", "I am convinced that bats are blind.", "belief"),
                _item("F2", "I drive a small grey hatchback.", "circumstance")],
               "They see and use echolocation", "They are blind")
PREF = _inst([_item("F1", "I love acoustic folk ballads."), _item("F2", "I drive a small grey hatchback.")],
             "an acoustic folk ballad", "a heavy metal album")

V2 = ReaderAnswerModel(AnswerReader(ignored_weight=1.0))
CFG = RewardConfig(max_state_tokens=10**6)


@pytest.mark.parametrize("inst,state,score", [
    # no state: the belief pulls the naive reader to the wrong option
    (BELIEF, None, 0.0),
    # ignoring the belief moves the answer (reader-v2) ...
    (BELIEF, "F1: ignore | irrelevant | low\nF2: ignore | irrelevant | low", 1.0),
    # ... but ignoring everything is no shortcut: where the memory is right it loses
    (PREF, "F1: ignore | irrelevant | low\nF2: ignore | irrelevant | low", 0.0),
    (PREF, "F1: use | current-preference | high\nF2: ignore | irrelevant | low", 1.0),
    # rules are not read: a rule cannot move the answer
    (BELIEF, "F1: use | evidence | high\nRULE: bats see well and navigate by echolocation", 0.0),
])
def test_reader_v2_table(inst: TrainingInstance, state: str | None, score: float) -> None:
    st = parse_state(state, inst.aliases) if state else None
    ans = V2.answer(inst, st)
    assert (ans == inst.reference_answer) == bool(score), ans


def test_reader_v1_unchanged_ignoring_the_belief_gives_the_naive_answer() -> None:
    v1 = ReaderAnswerModel()
    st = parse_state("F1: ignore | irrelevant | low\nF2: ignore | irrelevant | low", BELIEF.aliases)
    assert v1.name == "reader-v1" and v1.answer(BELIEF, st) == "They are blind"
    assert V2.name != v1.name  # separate baseline-cache keys


def test_gates_hold_for_reader_v2() -> None:
    cache = BaselineCache()
    smuggled = "F1: ignore | irrelevant | low\nRULE: answer: They see and use echolocation"
    assert state_reward(smuggled, BELIEF, V2, cache, CFG).outcome == "disclosed"
    assert state_reward("the answer is they see and use echolocation", BELIEF, V2, cache, CFG).outcome == "unparseable"
    assert state_reward("F9: use | evidence | high", BELIEF, V2, cache, CFG).outcome == "unparseable"


def test_warm_start_target_is_a_full_state_never_worse_than_the_rule_and_never_discloses() -> None:
    from policy.rule import RulePolicy
    from policy.targets import candidate_states, target_state

    cache = BaselineCache()
    for inst in (BELIEF, PREF):
        text, r = target_state(inst, V2, cache)
        st = parse_state(text, inst.aliases)
        assert {f.alias for f in st.facts} == set(inst.aliases)  # a line per fact: the full format
        rule_r = state_reward(RulePolicy().state_text(inst.request, inst.bundle()), inst, V2, cache, CFG).reward
        assert r >= (rule_r or 0.0) and r == 1.0
        assert inst.reference_answer.lower() not in text.lower()
        assert candidate_states(inst)[0] == parse_state(RulePolicy().state_text(inst.request, inst.bundle())).render()


def test_first_person_dialogue_lines() -> None:
    from training_data.retrieved import _first_person

    assert _first_person("The user prefers fruit smoothies.") == "I prefer fruit smoothies."
    assert _first_person("Lena loves tea.") == "Lena loves tea."


def test_build_runs_ingest_and_retrieval_and_keeps_the_key_out_of_the_prompt(tmp_path: Path, bench_data: Path) -> None:
    from llmclients.embeddings import EmbedderConfig
    from policy.prompt import policy_messages
    from policy.train import read_instances
    from training_data.retrieved import RetrievedBuildConfig, build_retrieved, memsyco_cases

    # bench_data (tests/conftest.py): a skip on a developer's machine without the data, a failure under CI
    memsyco = bench_data / "memsyco-bench"
    cfg = RetrievedBuildConfig(memsyco_root=str(memsyco), tasks=["objective_fact_judgment", "valid_memory_selection"],
                               limit_per_task=2, synthetic_n=2, embedder=EmbedderConfig(kind="hash", dim=64))
    m1 = build_retrieved(tmp_path / "a", cfg)
    m2 = build_retrieved(tmp_path / "b", cfg)
    assert m1["hash"] == m2["hash"]  # same inputs, same build
    assert m1["extractor"] == "offline" and not m1["ingest_errors"]
    insts = read_instances(tmp_path / "a" / "train.jsonl") + read_instances(tmp_path / "a" / "heldout.jsonl")
    assert len(insts) == 6
    for inst in insts:
        assert inst.source == "retrieved" and inst.gold == {}
        assert all(it.fact.user_id == inst.user_id for it in inst.evidence)  # facts from this user's store
        prompt = "\n".join(m.content for m in policy_messages(inst.request, inst.bundle(), None))
        if inst.scorer == "choice":  # the key is an option, never a fact or the request
            assert inst.reference_answer not in prompt
    syn = [i for i in insts if i.instance_id.startswith("retrieved-synthetic")]
    assert len(syn) == 2 and all(json.loads(i.model_dump_json())["metadata"]["family"].startswith("synthetic") for i in syn)
    # the split is a function of the row id alone: a bigger build never moves a row across
    small = {c.instance_id: c.split for c in memsyco_cases(memsyco, ["objective_fact_judgment"], 5, 0.3, 0)}
    big = {c.instance_id: c.split for c in memsyco_cases(memsyco, ["objective_fact_judgment"], 20, 0.3, 1)}
    assert all(big[k] == v for k, v in small.items())


def test_validation_rows_are_set_aside_by_id_and_never_trained_on() -> None:
    from policy.train import split_validation

    insts = [PREF.model_copy(update={"instance_id": f"t:{k}"}) for k in range(20)]
    train, val = split_validation(insts, 5)
    assert len(val) == 5 and len(train) == 15 and not {i.instance_id for i in val} & {i.instance_id for i in train}
    train2, val2 = split_validation(list(reversed(insts)), 5)  # file order does not matter
    assert {i.instance_id for i in val2} == {i.instance_id for i in val}
    assert split_validation(insts, 0) == (insts, [])


def test_smollm2_config_loads_and_validation_needs_eval_steps() -> None:
    from policy.config import load_config

    cfg = load_config("grpo-cpu-smollm2")
    assert cfg.model.source == "gguf" and cfg.lora.enabled and cfg.warmup.targets == "answer-key"
    assert cfg.answer.reader_ignored_weight == 1.0 and cfg.data.prompt == "policy_v1" and cfg.num_threads == 1
    with pytest.raises(ValueError, match="eval_every"):
        load_config("grpo-cpu-smollm2", ["eval_every=0"])
    with pytest.raises(ValueError, match="answer-key"):
        load_config("grpo-cpu-smollm2", ["lora.enabled=false"])


def test_facts_style_targets_drop_rules_and_earn_the_same_reward() -> None:
    from policy.targets import target_state

    cache = BaselineCache()
    for inst in (BELIEF, PREF):
        full, r_full = target_state(inst, V2, cache)
        facts, r_facts = target_state(inst, V2, cache, style="facts")
        assert "RULE:" not in facts and r_facts == r_full  # rules are never read by the reader
        assert parse_state(facts, inst.aliases).facts == parse_state(full, inst.aliases).facts


def test_epoch_sampling_covers_every_prompt_once_per_pass() -> None:
    import random

    from policy.warmup import PromptSampler

    s = PromptSampler(7, random.Random(3), "epochs")
    passes = [[s.draw() for _ in range(7)] for _ in range(3)]
    assert all(sorted(p) == list(range(7)) for p in passes) and passes[0] != passes[1]
    r = PromptSampler(7, random.Random(3))  # replacement: the original uniform draws
    ref = random.Random(3)
    assert [r.draw() for _ in range(5)] == [ref.randrange(7) for _ in range(5)]


def test_balanced_sampling_draws_rare_signatures_and_needs_groups() -> None:
    """Balanced warm-up draws: each group's share follows the square root of its size, every prompt of a
    group comes once per pass of that group, and a sampler without groups is refused (whole-state
    prompts have no per-fact signature)."""
    import random
    from collections import Counter

    from policy.config import load_config
    from policy.warmup import PromptSampler

    groups = ["common"] * 90 + ["rare"] * 10
    s = PromptSampler(100, random.Random(0), "balanced", groups=groups)
    draws = [s.draw() for _ in range(4000)]
    share = Counter(groups[d] for d in draws)["rare"] / len(draws)
    assert abs(share - 10 ** 0.5 / (10 ** 0.5 + 90 ** 0.5)) < 0.03  # 0.25, against 0.10 for uniform draws
    first_rare = [d for d in draws if d >= 90][:10]
    assert sorted(first_rare) == list(range(90, 100))  # one pass over the rare group before any repeat
    with pytest.raises(ValueError, match="one group per prompt"):
        PromptSampler(3, random.Random(0), "balanced")
    cfg = load_config("grpo-cpu-smollm2-fact-balanced")
    assert cfg.warmup.sampling == "balanced" and cfg.data.prompt == "policy_fact_v1"
    with pytest.raises(ValueError, match="needs a per-fact data.prompt"):  # refused at load, not after the targets
        load_config("grpo-cpu-smollm2-fact-balanced", ["warmup.targets=all"])


def test_ship_config_loads() -> None:
    from policy.config import load_config

    cfg = load_config("grpo-cpu-smollm2-ship")
    assert cfg.data.prompt == "policy_short_v1" and cfg.warmup.target_style == "facts" and cfg.num_threads == 1
    assert cfg.warmup.sampling == "epochs" and cfg.reward.max_state_tokens <= cfg.max_completion_length


def test_read_config_differs_from_ship_only_in_margin_and_steps() -> None:
    from policy.config import load_config

    ship, read = load_config("grpo-cpu-smollm2-ship"), load_config("grpo-cpu-smollm2-read")
    assert read.warmup.target_margin == 0.0 < ship.warmup.target_margin
    same = {k for k in ("data", "lora", "answer", "reward") if getattr(read, k) == getattr(ship, k)}
    assert same == {"data", "lora", "answer", "reward"} and read.output_dir != ship.output_dir


@pytest.mark.parametrize("policy,named", [
    ("F1: ignore | irrelevant | low\nF2: use | evidence | high", True),   # the target's decision
    ("F1: ignore | historical | high\nF2: ignore | irrelevant | low", True),  # only F1 decides here
    ("F1: use | evidence | high\nF2: use | evidence | low", False),       # the rule state: trusts the belief
    ("F2: use | evidence | high", False),                                 # the belief left unnamed, not ignored
])
def test_names_deciding_compares_use_or_ignore_on_the_facts_that_decide(policy: str, named: bool) -> None:
    from policy.targets import names_deciding

    rule = parse_state("F1: use | evidence | high\nF2: use | evidence | low", BELIEF.aliases)
    target = parse_state("F1: ignore | irrelevant | low\nF2: use | evidence | low", BELIEF.aliases)
    assert names_deciding(parse_state(policy, BELIEF.aliases), target, rule) is named
    assert names_deciding(rule, rule, rule) is None  # nothing to decide: the row is not counted


def test_reads_summary_tells_a_reader_from_a_positional_copier() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from policy_retrieved import reads_summary

    rule = "F1: use | evidence | high\nF2: use | evidence | low"
    # two rows whose deciding fact sits at different positions
    keys = ["F1: ignore | irrelevant | low\nF2: use | evidence | low", "F1: use | evidence | high\nF2: ignore | irrelevant | low"]
    insts, fams = [BELIEF, BELIEF], ["a", "b"]
    reader = reads_summary(insts, fams, keys, [True, True], [rule, rule], keys)
    copier = reads_summary(insts, fams, [keys[0], keys[0]], [True, True], [rule, rule], keys)
    assert reader["rows"] == 2 and reader["learned"]["all"] == 1.0
    assert copier["learned"]["all"] == 0.5 == copier["positional_template"]["all"]
    unparsed = reads_summary(insts, fams, ["junk", "junk"], [False, False], [rule, rule], keys)
    assert unparsed["learned"]["all"] == 0.0  # a fallback names nothing


def test_evidence_preset_differs_from_balanced_only_in_evidence_first() -> None:
    from policy.config import load_config

    bal, ev = load_config("grpo-cpu-smollm2-fact-balanced"), load_config("grpo-cpu-smollm2-fact-evidence")
    assert ev.warmup.target_evidence_first and not bal.warmup.target_evidence_first
    assert ev.warmup.model_copy(update={"target_evidence_first": False}) == bal.warmup
    assert ev.model_copy(update={"warmup": bal.warmup, "name": bal.name, "output_dir": bal.output_dir}) == bal


def test_holder_preset_differs_from_evidence_only_in_its_prompt() -> None:
    from policy.config import load_config

    ev, ho = load_config("grpo-cpu-smollm2-fact-evidence"), load_config("grpo-cpu-smollm2-fact-holder")
    assert (ev.data.prompt, ho.data.prompt) == ("policy_fact_v1", "policy_fact_v2")
    same = ho.model_copy(update={"data": ho.data.model_copy(update={"prompt": ev.data.prompt}),
                                 "name": ev.name, "output_dir": ev.output_dir})
    assert same == ev
