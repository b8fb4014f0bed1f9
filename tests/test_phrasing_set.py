"""The hand-written phrasing set (evaluation/phrasing/, issue 44): it loads, it is big and balanced enough, its
split is fixed, it copies nothing from the development data, and the evaluator scores what ingestion wrote."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from evaluation.phrasing import (CASES_FILE, CATEGORIES, MINIMUM, PhrasingCase, PhrasingFormatError, load_cases,
                                 split, verbatim_in_dev)
from evaluation.phrasing_eval import run_phrasing, score_case, summarize, table
from graph.models import Fact, Relation
from graph.snapshot import Snapshot


@pytest.fixture(scope="module")
def cases() -> list[PhrasingCase]:
    return load_cases()


def test_the_file_loads_with_every_category_at_its_minimum(cases: list[PhrasingCase]) -> None:
    assert len(cases) >= 300
    counts = Counter(c.category for c in cases)
    assert set(counts) == set(CATEGORIES)
    for cat, n in MINIMUM.items():
        assert counts[cat] >= n, (cat, counts[cat])
    assert len({c.id for c in cases}) == len(cases)
    assert len(Counter(c.style for c in cases)) == 5  # terse, long, non-native, typos, plain


def test_labels_point_at_turns_of_the_right_role(cases: list[PhrasingCase]) -> None:
    for c in cases:
        if c.pair is not None and c.category != "belief_evidence":
            for ref in (c.pair.later, c.pair.earlier):
                assert c.sessions[ref[0]].turns[ref[1]].role == "user", c.id
        if c.category == "belief_evidence":
            assert c.pair is not None
            roles = {c.sessions[r[0]].turns[r[1]].role for r in (c.pair.later, c.pair.earlier)}
            assert roles == {"user", "assistant"}, c.id
        if c.category == "self_contradiction":  # contradiction in other words: no negation in the later turn
            assert c.pair is not None
            later = c.sessions[c.pair.later[0]].turns[c.pair.later[1]].text
            assert not re.search(r"\b(?:not|never|no)\b|n't", later, re.I), (c.id, later)


def test_the_split_is_fixed_and_about_half(cases: list[PhrasingCase]) -> None:
    halves = [split(c) for c in cases]
    assert halves == [split(c) for c in load_cases()]
    assert 0.4 <= halves.count("test") / len(cases) <= 0.6
    for cat in CATEGORIES:
        sub = [split(c) for c in cases if c.category == cat]
        assert 0.25 <= sub.count("test") / len(sub) <= 0.75, cat
    # the rule itself is pinned: blake2b (64-byte digest) of the id, even -> tune
    assert [split(c) for c in cases if c.id in ("upd-001", "upd-002", "con-001", "look-001")] == \
        [_half(i) for i in ("upd-001", "upd-002", "con-001", "look-001")]
    assert {c.id for c in load_cases(half="test")} | {c.id for c in load_cases(half="tune")} == {c.id for c in cases}
    assert not {c.id for c in load_cases(half="test")} & {c.id for c in load_cases(half="tune")}


def _half(case_id: str) -> str:
    import hashlib

    return "tune" if hashlib.blake2b(case_id.encode()).digest()[-1] % 2 == 0 else "test"


def test_no_case_text_is_copied_from_the_dev_data(cases: list[PhrasingCase], bench_data: Path) -> None:
    assert verbatim_in_dev(cases, bench_data) == []


def test_the_overlap_check_can_fail(cases: list[PhrasingCase], tmp_path: Path) -> None:
    text = cases[0].texts()[0]
    (tmp_path / "rows.jsonl").write_text(json.dumps({"messages": [{"content": "x " + text.upper() + " y"}]}) + "\n")
    assert verbatim_in_dev(cases[:1], tmp_path) == [(cases[0].id, text)]


def test_a_bad_line_is_named_by_its_number(tmp_path: Path) -> None:
    good = CASES_FILE.read_text().splitlines()[0]
    bad = json.loads(good)
    bad["pair"] = {"later": [0, 0], "earlier": [9, 0], "relation": "SUPERSEDES"}
    f = tmp_path / "cases.jsonl"
    f.write_text(good + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(PhrasingFormatError, match="line 2"):
        load_cases(f)
    f.write_text(good + "\n\n" + good + "\n")
    with pytest.raises(PhrasingFormatError, match="line 3: id .* repeats line 1"):
        load_cases(f)
    f.write_text("{not json\n")
    with pytest.raises(PhrasingFormatError, match="line 1: not JSON"):
        load_cases(f)


def _case(**labels: object) -> PhrasingCase:
    return PhrasingCase.model_validate({
        "id": "tst-001", "category": labels.pop("category"),
        "sessions": [{"at": "2025-01-01T10:00:00Z", "turns": [{"role": "user", "text": "I drink tea."}]},
                     {"at": "2025-06-01T10:00:00Z", "turns": [{"role": "user", "text": "Coffee now, at work."}]}],
        **labels})


def _fact(fid: str, turn: str, **kw: object) -> Fact:
    return Fact(fact_id=fid, user_id="u", statement=fid, source_turn_ids=(turn,), **kw)  # type: ignore[arg-type]


def test_score_case_reads_edges_expiry_and_scope_from_the_snapshot() -> None:
    snap = Snapshot(user_id="u")
    snap.facts = {"a": _fact("a", "tst-001-s0:0", valid_to=datetime(2025, 3, 1, tzinfo=timezone.utc)),
                  "b": _fact("b", "tst-001-s1:0", scope="at work")}
    upd = _case(category="update", pair={"later": [1, 0], "earlier": [0, 0], "relation": "SUPERSEDES"})
    assert score_case(upd, snap).predicted == "none" and not score_case(upd, snap).correct
    snap.relations = {("SUPERSEDES", "a", "b"): Relation(type="SUPERSEDES", src="a", dst="b")}
    r = score_case(upd, snap)  # wrong way round: earlier -> later
    assert (r.sup, r.sup_reversed, r.predicted, r.correct) == (False, True, "SUPERSEDES_REVERSED", False)
    snap.relations = {("SUPERSEDES", "b", "a"): Relation(type="SUPERSEDES", src="b", dst="a")}
    assert score_case(upd, snap).correct
    look = _case(category="lookalike", pair={"later": [1, 0], "earlier": [0, 0], "relation": "none"})
    assert not score_case(look, snap).correct
    snap.relations = {("CONFLICTS_WITH", "a", "b"): Relation(type="CONFLICTS_WITH", src="a", dst="b")}
    con = _case(category="self_contradiction", pair={"later": [1, 0], "earlier": [0, 0], "relation": "CONFLICTS_WITH"})
    assert score_case(con, snap).conf and score_case(con, snap).correct  # either direction counts
    exp = _case(category="expiry", expiry={"turn": [0, 0], "read_at": "2025-04-01T00:00:00Z", "expired": True,
                                           "valid_to_after": "2025-02-27T00:00:00Z", "valid_to_before": "2025-03-02T00:00:00Z"})
    r = score_case(exp, snap)
    assert r.correct and r.valid_to_in_window
    early = _case(category="expiry", expiry={"turn": [0, 0], "read_at": "2025-02-01T00:00:00Z", "expired": True})
    assert score_case(early, snap).expiry_predicted is False
    sco = _case(category="scope", scope={"turn": [1, 0], "keywords": ["work"]})
    assert score_case(sco, snap).scope_ok
    assert not score_case(_case(category="scope", scope={"turn": [0, 0], "keywords": ["work"]}), snap).scope_ok
    assert score_case(_case(category="scope", scope={"turn": [0, 0], "keywords": []}), snap).scope_ok

    s = summarize([score_case(upd, snap), score_case(con, snap), score_case(look, snap)])
    assert s["conflict"]["tp"] == 1 and s["conflict"]["fp"] == 2  # the update's and the look-alike's stray edge
    assert s["lookalike_false_relation_rate"] == 1.0
    e = summarize([score_case(exp, snap), score_case(early, snap)])
    assert (e["expiry_accuracy"], e["expired_recall"], e["unexpired_kept"]) == (0.5, 0.5, None)
    assert "self_contradiction" in table(s)


def test_the_evaluator_runs_three_cases_through_ingestion(cases: list[PhrasingCase], tmp_path: Path) -> None:
    """A smoke run: default ingestion config over a fresh embedded store (hash embedder, so no model to load)."""
    from graph.embedded import EmbeddedStore
    from induction.pipeline import make_ingestor
    from llmclients.embeddings import HashEmbedder
    from memcore.memory import Memory

    pick = [next(c for c in cases if c.category == cat) for cat in ("update", "expiry", "scope")]
    store = EmbeddedStore(tmp_path / "store")
    store.setup()
    mem = Memory(store, HashEmbedder(384))
    try:
        summary, results = run_phrasing(pick, make_ingestor(mem), user_prefix="smoke-")
        assert [r.id for r in results] == [c.id for c in pick]
        assert all(r.facts >= 1 and r.seconds > 0 for r in results)
        assert results[0].later_facts >= 1 and results[0].earlier_facts >= 1
        assert results[1].expiry_predicted is not None and results[2].scopes
        assert summary["n"] == 3 and set(summary["per_category"]) == {"update", "expiry", "scope"}
        assert {u for u in (mem.store.load_snapshot(f"smoke-{c.id}").user_id for c in pick)} == {f"smoke-{c.id}" for c in pick}
    finally:
        mem.close()


def test_eval_phrasing_needs_no_data_folder_but_the_others_do() -> None:
    from evomem.cli import build_parser
    from evomem.commands.eval_cmds import EvalOptions

    ns = build_parser().parse_args(["eval", "phrasing", "--half", "tune"])
    assert ns.benchmark == "phrasing" and ns.half == "tune"
    assert EvalOptions(benchmark="phrasing", half="tune").data == ""
    with pytest.raises(ValueError, match="needs --data"):
        EvalOptions(benchmark="locomo")
