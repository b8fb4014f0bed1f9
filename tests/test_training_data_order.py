"""Fact order in synthetic instances: retrieval order leaks position (an update follows what it replaced);
``order=shuffled`` removes the leak without touching relations or gold decisions."""

from __future__ import annotations

from collections import Counter

from training_data.synthetic import SyntheticConfig, SyntheticSource


def _key_positions(order: str) -> Counter[int]:
    src = SyntheticSource(SyntheticConfig(n=600, categories=["update"], max_distractors=0, other_person=0.0,
                                          unlinked_update=0.0, order=order))  # type: ignore[arg-type]
    pos: Counter[int] = Counter()
    for inst in src.instances(5):
        key = next(a for a, g in inst.gold.items() if g.use)
        pos[inst.aliases.index(key)] += 1
    return pos


def test_retrieval_order_puts_an_update_after_what_it_replaced() -> None:
    src = SyntheticSource(SyntheticConfig(n=50, categories=["update"], unlinked_update=0.0))
    for inst in src.instances(1):
        new = next(it for it in inst.evidence if inst.gold[it.alias].use)
        old = next(it for it in inst.evidence if it.state.validity == "superseded")
        assert inst.aliases.index(new.alias) == inst.aliases.index(old.alias) + 1


def test_shuffled_order_spreads_the_answer_fact_over_positions() -> None:
    retrieval, shuffled = _key_positions("retrieval"), _key_positions("shuffled")
    assert retrieval[0] == 0  # never first: its superseded predecessor precedes it
    assert min(shuffled[k] for k in range(2)) > 150  # 2-3 facts: every position common
    assert max(shuffled.values()) < 0.5 * sum(shuffled.values())


def test_shuffling_keeps_relations_states_and_gold() -> None:
    a = list(SyntheticSource(SyntheticConfig(n=40)).instances(3))
    b = list(SyntheticSource(SyntheticConfig(n=40, order="shuffled")).instances(3))
    for x, y in zip(a, b):
        assert x.request == y.request and x.reference_answer == y.reference_answer
        gold_x = {it.fact.fact_id: (x.gold.get(it.alias), it.state.validity) for it in x.evidence}
        gold_y = {it.fact.fact_id: (y.gold.get(it.alias), it.state.validity) for it in y.evidence}
        assert gold_x == gold_y
