"""A model server that is down, slow, or returns garbage: ``evomem serve`` answers with a typed 5xx in the
OpenAI error shape, names the problem, and leaves the store unchanged. Real HTTP on 127.0.0.1 throughout."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from servers import FaultServer, ServerProcess, free_port, start_api_server

from evomem.examples import history_batches, load_history

KEY = "fault-key-0123456789"
H = {"Authorization": f"Bearer {KEY}"}


def _load(api: ServerProcess) -> None:
    for b in history_batches(load_history()):
        if b.user_id == "maya":
            r = httpx.post(f"{api.url}/v1/users/maya/edits", json=b.model_dump(mode="json"), headers=H, timeout=30)
            assert r.status_code == 200, r.text


def _snapshot(api: ServerProcess) -> str:
    r = httpx.get(f"{api.url}/v1/users/maya/facts", params={"limit": 500}, headers=H, timeout=30)
    assert r.status_code == 200
    return json.dumps(r.json(), sort_keys=True)


@pytest.fixture(scope="module")
def fault() -> Iterator[FaultServer]:
    with FaultServer("garbage") as fs:
        yield fs


@pytest.fixture(scope="module")
def api_on_fault(tmp_path_factory: pytest.TempPathFactory, fault: FaultServer) -> Iterator[ServerProcess]:
    d = tmp_path_factory.mktemp("fault-api")
    api = start_api_server(d, d / "store", fault.url, "fault", api_key=KEY, extra_args=["--answer-timeout-s", "1"])
    _load(api)
    yield api
    api.stop()


@pytest.fixture(scope="module")
def api_on_nothing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    d = tmp_path_factory.mktemp("down-api")
    api = start_api_server(d, d / "store", f"http://127.0.0.1:{free_port()}/v1", "gone", api_key=KEY)
    _load(api)
    yield api
    api.stop()


def _ask(api: ServerProcess, route: str = "answer") -> httpx.Response:
    if route == "chat":
        return httpx.post(f"{api.url}/v1/chat/completions", headers=H, timeout=30,
                          json={"messages": [{"role": "user", "content": "Suggest a vacation"}], "user": "maya"})
    return httpx.post(f"{api.url}/v1/users/maya/{route}", json={"query": "Suggest a vacation for me"}, headers=H,
                      timeout=30)


@pytest.mark.parametrize("route", ["answer", "chat"])
def test_model_server_down_is_502(api_on_nothing: ServerProcess, route: str) -> None:
    before = _snapshot(api_on_nothing)
    r = _ask(api_on_nothing, route)
    assert r.status_code == 502, r.text
    err = r.json()["error"]
    assert err["code"] == "model_server_unreachable" and "cannot reach model server" in err["message"]
    assert _snapshot(api_on_nothing) == before
    # retrieval and the Reasoning State need no model server: they keep working
    assert httpx.post(f"{api_on_nothing.url}/v1/users/maya/state", json={"query": "vacation"}, headers=H).status_code == 200


@pytest.mark.parametrize("mode,status,code", [
    ("garbage", 502, "model_server_bad_response"),
    ("nonjson", 502, "model_server_bad_response"),
    ("error500", 502, "model_server_error"),
    ("slow", 504, "model_server_timeout"),
])
def test_model_server_misbehaving(api_on_fault: ServerProcess, fault: FaultServer, mode: str, status: int,
                                  code: str) -> None:
    fault.mode, fault.delay_s = mode, 3.0
    before = _snapshot(api_on_fault)
    r = _ask(api_on_fault)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and err["type"] in ("upstream_error", "upstream_timeout") and "model server" in err["message"]
    assert _snapshot(api_on_fault) == before


def test_recovers_when_the_model_server_behaves_again(api_on_fault: ServerProcess, fault: FaultServer) -> None:
    fault.mode, fault.text = "ok", "Try a gentle beach holiday."
    r = _ask(api_on_fault)
    assert r.status_code == 200 and r.json()["answer"] == "Try a gentle beach holiday."


def test_serve_refuses_to_start_without_a_key(tmp_path: Path) -> None:
    from evomem.cli import main

    assert main(["serve", "--store-path", str(tmp_path / "s"), "--embedder", "hash"]) == 2
    assert main(["serve", "--store-path", str(tmp_path / "s"), "--embedder", "hash", "--no-auth",
                 "--host", "0.0.0.0"]) == 2


def test_unreachable_model_is_named_by_role_and_url(api_on_nothing: ServerProcess) -> None:
    err = _ask(api_on_nothing).json()["error"]
    assert err["message"].startswith("The answer model 'gone' at http://127.0.0.1:")
    assert "Errno" not in err["message"] and "Traceback" not in err["message"]
