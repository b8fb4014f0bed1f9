"""Instances where the Reasoning State decides (training_data/state_decides.py, issue 48 item 2).

The two competing facts are written with one template, so the statements alone (what the text-only reader
reads) differ only in the value; what decides is in the graph the policy reads; the split is the 30 % row
hash; the perfect state and its swap name the two sides; a per-fact line is rewarded alone against no state
with ``reward.context: alone``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from policy.reader_tune import oracle_state
from retrieval.render import fact_line
from training_data.build import is_heldout
from training_data.state_decides import FAMILIES, READER_CUT, RULE_WRONG, build, bucket, make

MARK = {"updates": "replaced by", "conflicts": "retracted", "scope": "scope:", "holders": "(about ",
        "expiry": "expired", "scope-paraphrase": "scope:", "holders-other": "(about ", "past-paraphrase": "replaced by"}


def _sides(inst):  # type: ignore[no-untyped-def]
    by_key = {it.fact.fact_id.split("::")[1]: it for it in inst.evidence}
    return by_key["right"], by_key["wrong"]


@pytest.mark.parametrize("family", FAMILIES)
def test_statements_are_one_template_and_the_graph_decides(family: str) -> None:
    alias_of = None
    for i in range(12):
        inst = make(family, 0, i)
        right, wrong = _sides(inst)
        value = {s.fact.fact_id: s.fact.statement.split(" the choice is ")[1] for s in (right, wrong)}
        assert right.fact.statement.replace(value[right.fact.fact_id], "X") == \
            wrong.fact.statement.replace(value[wrong.fact.fact_id], "X")
        assert inst.reference_answer == f"Go with {value[right.fact.fact_id]}" and len(inst.choices or ()) == 2
        alias_of = inst.bundle().alias_of()
        seen = fact_line(wrong, alias_of) + " " + fact_line(right, alias_of)
        assert MARK[family] in seen  # the policy's view carries what decides
        assert MARK[family] not in right.fact.statement + wrong.fact.statement  # the statements do not
    assert make(family, 0, 3) == make(family, 0, 3)


def test_split_is_the_row_hash(tmp_path: Path) -> None:
    man = build(tmp_path, seed=0, per_family=20)
    assert sum(man["counts"].values()) == 20 * len(FAMILIES)
    for split in ("train", "reader", "heldout"):
        for line in (tmp_path / f"{split}.jsonl").read_text().splitlines():
            iid = line.split('"instance_id":"', 1)[1].split('"', 1)[0]
            assert is_heldout(iid, 0.3) == (split == "heldout")
            assert bucket(iid) == split and (split == "reader") == (is_heldout(iid, READER_CUT) and split != "heldout")
    assert 0 < man["counts"].get("heldout/updates", 0) < 20
    assert 0 < man["counts"].get("reader/updates", 0) < 20  # a third bucket, apart from the policy's rows


def _rule_lines(inst):  # type: ignore[no-untyped-def]
    from policy.rule import RulePolicy

    text = RulePolicy().state_text(inst.request, inst.bundle())
    lines = dict(x.split(": ", 1) for x in text.splitlines() if not x.startswith("RULE"))
    right, wrong = _sides(inst)
    return lines[right.alias], lines[wrong.alias]


def _rank(line: str) -> tuple[bool, int]:
    return line.startswith("use"), {"high": 2, "medium": 1, "low": 0}[line.rsplit("| ", 1)[1]]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_rule_baseline_is_right_only_on_the_first_five(family: str) -> None:
    """On the rule-wrong families the rule's line for the right fact never outranks the wrong fact's (a tie or
    the wrong one first) on nearly every instance; on the others it always does."""
    better = sum(_rank(r) > _rank(w) for r, w in (_rule_lines(make(family, 0, i)) for i in range(30)))
    if family in RULE_WRONG:
        assert better <= 3, better  # scope-paraphrase: a scope word that is also in the topic ("summer holiday")
    else:
        assert better == 30


def test_rule_wrong_requests_carry_no_word_the_rule_matches() -> None:
    """Sentences from outside every benchmark: a scope said in other words, a request about the past without a
    cue of ``policy.rule.PAST_CUES``; the rule's lexical checks miss both (so the state must read them)."""
    from policy.rule import PAST_CUES, scope_applies
    from training_data.state_decides import PARAPHRASE, PAST_WORDS

    assert not scope_applies("at work", "Which laptop should I use at the office?")
    assert all(not scope_applies(s, f"x {p}") for s, p in PARAPHRASE.items())
    assert not any(PAST_CUES.search(w.format(topic="laptop")) for w in PAST_WORDS)
    assert PAST_CUES.search("Which laptop did I use in the past?")  # the check itself can fire


def test_deciding_only_prompts_the_two_competing_facts() -> None:
    from policy.config import load_config
    from policy.train_data import policy_calls

    cfg = load_config("grpo-cpu-smollm2-state-decides-v2")
    assert cfg.data.deciding_only and cfg.answer.reader_adapter == "policy/artefact/xreader-fast-text-v2"
    inst = next(i for i in (make("holders-other", 0, k) for k in range(20)) if len(i.evidence) > 2)
    right, wrong = _sides(inst)
    calls = policy_calls(inst, cfg) or []
    assert sorted(a for a, _ in calls) == sorted([right.alias, wrong.alias])
    all_cfg = cfg.model_copy(update={"data": cfg.data.model_copy(update={"deciding_only": False})})
    assert len(policy_calls(inst, all_cfg) or []) == len(inst.evidence)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_oracle_and_its_swap_name_the_two_sides(family: str) -> None:
    inst = make(family, 0, 1)
    right, wrong = _sides(inst)
    good, bad = oracle_state(inst), oracle_state(inst, wrong=True)
    use = {f.alias: f.use for f in good.facts}
    assert use[right.alias] and not use[wrong.alias]
    use_bad = {f.alias: f.use for f in bad.facts}
    assert use_bad[wrong.alias] and not use_bad[right.alias]


def test_reward_context_alone_scores_the_line_by_itself() -> None:
    from policy.config import load_config
    from policy.train_reward import StateRewardFn

    cfg = load_config("grpo-cpu-smollm2-state-decides")
    assert cfg.reward.context == "alone" and cfg.reward.graded and cfg.top_p < 1.0 and cfg.temperature > 1.0
    inst = make("updates", 0, 2)
    fn = StateRewardFn([inst], None, None, cfg)  # type: ignore[arg-type]
    a = inst.evidence[0].alias
    assert fn.in_context("historical | ignore | low", inst, a) == f"{a}: historical | ignore | low"
    rule_cfg = cfg.model_copy(update={"reward": cfg.reward.model_copy(update={"context": "rule"})})
    fn_rule = StateRewardFn([inst], None, None, rule_cfg)  # type: ignore[arg-type]
    assert fn_rule.in_context("historical | ignore | low", inst, a).count("\n") == len(inst.evidence) - 1


@pytest.mark.parametrize("family", FAMILIES)
def test_the_text_only_reader_sees_the_statements_alone(family: str) -> None:
    from policy.xreader_fast import memory_lines

    inst = make(family, 0, 4)
    lines = dict(memory_lines(inst.bundle(), 400, graph_state=True, text_only=True))
    right, wrong = _sides(inst)
    assert lines[right.alias] == right.fact.statement and lines[wrong.alias] == wrong.fact.statement
    full = dict(memory_lines(inst.bundle(), 400, graph_state=True))
    assert MARK[family] in full[right.alias] + full[wrong.alias]  # the graph-state reader would see it


def test_the_text_only_reader_follows_the_state_where_the_evidence_cannot_decide() -> None:
    """The committed reader (configs/reader-xfast-text.yaml) on instances of another seed than its training
    data: the perfect state picks the right option, the swapped one the other, on every family."""
    from policy.option_scoring import choice_index
    from policy.state import fit_state
    from policy.xreader_fast import XFastReader

    reader = XFastReader.load("policy/artefact/xreader-fast-text-v1")
    assert reader.text_only
    for family in FAMILIES:
        for i in range(3):
            inst = make(family, 7, i)
            assert inst.choices
            ref = choice_index(inst.choices, inst.reference_answer)
            good = reader.answer_text(inst.request, inst.bundle(), inst.choices, fit_state(oracle_state(inst)))
            bad = reader.answer_text(inst.request, inst.bundle(), inst.choices, fit_state(oracle_state(inst, wrong=True)))
            assert choice_index(inst.choices, good) == ref and choice_index(inst.choices, bad) != ref
