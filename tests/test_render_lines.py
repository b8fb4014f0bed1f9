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
