"""A plan holds from when it is said; its planned time is kept apart (induction/planned.py, issue 44 item 4).
Sentences written for this test, from no benchmark."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from graph.models import Fact
from graph.timeline import TimeView, visible
from induction.config import IngestConfig
from induction.offline import OfflineExtractor, extract_offline
from induction.pipeline import Ingestor
from induction.session import Session
from retrieval.seeds.model import fact_time

SAID = datetime(2026, 11, 10, 10, tzinfo=timezone.utc)


def _session(text: str, sid: str = "s1", user: str = "ines") -> Session:
    return Session.model_validate({"session_id": sid, "user_id": user, "started_at": SAID.isoformat(),
                                   "turns": [{"role": "user", "text": text}]})


def _one(text: str) -> Any:
    (f,) = extract_offline(_session(text))
    return f


def test_a_future_plan_is_valid_from_its_saying_and_keeps_its_planned_time() -> None:
    f = _one("I'm planning to visit Brazil next summer.")
    assert f.kind == "plan"
    assert f.valid_from == SAID  # not June 2027: the intention is current from November
    assert f.qualifiers["planned_for"].startswith("2027-06-01")
    assert f.valid_to is not None and f.valid_to.year == 2027 and f.valid_to.month == 9  # next summer is over
    # the time index dates it by its planned time, as before
    fact = Fact(fact_id="x", user_id="ines", statement=f.statement, kind=f.kind, observed_at=f.observed_at,
                valid_from=f.valid_from, valid_to=f.valid_to, qualifiers=f.qualifiers)
    assert fact_time(fact) == datetime(2027, 6, 1)
    assert visible(fact, TimeView(as_of=datetime(2026, 12, 20, tzinfo=timezone.utc)))


def test_a_scheduled_appointment_is_known_from_its_mention_but_a_later_start_is_not() -> None:
    f = _one("My driving test is this Friday.")
    assert f.valid_from == SAID and f.qualifiers["planned_for"].startswith("2026-11-13")
    # a state that begins later is not true yet, and a past date stays the start
    g = _one("Starting next week I'm vegan.")
    assert g.valid_from is not None and g.valid_from > SAID and "planned_for" not in g.qualifiers
    h = _one("Yesterday I went to the dentist.")
    assert h.valid_from is not None and h.valid_from < SAID and "planned_for" not in h.qualifiers


def test_as_of_between_saying_and_plan_sees_it_current_and_after_it_expired(embedded_memory: Any) -> None:
    ing = Ingestor(embedded_memory, OfflineExtractor(), None, IngestConfig(adjudicator="rules"))
    ing.ingest(_session("I'm planning to visit Brazil next summer with my brother."))

    def validity(as_of: datetime) -> list[str]:
        b = embedded_memory.retrieve("ines", "when am I going to Brazil?", k=3, as_of=as_of)
        return [i.state.validity for i in b.items if "Brazil" in i.fact.statement]

    assert validity(datetime(2026, 12, 20, tzinfo=timezone.utc)) == ["current"]  # said, not yet done
    assert validity(datetime(2027, 7, 1, tzinfo=timezone.utc)) == ["current"]  # during next summer
    assert validity(datetime(2027, 10, 1, tzinfo=timezone.utc)) == ["expired"]  # next summer is over
    assert validity(datetime(2026, 11, 1, tzinfo=timezone.utc)) == []  # before it was said
