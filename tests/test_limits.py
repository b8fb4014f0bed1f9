"""Bounds every caller meets the same way (issue 43): dates outside years 1000..9000 are a 422 that
says so (never a 500), a session's text is capped alike over HTTP and MCP, /v1/state/external refuses
keys bound to no user and holds each key to a budget of work, and an overflow anywhere is a 400."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient

from graph.models import bounded_instant
from serving.limits import KeyBudget
from serving.openai_wire import ApiError

EXTREMES = ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00", "0999-12-31T00:00:00Z", "9001-01-01T00:00:00Z"]
ADMIN, NOBODY = "limits-admin-0123456789", "limits-nobody-0123456789"


@pytest.fixture
def app(embedded_memory: Any) -> Iterator[tuple[Any, TestClient]]:
    from evomem.examples import load_fixture
    from induction.pipeline import make_ingestor
    from policy.rule import RulePolicy
    from serving.api import ApiDeps, ApiKey, ApiSettings, create_app
    from serving.pipeline import AnswerPipeline
    from serving.server import ingest_with

    load_fixture(embedded_memory)
    ingestor = make_ingestor(embedded_memory)
    deps = ApiDeps(memory=embedded_memory, pipeline=AnswerPipeline(embedded_memory, RulePolicy(), None),  # type: ignore[arg-type]
                   settings=ApiSettings(keys=[ApiKey(key=ADMIN), ApiKey(key=NOBODY, users=[])], max_session_chars=5000,
                                        external_budget_s=0.001, external_window_s=600),
                   ingest=ingest_with(ingestor), ingestor=ingestor)
    with TestClient(create_app(deps), headers={"Authorization": f"Bearer {ADMIN}"}, raise_server_exceptions=False) as c:
        yield deps, c


@pytest.mark.parametrize("when", EXTREMES)
def test_dates_out_of_range_are_422_on_every_route(app: tuple[Any, TestClient], when: str) -> None:
    _, c = app
    answers = [c.post("/v1/users/maya/search", json={"query": "vacation", "as_of": when}),
               c.post("/v1/users/maya/state", json={"query": "vacation", "known_at": when}),
               c.get("/v1/users/maya/facts", params={"as_of": when}),
               c.get("/v1/users/maya/profile", params={"known_at": when}),
               c.post("/v1/users/maya/sessions", json={"session_id": "late", "turns": [
                   {"role": "user", "text": "I like tea.", "at": when}]})]
    for r in answers:
        assert r.status_code == 422, (r.request.url, r.text)
        assert "between the years 1000 and 9000" in r.json()["error"]["message"]
    ok = c.post("/v1/users/maya/search", json={"query": "vacation", "as_of": "2026-12-06T10:00:00+14:00"})
    assert ok.status_code == 200


def test_bounded_instant_table() -> None:
    for text, ok in [("1000-01-01T00:00:00Z", True), ("9000-12-31T23:00:00Z", True), ("2026-12-06", True),
                     ("9999-12-31T23:59:59-14:00", False), ("0001-01-01T00:00:00+14:00", False)]:
        v = datetime.fromisoformat(text)
        if ok:
            assert bounded_instant(v) is v
        else:
            with pytest.raises(ValueError, match="between the years"):
                bounded_instant(v)


def test_overflow_anywhere_is_a_400() -> None:
    from serving.errors import domain_error

    a = domain_error(OverflowError("date value out of range"))
    assert a is not None and a.status == 400 and a.code == "out_of_range"


def test_session_text_cap_is_the_same_on_http_and_mcp(app: tuple[Any, TestClient]) -> None:
    from mcp import Client

    from serving.mcp_server import build_mcp_server

    deps, c = app
    big = "I like long walks by the river. " * 200  # 6,400 characters > 5,000
    r = c.post("/v1/users/maya/sessions", json={"session_id": "big", "turns": [{"role": "user", "text": big}]})
    assert r.status_code == 413 and r.json()["error"]["code"] == "session_too_large"
    http_msg = r.json()["error"]["message"]

    async def mcp_call() -> Any:
        async with Client(build_mcp_server(deps)) as client:
            return await client.call_tool("add_memory", {"text": big, "user_id": "maya"})

    res = anyio.run(mcp_call)
    assert res.is_error and http_msg in res.content[0].text and "HTTP 413" in res.content[0].text
    assert "big" not in deps.memory.store.load_snapshot("maya").sessions


def test_external_state_refuses_unbound_keys_and_holds_a_budget(app: tuple[Any, TestClient]) -> None:
    _, c = app
    body = {"query": "what should I drink", "items": [{"text": "I love coffee."}, {"text": "I switched to tea."}]}
    r = c.post("/v1/state/external", json=body, headers={"Authorization": f"Bearer {NOBODY}"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "key_not_bound"
    assert c.post("/v1/state/external", json=body).status_code == 200
    r = c.post("/v1/state/external", json=body)  # the 0.001 s budget is spent
    assert r.status_code == 429 and r.json()["error"]["code"] == "budget_exhausted", r.text


def test_key_budget_table() -> None:
    b = KeyBudget(budget_s=0.05, window_s=0.2)
    with b.spend("k"):
        with pytest.raises(ApiError) as busy:
            with b.spend("k"):
                pass
        assert busy.value.code == "budget_busy"
        with b.spend("other"):  # other keys are not held up
            pass
        import time

        time.sleep(0.06)
    with pytest.raises(ApiError) as spent:
        with b.spend("k"):
            pass
    assert spent.value.status == 429 and "retry in" in spent.value.message
    import time

    time.sleep(0.25)  # the window moved on
    with b.spend("k"):
        pass
