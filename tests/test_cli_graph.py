"""The CLI as a user runs it: the main job, retrieve, cypher (embedded), and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evomem.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_demo_json_shows_seeds_traversal_and_states(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, out, _ = run(capsys, "demo", "--embedder", "hash", "--store-path", str(tmp_path / "s"), "--json", "--k", "2",
                     "--no-answers")
    assert rc == 0
    data = json.loads(out)
    # the example's raw turns went through ingestion (with the hashing embedder: the rules adjudicator)
    assert [r["status"] for r in data["ingested"]] == ["committed"] * 6
    assert len(data["showcase"]) == 5 and all(f["state"] for f in data["found"])
    by_req = {(r["user"], r["request"]): r["bundle"] for r in data["requests"]}
    for bundle in by_req.values():
        ids = {i["fact"]["fact_id"] for i in bundle["items"]}
        seeds = [s for s in bundle["explain"]["seeds"] if not s["window"]]
        assert len(seeds) == 2  # --k counts seeds; the neighbour route's additions are flagged apart
        for item in bundle["items"]:  # no relation endpoint is ever missing from the bundle
            for rel in item["state"]["relations"]:
                assert rel["other_fact_id"] in ids
    sara = by_req[("sara", "Is the Great Wall visible from space?")]
    assert any(i["fact"]["holder"] == "assistant" for i in sara["items"])


def test_cypher_retrieve_and_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    common = ["--embedder", "hash", "--store-path", str(tmp_path / "s")]
    assert run(capsys, "load-example", *common)[0] == 0
    rc, out, _ = run(capsys, "cypher", *common, "--user", "maya", "--json",
                     "MATCH (c:Concept)-[:CONTAINS]->(f:Fact) RETURN c.name, f.statement LIMIT 5")
    rows = json.loads(out)["rows"]
    assert rc == 0 and len(rows) == 5 and all(set(r) == {"c.name", "f.statement"} for r in rows)
    rc, out, _ = run(capsys, "retrieve", *common, "--user", "maya", "--json", "--k", "1", "beach trips")
    bundle = json.loads(out)["bundle"]
    assert [s["fact_id"] for s in bundle["explain"]["seeds"] if not s["window"]] == ["maya::f::beach"]
    assert "maya::f::hiking" in bundle["explain"]["added_by_traversal"]  # beach's replaced partner: no window seed
    rc, _, err = run(capsys, "cypher", *common, "--user", "nobody", "MATCH (n) RETURN n")
    assert rc == 2 and "nobody" in err
    rc, _, err = run(capsys, "cypher", *common, "--user", "maya", "MATCH (n) DETACH DELETE n RETURN 1")
    assert rc == 2 and "read-only" in err
    rc, out, _ = run(capsys, "users", *common, "--json")
    assert json.loads(out)["users"] == ["leo", "maya", "sara"]


@pytest.mark.slow
def test_console_script_demo_with_minilm(tmp_path: Path) -> None:
    """The README's main job, as a subprocess, with the real CPU embedder loaded from its package."""
    exe = Path(sys.executable).with_name("evomem")
    res = subprocess.run([str(exe), "demo", "--store-path", str(tmp_path / "s")], capture_output=True, text=True,
                         timeout=900, cwd=ROOT)  # it ingests the history now; slow on a loaded 2-core box
    assert res.returncode == 0, res.stderr
    assert "[maya] Suggest a vacation for me" in res.stdout
    assert "superseded" in res.stdout and "traversal added" in res.stdout
    assert "with the default ingestion" in res.stdout and "5 of 5 found" in res.stdout
    assert res.stdout.count("reasoning state") == 5  # one answered request per example request
    # the default policy is the shipped learned one, and its states use what each request turns on
    # (history.json "needs", policy/needs.py): the issue-15 gate, on the main job itself
    assert res.stdout.count("reasoning state (learned:smollm2-read-v1)") == 5, res.stdout
    # the answer text is labelled as what it is, and the state check says what it checked and its verdict
    assert res.stdout.count("a 135M plumbing model, not answer quality") == 5 and "--answer-url" in res.stdout
    assert res.stdout.count("state check — does the Reasoning State use") == 5
    assert res.stdout.count("the answer text is not checked): PASSED") == 5, res.stdout


def test_undo_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from memcore.memory import Memory
    from evomem.settings import Settings

    common = ["--embedder", "hash", "--store-path", str(tmp_path / "s")]
    assert run(capsys, "load-example", *common)[0] == 0
    mem = Memory.from_settings(Settings.from_env({}, store={"path": str(tmp_path / "s")}, embedder={"kind": "hash"}))
    snap = mem.store.load_snapshot("maya")
    mem.close()
    last = max((e for e in snap.edits.values() if e.op != "UNDO"), key=lambda e: e.seq)
    rc, out, _ = run(capsys, "undo", *common, "--user", "maya", "--json", last.edit_id)
    assert rc == 0 and json.loads(out) == {"undone": last.edit_id, "version": snap.version + 1}
    rc, _, err = run(capsys, "undo", *common, "--user", "maya", last.edit_id)
    assert rc == 2 and "already undone" in err


@pytest.mark.neo4j
def test_cli_against_neo4j(capsys: pytest.CaptureFixture[str], _neo4j_store: object, neo4j_uri: str) -> None:
    """The same commands with --store neo4j, against the test server (wiped first: it is shared)."""
    _neo4j_store.wipe()  # type: ignore[attr-defined]
    common = ["--store", "neo4j", "--neo4j-uri", neo4j_uri, "--embedder", "hash"]
    rc, out, _ = run(capsys, "load-example", *common, "--json")
    assert rc == 0 and json.loads(out) == {"sessions_loaded": 6, "users": ["leo", "maya", "sara"]}
    rc, out, _ = run(capsys, "load-example", *common, "--json")  # idempotent: sessions are keyed
    assert rc == 0 and json.loads(out)["sessions_loaded"] == 0
    rc, out, _ = run(capsys, "cypher", *common, "--user", "maya", "--json",
                     "MATCH (f:Fact) RETURN f.fact_id AS id ORDER BY id")
    assert rc == 0 and "maya::f::knee" in {r["id"] for r in json.loads(out)["rows"]}
    rc, _, err = run(capsys, "cypher", *common, "--user", "nobody", "MATCH (n) RETURN n")
    assert rc == 2 and "nobody" in err
    snap = _neo4j_store.load_snapshot("maya")  # type: ignore[attr-defined]
    last = max((e for e in snap.edits.values() if e.op != "UNDO"), key=lambda e: e.seq)
    rc, out, _ = run(capsys, "undo", *common, "--user", "maya", "--json", last.edit_id)
    assert rc == 0 and json.loads(out)["version"] == snap.version + 1
    rc, out, _ = run(capsys, "users", *common, "--json")
    assert rc == 0 and json.loads(out)["users"] == ["leo", "maya", "sara"]
    _neo4j_store.wipe()  # type: ignore[attr-defined]
