"""The main job ingests for real: the example history's raw turns through the default ingestion (offline
extractor, the shipped relation model, MiniLM) yield each state the example exists to show, and
`evomem demo` prints them from ingestion (issue 44 item 1, issue 47 item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evomem.examples import asked_at, expectation_met, history_sessions, ingest_history, load_history, showcase
from evomem.settings import Settings
from memcore.memory import Memory


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Memory, list]:
    mem = Memory.from_settings(Settings.from_env({}, store={"path": str(tmp_path_factory.mktemp("demo") / "s")}))
    reports = ingest_history(mem)
    yield mem, reports  # type: ignore[misc]
    mem.close()


def test_history_is_raw_turns_with_dates() -> None:
    h = load_history()
    for u in h["users"]:
        for s in u["sessions"]:
            assert set(s) == {"session_id", "at", "turns"}  # no hand-written facts or relations in the demo input
    sessions = history_sessions(h)
    assert all(s.started_at is not None for s in sessions)
    assert {e["state"] for e in h["showcase"]} == {"update", "self_contradiction", "evidence_conflict", "expired", "scoped"}


@pytest.mark.slow
def test_default_ingestion_finds_every_showcase_state(ingested: tuple[Memory, list]) -> None:
    mem, reports = ingested
    assert all(r.status == "committed" for r in reports)
    h = load_history()
    found = showcase(mem, [u["user_id"] for u in h["users"]], asked_at(h))
    missing = [e for e in h["showcase"] if expectation_met(e, found) is None]
    assert missing == [], [f.model_dump() for f in found]
    # the check has teeth: read before the plan's season was over, the Berlin plan is not expired
    early = showcase(mem, ["sara"], asked_at(h).replace(year=2026, month=3, day=1))
    assert expectation_met({"state": "expired", "user": "sara", "fact": "move to Berlin"}, early) is None
    # and the knee injury (no strenuous activity for a few months, said in November) is still current
    knee = [f for f in found if "knee" in f.fact]
    assert not any(f.state == "expired" for f in knee)


@pytest.mark.slow
def test_retrieve_k_counts_seeds_and_reports_neighbours_apart(ingested: tuple[Memory, list]) -> None:
    mem, _ = ingested
    for k in (2, 3, 4):
        b = mem.retrieve("maya", "Suggest a vacation for me", k=k, as_of=asked_at())
        assert len([s for s in b.explain.seeds if not s.window]) == k  # K seeds; neighbour additions flagged apart
    # at the demo's k the knee injury (a current constraint) is in the bundle beside the beach preference
    assert any("knee" in it.fact.statement and it.state.validity == "current" for it in b.items)
    assert any("beach trips" in it.fact.statement and it.state.validity == "current" for it in b.items)


@pytest.mark.slow
def test_demo_prints_what_ingestion_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from evomem.cli import main

    assert main(["demo", "--store-path", str(tmp_path / "s"), "--no-answers"]) == 0
    out = capsys.readouterr().out
    assert "with the default ingestion" in out and "5 of 5 found" in out
    assert "MISSING" not in out
    assert "own contradiction" in out and "evidence vs belief" in out and "expired" in out
