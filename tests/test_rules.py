"""Table-driven tests of the pure relational-state rules (the reading of statements is in tests/test_reading.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from graph.models import Fact, Relation
from graph.rules import (change_evidenced, can_conflict, can_supersede, derive_state, derive_validity, has_cycle,
                         may_conflict, may_supersede, may_supersede_sibling, edge_kinds_allowed)

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
PAST = NOW - timedelta(days=1)
FUTURE = NOW + timedelta(days=1)


def fact(fid: str = "a", **kw: object) -> Fact:
    return Fact(fact_id=fid, user_id="u", statement=f"statement {fid}", **kw)  # type: ignore[arg-type]


RETRACTED = fact("x", retracted_at=PAST)
LIVE = fact("y")

VALIDITY_CASES = [
    # (name, fact kwargs, superseded-by, conflicts-with, expected)
    ("plain", {}, [], [], "current"),
    ("superseded", {}, [LIVE], [], "superseded"),
    ("superseded by a retracted fact revives", {}, [RETRACTED], [], "current"),
    ("disputed", {}, [], [LIVE], "disputed"),
    ("dispute with a retracted fact ends", {}, [], [RETRACTED], "current"),
    ("superseded wins over disputed", {}, [LIVE], [LIVE], "superseded"),
    ("expired by valid_to", {"valid_to": PAST}, [], [], "expired"),
    ("valid_to in the future", {"valid_to": FUTURE}, [], [], "current"),
    ("expired by expired_at", {"expired_at": PAST}, [LIVE], [], "expired"),
    ("expiry scheduled later", {"expired_at": FUTURE}, [], [], "current"),
    ("retracted wins over all", {"retracted_at": PAST, "valid_to": PAST}, [LIVE], [LIVE], "retracted"),
    ("naive datetimes are UTC", {"valid_to": datetime(2025, 12, 31)}, [], [], "expired"),
]


@pytest.mark.parametrize("name,kw,sup,conf,expected", VALIDITY_CASES, ids=[c[0] for c in VALIDITY_CASES])
def test_derive_validity(name: str, kw: dict, sup: list, conf: list, expected: str) -> None:
    assert derive_validity(fact(**kw), sup, conf, NOW) == expected


SUPERSEDE_CASES = [
    ("preference", "preference", True),
    ("constraint", "preference", True),
    ("preference", "constraint", True),
    ("event", "preference", False),
    ("plan", "plan", True),
    ("event", "plan", True),
    ("belief", "event", False),
    ("belief", "experience", True),  # a changed view outgrows what an experience implied, as a preference does
    ("circumstance", "circumstance", True),
    ("preference", "experience", True),  # an experience outgrown: what it implied is replaced
    ("preference", "event", True),
    ("preference", "plan", True),  # a plan given up ("no more trip planning for me")
    ("preference", "circumstance", False),
    ("experience", "preference", True),
    ("event", "experience", False),  # one happening does not replace another
]


DIRECTION_CASES = [
    # (new kind, old kind, new holder, old holder, new is later, allowed)
    ("preference", "preference", "user", "user", True, True),
    ("preference", "preference", "user", "user", False, False),  # an old preference restated later: no flip
    ("preference", "experience", "user", "user", True, True),
    ("belief", "preference", "document", "user", True, False),  # evidence disputes, never replaces
    ("preference", "preference", "Ann", "Bob", True, False),  # another person's preference
    ("event", "preference", "user", "user", True, False),
]


@pytest.mark.parametrize("old_kind,cue,shift,polar,ok", [
    ("preference", True, False, False, True), ("preference", False, True, False, True),
    ("preference", False, False, True, True), ("preference", False, False, False, False),  # same topic, no change said
    ("experience", True, False, False, True), ("experience", False, True, True, False), ("event", False, True, False, False)])
def test_change_must_be_evidenced(old_kind: str, cue: bool, shift: bool, polar: bool, ok: bool) -> None:
    assert change_evidenced(old_kind, cue, shift, polar) is ok


@pytest.mark.parametrize("cue,shift,polar,ok", [(True, False, False, True), (False, True, False, False),
                                               (False, False, True, False), (False, True, True, False)])
def test_a_reported_change_is_replaced_only_on_an_explicit_cue(cue: bool, shift: bool, polar: bool, ok: bool) -> None:
    assert change_evidenced("preference", cue, shift, polar, old_reports_change=True) is ok


def test_a_restated_old_preference_does_not_flip_the_newer_one() -> None:
    # "I used to love jazz" after "I no longer enjoy jazz; I prefer techno": agrees with it, never replaces it
    assert not may_supersede("preference", "preference", "user", "user", True, new_is_retrospective=True,
                             old_reports_change=True)
    # ...but a retrospective statement may still close an old present-tense claim ("I love jazz")
    assert may_supersede("preference", "preference", "user", "user", True, new_is_retrospective=True)


@pytest.mark.parametrize("nk,ok_,nh,oh,later,ok", DIRECTION_CASES)
def test_may_supersede_direction(nk: str, ok_: str, nh: str, oh: str, later: bool, ok: bool) -> None:
    assert may_supersede(nk, ok_, nh, oh, later) is ok


@pytest.mark.parametrize("a,b,ha,hb,ok", [
    ("preference", "belief", "user", "document", True), ("belief", "preference", "assistant", "user", True),
    ("preference", "preference", "user", "user", True), ("preference", "preference", "Ann", "Bob", False),
    ("belief", "belief", "assistant", "document", False), ("event", "plan", "user", "user", False),
    # evidence is weighed against a person, never against other evidence (the assistant does not dispute itself)
    ("belief", "belief", "assistant", "assistant", False), ("belief", "belief", "document", "document", False),
    # evidence disputes a preference or a belief, not what a person does, plans or lives with
    ("circumstance", "belief", "user", "assistant", False), ("belief", "plan", "document", "user", False),
    ("constraint", "belief", "user", "document", False), ("event", "belief", "Ann", "assistant", False),
    ("belief", "belief", "Ann", "document", True),
    # one person's own statements may conflict whatever their kinds (within can_conflict)
    ("circumstance", "circumstance", "user", "user", True), ("plan", "event", "Ann", "Ann", False)])
def test_may_conflict_holders(a: str, b: str, ha: str, hb: str, ok: bool) -> None:
    assert may_conflict(a, b, ha, hb) is ok


@pytest.mark.parametrize("new,old,ok", SUPERSEDE_CASES)
def test_can_supersede(new: str, old: str, ok: bool) -> None:
    assert can_supersede(new, old) is ok


@pytest.mark.parametrize("a,b,ok", [("belief", "belief", True), ("event", "plan", False), ("plan", "event", False),
                                    ("experience", "constraint", True)])
def test_can_conflict(a: str, b: str, ok: bool) -> None:
    assert can_conflict(a, b) is ok


CYCLE_CASES = [
    ([], False),
    ([("a", "b")], False),
    ([("a", "b"), ("b", "c"), ("a", "c")], False),
    ([("a", "a")], True),
    ([("a", "b"), ("b", "a")], True),
    ([("a", "b"), ("b", "c"), ("c", "d"), ("d", "b")], True),
]


@pytest.mark.parametrize("edges,cyclic", CYCLE_CASES)
def test_has_cycle(edges: list, cyclic: bool) -> None:
    cyc = has_cycle(edges)
    assert (cyc is not None) is cyclic
    if cyc:  # the returned nodes really form a cycle
        pairs = set(edges)
        assert all((cyc[i], cyc[(i + 1) % len(cyc)]) in pairs for i in range(len(cyc)))


def test_long_chain_has_no_recursion_limit() -> None:
    edges = [(f"n{i}", f"n{i + 1}") for i in range(20000)]
    assert has_cycle(edges) is None
    assert has_cycle(edges + [("n20000", "n0")]) is not None


def test_derive_state_relations_and_directions() -> None:
    a, b, c = fact("a"), fact("b"), fact("c")
    rels = [Relation(type="SUPERSEDES", src="b", dst="a"), Relation(type="CONFLICTS_WITH", src="c", dst="b"),
            Relation(type="CONFLICTS_WITH", src="c", dst="a", resolved_at=PAST)]
    by_id = {"a": a, "b": b, "c": c}
    sa = derive_state(a, rels, by_id, ("root", "x"), NOW)
    sb = derive_state(b, rels, by_id, (), NOW)
    sc = derive_state(c, rels, by_id, (), NOW)
    assert sa.validity == "superseded" and sa.superseded_by == ("b",) and sa.conflicts_with == ()
    assert sb.validity == "disputed" and sb.supersedes == ("a",) and sb.conflicts_with == ("c",)
    assert sc.validity == "disputed" and sc.conflicts_with == ("b",)
    assert {(v.type, v.direction, v.other_fact_id, v.resolved) for v in sa.relations} == {
        ("SUPERSEDES", "in", "b", False), ("CONFLICTS_WITH", "in", "c", True)}
    assert sa.concept_path == ("root", "x")


@pytest.mark.parametrize("nk,sk,nh,sh,ok", [
    ("preference", "circumstance", "user", "user", True),   # the replaced turn's setting goes with it
    ("belief", "circumstance", "user", "user", True),
    ("preference", "experience", "user", "user", True),     # everything may_supersede allows
    ("preference", "circumstance", "user", "Ann", False),   # never across holders
    ("event", "circumstance", "user", "user", False),
    ("plan", "preference", "user", "user", False),
    ("experience", "circumstance", "user", "user", False),
])
def test_may_supersede_sibling(nk: str, sk: str, nh: str, sh: str, ok: bool) -> None:
    assert may_supersede_sibling(nk, sk, nh, sh) is ok
    assert edge_kinds_allowed(nk, sk) is (ok or nh != sh)  # the store accepts every edge the adjudicator may make
    if sk == "circumstance" and nk in ("preference", "belief"):
        assert not may_supersede(nk, sk, nh, sh, True)  # only as a sibling, never on its own
