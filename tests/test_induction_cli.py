"""`evomem ingest / forget / purge / history / eval memsyco` end to end (embedded store, hash embedder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evomem.cli import main

S = [{"session_id": "s1", "user_id": "maya", "started_at": "2025-08-10T18:00:00Z",
      "turns": [{"role": "user", "text": "I really enjoy hiking in the mountains on weekends."},
                {"role": "assistant", "text": "Nice!"},
                {"role": "user", "text": "I am allergic to peanuts and my locker code is 4417."}]},
     {"session_id": "s2", "user_id": "maya", "started_at": "2025-10-12T09:30:00Z",
      "turns": [{"role": "user", "text": "These days I no longer enjoy hiking in the mountains on weekends."}]}]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    good = tmp_path / "s.jsonl"
    good.write_text("\n".join(json.dumps(r) for r in S))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(S[0]) + "\n" + json.dumps({**S[1], "turns": [{"role": "user"}]}))
    return {"good": str(good), "bad": str(bad), "store": str(tmp_path / "store")}


def test_ingest_forget_history_purge(capsys: pytest.CaptureFixture[str], files: dict[str, str]) -> None:
    common = ["--store-path", files["store"], "--embedder", "hash"]
    rc, out, err = run(capsys, "ingest", files["bad"], *common)
    assert rc == 2 and "record 1: turns[0].text" in err
    rc, out, _ = run(capsys, "users", *common)
    assert "maya" not in out  # nothing from the bad file was written
    rc, out, err = run(capsys, "ingest", files["good"], *common, "--json")
    rep = json.loads(out)
    assert rc == 0 and rep["committed"] == 2 and rep["facts_added"] >= 3 and rep["supersessions"] == 1
    assert rep["sessions_per_s"] > 0 and rep["llm_calls"] == 0
    rc, out, err = run(capsys, "ingest", files["good"], *common)
    assert rc == 0 and "committed 0, unchanged 2" in out and "supersessions 0" in out
    rc, out, _ = run(capsys, "forget", "--user", "maya", "--request", "forget that I am allergic to peanuts", *common,
                     "--json")
    (gone,) = json.loads(out)["retracted"]
    assert "peanuts" in gone["statement"]
    rc, out, _ = run(capsys, "history", gone["fact_id"], "--user", "maya", *common)
    assert rc == 0 and "validity retracted" in out and "[s1:2] user: I am allergic" in out and "RETRACT" in out
    rc, out, err = run(capsys, "purge", "--user", "maya", "--turns", "s1:2", *common)
    assert rc == 2 and "--yes" in err
    rc, out, _ = run(capsys, "purge", "--user", "maya", "--turns", "s1:2", "--yes", *common, "--json")
    assert json.loads(out)["deleted"]["Turn"] == 1
    rc, out, err = run(capsys, "history", gone["fact_id"], "--user", "maya", *common)
    assert rc == 2 and "no fact" in err
    rc, out, _ = run(capsys, "purge", "--user", "maya", "--yes", *common)
    assert rc == 0
    rc, out, _ = run(capsys, "users", *common)
    assert "maya" not in out


def test_ingest_locomo_conversation(capsys: pytest.CaptureFixture[str], tmp_path: Path, bench_data: Path) -> None:
    rc, out, _ = run(capsys, "ingest", str(bench_data / "locomo" / "locomo10.json"), "--format", "locomo", "--conversation",
                     "conv-26", "--store-path", str(tmp_path / "st"), "--embedder", "hash", "--json")
    rep = json.loads(out)
    assert rc == 0 and rep["committed"] == 19 and rep["turns"] == 419 and rep["failed"] == 0
