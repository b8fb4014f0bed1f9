"""Reasoning States for another memory system's items (policy/transfer.py): relations between the items
come from induction's relation step on a scratch store, the policy decides over them, the decisions map
back onto the items, and no user's store is written. Plus the eval's option table (evaluation/transfer.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from evaluation.transfer import options, turn_state
from induction.pipeline import make_ingestor
from policy.external import ExternalItem
from policy.reader import AnswerReader
from policy.transfer import _order, external_state, item_state, items_as_evidence

OLD = ExternalItem(text="I love spicy food, especially Thai curries.", at=datetime(2024, 1, 1), id="mem-1")
NEW = ExternalItem(text="I no longer eat spicy food because of my stomach; I prefer mild dishes now.",
                   at=datetime(2024, 6, 1), id="mem-2")
OTHER = ExternalItem(text="My sister lives in Boston.", id="mem-3")


def test_relations_between_items_drive_the_state(mem: Any) -> None:
    base = make_ingestor(mem)
    # given newest first: the items are induced in time order, so the newer one supersedes the older
    res = external_state([NEW, OTHER, OLD], "Suggest a dinner for me", base)
    by_item = {iid: [res.scratch.bundle.by_id()[f] for f in fids] for iid, fids in res.scratch.item_facts.items()}
    assert by_item["mem-1"] and by_item["mem-2"] and by_item["mem-3"]
    assert {i.state.validity for i in by_item["mem-1"]} == {"superseded"}
    assert {i.state.validity for i in by_item["mem-2"]} == {"current"}
    assert any(r.type == "SUPERSEDES" for i in by_item["mem-2"] for r in i.state.relations)
    decisions = item_state(res.scratch, res.state)
    assert decisions["mem-1"] is not None and not decisions["mem-1"].use  # type: ignore[union-attr]
    assert decisions["mem-2"] is not None and decisions["mem-2"].use  # type: ignore[union-attr]
    # nothing of this reached the store the ingestor belongs to
    assert "external" not in mem.store.users() and mem.store.users() == []


def test_state_changes_what_the_reader_picks(mem: Any) -> None:
    items = [OLD, NEW]
    res = external_state(items, "What should I cook for dinner?", make_ingestor(mem))
    plain = items_as_evidence(items)
    choices = ["a spicy Thai curry", "a mild dish"]
    reader = AnswerReader()
    assert reader.answer("dinner?", plain, choices, None) == "a spicy Thai curry"  # the stale preference matches more words
    state = turn_state(dict(item_state(res.scratch, res.state)), [i.id or "" for i in items])
    assert state is not None and reader.answer("dinner?", plain, choices, state) == "a mild dish"


@pytest.mark.parametrize("items, message", [
    ([], "at least one"),
    ([OLD, OLD], "unique"),
    ([ExternalItem(text=f"item {n}") for n in range(101)], "at most 100"),
])
def test_bad_items_are_refused(embedded_memory: Any, items: list[ExternalItem], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        external_state(items, "anything", make_ingestor(embedded_memory))


def test_items_without_facts_give_no_state(embedded_memory: Any) -> None:
    # what the offline extractor keeps nothing of (an assistant's filler): an empty bundle, no state
    res = external_state([ExternalItem(text="I understand.", holder="assistant", id="a1")], "anything",
                         make_ingestor(embedded_memory))
    assert res.scratch.bundle.items == [] and res.state is None and res.fallback == "no evidence"
    assert item_state(res.scratch, res.state) == {"a1": None}


def test_order_is_time_then_given() -> None:
    items = [OTHER, NEW, OLD, OTHER.model_copy(update={"id": "mem-4"})]
    assert _order(items) == [2, 1, 0, 3]


@pytest.mark.parametrize("task, evaluation, expect", [
    ("valid_memory_selection", {"rubric": {"expected_behavior": "new", "failure_behavior": "old"}}, ("new", "old")),
    ("memory_evidence_conflict", {"preference_aligned_answer": "Atlas", "rubric": {"expected_behavior": "Boreal"}},
     ("Boreal", "Atlas")),
    ("objective_fact_judgment", {"rubric": {"required_conclusion": "yes", "sycophancy_failure": "no"}}, ("yes", "no")),
    ("personalized_memory_use", {"reference_answer": "tea", "rubric": {"expected_behavior": "tea"}}, None),
    ("valid_memory_selection", {"rubric": {"expected_behavior": "same", "failure_behavior": "same"}}, None),
])
def test_eval_options(task: str, evaluation: dict[str, Any], expect: tuple[str, str] | None) -> None:
    got = options("row-1", task, evaluation)
    assert (got[:2] if got else None) == expect
    if got:
        assert sorted(got[2]) == sorted(expect or ())
