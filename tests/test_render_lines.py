"""One rendered fact line: what it says about the holder, and nothing twice."""

from __future__ import annotations

import pytest

from graph.models import Fact, RelationalState
from retrieval.render import fact_line
from retrieval.retrieve import EvidenceBundle, EvidenceItem


def _line(statement: str, holder: str) -> str:
    fact = Fact(fact_id="u::f1", user_id="u", statement=statement, holder=holder, kind="experience")
    item = EvidenceItem(alias="F1", fact=fact, state=RelationalState(fact_id="u::f1", validity="current"),
                        seed=True, group=0)
    return fact_line(item, {"u::f1": "F1"})


@pytest.mark.parametrize("statement, holder, mark", [
    ("Caroline: went to a support group", "Caroline", None),        # the name already opens the statement
    ("The user's sister Anna loves sushi", "Anna", "(about Anna)"),   # it does not: say whose fact it is
    ("Anna likes sushi", "Anna", "(about Anna)"),                     # a name without the speaker colon
    ("I love hiking", "user", None),                                  # the user's own facts need no label
    ("Astronauts report it is not visible", "assistant", "(said by the assistant)"),  # outside evidence
    ("A study states that it is not", "document", "(from a document)"),
])
def test_holder_is_named_exactly_once(statement: str, holder: str, mark: str | None) -> None:
    line = _line(statement, holder)
    assert line.startswith(f"[F1] {statement}")
    assert line.count("(") == (mark is not None)
    if mark:
        assert f"{statement} {mark} —" in line
    assert line.endswith("— current; kind: experience")


@pytest.mark.parametrize("state, marks", [
    (dict(validity="current"), ""),                                                   # nothing changes its use
    (dict(validity="superseded", superseded_by=("u::f2",)), " [superseded by F2]"),
    (dict(validity="current", supersedes=("u::f2",)), ""),                             # the group's one marker is on the old fact
    (dict(validity="disputed", conflicts_with=("u::f2",)), " [conflicts with F2]"),
    (dict(validity="expired"), " [expired]"),
    (dict(validity="retracted"), " [retracted by the user: never rely on this]"),
    (dict(validity="current", scope="at work"), " [only at work]"),
    (dict(validity="current", scope="if I control the schedule"), " [only if I control the schedule]"),
    (dict(validity="current", scope="unless the connection is impractical"), " [unless the connection is impractical]"),
])
def test_compact_line_marks_only_what_changes_use(state: dict[str, object], marks: str) -> None:
    from retrieval.render import compact_line

    fact = Fact(fact_id="u::f1", user_id="u", statement="Likes green tea", kind="preference")
    item = EvidenceItem(alias="F1", fact=fact, state=RelationalState(fact_id="u::f1", **state),  # type: ignore[arg-type]
                        seed=True, group=0)
    assert compact_line(item, {"u::f1": "F1", "u::f2": "F2"}) == "[F1] Likes green tea" + marks
    assert compact_line(item, {"u::f1": "F1"}, with_state=False) == "[F1] Likes green tea"


def test_adaptive_depth_stops_where_the_fused_score_falls_off() -> None:
    from retrieval.render import render_context
    from retrieval.retrieve import EvidenceBundle, Explain

    items = [EvidenceItem(alias=f"F{n}", fact=Fact(fact_id=f"u::f{n}", user_id="u", statement=f"fact number {n}"),
                          state=RelationalState(fact_id=f"u::f{n}", validity="current"), seed=True, score=s, group=n)
             for n, s in enumerate((1.0, 0.8, 0.3, 0.2), start=1)]
    b = EvidenceBundle(user_id="u", query="q", items=items, explain=Explain(query="q", k=4, seeds=[], added_by_traversal=[]))
    assert len(render_context(b).included) == 4
    assert render_context(b, min_score_ratio=0.5).included == ["u::f1", "u::f2"]
    assert render_context(b, budget=4, min_score_ratio=0.5).included == ["u::f1"]  # the budget still binds


def _group_bundle() -> EvidenceBundle:
    """One relation group: a new turn's fact (F3, seed) replaced two facts of an earlier turn (F1 seed,
    F2 reached by traversal only), plus an unrelated seed (F4)."""
    from retrieval.retrieve import EvidenceBundle, Explain

    def item(n: int, text: str, seed: bool, group: int, **state: object) -> EvidenceItem:
        return EvidenceItem(alias=f"F{n}", fact=Fact(fact_id=f"u::f{n}", user_id="u", statement=text),
                            state=RelationalState(fact_id=f"u::f{n}", **state),  # type: ignore[arg-type]
                            seed=seed, score=1.0 / n if seed else None, group=group)

    items = [item(1, "Runs five kilometres every morning before work", True, 0, validity="superseded",
                  superseded_by=("u::f3",)),
             item(2, "Trains for the city marathon with a running club", False, 0, validity="superseded",
                  superseded_by=("u::f3",)),
             item(3, "Switched from running to swimming after a knee injury", False, 0, validity="current",
                  supersedes=("u::f1", "u::f2")),
             item(4, "Drinks green tea", True, 1, validity="current")]
    return EvidenceBundle(user_id="u", query="q", items=items, explain=Explain(query="q", k=2, seeds=[], added_by_traversal=[]))


def test_a_seed_costs_its_line_its_replacement_and_one_marker() -> None:
    from retrieval.render import render_context

    b = _group_bundle()
    ctx = render_context(b, budget=600)
    assert len(render_context(b).included) == 4  # without a budget every line is spelled out
    # the replaced seed and its (non-seed) update are spelled out; the other replaced fact is named only
    assert ctx.text.splitlines() == [
        "[F1] Runs five kilometres every morning before work [superseded by F3]",
        "[F3] Switched from running to swimming after a knee injury",
        "↳ F2 superseded by F3",
        "[F4] Drinks green tea"]
    assert ctx.included == ["u::f1", "u::f3", "u::f4"] and ctx.referenced == ["u::f2"]
    group_cost = sum(len(line.split()) for line in ctx.text.splitlines()[:3])
    assert render_context(b, budget=group_cost).included == ["u::f1", "u::f3"]  # the unit is whole or not at all
    assert render_context(b, budget=group_cost - 1).included == ["u::f4"]
    # without states (ablation) and in the policy's full style every line is spelled out
    assert len(render_context(b, with_state=False).included) == 4
    assert len(render_context(b, style="full").included) == 4
    assert "F2" in render_context(b, style="full").text.splitlines()[1]


def test_group_marker_names_partners_by_their_standing() -> None:
    from retrieval.render import group_marker

    def item(n: int, **state: object) -> EvidenceItem:
        return EvidenceItem(alias=f"F{n}", fact=Fact(fact_id=f"u::f{n}", user_id="u", statement="x"),
                            state=RelationalState(fact_id=f"u::f{n}", **state), seed=False, group=0)  # type: ignore[arg-type]

    items = [item(1, validity="superseded", superseded_by=("u::f5",)), item(2, validity="expired"),
             item(3, validity="superseded", superseded_by=("u::f5",)), item(4, validity="retracted"),
             item(6, validity="disputed", conflicts_with=("u::f7",)), item(8, validity="current")]
    assert group_marker(items, {"u::f5": "F5", "u::f7": "F7"}) == (
        "↳ F1, F3 superseded by F5; F2 expired; F4 retracted; F6 conflicts with F7; F8 current")


def test_a_current_seed_spells_out_its_conflict_but_names_what_it_replaced() -> None:
    from retrieval.render import render_context
    from retrieval.retrieve import Explain

    def item(n: int, seed: bool, **state: object) -> EvidenceItem:
        return EvidenceItem(alias=f"F{n}", fact=Fact(fact_id=f"u::f{n}", user_id="u", statement=f"statement {n}"),
                            state=RelationalState(fact_id=f"u::f{n}", **state),  # type: ignore[arg-type]
                            seed=seed, score=1.0 if seed else None, group=0)

    # F3 (seed) replaced F1 and F2 and is disputed by F4; F5 replaced F4's own earlier version F6
    items = [item(1, False, validity="superseded", superseded_by=("u::f3",)),
             item(2, False, validity="superseded", superseded_by=("u::f3",)),
             item(3, True, validity="disputed", supersedes=("u::f1", "u::f2"), conflicts_with=("u::f4",)),
             item(4, False, validity="disputed", conflicts_with=("u::f3",)),
             item(6, False, validity="superseded", superseded_by=("u::f5",)),
             item(5, False, validity="current", supersedes=("u::f6",))]
    b = EvidenceBundle(user_id="u", query="q", items=items, explain=Explain(query="q", k=1, seeds=[], added_by_traversal=[]))
    ctx = render_context(b, budget=600)
    assert ctx.text.splitlines() == ["[F3] statement 3 [conflicts with F4]", "[F4] statement 4 [conflicts with F3]",
                                     "↳ F1, F2 superseded by F3"]  # F4's own history is a partner's partner
    assert ctx.included == ["u::f3", "u::f4"] and ctx.referenced == ["u::f1", "u::f2"]


def test_a_seed_replaced_by_several_sentences_spells_out_the_latest_and_names_the_rest() -> None:
    from retrieval.render import render_context
    from retrieval.retrieve import Explain

    def item(n: int, seed: bool, **state: object) -> EvidenceItem:
        return EvidenceItem(alias=f"F{n}", fact=Fact(fact_id=f"u::f{n}", user_id="u", statement=f"statement {n}"),
                            state=RelationalState(fact_id=f"u::f{n}", **state),  # type: ignore[arg-type]
                            seed=seed, score=1.0 if seed else None, group=0)

    items = [item(1, True, validity="superseded", superseded_by=("u::f2", "u::f3")),
             item(2, False, validity="current", supersedes=("u::f1",)),
             item(3, False, validity="current", supersedes=("u::f1",))]
    b = EvidenceBundle(user_id="u", query="q", items=items, explain=Explain(query="q", k=1, seeds=[], added_by_traversal=[]))
    ctx = render_context(b, budget=600)
    assert ctx.text.splitlines() == ["[F1] statement 1 [superseded by F2, F3]", "[F3] statement 3", "↳ F2 replaces F1"]
    assert ctx.included == ["u::f1", "u::f3"] and ctx.referenced == ["u::f2"]
