"""One rendered fact line: what it says about the holder, and nothing twice."""

from __future__ import annotations

import pytest

from graph.models import Fact, RelationalState
from graph.render import fact_line
from graph.retrieval import EvidenceItem


def _line(statement: str, holder: str) -> str:
    fact = Fact(fact_id="u::f1", user_id="u", statement=statement, holder=holder, kind="experience")
    item = EvidenceItem(alias="F1", fact=fact, state=RelationalState(fact_id="u::f1", validity="current"),
                        seed=True, group=0)
    return fact_line(item, {"u::f1": "F1"})


@pytest.mark.parametrize("statement, holder, about", [
    ("Caroline: went to a support group", "Caroline", False),       # the name already opens the statement
    ("The user's sister Anna loves sushi", "Anna", True),             # it does not: say whose fact it is
    ("Anna likes sushi", "Anna", True),                               # a name without the speaker colon
    ("I love hiking", "user", False),                                 # the user's own facts need no label
])
def test_holder_is_named_exactly_once(statement: str, holder: str, about: bool) -> None:
    line = _line(statement, holder)
    assert line.startswith(f"[F1] {statement}")
    assert (f"(about {holder})" in line) is about
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
    from graph.render import compact_line

    fact = Fact(fact_id="u::f1", user_id="u", statement="Likes green tea", kind="preference")
    item = EvidenceItem(alias="F1", fact=fact, state=RelationalState(fact_id="u::f1", **state),  # type: ignore[arg-type]
                        seed=True, group=0)
    assert compact_line(item, {"u::f1": "F1", "u::f2": "F2"}) == "[F1] Likes green tea" + marks
    assert compact_line(item, {"u::f1": "F1"}, with_state=False) == "[F1] Likes green tea"


def test_adaptive_depth_stops_where_the_fused_score_falls_off() -> None:
    from graph.render import render_context
    from graph.retrieval import EvidenceBundle, Explain

    items = [EvidenceItem(alias=f"F{n}", fact=Fact(fact_id=f"u::f{n}", user_id="u", statement=f"fact number {n}"),
                          state=RelationalState(fact_id=f"u::f{n}", validity="current"), seed=True, score=s, group=n)
             for n, s in enumerate((1.0, 0.8, 0.3, 0.2), start=1)]
    b = EvidenceBundle(user_id="u", query="q", items=items, explain=Explain(query="q", k=4, seeds=[], added_by_traversal=[]))
    assert len(render_context(b).included) == 4
    assert render_context(b, min_score_ratio=0.5).included == ["u::f1", "u::f2"]
    assert render_context(b, budget=4, min_score_ratio=0.5).included == ["u::f1"]  # the budget still binds
