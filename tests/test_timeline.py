"""Time travel (graph/timeline.py): a preference that changes twice, read on each timeline.

Valid time (``as_of``): what was true at a date, from when things were said. Recorded time
(``known_at``): what the memory had stored at a date. The two differ on purpose here: each change is
said months before the memory records it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from graph.edits import AttachFact, CreateConcept, EditBatch, Retract, Supersede, apply_batch
from graph.models import Fact, Turn
from graph.snapshot import Snapshot
from graph.timeline import TimeView, allowed_ids, parse_include, states_at

U = "tina"


def d(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=timezone.utc)


# (fact key, statement, said at, recorded at): coffee, then tea, then water
CHANGES = [("coffee", "Prefers coffee in the morning", "2023-01-01", "2023-01-05"),
           ("tea", "Prefers green tea in the morning", "2023-06-01", "2024-01-10"),
           ("water", "Prefers hot water with lemon in the morning", "2024-03-01", "2024-06-10")]
RETRACTED_AT = "2024-08-01"  # the user later asks to forget the water preference


def batches(forget: bool = True) -> list[tuple[EditBatch, datetime]]:
    out = []
    prev = None
    for i, (key, text, said, rec) in enumerate(CHANGES):
        turn = Turn(turn_id=f"t{i}", user_id=U, session_id=f"s{i}", seq=0, role="user", text=text, at=d(said))
        fact = Fact(fact_id=f"{U}::f::{key}", user_id=U, statement=text, kind="preference", observed_at=d(said),
                    source_turn_ids=(f"t{i}",))
        edits: list[Any] = [CreateConcept(concept_id=f"{U}::c::drinks", name="drinks")] if i == 0 else []
        edits.append(AttachFact(fact=fact, concept_id=f"{U}::c::drinks"))
        if prev:
            edits.append(Supersede(new_fact_id=fact.fact_id, old_fact_id=prev, reason="changed preference"))
        out.append((EditBatch(user_id=U, session_id=f"s{i}", session_hash=f"h{i}", turns=[turn], edits=edits), d(rec)))
        prev = fact.fact_id
    if forget:
        out.append((EditBatch(user_id=U, edits=[Retract(fact_id=f"{U}::f::water", reason="forget it")]),
                    d(RETRACTED_AT)))
    return out


def build(forget: bool) -> Snapshot:
    s = Snapshot(user_id=U)
    for b, at in batches(forget):
        s, _ = apply_batch(s, b, at)
    return s


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    """The three preferences and the later retraction of the last one."""
    return build(forget=True)


def validities(snap: Snapshot, view: TimeView) -> dict[str, str]:
    return {fid.split("::")[-1]: st.validity for fid, (_, st) in states_at(snap, view).items()}


VALID_TIME = [  # as_of -> the state of every fact visible then
    ("2022-12-01", {}),
    ("2023-03-01", {"coffee": "current"}),
    ("2023-09-01", {"coffee": "superseded", "tea": "current"}),
    ("2024-05-01", {"coffee": "superseded", "tea": "superseded", "water": "current"}),
]
RECORDED_TIME = [  # known_at -> what memory knew
    ("2023-03-01", {"coffee": "current"}),
    ("2023-09-01", {"coffee": "current"}),  # tea was said in June but only recorded in January
    ("2024-02-01", {"coffee": "superseded", "tea": "current"}),
    ("2024-07-01", {"coffee": "superseded", "tea": "superseded", "water": "current"}),  # before the retraction
    ("2024-09-01", {"coffee": "superseded", "tea": "current", "water": "retracted"}),  # forgetting water restores tea
]


@pytest.mark.parametrize("as_of,expected", VALID_TIME)
def test_valid_time_table(as_of: str, expected: dict[str, str]) -> None:
    assert validities(build(forget=False), TimeView(as_of=d(as_of))) == expected


def test_valid_time_keeps_what_was_forgotten_forgotten(snap: Snapshot) -> None:
    # a retraction is the user's wish now: looking back in valid time does not bring the fact back,
    # and (as now) a forgotten replacement no longer supersedes the fact it replaced
    assert validities(snap, TimeView(as_of=d("2024-05-01"))) == {"coffee": "superseded", "tea": "current",
                                                                   "water": "retracted"}


@pytest.mark.parametrize("known_at,expected", RECORDED_TIME)
def test_recorded_time_table(snap: Snapshot, known_at: str, expected: dict[str, str]) -> None:
    assert validities(snap, TimeView(known_at=d(known_at))) == expected


def test_both_timelines_together_and_now(snap: Snapshot) -> None:
    # true in September 2023 was tea, but in December 2023 memory did not know it yet
    assert validities(snap, TimeView(as_of=d("2023-09-01"), known_at=d("2023-12-01"))) == {"coffee": "current"}
    assert validities(snap, TimeView()) == {"coffee": "superseded", "tea": "current", "water": "retracted"}
    assert allowed_ids(snap.facts, TimeView()) is None
    assert allowed_ids(snap.facts, TimeView(as_of=d("2023-03-01"))) == frozenset({f"{U}::f::coffee"})
    water = states_at(snap, TimeView(known_at=d("2024-07-01")))[f"{U}::f::water"][0]
    assert water.retracted_at is None  # the view shows the fact as it was stored then


def test_include_parsing() -> None:
    assert parse_include(None) == frozenset({"current"})
    assert parse_include("all") == frozenset({"current", "superseded", "disputed", "expired", "retracted"})
    with pytest.raises(ValueError, match="unknown include"):
        parse_include("current,bogus")


@pytest.mark.parametrize("view,current", [({"as_of": "2023-03-01"}, "coffee"), ({"as_of": "2023-09-01"}, "tea"),
                                          ({"known_at": "2023-09-01"}, "coffee"), ({"known_at": "2024-07-01"}, "water"),
                                          ({}, "tea")])
def test_retrieve_on_both_backends(mem: Any, view: dict[str, str], current: str) -> None:
    for b, at in batches():
        mem.apply(b, now=at)
    bundle = mem.retrieve(U, "What does tina like to drink in the morning?", k=10,
                          **{k: d(v) for k, v in view.items()})
    states = {i.fact.fact_id.split("::")[-1]: i.state.validity for i in bundle.items}
    assert [k for k, v in states.items() if v == "current"] == [current], states
    if "as_of" in view:
        assert all(i.fact.observed_at <= d(view["as_of"]) for i in bundle.items)


def test_facts_route_is_current_only_by_default(embedded_memory: Any) -> None:
    from fastapi.testclient import TestClient

    from policy.rule import RulePolicy
    from serving.api import ApiDeps, ApiKey, ApiSettings, create_app
    from serving.pipeline import AnswerPipeline

    for b, at in batches():
        embedded_memory.apply(b, now=at)
    deps = ApiDeps(memory=embedded_memory, pipeline=AnswerPipeline(embedded_memory, RulePolicy(), None),  # type: ignore[arg-type]
                   settings=ApiSettings(keys=[ApiKey(key="timeline-key-0123")]))
    with TestClient(create_app(deps), headers={"Authorization": "Bearer timeline-key-0123"}) as c:
        def ids(**params: str) -> list[str]:
            r = c.get(f"/v1/users/{U}/facts", params=params)
            assert r.status_code == 200, r.text
            return sorted(x["fact"]["fact_id"].split("::")[-1] for x in r.json()["facts"])

        assert ids() == ["tea"]
        assert ids(include="superseded,retracted") == ["coffee", "tea", "water"]
        assert ids(as_of="2023-09-01T00:00:00Z") == ["tea"]
        assert ids(known_at="2024-07-01T00:00:00Z") == ["water"]
        assert ids(known_at="2024-07-01T00:00:00Z", include="all") == ["coffee", "tea", "water"]
        assert c.get(f"/v1/users/{U}/facts", params={"include": "bogus"}).status_code == 422
        r = c.post(f"/v1/users/{U}/search", json={"query": "morning drink", "as_of": "2023-09-01T00:00:00Z"})
        assert r.status_code == 200, r.text
        got = {x["fact"]["fact_id"].split("::")[-1]: x["state"]["validity"] for x in r.json()["items"]}
        assert got == {"coffee": "superseded", "tea": "current"}
        r = c.post(f"/v1/users/{U}/state", json={"query": "morning drink", "known_at": "2023-09-01T00:00:00Z"})
        assert r.status_code == 200, r.text
        assert sorted(r.json()["aliases"].values()) == [f"{U}::f::coffee"]
