"""One query cannot take the server down (issue 43): the crash corpus of tests/cypher_crash.py against a
live ``evomem serve`` on both backends. The process that answered /health before still answers after,
and every query got a 4xx/408 that is a sentence. Timing and memory bars are measured by
bench/cypher_crash.py (1,000+ queries per backend); this runs three of each class."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from cypher_crash import attack, corpus
from servers import start_api_server

from evomem.cli import main
from evomem.examples import history_batches, load_history

ADMIN, MAYA = "admin-key-crash-012345", "maya-key-crash-012345"


@pytest.mark.parametrize("backend", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_crash_corpus_leaves_the_server_up(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps([{"key": ADMIN, "name": "ops"}, {"key": MAYA, "name": "maya", "users": ["maya"]}]))
    extra = ["--store", "neo4j", "--neo4j-uri", request.getfixturevalue("neo4j_uri")] if backend == "neo4j" else []
    srv = start_api_server(tmp_path, tmp_path / "store", None, None, api_keys_file=keys, extra_args=extra,
                           env={"EVOMEM_CYPHER_TIMEOUT_S": "0.5"}, timeout_s=240)
    try:
        with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60,
                          trust_env=False) as c:
            c.delete("/v1/users/maya", params={"confirm": "true"})
            for b in history_batches(load_history()):
                if b.user_id == "maya":
                    c.post(f"/v1/users/maya/edits", json=b.model_dump(mode="json")).raise_for_status()
        out = attack(srv.url, srv.proc.pid, [MAYA], "maya", list(corpus(9, seed=3)))
        assert out["server_alive"] and srv.proc.poll() is None, srv.log()[-2000:]
        assert out["transport_errors"] == 0 and out["n_not_a_sentence"] == 0, out
        st = out["statuses"]
        assert st["skip"] == {400: 3}, out  # refused by the parser (SKIP <= 10,000)
        # the engine ran these: stopped by the timeout, the memory cap or the wall deadline (a builder
        # that is slow before it is big is stopped by time)
        assert sum(st["fold"].values()) == sum(st["builder"].values()) == 3, out
        assert set(st["fold"]) | set(st["builder"]) <= {400, 408}, out
        # the sandbox came back: an ordinary query still answers from the user's data
        r = httpx.post(f"{srv.url}/v1/users/maya/cypher", json={"query": "MATCH (f:Fact) RETURN count(*) AS n"},
                       headers={"Authorization": f"Bearer {MAYA}"}, timeout=60, trust_env=False)
        assert r.status_code == 200 and r.json()["rows"][0]["n"] > 0
        # every query stopped by the wall deadline or the memory cap cost its worker: /metrics counts them
        stopped = sum(st["fold"].values()) + sum(st["builder"].values())
        m = httpx.get(f"{srv.url}/metrics", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60,
                      trust_env=False).json()
        assert 1 <= m["cypher_sandbox"]["restarts"] <= stopped, m["cypher_sandbox"]
    finally:
        srv.stop()


def test_cli_cypher_survives_the_corpus(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVOMEM_CYPHER_TIMEOUT_S", "0.5")
    common = ["--embedder", "hash", "--store-path", str(tmp_path / "s")]
    assert main(["load-example", *common]) == 0
    for cls, q, _ in corpus(6, seed=4):
        if cls == "builder":
            continue  # needs a parameter; the CLI takes none
        capsys.readouterr()
        assert main(["cypher", "--user", "maya", q, *common]) == 2
        err = capsys.readouterr().err.strip()
        # the CLI's one-line error (evomem/errors.py): its prefix, then the sandbox's reason
        assert err.startswith("evomem cypher: error: ") and "\n" not in err and "Traceback" not in err, err
        assert any(w in err for w in ("whole number <= 10000", "ran longer than", "more memory", "crashed")), err
