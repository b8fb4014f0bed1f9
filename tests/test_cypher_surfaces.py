"""User Cypher as callers meet it: ``evomem serve`` over real HTTP (statuses, bounds, a slow query
never stalls others) and the ``evomem cypher`` CLI (refusals as a sentence, non-zero exit)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from servers import ServerProcess, start_api_server

from evomem.cli import main
from evomem.examples import history_batches, load_history

ADMIN, MAYA = "admin-key-cypher-0123", "maya-key-cypher-0123"
SLOW = "UNWIND range(1, 10000) AS x UNWIND range(1, 10000) AS y UNWIND range(1, 10000) AS z RETURN sum(x + y + z)"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    d = tmp_path_factory.mktemp("cypher-http")
    keys = d / "keys.json"
    keys.write_text(json.dumps([{"key": ADMIN, "name": "ops"}, {"key": MAYA, "name": "maya", "users": ["maya"]}]))
    srv = start_api_server(d, d / "store", None, None, api_keys_file=keys, timeout_s=240)
    with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60) as c:
        for b in history_batches(load_history()):
            assert c.post(f"/v1/users/{b.user_id}/edits", json=b.model_dump(mode="json")).status_code == 200
    yield srv
    srv.stop()


def post(srv: ServerProcess, key: str, user: str, query: str, **params: object) -> httpx.Response:
    return httpx.post(f"{srv.url}/v1/users/{user}/cypher", json={"query": query, "params": params},
                      headers={"Authorization": f"Bearer {key}"}, timeout=60, trust_env=False)


# (query, status, error code, a fragment of the message)
STATUSES = [
    ("MATCH (f:Fact RETURN f", 400, "cypher_refused", "expected ')'"),
    ("MATCH limit = (x:Fact) RETURN x.user_id, x.statement", 400, "cypher_refused", "keyword"),
    ("CA/**/LL db.labels() YIELD label RETURN label", 400, "cypher_refused", "expected a clause"),
    ("MATCH (f:Fact) DETACH DELETE f RETURN 1", 400, "cypher_refused", "read-only"),
    ("MATCH (f:Fact) RETURN f.no_such_property", 400, "cypher_invalid", "no_such_property"),
    ("MATCH (f:Fact) RETURN f".ljust(10_000), 400, "cypher_refused", "limit is 4000"),
]


@pytest.mark.parametrize("query,status,code,why", STATUSES)
def test_bad_queries_are_4xx_that_say_what(api: ServerProcess, query: str, status: int, code: str, why: str) -> None:
    r = post(api, MAYA, "maya", query)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and why in err["message"]


def test_rows_are_capped_and_scoped(api: ServerProcess) -> None:
    r = post(api, MAYA, "maya", "UNWIND range(1, 5000) AS x RETURN x")
    assert r.status_code == 200 and len(r.json()["rows"]) == 1000 and r.json()["truncated"] is True
    r = post(api, MAYA, "maya", "MATCH (n) RETURN DISTINCT n.user_id AS u")
    assert r.status_code == 200 and r.json()["rows"] == [{"u": "maya"}] and r.json()["truncated"] is False
    assert post(api, MAYA, "leo", "MATCH (n) RETURN n").status_code == 403


def test_slow_queries_time_out_without_stalling_others(api: ServerProcess) -> None:
    statuses: list[int] = []

    def slow() -> None:
        statuses.append(post(api, MAYA, "maya", SLOW).status_code)

    threads = [threading.Thread(target=slow) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    third = post(api, MAYA, "maya", "MATCH (f:Fact) RETURN count(*) AS n")  # the key already has 2 running
    assert third.status_code == 429 and third.json()["error"]["code"] == "cypher_busy"
    worst = 0.0
    with ThreadPoolExecutor(1) as pool:  # another key's query is answered meanwhile
        other = pool.submit(post, api, ADMIN, "leo", "MATCH (f:Fact) RETURN count(*) AS n")
        while any(t.is_alive() for t in threads):
            t0 = time.perf_counter()
            assert httpx.get(f"{api.url}/health", timeout=10, trust_env=False).status_code == 200
            worst = max(worst, time.perf_counter() - t0)
            time.sleep(0.05)
        assert other.result().status_code == 200
    for t in threads:
        t.join()
    assert statuses == [408, 408]
    assert worst < 1.0  # the bar (p95 < 100 ms) is measured by bench/cypher.py; this catches a stall


def test_cli_refusals_are_sentences(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    common = ["--embedder", "hash", "--store-path", str(tmp_path / "s")]
    assert main(["load-example", *common]) == 0
    capsys.readouterr()
    for query, why in [("MATCH limit = (x:Fact) RETURN x.statement", "keyword"),
                       ("CA/**/LL db.labels() YIELD label RETURN label", "expected a clause"),
                       ("LOAD FROM '/etc/passwd' RETURN *", "not allowed"),
                       ("MATCH (f:Fact) RETURN f.nope", "cannot run")]:
        rc = main(["cypher", *common, "--user", "maya", query])
        err = capsys.readouterr().err
        assert rc != 0 and err.startswith("evomem cypher: error: ") and why in err and "Traceback" not in err
    assert main(["cypher", *common, "--user", "maya", "--json", "MATCH (f:Fact) RETURN count(*) AS n"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == [{"n": 5}]
