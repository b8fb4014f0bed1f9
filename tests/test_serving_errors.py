"""Hostile and malformed input against ``evomem serve``'s app, in process (FastAPI's TestClient over the
real app and a real embedded store): every refusal has the right status, a sentence as message (no
traceback, no database text), and leaves the store exactly as it was. Also: user-id validation on
every route, another user's ids, a Neo4j that is down (503), an unreachable model server (502 naming
the model's role and URL), and the HTTP purge taking the per-user lock."""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from servers import free_port

from evomem.examples import load_fixture
from memcore.memory import Memory
from graph.embedded import EmbeddedStore
from llmclients.config import ModelEndpointConfig
from llmclients.embeddings import HashEmbedder
from llmclients.openai_client import OpenAIChatClient
from policy.rule import RulePolicy
from serving.api import ApiDeps, ApiKey, ApiSettings, create_app
from policy.learned import EndpointLearnedPolicy
from serving.pipeline import AnswerPipeline
from serving.server import default_ingest

KEY = "errors-key-0123456789"
H = {"Authorization": f"Bearer {KEY}"}
MAX_BODY = 16 * 1024
# what must never reach a caller: tracebacks, engine/driver messages, Python reprs of exceptions
RAW = re.compile(r"Traceback|File \"|exception:|Neo\.ClientError|primary key|uniqueness|ServiceUnavailable|"
                 r"Errno|RuntimeError|KeyError", re.I)


def is_sentence(msg: str) -> bool:
    return (bool(msg) and msg[0].isupper() and msg.rstrip().endswith((".", "?", "!")) and " " in msg
            and len(msg) < 600 and not RAW.search(msg))


def unreachable_model(name: str = "gone") -> tuple[OpenAIChatClient, str]:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    return OpenAIChatClient(ModelEndpointConfig(kind="openai", base_url=url, model=name, max_retries=0,
                                                timeout_s=5)), url


def make_client(mem: Memory, policy: Any = None) -> tuple[TestClient, str]:
    model, url = unreachable_model()
    deps = ApiDeps(memory=mem, pipeline=AnswerPipeline(mem, policy or RulePolicy(), model),
                   settings=ApiSettings(keys=[ApiKey(key=KEY)], max_body_bytes=MAX_BODY), ingest=default_ingest(mem))
    return TestClient(create_app(deps), headers=H, raise_server_exceptions=False), url


def loaded_memory(path: Path) -> Memory:
    store = EmbeddedStore(path)
    store.setup()
    mem = Memory(store, HashEmbedder(16))  # type: ignore[arg-type]
    load_fixture(mem)
    return mem


def store_state(mem: Memory) -> dict[str, Any]:
    """Everything a write could change: users, versions, facts with their retraction, node counts."""
    out: dict[str, Any] = {"users": sorted(mem.store.users())}
    for u in out["users"]:
        snap = mem.store.load_snapshot(u)
        out[u] = (snap.version, sorted((f, str(x.retracted_at)) for f, x in snap.facts.items()),
                  sorted(snap.concepts), sorted(snap.edits))
    counts = getattr(mem.store, "counts", None)
    out["counts"] = counts() if counts else None
    return out


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    m = loaded_memory(tmp_path_factory.mktemp("errors") / "store")
    yield m
    m.close()


@pytest.fixture(scope="module")
def client(mem: Memory) -> Iterator[TestClient]:
    c, _ = make_client(mem)
    with c:
        yield c


def check(r: Any, status: int, code: str | None = None) -> dict[str, Any]:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert is_sentence(err["message"]), err["message"]
    if code is not None:
        assert err["code"] == code, err
    return dict(err)


CHAT = {"messages": [{"role": "user", "content": "hi"}], "user": "maya"}
DANGLING = {"user_id": "maya", "edits": [
    {"op": "ATTACH", "concept_id": "maya::c::travel", "fact": {"fact_id": "maya::f::new", "user_id": "maya",
                                                               "statement": "Likes trains"}},
    {"op": "SUPERSEDE", "new_fact_id": "maya::f::new", "old_fact_id": "maya::f::missing"}]}

# (route, method, path, request kwargs, status, code) — per route, the typical malformed or hostile input
HOSTILE: list[tuple[str, str, str, dict[str, Any], int, str | None]] = [
    ("metrics", "GET", "/metrics", {"headers": {"Authorization": "Bearer nope-nope-nope"}}, 401, "invalid_api_key"),
    ("users", "GET", "/v1/users", {"headers": {"Authorization": ""}}, 401, "invalid_api_key"),
    ("sessions", "POST", "/v1/users/maya/sessions", {"json": {"session_id": "x", "turns": []}}, 422, None),
    ("sessions", "POST", "/v1/users/maya/sessions", {"json": {"session_id": "x", "user_id": "leo", "turns": [
        {"role": "user", "text": "hi"}]}}, 400, "user_mismatch"),
    ("sessions", "POST", "/v1/users/maya/sessions", {"json": ["not", "an", "object"]}, 422, "validation_error"),
    ("edits", "POST", "/v1/users/maya/edits", {"json": {"user_id": "maya", "edits": [{"op": "EXPLODE"}]}}, 422, None),
    ("edits", "POST", "/v1/users/maya/edits", {"json": {"user_id": "leo", "edits": []}}, 400, "user_mismatch"),
    ("edits", "POST", "/v1/users/maya/edits", {"json": DANGLING}, 422, "dangling_id"),
    ("edits", "POST", "/v1/users/maya/edits", {"content": b'{"user_id": ', "headers": {
        "Content-Type": "application/json"}}, 400, "invalid_json"),
    ("edits", "POST", "/v1/users/maya/edits", {"json": {"user_id": "maya", "edits": [], "pad": "x" * MAX_BODY}},
     413, "request_too_large"),
    ("edits", "POST", "/v1/users/maya/edits", {"content": iter([b'{"user_id": "maya", "pad": "', b"x" * MAX_BODY,
                                                                 b'"}']),
                                               "headers": {"Content-Type": "application/json"}}, 413,
     "request_too_large"),
    ("facts", "GET", "/v1/users/maya/facts?limit=0", {}, 422, "validation_error"),
    ("facts", "GET", "/v1/users/maya/facts?limit=100000", {}, 422, "validation_error"),
    ("facts", "GET", "/v1/users/maya/facts?offset=-1", {}, 422, "validation_error"),
    ("facts", "GET", "/v1/users/ghost/facts", {}, 404, "user_not_found"),
    ("fact", "GET", "/v1/users/maya/facts/maya::f::nope", {}, 404, "fact_not_found"),
    ("fact", "GET", "/v1/users/maya/facts/leo::f::tea", {}, 404, "fact_not_found"),  # leo's: no reveal
    ("search", "POST", "/v1/users/maya/search", {"json": {"query": ""}}, 422, "validation_error"),
    ("search", "POST", "/v1/users/maya/search", {"json": {"query": "x", "budget": 0}}, 422, "validation_error"),
    ("search", "POST", "/v1/users/maya/search", {"json": {"query": "x" * 5000}}, 422, "validation_error"),
    ("explain", "POST", "/v1/users/maya/explain", {"json": {"query": "x", "prompt": "../../etc/passwd"}}, 422, None),
    ("state", "POST", "/v1/users/maya/state", {"json": {"query": "x", "extra": 1}}, 422, "validation_error"),
    ("answer", "POST", "/v1/users/maya/answer", {"json": {"query": "x", "k": 0}}, 422, "validation_error"),
    ("answer", "POST", "/v1/users/ghost/answer", {"json": {"query": "x"}}, 404, "user_not_found"),
    ("forget", "POST", "/v1/users/maya/facts/maya::f::nope/forget", {}, 404, "fact_not_found"),
    ("forget", "POST", "/v1/users/maya/facts/leo::f::tea/forget", {}, 404, "fact_not_found"),
    ("forget", "POST", "/v1/users/maya/facts/maya::f::beach/forget", {"json": {"reason": "x" * 2000}}, 422, None),
    ("purge", "DELETE", "/v1/users/maya", {}, 400, "confirmation_required"),
    ("purge", "DELETE", "/v1/users/maya?confirm=maybe", {}, 422, "validation_error"),
    ("purge", "DELETE", "/v1/users/ghost?confirm=true", {}, 404, "user_not_found"),
    ("cypher", "POST", "/v1/users/maya/cypher", {"json": {"query": "MATCH (f:Fact) DETACH DELETE f RETURN 1"}}, 400,
     None),
    ("cypher", "POST", "/v1/users/maya/cypher", {"json": {"query": "MATCH (f:Fact) RETURN nosuchfn(f) AS x"}}, 400,
     "cypher_refused"),  # the allowlist refuses it before any engine sees it
    ("cypher", "POST", "/v1/users/maya/cypher", {"json": {"query": "MATCH (f:Fact) RETURN f LIMIT 'x'"}}, 400, None),
    ("cypher", "POST", "/v1/users/maya/cypher", {"json": {"query": ""}}, 422, "validation_error"),
    ("chat", "POST", "/v1/chat/completions", {"json": {"messages": []}}, 422, "validation_error"),
    ("chat", "POST", "/v1/chat/completions", {"json": {"messages": [{"role": "user", "content": "x"}]}}, 400,
     "user_required"),
    ("chat", "POST", "/v1/chat/completions", {"json": CHAT | {"n": 2}}, 422, "validation_error"),
    ("chat", "POST", "/v1/chat/completions", {"json": CHAT | {"max_tokens": 10**6}}, 422, "validation_error"),
    ("chat", "POST", "/v1/chat/completions", {"json": CHAT | {"user": "ghost"}}, 404, "user_not_found"),
    ("chat", "POST", "/v1/chat/completions", {"json": CHAT | {"response_format": {"type": "xml"}}}, 400,
     "invalid_value"),
    ("chat", "POST", "/v1/chat/completions", {"json": CHAT | {"guided_json": "{not json"}}, 400, "invalid_schema"),
    ("chat", "POST", "/v1/chat/completions", {"json": CHAT | {"structured_outputs": {"json": [1]}}}, 400,
     "invalid_schema"),
    ("chat", "POST", "/v1/chat/completions", {"json": CHAT, "headers": {"X-EvoMem-User": "leo"}}, 400,
     "user_mismatch"),
    ("unrouted", "GET", "/v1/nothing-here", {}, 404, "not_found"),
    ("unrouted", "PUT", "/v1/users", {}, 405, "method_not_allowed"),
]


@pytest.mark.parametrize("route,method,path,kwargs,status,code", HOSTILE,
                         ids=[f"{i}-{h[0]}-{h[4]}" for i, h in enumerate(HOSTILE)])
def test_hostile_input_is_refused_with_a_sentence_and_changes_nothing(
        client: TestClient, mem: Memory, route: str, method: str, path: str, kwargs: dict[str, Any], status: int,
        code: str | None) -> None:
    before = store_state(mem)
    check(client.request(method, path, **kwargs), status, code)
    assert store_state(mem) == before


def _enc(user_id: str) -> str:
    # dots encoded too, or the client would resolve '..' in the path before sending it
    return quote(user_id, safe="").replace(".", "%2E")


BAD_IDS = ["a\x00b", "..", "a" * 5000, "a..b", ".hidden", "-x", "a b", "maya\n", "maya..", "ü", "a" * 129, "$uid"]


def _user_routes(uid: str) -> list[tuple[str, str, dict[str, Any]]]:
    p = f"/v1/users/{_enc(uid)}"
    return [("GET", f"{p}/facts", {}), ("GET", f"{p}/facts/x", {}), ("POST", f"{p}/answer", {"json": {"query": "x"}}),
            ("POST", f"{p}/search", {"json": {"query": "x"}}), ("POST", f"{p}/state", {"json": {"query": "x"}}),
            ("POST", f"{p}/explain", {"json": {"query": "x"}}),
            ("POST", f"{p}/cypher", {"json": {"query": "MATCH (f:Fact) RETURN f.statement"}}),
            ("POST", f"{p}/edits", {"json": {"user_id": uid, "edits": []}}),
            ("POST", f"{p}/sessions", {"json": {"session_id": "s", "turns": [{"role": "user", "text": "hi"}]}}),
            ("POST", f"{p}/facts/x/forget", {}), ("DELETE", f"{p}?confirm=true", {}),
            ("POST", "/v1/chat/completions", {"json": CHAT | {"user": uid}})]


@pytest.mark.parametrize("uid", BAD_IDS, ids=[repr(u[:12]) for u in BAD_IDS])
def test_malformed_user_ids_are_refused_on_every_route(client: TestClient, mem: Memory, uid: str) -> None:
    before = store_state(mem)
    for method, path, kwargs in _user_routes(uid):
        err = check(client.request(method, path, **kwargs), 400, "invalid_user_id")
        assert uid not in err["message"] or len(uid) < 3  # the id is not echoed back
    if uid.isascii() and "\n" not in uid and "\x00" not in uid:  # what an HTTP header can carry
        check(client.post("/v1/chat/completions", json=CHAT | {"user": None}, headers={"X-EvoMem-User": uid}), 400,
              "invalid_user_id")
    assert store_state(mem) == before


@pytest.mark.parametrize("uid", ["maya.lee@example.com", "a" * 128, "x_1-2", "U2"])
def test_well_formed_unknown_user_ids_pass_validation(client: TestClient, uid: str) -> None:
    check(client.get(f"/v1/users/{_enc(uid)}/facts"), 404, "user_not_found")


def test_another_users_fact_id_is_refused_without_revealing_it(client: TestClient, mem: Memory) -> None:
    before = store_state(mem)
    batch = {"user_id": "maya", "edits": [{"op": "ATTACH", "concept_id": "maya::c::travel", "fact": {
        "fact_id": "leo::f::tea", "user_id": "maya", "statement": "Drinks tea"}}]}
    r = client.post("/v1/users/maya/edits", json=batch)
    assert 400 <= r.status_code < 500 and r.status_code != 403, r.text
    msg = check(r, r.status_code)["message"]
    assert "leo" not in msg and "tea" not in msg  # neither the owner nor the id
    # a fresh id is fine, so the refusal was about the id alone
    ok = client.post("/v1/users/maya/edits", json={"user_id": "maya", "edits": [{"op": "ATTACH", "concept_id":
                     "maya::c::travel", "fact": {"fact_id": "maya::f::tea", "user_id": "maya", "statement": "Tea"}}]})
    assert ok.status_code == 200, ok.text
    assert store_state(mem)["leo"] == before["leo"]
    client.post("/v1/users/maya/facts/maya::f::tea/forget")  # leave maya's facts current as they were


def test_model_server_unreachable_is_502_naming_role_and_url(mem: Memory) -> None:
    c, url = make_client(mem)
    before = store_state(mem)
    for r in (c.post("/v1/users/maya/answer", json={"query": "Suggest a vacation"}), c.post("/v1/chat/completions",
                                                                                            json=CHAT)):
        err = check(r, 502, "model_server_unreachable")
        assert "answer model 'gone'" in err["message"] and url in err["message"]
    # a model policy behind an unreachable server: the policy is named, not the answer model
    policy_model, policy_url = unreachable_model("policy-lora")
    c, _ = make_client(mem, EndpointLearnedPolicy(policy_model, temperature=0.0))
    err = check(c.post("/v1/users/maya/state", json={"query": "Suggest a vacation"}), 502, "model_server_unreachable")
    assert "policy model 'policy-lora'" in err["message"] and policy_url in err["message"]
    assert store_state(mem) == before


@pytest.fixture
def neo4j_down(monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    import neo4j

    from graph.neo4j import Neo4jStore

    # the driver retries a failed transaction for 30 s by default; once is enough to know it is down
    monkeypatch.setattr(neo4j.GraphDatabase, "driver", functools.partial(neo4j.GraphDatabase.driver,
                                                                         max_transaction_retry_time=0,
                                                                         connection_timeout=2))
    store = Neo4jStore(f"bolt://127.0.0.1:{free_port()}", embedding_dim=16)  # a closed loopback port
    mem = Memory(store, HashEmbedder(16))  # type: ignore[arg-type]
    c, _ = make_client(mem)
    with c:
        yield c
    store.close()


def test_neo4j_down_is_503_with_a_sentence(neo4j_down: TestClient) -> None:
    assert neo4j_down.get("/health").status_code == 200  # the process is up; the store is not
    for r in (neo4j_down.get("/v1/users"), neo4j_down.get("/v1/users/maya/facts"),
              neo4j_down.post("/v1/users/maya/cypher", json={"query": "MATCH (f:Fact) RETURN f.statement"}),
              neo4j_down.post("/v1/users/maya/edits", json={"user_id": "maya", "edits": [
                  {"op": "CREATE", "concept_id": "maya::c::x", "name": "x"}]})):
        err = check(r, 503, "store_unavailable")
        assert "Neo4j" in err["message"]


def test_http_purge_waits_for_the_users_lock(tmp_path: Path) -> None:
    from induction.pipeline import user_lock

    mem = loaded_memory(tmp_path / "store")
    c, _ = make_client(mem)
    done: list[int] = []
    lock = user_lock(mem.store, "leo")
    with c:
        lock.acquire()
        try:
            t = threading.Thread(target=lambda: done.append(c.delete("/v1/users/leo",
                                                                     params={"confirm": "true"}).status_code))
            t.start()
            time.sleep(1.0)
            assert not done and "leo" in mem.store.users()  # an ingest of leo holds the lock: purge waits
        finally:
            lock.release()
        t.join(30)
        assert done == [200] and "leo" not in mem.store.users()
        r = c.post("/v1/users/maya/facts/maya::f::beach/forget", json={"reason": "asked"})
        assert r.status_code == 200 and r.json()["status"] == "retracted"
        check(c.post("/v1/users/maya/facts/maya::f::beach/forget"), 409, "already_retracted")
    mem.close()


def test_engine_errors_on_both_backends(memory: Memory) -> None:
    """What each backend's engine says (syntax errors, duplicate ids) never reaches the caller as is:
    a Cypher the engine rejects is 400, another user's fact id is 409 naming neither owner nor id."""
    c, _ = make_client(memory)
    before = store_state(memory)
    with c:
        err = check(c.post("/v1/users/maya/cypher", json={"query": "MATCH (f:Fact) RETURN nosuchfn(f) AS x"}), 400)
        assert err["code"] in ("cypher_invalid", "cypher_refused")
        batch = {"user_id": "maya", "edits": [{"op": "ATTACH", "concept_id": "maya::c::travel", "fact": {
            "fact_id": "leo::f::tea", "user_id": "maya", "statement": "Drinks tea"}}]}
        r = c.post("/v1/users/maya/edits", json=batch)
        assert r.status_code in (400, 409, 422), r.text
        msg = check(r, r.status_code)["message"]
        assert "leo" not in msg and "tea" not in msg
    assert store_state(memory) == before


def test_model_server_shares_the_wire_limits() -> None:
    """The model server speaks the same wire module: a chunked body over its limit is 413 there too,
    and a malformed schema is 400 (not a crash)."""
    from llmclients.chat import ChatResult
    from serving.model_server import create_model_app

    class Echo:
        name = "echo"

        def complete(self, messages: Any, **kw: Any) -> ChatResult:
            return ChatResult(text="ok", finish_reason="stop")

    with TestClient(create_model_app(Echo(), "echo", api_key=KEY, max_body_bytes=4096), headers=H) as c:
        r = c.post("/v1/chat/completions", content=iter([b'{"messages": [{"role": "user", "content": "', b"x" * 8000,
                                                         b'"}]}']), headers={"Content-Type": "application/json"})
        check(r, 413, "request_too_large")
        msg = [{"role": "user", "content": "hi"}]
        check(c.post("/v1/chat/completions", json={"messages": msg, "guided_json": "{nope"}), 400, "invalid_schema")
        assert c.post("/v1/chat/completions", json={"messages": msg}).json()["choices"][0]["message"]["content"] == "ok"


@pytest.mark.parametrize("exc,status,code", [("store", 503, "store_error"), ("runtime", 500, "internal_error"),
                                             ("key", 500, "internal_error")])
def test_store_and_engine_text_never_leaks(mem: Memory, monkeypatch: pytest.MonkeyPatch, exc: str, status: int,
                                           code: str) -> None:
    from graph.store import StoreError

    secret = "SECRET-DRIVER-TEXT /var/lib/store leo::f::tea"
    err = {"store": StoreError(secret), "runtime": RuntimeError(secret), "key": KeyError(secret)}[exc]

    def boom(*a: Any, **k: Any) -> Any:
        raise err

    c, _ = make_client(mem)
    monkeypatch.setattr(mem.store, "users", boom)
    body = check(c.get("/v1/users"), status, code)
    assert "SECRET" not in body["message"] and "leo" not in body["message"]
