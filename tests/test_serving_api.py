"""End to end over real HTTP on 127.0.0.1: ``evomem serve`` (embedded store, hash embedder, rule policy)
in front of ``evomem serve-model`` (tiny offline model), both started here as subprocesses.
Covers the routes, auth and per-user scoping, the OpenAI-compatible chat with memory, and bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from servers import ServerProcess, shared_tiny_model, start_api_server, start_model_server

from evomem.examples import history_batches, load_history
from llmclients.chat import ChatMessage
from llmclients.config import ModelEndpointConfig
from llmclients.openai_client import OpenAIChatClient

ADMIN, MAYA_ONLY = "admin-key-0123456789", "maya-key-0123456789"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    d = tmp_path_factory.mktemp("e2e")
    model = start_model_server(d, shared_tiny_model(tmp_path_factory.getbasetemp()), served_name="tiny")
    keys = d / "keys.yaml"
    keys.write_text(json.dumps([{"key": ADMIN, "name": "ops"}, {"key": MAYA_ONLY, "name": "maya-app", "users": ["maya"]}]))
    try:
        api = start_api_server(d, d / "store", model.url + "/v1", "tiny", api_keys_file=keys,
                               extra_args=["--max-body-bytes", "65536", "--max-answer-tokens", "8"])
    except Exception:
        model.stop()
        raise
    with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60) as c:
        for b in history_batches(load_history()):
            r = c.post(f"/v1/users/{b.user_id}/edits", json=b.model_dump(mode="json"))
            assert r.status_code == 200, r.text
    yield api, model
    api.stop()
    model.stop()


@pytest.fixture
def admin(servers: tuple[ServerProcess, ServerProcess]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=servers[0].url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60) as c:
        yield c


@pytest.fixture
def maya_app(servers: tuple[ServerProcess, ServerProcess]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=servers[0].url, headers={"Authorization": f"Bearer {MAYA_ONLY}"}, timeout=60) as c:
        yield c


def fact_count(c: httpx.Client, user: str) -> int:
    return int(c.post(f"/v1/users/{user}/cypher", json={"query": "MATCH (f:Fact) RETURN count(f) AS n"}).json()["rows"][0]["n"])


def error(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()["error"]
    assert set(body) >= {"message", "type", "code"} and body["message"]
    return body


def test_answer_through_both_servers(admin: httpx.Client) -> None:
    r = admin.post("/v1/users/maya/answer", json={"query": "Suggest a vacation for me", "k": 4})
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["answer_model"] == "tiny" and res["policy"] == "rule-baseline" and isinstance(res["answer"], str)
    assert res["tokens"]["answer_prompt"] > 50 and 1 <= res["tokens"]["answer_completion"] <= 8
    assert res["timings_ms"]["answer"] > 0 and "constraint" in res["reasoning_state"]
    assert {e["fact_id"] for e in res["evidence"]} >= {"maya::f::hiking", "maya::f::beach", "maya::f::knee"}


def test_explain_state_search_and_facts(admin: httpx.Client) -> None:
    ex = admin.post("/v1/users/maya/explain", json={"query": "beach trips for holidays", "k": 1}).json()
    assert [s["fact_id"] for s in ex["explain"]["seeds"] if not s["window"]] == ["maya::f::beach"]
    assert ex["answer"] is None and ex["explain"]["added_by_traversal"] == ["maya::f::hiking"]
    assert set(ex["timings_ms"]) >= {"retrieve", "traverse", "policy", "answer"}
    st = admin.post("/v1/users/leo/state", json={"query": "Can I have a peanut snack?"}).json()
    assert st["policy"] == "rule-baseline" and "RULE: Conflicting facts" in st["reasoning_state"]
    assert set(st["aliases"]) == {f["alias"] for f in st["parsed"]["facts"]}
    se = admin.post("/v1/users/leo/search", json={"query": "coffee", "k": 2}).json()
    assert any(i["state"]["validity"] == "superseded" for i in se["items"]) and se["context"]["text"]
    facts = admin.get("/v1/users/leo/facts", params={"validity": "disputed"}).json()
    assert facts["total"] == 2 and {f["fact"]["fact_id"] for f in facts["facts"]} == {"leo::f::peanut-allergy",
                                                                                     "leo::f::peanut-ok"}
    one = admin.get("/v1/users/leo/facts/leo::f::tea").json()
    assert one["state"]["supersedes"] == ["leo::f::espresso"] and one["source_turns"][0]["text"]
    error(admin.get("/v1/users/leo/facts/leo::f::nope"), 404)


def test_openai_clients_get_memory_injected(servers: tuple[ServerProcess, ServerProcess]) -> None:
    api = servers[0]
    import openai  # a dev dependency (pyproject [dev]): missing is a failure, not a skip
    oc = openai.OpenAI(base_url=api.url + "/v1", api_key=MAYA_ONLY, max_retries=0)
    out = oc.chat.completions.create(model="evomem", messages=[{"role": "user", "content": "Suggest a vacation"}],
                                     user="maya", max_tokens=6)
    assert out.choices[0].finish_reason in ("stop", "length") and out.usage.prompt_tokens > 100  # memory went in
    extra = out.model_extra["evomem"]
    assert extra["user"] == "maya" and any(e["validity"] == "superseded" for e in extra["evidence"])
    # the project's own client, user given by header instead of the body
    ours = OpenAIChatClient(ModelEndpointConfig(kind="openai", base_url=api.url + "/v1", model="evomem",
                                                api_key=MAYA_ONLY, max_retries=0,
                                                extra_headers={"X-EvoMem-User": "maya"}))
    assert ours.complete([ChatMessage(role="user", content="What should I eat?")], max_tokens=4).usage.prompt_tokens > 100
    stream = list(oc.chat.completions.create(model="evomem", messages=[{"role": "user", "content": "hi"}], user="maya",
                                             max_tokens=4, stream=True))
    assert stream[-1].choices[0].finish_reason in ("stop", "length")


def test_per_user_scoping(maya_app: httpx.Client, admin: httpx.Client) -> None:
    assert maya_app.get("/v1/users").json() == {"users": ["maya"]}
    assert set(admin.get("/v1/users").json()["users"]) >= {"maya", "leo", "sara"}
    for r in (maya_app.get("/v1/users/leo/facts"), maya_app.post("/v1/users/leo/answer", json={"query": "x"}),
              maya_app.post("/v1/users/leo/cypher", json={"query": "MATCH (f:Fact) RETURN f.statement"}),
              maya_app.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}], "user": "leo"}),
              maya_app.delete("/v1/users/leo", params={"confirm": "true"})):
        assert error(r, 403)["code"] == "user_not_allowed"
    # an unknown user is 403 for a bound key (no existence oracle) and 404 for an unbound one
    error(maya_app.get("/v1/users/ghost/facts"), 403)
    assert error(admin.get("/v1/users/ghost/facts"), 404)["code"] == "user_not_found"
    assert error(httpx.get(str(admin.base_url) + "/v1/users"), 401)["code"] == "invalid_api_key"
    assert error(httpx.get(str(admin.base_url) + "/v1/users", headers={"Authorization": "Bearer wrong-key-000"}), 401)
    r = maya_app.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}], "user": "maya"},
                      headers={"X-EvoMem-User": "leo"})
    assert error(r, 400)["code"] == "user_mismatch"


def test_cypher_is_scoped_and_read_only(admin: httpx.Client) -> None:
    rows = admin.post("/v1/users/maya/cypher", json={"query": "MATCH (f:Fact) RETURN f.user_id AS u"}).json()["rows"]
    assert rows and {r["u"] for r in rows} == {"maya"}
    before = fact_count(admin, "maya")
    r = admin.post("/v1/users/maya/cypher", json={"query": "MATCH (f:Fact) DETACH DELETE f RETURN 1"})
    assert error(r, 400)["code"] in ("cypher_refused", "cypher_not_read_only")
    assert fact_count(admin, "maya") == before


def test_forget_and_purge(admin: httpx.Client) -> None:
    batch = {"user_id": "temp", "edits": [
        {"op": "CREATE", "concept_id": "temp::c::food", "name": "food"},
        {"op": "ATTACH", "concept_id": "temp::c::food", "fact": {"fact_id": "temp::f::1", "user_id": "temp",
                                                                 "statement": "Loves durian", "kind": "preference"}},
        {"op": "ATTACH", "concept_id": "temp::c::food", "fact": {"fact_id": "temp::f::2", "user_id": "temp",
                                                                 "statement": "Eats rice daily", "kind": "experience"}}]}
    assert admin.post("/v1/users/temp/edits", json=batch).status_code == 200
    r = admin.post("/v1/users/temp/facts/temp::f::1/forget", json={"reason": "user asked"})
    assert r.status_code == 200 and r.json()["status"] == "retracted"
    assert admin.get("/v1/users/temp/facts/temp::f::1").json()["state"]["validity"] == "retracted"
    st = admin.post("/v1/users/temp/state", json={"query": "durian"}).json()
    assert "Never rely on" in st["reasoning_state"]
    assert error(admin.post("/v1/users/temp/facts/temp::f::1/forget"), 409)["code"] == "already_retracted"
    assert error(admin.post("/v1/users/temp/facts/temp::f::9/forget"), 404)["code"] == "fact_not_found"
    assert error(admin.delete("/v1/users/temp"), 400)["code"] == "confirmation_required"
    assert admin.delete("/v1/users/temp", params={"confirm": "true"}).json()["nodes_removed"] > 0
    error(admin.get("/v1/users/temp/facts"), 404)
    assert "temp" not in admin.get("/v1/users").json()["users"]


def test_session_ingest_route(admin: httpx.Client) -> None:
    body = {"session_id": "s-e2e-1", "turns": [{"role": "user", "text": "I started learning the cello last month."}]}
    before = fact_count(admin, "sara")
    r = admin.post("/v1/users/sara/sessions", json=body)
    assert r.status_code == 200, r.text  # the build always ships induction: a 501 here is a regression
    assert r.json()["status"] == "committed" and fact_count(admin, "sara") >= before
    assert admin.post("/v1/users/sara/sessions", json=body).json()["status"] == "unchanged"  # idempotent
    assert error(admin.post("/v1/users/sara/sessions", json={"session_id": "x", "turns": []}), 422)
    assert error(admin.post("/v1/users/sara/sessions", json=body | {"user_id": "leo"}), 400)["code"] == "user_mismatch"


def test_bad_input_is_typed_and_leaves_the_store_unchanged(admin: httpx.Client) -> None:
    before = {u: fact_count(admin, u) for u in ("maya", "leo")}
    big = {"user_id": "maya", "edits": [], "turns": [{"turn_id": "t", "user_id": "maya", "session_id": "s", "seq": 0,
                                                      "role": "user", "text": "x" * 70_000}]}
    assert error(admin.post("/v1/users/maya/edits", json=big), 413)["code"] == "request_too_large"
    assert error(admin.post("/v1/users/maya/answer", content=b'{"query": ', headers={"Content-Type": "application/json"}),
                 400)["code"] == "invalid_json"
    assert error(admin.post("/v1/users/maya/answer", json={"query": ""}), 422)["param"] == "query"
    assert error(admin.post("/v1/users/maya/answer", json={"query": "x", "k": 0}), 422)
    assert error(admin.post("/v1/users/maya/answer", json={"query": "x", "prompt": "../../etc/passwd"}), 422)
    assert error(admin.post("/v1/users/nobody/answer", json={"query": "x"}), 404)["code"] == "user_not_found"
    wrong_user = {"user_id": "leo", "edits": []}
    assert error(admin.post("/v1/users/maya/edits", json=wrong_user), 400)["code"] == "user_mismatch"
    dangling = {"user_id": "maya", "edits": [
        {"op": "ATTACH", "concept_id": "maya::c::travel", "fact": {"fact_id": "maya::f::new", "user_id": "maya",
                                                                   "statement": "Likes trains"}},
        {"op": "SUPERSEDE", "new_fact_id": "maya::f::new", "old_fact_id": "maya::f::missing"}]}
    assert error(admin.post("/v1/users/maya/edits", json=dangling), 422)["code"] == "dangling_id"
    assert error(admin.post("/v1/users/maya/edits", json={"user_id": "maya", "edits": [{"op": "EXPLODE"}]}), 422)
    assert error(admin.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]}),
                 400)["code"] == "user_required"
    assert error(admin.get("/v1/nothing-here"), 404)
    # the model server's own limit (max_tokens cap 2048) comes back as the caller's 400, not a 502
    r = admin.post("/v1/users/maya/answer", json={"query": "Suggest a vacation", "max_tokens": 3000})
    assert error(r, 400)["code"] == "model_request_rejected" and "2048" in r.json()["error"]["message"]
    r = admin.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}], "user": "maya",
                                                 "max_tokens": 10**6})
    assert error(r, 422)["param"] == "max_tokens"
    assert {u: fact_count(admin, u) for u in ("maya", "leo")} == before


def test_metrics_health_and_openapi(servers: tuple[ServerProcess, ServerProcess], admin: httpx.Client) -> None:
    admin.post("/v1/users/maya/state", json={"query": "dinner"})
    m = admin.get("/metrics").json()["routes"]
    assert m["POST /v1/users/{user_id}/state"]["count"] >= 1 and m["POST /v1/users/{user_id}/state"]["p50_ms"] > 0
    assert not any("maya" in route for route in m)  # templates, never raw user paths
    assert httpx.get(servers[0].url + "/health").json()["status"] == "ok"
    spec = httpx.get(servers[0].url + "/openapi.json").json()
    assert {"/v1/users/{user_id}/answer", "/v1/chat/completions", "/v1/users/{user_id}/cypher"} <= set(spec["paths"])


def test_oversized_chunked_body_is_413_over_real_http(admin: httpx.Client) -> None:
    """No Content-Length (Transfer-Encoding: chunked): the limit is enforced while reading, still 413."""
    before = fact_count(admin, "maya")

    def body() -> Iterator[bytes]:
        yield b'{"user_id": "maya", "edits": [], "pad": "'
        for _ in range(12):
            yield b"x" * 8192  # 96 KiB > the server's --max-body-bytes 65536
        yield b'"}'

    r = admin.post("/v1/users/maya/edits", content=body(), headers={"Content-Type": "application/json"})
    assert "content-length" not in r.request.headers and r.request.headers.get("transfer-encoding") == "chunked"
    err = error(r, 413)
    assert err["code"] == "request_too_large" and err["message"].startswith("The request body exceeds")
    assert fact_count(admin, "maya") == before
    assert admin.get("/health").status_code == 200  # the server is fine after cutting the request off
