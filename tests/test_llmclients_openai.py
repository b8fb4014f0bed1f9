"""The OpenAI-compatible client against a real ``evomem serve-model`` subprocess (tiny offline model)
and against a fault server; plus the request-building and retry logic in isolation."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from servers import FaultServer, ServerProcess, free_port, shared_tiny_model, start_model_server

from llmclients.chat import ChatError, ChatMessage
from llmclients.config import ModelEndpointConfig, ModelsConfig
from llmclients.openai_client import (
    OpenAIChatClient,
    build_body,
    parse_completion,
    structured_fields,
)
from llmclients.structured import complete_json, extract_json

KEY = "test-model-key"
MSG = [ChatMessage(role="user", content="Say hello.")]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def client(url: str, **kw: object) -> OpenAIChatClient:
    cfg = {"kind": "openai", "base_url": url, "model": "tiny", "api_key": KEY, "max_retries": 0, "timeout_s": 30.0}
    cfg.update(kw)
    return OpenAIChatClient(ModelEndpointConfig(**cfg))


@pytest.fixture(scope="module")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    d = tmp_path_factory.mktemp("model")
    srv = start_model_server(d, shared_tiny_model(tmp_path_factory.getbasetemp()), served_name="tiny", api_key=KEY)
    yield srv
    srv.stop()


# -- against the real server --

def test_plain_completion_and_models(model_server: ServerProcess) -> None:
    c = client(model_server.url + "/v1")
    assert c.models() == ["tiny"]
    res = c.complete(MSG, max_tokens=7, logprobs=True)
    assert res.model == "tiny" and res.usage.completion_tokens >= 1 and res.usage.prompt_tokens > 3
    assert res.finish_reason in ("stop", "length")
    assert res.logprobs is not None and len(res.logprobs) == res.usage.completion_tokens
    assert all(lp <= 0.0 for lp in res.logprobs)


def test_models_endpoint_wire_format(model_server: ServerProcess) -> None:
    """GET /v1/models as vLLM answers it (the OpenAI list shape), behind the same key as completions."""
    url = model_server.url + "/v1/models"
    assert httpx.get(url).status_code == 401
    r = httpx.get(url, headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "list" and [m["id"] for m in body["data"]] == ["tiny"]
    m = body["data"][0]
    assert m["object"] == "model" and m["owned_by"] == "evomem" and isinstance(m["created"], int)
    assert isinstance(m["max_model_len"], int) and m["max_model_len"] > 0 and m["root"].endswith("tiny-model")


@pytest.mark.parametrize("mode", ["response_format", "structured_outputs", "guided_json"])
def test_json_schema_request_in_each_dialect(model_server: ServerProcess, mode: str) -> None:
    # The tiny random model cannot write valid JSON; what we check is that every dialect reaches the
    # engine's JSON path (prefilled '{'), and that complete_json then refuses the invalid output.
    c = client(model_server.url + "/v1", structured_output=mode)
    res = c.complete(MSG, max_tokens=6, json_schema=SCHEMA)
    assert res.text.startswith("{")
    from pydantic import BaseModel

    class City(BaseModel):
        city: str

    with pytest.raises(ChatError) as e:
        complete_json(c, MSG, City, max_tokens=6)
    assert e.value.kind == "invalid_response" and "City" in str(e.value)


def test_timeout_path(model_server: ServerProcess) -> None:
    c = client(model_server.url + "/v1", timeout_s=0.05, max_retries=1, backoff_s=0.01, backoff_max_s=0.02)
    t0 = time.perf_counter()
    with pytest.raises(ChatError) as e:
        c.complete(MSG, max_tokens=800)
    assert e.value.kind == "timeout" and c.attempts_last_call == 2
    assert "timed out" in str(e.value) and time.perf_counter() - t0 < 10


def test_server_down_path_retries_with_backoff() -> None:
    port = free_port()  # nothing listens here
    c = client(f"http://127.0.0.1:{port}/v1", max_retries=2, backoff_s=0.05, backoff_max_s=1.0)
    t0 = time.perf_counter()
    with pytest.raises(ChatError) as e:
        c.complete(MSG)
    elapsed = time.perf_counter() - t0
    assert e.value.kind == "connection" and c.attempts_last_call == 3
    assert "after 3 attempts" in str(e.value) and f"127.0.0.1:{port}" in str(e.value)
    assert elapsed >= 0.05 * 0.5 + 0.1 * 0.5  # two backoff sleeps (jittered to >= half)


def test_wrong_key_unknown_model_and_bad_requests(model_server: ServerProcess) -> None:
    url = model_server.url + "/v1"
    with pytest.raises(ChatError) as e:
        client(url, api_key="nope-nope").complete(MSG)
    assert e.value.kind == "http" and "401" in str(e.value)
    with pytest.raises(ChatError) as e:
        client(url, model="llama-70b").complete(MSG)
    assert "404" in str(e.value) and "llama-70b" in str(e.value)
    h = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    r = httpx.post(url + "/chat/completions", content=b'{"messages": [', headers=h)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
    r = httpx.post(url + "/chat/completions", json={"messages": []}, headers=h)
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages"
    r = httpx.post(url + "/chat/completions", json={"messages": [{"role": "user", "content": "x"}], "max_tokens": 10**6},
                   headers=h)
    assert r.status_code == 400 and "cap" in r.json()["error"]["message"]
    r = httpx.post(url + "/chat/completions", content=b"x" * (5 * 1024 * 1024), headers=h)
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
    assert httpx.get(model_server.url + "/health").json()["status"] == "ok"  # no key needed for health


def test_streaming_and_the_openai_package(model_server: ServerProcess) -> None:
    import openai  # a dev dependency (pyproject [dev]): missing is a failure, not a skip
    oc = openai.OpenAI(base_url=model_server.url + "/v1", api_key=KEY, max_retries=0)
    done = oc.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=5)
    assert done.choices[0].finish_reason in ("stop", "length") and done.usage.completion_tokens >= 1
    parts = list(oc.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=5,
                                            stream=True))
    assert parts[0].choices[0].delta.role == "assistant" and parts[-1].choices[0].finish_reason in ("stop", "length")


# -- against a misbehaving server --

@pytest.mark.parametrize("mode,kind", [("garbage", "invalid_response"), ("nonjson", "invalid_response"),
                                       ("error500", "http")])
def test_garbage_and_errors_become_typed_chat_errors(mode: str, kind: str) -> None:
    with FaultServer(mode) as fs:
        c = client(fs.url, max_retries=1, backoff_s=0.0, backoff_max_s=0.0)
        with pytest.raises(ChatError) as e:
            c.complete(MSG)
        assert e.value.kind == kind
        assert fs.hits == (2 if mode == "error500" else 1)  # only 5xx is retried


def test_slow_server_times_out_then_succeeds_with_more_time() -> None:
    with FaultServer("slow", delay_s=0.6, text="late but fine") as fs:
        with pytest.raises(ChatError) as e:
            client(fs.url, timeout_s=0.2).complete(MSG)
        assert e.value.kind == "timeout"
        assert client(fs.url, timeout_s=5).complete(MSG).text == "late but fine"


# -- request building and parsing, in isolation --

def test_structured_fields_dialects() -> None:
    assert structured_fields(SCHEMA, "response_format")["response_format"]["json_schema"]["schema"] == SCHEMA
    assert structured_fields(SCHEMA, "structured_outputs") == {"structured_outputs": {"json": SCHEMA}}
    assert structured_fields(SCHEMA, "guided_json") == {"guided_json": SCHEMA}


def test_build_body_carries_options() -> None:
    cfg = ModelEndpointConfig(kind="openai", base_url="http://127.0.0.1:1/v1", model="qwen3-8b",
                              chat_template_kwargs={"enable_thinking": False}, extra_body={"top_p": 0.9})
    body = build_body(cfg, MSG, max_tokens=9, temperature=0.5, json_schema=SCHEMA, stop=["\n"], logprobs=True)
    assert body["model"] == "qwen3-8b" and body["max_tokens"] == 9 and body["stop"] == ["\n"] and body["logprobs"]
    assert body["chat_template_kwargs"] == {"enable_thinking": False} and body["top_p"] == 0.9
    assert body["response_format"]["type"] == "json_schema"
    assert "response_format" not in build_body(cfg, MSG, max_tokens=1, temperature=0, json_schema=None, stop=None,
                                               logprobs=False)


def test_parse_completion_rejects_non_completions() -> None:
    ok = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop",
                       "logprobs": {"content": [{"logprob": -0.5}]}}], "usage": {"prompt_tokens": 3}}
    res = parse_completion(ok, 1.0)
    assert res.text == "hi" and res.logprobs == [-0.5] and res.usage.prompt_tokens == 3
    for bad in ({"choices": []}, {"choices": [{"message": {"content": None}}]}, {"x": 1}, ["a"],
                {"choices": [{"message": {"content": 5}}]}):
        with pytest.raises(ChatError) as e:
            parse_completion(bad, 1.0)
        assert e.value.kind == "invalid_response"


def test_retry_policy_with_a_scripted_transport() -> None:
    statuses = [503, 429, 200]
    seen: list[int] = []
    sleeps: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        s = statuses[len(seen)]
        seen.append(s)
        if s != 200:
            return httpx.Response(s, json={"error": {"message": "busy"}})
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]})

    cfg = ModelEndpointConfig(kind="openai", base_url="http://127.0.0.1:1/v1", model="m", max_retries=3,
                              backoff_s=0.1, backoff_max_s=0.3)
    c = OpenAIChatClient(cfg, transport=httpx.MockTransport(handler), sleep=sleeps.append)
    assert c.complete(MSG).text == "ok" and seen == [503, 429, 200]
    assert len(sleeps) == 2 and 0.05 <= sleeps[0] <= 0.1 and 0.1 <= sleeps[1] <= 0.2  # doubling, jittered

    seen.clear()
    statuses[:] = [400]
    c2 = OpenAIChatClient(cfg, transport=httpx.MockTransport(handler), sleep=sleeps.append)
    with pytest.raises(ChatError) as e:
        c2.complete(MSG)
    assert seen == [400] and "busy" in str(e.value)  # a 4xx is the caller's fault: never retried


def test_extract_json_finds_the_first_value() -> None:
    assert extract_json('Sure! ```json\n{"a": [1, 2]}\n``` done') == {"a": [1, 2]}
    with pytest.raises(ValueError):
        extract_json("no json here {oops")


def test_endpoint_config_validation_and_env() -> None:
    with pytest.raises(ValueError, match="base_url"):
        ModelEndpointConfig(connection="openai", model="m")
    with pytest.raises(ValueError, match="model"):
        ModelEndpointConfig(connection="openai", base_url="http://127.0.0.1:8000/v1")
    with pytest.raises(ValueError, match="rule"):
        ModelsConfig(answer=ModelEndpointConfig(policy_kind="rule"))
    with pytest.raises(ValueError, match="shipped"):
        ModelsConfig(extraction=ModelEndpointConfig(policy_kind="shipped"))
    with pytest.raises(ValueError, match="connection"):
        ModelEndpointConfig.model_validate({"connection": "rule"})  # a policy kind is no connection kind
    m = ModelsConfig.from_env({"EVOMEM_ANSWER_URL": "http://127.0.0.1:8000/v1", "EVOMEM_ANSWER_MODEL": "qwen3-8b",
                               "EVOMEM_ANSWER_CHAT_TEMPLATE_KWARGS": json.dumps({"enable_thinking": False})})
    assert (m.answer.connection, m.answer.policy_kind) == ("openai", "model")
    assert m.answer.chat_template_kwargs == {"enable_thinking": False}
    # the learned policy by default
    assert m.policy.policy_kind == "shipped" and ModelsConfig().policy.policy_kind == "shipped"
    assert ModelsConfig.from_env({"EVOMEM_POLICY_KIND": "rule"}).policy.policy_kind == "rule"
    local = ModelsConfig.from_env({}, answer={"model_path": "/x", "base_url": None})
    assert local.answer.connection == "local" and local.answer.model_path == "/x"
    # CLI options left unset arrive as None and must not wipe what the environment says
    env = {"EVOMEM_POLICY_URL": "http://127.0.0.1:8001/v1", "EVOMEM_POLICY_MODEL": "policy"}
    both = ModelsConfig.from_env(env, policy={"kind": None, "base_url": None, "model": None, "model_path": None})
    assert (both.policy.connection, both.policy.policy_kind) == ("openai", "model")
    assert both.policy.base_url == env["EVOMEM_POLICY_URL"]
    assert ModelsConfig.from_env(env, policy={"model": "other"}).policy.model == "other"  # given values win
    # the new variable names the connection alone; the policy kind stays the default
    srv = ModelsConfig.from_env({"EVOMEM_POLICY_CONNECTION": "local", "EVOMEM_POLICY_PATH": "/ckpt",
                                 "EVOMEM_POLICY_KIND": "model"})
    assert (srv.policy.connection, srv.policy.policy_kind, srv.policy.model_path) == ("local", "model", "/ckpt")


@pytest.mark.parametrize("old, connection, policy_kind", [
    ("openai", "openai", "model"), ("local", "local", "model"), ("rule", "local", "rule"), ("shipped", "local", "shipped")])
def test_configs_with_the_old_single_kind_still_load(old: str, connection: str, policy_kind: str) -> None:
    """Before connection and policy kind were split one ``kind`` held both; an old config, environment
    (EVOMEM_POLICY_KIND=local) or preset maps onto the two fields."""
    d = {"kind": old, "base_url": "http://127.0.0.1:8000/v1", "model": "m"}
    cfg = ModelEndpointConfig.model_validate(d)
    assert (cfg.connection, cfg.policy_kind) == (connection, policy_kind)
    assert "kind" not in cfg.model_dump()  # it is written back in the new form
    env = ModelsConfig.from_env({"EVOMEM_POLICY_KIND": old, "EVOMEM_POLICY_URL": "http://127.0.0.1:8001/v1",
                                 "EVOMEM_POLICY_MODEL": "policy"}).policy
    # the URL decides the connection unless the old kind named one
    assert (env.connection, env.policy_kind) == ("local" if old == "local" else "openai", policy_kind)
    with pytest.raises(ValueError, match="contradicts"):
        ModelEndpointConfig.model_validate({**d, "connection": "local" if old == "openai" else "openai",
                                            "policy_kind": "rule" if old in ("openai", "local") else "model"})


def test_the_presets_name_connection_and_policy_kind_apart() -> None:
    """The shipped presets use the split fields, and one written with the old ``kind`` loads the same."""
    import yaml

    from policy.config import TrainConfig

    root = Path(__file__).resolve().parent.parent / "configs"
    for name in ("grpo-qwen3-4b.yaml", "grpo-qwen3-4b-multigpu.yaml"):
        raw = yaml.safe_load((root / name).read_text())
        assert raw["answer"]["endpoint"]["connection"] == "openai" and "kind" not in raw["answer"]["endpoint"]
        new = TrainConfig.model_validate(raw)
        raw["answer"]["endpoint"]["kind"] = raw["answer"]["endpoint"].pop("connection")
        assert TrainConfig.model_validate(raw) == new and new.answer.endpoint is not None
        assert new.answer.endpoint.connection == "openai"


def test_client_config_for_vllm_differs_only_in_url_and_name(tmp_path: Path) -> None:
    # The bar "the same client code pointed at vLLM needs only a different base URL": the two configs
    # below build the same client class and send the same request shape.
    cpu = ModelEndpointConfig(kind="openai", base_url="http://127.0.0.1:8000/v1", model="smollm2-135m-instruct")
    gpu = cpu.model_copy(update={"base_url": "http://10.0.0.5:8000/v1", "model": "qwen3-8b"})
    b1 = build_body(cpu, MSG, max_tokens=5, temperature=0, json_schema=SCHEMA, stop=None, logprobs=False)
    b2 = build_body(gpu, MSG, max_tokens=5, temperature=0, json_schema=SCHEMA, stop=None, logprobs=False)
    assert {k for k in b1 if b1[k] != b2[k]} == {"model"}
