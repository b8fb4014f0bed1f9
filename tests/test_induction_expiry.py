"""Expiry through ingestion: a dated plan gets ``valid_to`` from its time expression, an undated session sent
over HTTP/MCP is read at the request's clock, and a state is expired by the reading date (issue 44 item 4)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from evomem.settings import Settings
from induction.branch import validity_map
from induction.config import IngestConfig
from induction.offline import OfflineExtractor
from induction.pipeline import make_ingestor
from induction.session import Session
from memcore.memory import Memory

SAID = datetime(2025, 11, 3, 9, 0, tzinfo=timezone.utc)


def _session(sid: str, text: str, at: datetime | None) -> Session:
    return Session.model_validate({"session_id": sid, "user_id": "ana", "started_at": at,
                                   "turns": [{"role": "user", "text": text}]})


def test_the_offline_extractor_dates_a_plan_and_a_bounded_state_not_a_lasting_one() -> None:
    s = Session.model_validate({"session_id": "s1", "user_id": "ana", "started_at": SAID, "turns": [
        {"role": "user", "text": "I'm planning to spend the winter of 2026 in Lisbon."},
        {"role": "user", "text": "My doctor says I can't cycle for the next two months."},
        {"role": "user", "text": "I've been vegetarian for ten years now."}]})
    facts = {f.evidence: f for f in OfflineExtractor().extract(s).facts}
    plan = facts["I'm planning to spend the winter of 2026 in Lisbon."]
    assert plan.kind == "plan" and plan.valid_to == datetime(2027, 3, 1, tzinfo=timezone.utc)
    assert plan.scope is None  # "winter of 2026" dates the plan, it does not scope it
    bounded = facts["My doctor says I can't cycle for the next two months."]
    assert bounded.valid_to == datetime(2026, 1, 4, tzinfo=timezone.utc)
    assert facts["I've been vegetarian for ten years now."].valid_to is None


def test_an_undated_session_takes_the_request_clock_and_expires_by_the_reading_date(tmp_path: Path) -> None:
    mem = Memory.from_settings(Settings.from_env({}, store={"path": str(tmp_path / "s")}, embedder={"kind": "hash"}))
    ing = make_ingestor(mem, IngestConfig(adjudicator="rules"))
    undated = _session("http-1", "I'm going to repaint the kitchen next week.", None)
    r = ing.ingest(undated, clock=SAID)
    assert r.status == "committed"
    (fact,) = mem.store.load_snapshot("ana").facts.values()
    assert fact.valid_to == datetime(2025, 11, 17, tzinfo=timezone.utc)  # the Monday after next week
    # the same session sent again later is still the same session, not a conflict
    assert ing.ingest(undated, clock=datetime(2026, 1, 1, tzinfo=timezone.utc)).status == "unchanged"
    snap = mem.store.load_snapshot("ana")
    assert validity_map(snap, [fact.fact_id], datetime(2025, 11, 10, tzinfo=timezone.utc))[fact.fact_id] == "current"
    assert validity_map(snap, [fact.fact_id], datetime(2025, 11, 20, tzinfo=timezone.utc))[fact.fact_id] == "expired"
    b = mem.retrieve("ana", "kitchen plans", k=3, as_of=datetime(2025, 12, 1, tzinfo=timezone.utc))
    assert [it.state.validity for it in b.items] == ["expired"]
    mem.close()


def test_a_dated_session_keeps_its_own_date(tmp_path: Path) -> None:
    mem = Memory.from_settings(Settings.from_env({}, store={"path": str(tmp_path / "s")}, embedder={"kind": "hash"}))
    ing = make_ingestor(mem, IngestConfig(adjudicator="rules"))
    ing.ingest(_session("d-1", "I'm going to repaint the kitchen next week.", SAID),
               clock=datetime(2026, 6, 1, tzinfo=timezone.utc))
    (fact,) = mem.store.load_snapshot("ana").facts.values()
    assert fact.valid_to == datetime(2025, 11, 17, tzinfo=timezone.utc)
    mem.close()
