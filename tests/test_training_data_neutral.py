"""Neutral-option instances (training_data/neutral.py, issue 48): the options stop giving the answer away.

Last session's leak: the wrong option was one fixed phrase per family ("Model Atlas", "... without
respecting this limit") and SmolLM2 scored 0.9 without any memory. These tests check the shapes that made
that possible cannot come back: each family's right and wrong options share one template, the right one's
position and (on conflicts) its name are drawn by a seeded hash, and a reader that sees only the request and
the options — the option sharing more words with the request — is near chance on every family.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from training_data.build import is_heldout
from training_data.neutral import NeutralSource, build_neutral, subset, swap_names
from training_data.base import TrainingInstance


@pytest.fixture(scope="module")
def instances(bench_data: Path) -> list[TrainingInstance]:
    return list(NeutralSource(bench_data / "memsyco-bench", expiry_n=150).instances(0))


def _words(s: str) -> set[str]:
    return set(re.findall(r"[a-z]+", s.lower()))


def test_every_family_is_there_with_two_options_in_one_template(instances: list[TrainingInstance]) -> None:
    fams = Counter(str(i.metadata["family"]) for i in instances)
    assert set(fams) == {"updates", "conflicts", "scope", "holders", "expiry"} and min(fams.values()) >= 100
    for i in instances:
        assert i.choices is not None and len(i.choices) == 2 and i.reference_answer in i.choices
        a, b = i.choices
        assert a.split()[:1] == b.split()[:1], (i.instance_id, i.choices)  # same template for right and wrong


def test_position_and_names_carry_no_answer(instances: list[TrainingInstance]) -> None:
    by: dict[str, list[TrainingInstance]] = defaultdict(list)
    for i in instances:
        by[str(i.metadata["family"])].append(i)
    for fam, rows in by.items():
        first = sum(i.choices[0] == i.reference_answer for i in rows) / len(rows)  # type: ignore[index]
        assert 0.35 < first < 0.65, (fam, first)
        wrong = Counter(next(c for c in i.choices if c != i.reference_answer) for i in rows)  # type: ignore[union-attr]
        assert wrong.most_common(1)[0][1] / len(rows) < 0.2, (fam, wrong.most_common(1))  # no fixed wrong phrase
    # conflicts: the preference-aligned candidate's name is the right answer in about half the rows
    conf = by["conflicts"]
    assert 0.35 < sum(bool(i.metadata["swapped"]) for i in conf) / len(conf) < 0.65
    ref_names = Counter(i.reference_answer for i in conf)
    assert ref_names.most_common(1)[0][1] / len(conf) < 0.2


def test_request_and_options_alone_are_near_chance(instances: list[TrainingInstance]) -> None:
    """The no-memory cue a reader can use: the option that shares more words with the request. Scope keeps a
    residual cue (the part a preference may decide is usually the request's own topic: 0.72 at seed 0), bounded
    here so that it cannot grow back to the old rows' giveaway."""
    by: dict[str, list[float]] = defaultdict(list)
    for i in instances:
        req = _words(i.request)
        best = max(i.choices, key=lambda c: (len(_words(c) & req), c))  # type: ignore[arg-type]
        by[str(i.metadata["family"])].append(float(best == i.reference_answer))
    for fam, hits in by.items():
        assert 0.3 < sum(hits) / len(hits) < (0.75 if fam == "scope" else 0.65), (fam, sum(hits) / len(hits))


def test_the_memory_decides(instances: list[TrainingInstance]) -> None:
    """Each family's right option follows a relational state the evidence carries."""
    for i in instances:
        fam = i.metadata["family"]
        by_key = {it.fact.fact_id.split("::")[1]: it for it in i.evidence}
        if fam == "updates":
            assert by_key["old"].state.validity == "superseded" and by_key["new"].state.validity == "current"
            assert by_key["new"].fact.statement.rstrip(".")[1:] in i.reference_answer
        elif fam == "conflicts":
            assert by_key["evidence"].state.conflicts_with
        elif fam == "holders":
            assert by_key["doc"].fact.holder == "document" and by_key["belief"].fact.kind == "belief"
        elif fam == "scope":
            assert by_key["pref"].fact.scope and by_key["pref"].fact.scope[1:] in i.reference_answer
        elif fam == "expiry":
            assert by_key["plan"].state.validity == "expired"


def test_split_is_the_row_hash_split_and_the_build_is_deterministic(bench_data: Path, tmp_path: Path) -> None:
    m1 = build_neutral(tmp_path / "a", limit_per_task=12, expiry_n=10, root=bench_data / "memsyco-bench")
    m2 = build_neutral(tmp_path / "b", limit_per_task=12, expiry_n=10, root=bench_data / "memsyco-bench")
    assert m1["hash"] == m2["hash"] and sum(m1["counts"].values()) == 4 * 12 + 10
    for line in (tmp_path / "a" / "heldout.jsonl").read_text().splitlines():
        inst = TrainingInstance.model_validate_json(line)
        if "row_id" in inst.metadata:
            assert is_heldout(f"memsyco:{inst.metadata['row_id']}", 0.3)
    n = subset(tmp_path / "a" / "train.jsonl", 2, tmp_path / "small.jsonl")
    assert set(n.values()) == {2} and len((tmp_path / "small.jsonl").read_text().splitlines()) == 2 * len(n)


def test_swap_names_swaps_both_ways_in_one_pass() -> None:
    assert swap_names("CoursePath or LabBench Online?", "LabBench Online", "CoursePath") == "LabBench Online or CoursePath?"
    assert swap_names("Atlas, Model Atlas and Boreal", "Model Boreal", "Model Atlas") == "Boreal, Model Boreal and Atlas"
