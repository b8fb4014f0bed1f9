"""``evomem.client`` against a real ``evomem serve`` on 127.0.0.1: every verb (sync and async) and every
error class. The answer model is a scripted loopback server (tests/servers.py FaultServer) whose mode
the tests switch to make the API answer 502 and 504; 501, 429 and 5xx come from a real uvicorn server
in this process whose deployment lacks ingestion, allows no Cypher and loses its store."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from evomem.client import (ERROR_CLASSES, AsyncMemoryClient, AuthenticationError, ConflictError,
                           EvoMemConnectionError, InvalidRequestError, MemoryClient, NotConfiguredError, NotFoundError,
                           PermissionDeniedError, RateLimitError, ServerError, UpstreamError, UpstreamTimeoutError)
from tests.servers import REPO, FaultServer, ServerProcess, _env, free_port, start_api_server

ADMIN, MAYA_KEY = "client-admin-0123456789", "client-maya-0123456789"


@pytest.fixture(scope="module")
def model() -> Iterator[FaultServer]:
    with FaultServer(mode="ok", text="Lisbon, by the sea.") as srv:
        yield srv


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model: FaultServer) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("client")
    store = tmp / "store"
    r = subprocess.run([sys.executable, "-m", "evomem.cli", "load-example", "--store", "embedded", "--store-path",
                        str(store), "--embedder", "hash"], cwd=str(REPO), env=_env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    keys = tmp / "keys.json"
    keys.write_text(json.dumps([{"key": ADMIN, "name": "admin"}, {"key": MAYA_KEY, "name": "maya", "users": ["maya"]}]))
    srv = start_api_server(tmp, store, model.url, "m", api_keys_file=keys, extra_args=["--answer-timeout-s", "1"],
                           timeout_s=120)
    yield srv
    srv.stop()


def test_every_verb_sync(server: ServerProcess, model: FaultServer) -> None:
    with MemoryClient(server.url, api_key=ADMIN, user_id="sara") as mem:
        assert mem.health()["status"] == "ok" and "maya" in mem.users()
        added = mem.add([{"role": "user", "content": "I moved to Lisbon last spring and I love the sea."},
                         {"role": "assistant", "content": "Lisbon is lovely."}])
        assert added.status == "committed" and added.fact_ids
        assert mem.add([{"role": "user", "content": "I moved to Lisbon last spring and I love the sea."},
                        {"role": "assistant", "content": "Lisbon is lovely."}]).status == "unchanged"
        hits = mem.search("Where do I live?")
        lisbon = next(i for i in hits.items if "lisbon" in i.fact.statement.lower())
        assert lisbon.state.validity == "current" and hits.context.text
        st = mem.state("Suggest a weekend trip")
        assert st.user_id == "sara" and st.reasoning_state and st.parsed is not None
        ans = mem.answer("Where do I live?", max_tokens=16)
        assert ans.answer == "Lisbon, by the sea." and ans.evidence
        facts = mem.get_all()
        assert facts.total >= 1 and all(f.fact.user_id == "sara" for f in facts.facts)
        assert {f.state.validity for f in facts.facts} == {"current"}  # current-only unless include= widens
        assert mem.profile()["user_id"] == "sara"
        fid = lisbon.fact.fact_id
        assert mem.get(fid).fact.statement == lisbon.fact.statement and mem.get(fid).source_turns
        gone = mem.delete(fid, reason="moved again")
        assert gone.status == "retracted" and mem.get(fid).state.validity == "retracted"
        hist = mem.history(fid)
        assert "RETRACT" in {e.op for e in hist.edits} and hist.turns
        assert fid in {f.fact.fact_id for f in mem.get_all(validity="retracted").facts}
        assert fid in {f.fact.fact_id for f in mem.get_all(include=["retracted"]).facts}
        assert fid not in {f.fact.fact_id for f in mem.get_all().facts}
        rows = mem.cypher("MATCH (f:Fact) RETURN f.fact_id AS id")
        assert rows.rows and all(r["id"].startswith("sara::") for r in rows.rows)
        ext = mem.state_external("Suggest a dinner", [
            {"text": "I love spicy food, especially Thai curries.", "at": "2024-01-01T00:00:00", "id": "m1"},
            {"text": "I no longer eat spicy food; I prefer mild dishes now.", "at": "2024-06-01T00:00:00", "id": "m2"}])
        assert ext.reasoning_state and [v.item_id for v in ext.items] == ["m1", "m2"]
        assert all(not f.startswith("sara::") for v in ext.items for f in v.fact_ids)  # a scratch store, not sara's
        assert mem.purge(user_id="sara", confirm=True).status == "purged"
        assert "sara" not in mem.users()


def test_every_verb_async(server: ServerProcess) -> None:
    async def main() -> None:
        async with AsyncMemoryClient(server.url, api_key=MAYA_KEY, user_id="maya") as mem:
            assert (await mem.health())["status"] == "ok" and await mem.users() == ["maya"]
            added = await mem.add("I started learning the cello last month.")
            assert added.status == "committed" and added.fact_ids
            hits = await mem.search("cello")
            cello = next(i for i in hits.items if "cello" in i.fact.statement.lower())
            assert (await mem.state("What should I practise tonight?")).reasoning_state
            assert (await mem.answer("What do I play?")).answer
            assert (await mem.get_all()).total >= 1 and (await mem.profile())["user_id"] == "maya"
            fid = cello.fact.fact_id
            assert (await mem.get(fid)).fact.fact_id == fid
            assert (await mem.forget(fid)).status == "retracted"
            assert (await mem.history(fid)).state.validity == "retracted"
            assert (await mem.cypher("MATCH (f:Fact) RETURN count(f) AS n")).rows[0]["n"] >= 1
            assert (await mem.state_external("dinner?", [{"text": "I am vegetarian."}])).items[0].fact_ids
            with pytest.raises(PermissionDeniedError):
                await mem.purge(user_id="leo", confirm=True)

    anyio.run(main)


def test_error_classes_from_the_server(server: ServerProcess, model: FaultServer) -> None:
    mem = MemoryClient(server.url, api_key=ADMIN, user_id="maya")
    cases: list[tuple[type[Exception], Any, str]] = [
        (InvalidRequestError, lambda: mem.purge(confirm=False), "confirmation_required"),
        (InvalidRequestError, lambda: mem.search("x", user_id="Not A User!"), "invalid_user_id"),
        (InvalidRequestError, lambda: mem.cypher("MATCH (f:Fact) DETACH DELETE f"), "cypher_refused"),
        (AuthenticationError, lambda: MemoryClient(server.url, api_key="wrong-key-0123").search("x", user_id="maya"), "invalid_api_key"),
        (PermissionDeniedError, lambda: MemoryClient(server.url, api_key=MAYA_KEY).get_all(user_id="leo"),
         "user_not_allowed"),
        (NotFoundError, lambda: mem.get("maya::f::nope"), "fact_not_found"),
        (NotFoundError, lambda: mem.search("x", user_id="nobody"), "user_not_found"),
    ]
    for cls, fn, code in cases:
        with pytest.raises(cls) as info:
            fn()
        assert info.value.code == code and info.value.message.endswith(".") and info.value.status, info.value
    fid = mem.get_all(validity="current").facts[0].fact.fact_id
    mem.delete(fid)
    with pytest.raises(ConflictError, match="already retracted"):
        mem.delete(fid)
    model.mode = "error500"
    try:
        with pytest.raises(UpstreamError) as up:
            mem.answer("Where should I go?")
        assert up.value.status == 502 and "answer model" in up.value.message
        model.mode, model.delay_s = "slow", 3.0
        with pytest.raises(UpstreamTimeoutError) as slow:
            mem.answer("Where should I go?")
        assert slow.value.status == 504
    finally:
        model.mode = "ok"
    with pytest.raises(EvoMemConnectionError, match="cannot reach"):
        MemoryClient(f"http://127.0.0.1:{free_port()}", api_key=ADMIN, user_id="maya").search("x")


@pytest.fixture
def bare_server(embedded_memory: Any) -> Iterator[tuple[str, Any]]:
    """A real uvicorn server in this process whose deployment has no ingestion and no Cypher capacity."""
    import uvicorn

    from evomem.examples import load_fixture
    from policy.rule import RulePolicy
    from serving.api import ApiDeps, ApiSettings, create_app
    from serving.cypher_route import CypherGate
    from serving.pipeline import AnswerPipeline

    load_fixture(embedded_memory)
    deps = ApiDeps(memory=embedded_memory, pipeline=AnswerPipeline(embedded_memory, RulePolicy(), None),  # type: ignore[arg-type]
                   settings=ApiSettings(require_auth=False), ingest=None, cypher_gate=CypherGate(per_key=0))
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(deps), host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", embedded_memory
    srv.should_exit = True
    thread.join(timeout=10)


def test_error_classes_of_a_limited_deployment(bare_server: tuple[str, Any]) -> None:
    url, memory = bare_server
    mem = MemoryClient(url, user_id="maya")
    with pytest.raises(NotConfiguredError) as e501:
        mem.add("I like tea.")
    assert e501.value.status == 501 and e501.value.code == "ingest_not_configured"
    with pytest.raises(RateLimitError) as e429:
        mem.cypher("MATCH (f:Fact) RETURN f LIMIT 1")
    assert e429.value.status == 429 and "Cypher" in e429.value.message
    memory.store.close()  # the store goes away under the server
    with pytest.raises(ServerError) as e5xx:
        mem.get_all()
    assert e5xx.value.status in (500, 503) and e5xx.value.message


def test_every_server_error_type_has_a_class() -> None:
    from serving.openai_wire import ERROR_TYPES

    assert set(ERROR_TYPES.values()) <= set(ERROR_CLASSES)


def test_client_imports_without_server_dependencies() -> None:
    code = ("import sys, evomem.client; heavy = {'fastapi', 'starlette', 'numpy', 'torch', 'neo4j', 'ladybug', "
            "'transformers', 'mcp', 'uvicorn'}; print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))")
    r = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), env=_env(), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


def test_client_refuses_a_call_without_user() -> None:
    with pytest.raises(ValueError, match="no user"):
        MemoryClient("http://127.0.0.1:9").search("x")
