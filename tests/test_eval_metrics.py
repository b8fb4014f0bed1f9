"""Metric arithmetic (C.5 retrieval metrics, LoCoMo F1, Acc@complete, bootstrap) against hand-computed values."""

from __future__ import annotations

import pytest

from evaluation.metrics import (EvidenceScore, acc_at_complete, bootstrap_ci, locomo_f1, multi_answer_f1,
                                       paired_bootstrap_ci, score_evidence, summarize, turns_of_facts)
from graph.models import Fact
from scoring.answers import normalize_answer, token_f1


def test_c5_metrics_by_hand() -> None:
    # 4 questions: gold sizes 1, 2, 3, 2; retrieved 1, 1, 0, 2 of them.
    scores = [score_evidence(["D1:1"], ["D1:1", "D5:5"]),
              score_evidence(["D1:2", "D1:3"], ["D1:3"]),
              score_evidence(["D2:1", "D2:2", "D2:3"], ["D9:9"]),
              score_evidence(["D3:1", "D3:2"], ["D3:2", "D3:1", "D3:1"])]
    assert [(s.n_gold, s.n_hit) for s in scores] == [(1, 1), (2, 1), (3, 0), (2, 2)]
    s = summarize(scores, tokens=[10, 20, 30, 41], latencies_ms=[1.0, 2.0, 3.0, 4.0], n_boot=200)
    assert s.hit_rate == 0.75                       # 3 of 4 have >= 1 gold item
    assert s.coverage == round((1 + 0.5 + 0 + 1) / 4, 4) == 0.625
    assert s.complete_retrieval_rate == 0.5         # questions 1 and 4
    assert s.context_tokens_mean == 25.2            # (10+20+30+41)/4 = 25.25 -> one decimal
    assert s.retrieval_p50_ms == 2.5 and s.n_questions == 4
    lo, hi = s.ci["complete_retrieval_rate"]  # type: ignore[misc]
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0


def test_duplicate_gold_counts_once_and_empty_gold_is_refused() -> None:
    assert score_evidence(["D1:1", "D1:1"], ["D1:1"]).complete
    with pytest.raises(ValueError):
        score_evidence([], ["D1:1"])
    with pytest.raises(ValueError):
        EvidenceScore(n_gold=0, n_hit=0)


def test_fact_turns_are_the_source_turn_ids() -> None:
    f1 = Fact(fact_id="a", user_id="u", statement="x", source_turn_ids=("D1:3", "D1:4"))
    f2 = Fact(fact_id="b", user_id="u", statement="y", source_turn_ids=("D1:4", "D2:1"))
    assert turns_of_facts([f1, f2]) == ["D1:3", "D1:4", "D2:1"]


def test_locomo_normaliser_and_f1() -> None:
    assert normalize_answer("The Beach, and a Museum!") == "beach museum"
    # stems: "running"/"runs" -> "run"
    assert token_f1("She runs", "running") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("", "anything") == 0.0 and token_f1("Paris", "Paris") == 1.0
    # category 1: mean over gold parts of the best prediction part
    assert multi_answer_f1("painting, pottery", "pottery, camping") == pytest.approx(0.5)
    assert locomo_f1("pottery, camping", "pottery, camping", 1) == 1.0
    # category 3 keeps the gold before ';'
    assert locomo_f1("psychology", "psychology; counseling", 3) == 1.0
    # category 5: right only when it says the thing was not mentioned
    assert locomo_f1("Not mentioned in the conversation.", None, 5) == 1.0
    assert locomo_f1("She went to Paris", None, 5) == 0.0
    with pytest.raises(ValueError):
        locomo_f1("x", None, 2)


def test_acc_at_complete() -> None:
    # correct, complete: only indices 0, 1 and 3 are complete; 3 is unjudged.
    assert acc_at_complete([True, False, True, None], [True, True, False, True]) == (0.5, 2)
    assert acc_at_complete([True], [False]) == (None, 0)


def test_bootstrap() -> None:
    assert bootstrap_ci([]) is None and bootstrap_ci([1.0], n_boot=0) is None
    assert bootstrap_ci([0.0, 0.0]) == (0.0, 0.0)
    lo, hi = bootstrap_ci([0.0, 1.0] * 50, n_boot=500)  # type: ignore[misc]
    assert 0.35 < lo < 0.5 < hi < 0.65
    assert bootstrap_ci([0.0, 1.0] * 50, seed=3) == bootstrap_ci([0.0, 1.0] * 50, seed=3)  # reproducible
    assert paired_bootstrap_ci([1, 1, 1], [0, 0, 0]) == (1.0, 1.0)
    with pytest.raises(ValueError):
        paired_bootstrap_ci([1.0], [1.0, 0.0])
