"""`evomem mcp` end to end with the official SDK's own client: over stdio (the client spawns
``python -m evomem.cli mcp``) and over streamable HTTP (a real server process on 127.0.0.1), on both
backends. One agent session adds a conversation, searches, gets a Reasoning State, lists facts, forgets
one and reads its history; and it never reaches another user's memories (a bound server refuses other
users; over HTTP a key bound to one user is refused for others, and no key gets 401)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.servers import REPO, _env, free_port

mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402

DEAD_ANSWER = ["--answer-url", "http://127.0.0.1:9/v1", "--answer-model", "m", "--answer-timeout-s", "2",
               "--answer-retries", "0"]
KEYS = [{"key": "key-maya-0123456789", "name": "maya-agent", "users": ["maya"]},
        {"key": "key-admin-0123456789", "name": "admin"}]


def _cli(*args: str) -> None:
    r = subprocess.run([sys.executable, "-m", "evomem.cli", *args], cwd=str(REPO), env=_env(), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.fixture(params=["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def store_args(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """CLI store options of a store holding the shipped example history (users maya, leo, sara)."""
    if request.param == "embedded":
        args = ["--store", "embedded", "--store-path", str(tmp_path / "store"), "--embedder", "hash"]
    else:
        request.getfixturevalue("_neo4j_store").wipe()
        args = ["--store", "neo4j", "--neo4j-uri", request.getfixturevalue("neo4j_uri"), "--embedder", "hash"]
    _cli("load-example", *args)
    return args


def _data(r: Any) -> dict[str, Any]:
    assert not r.is_error, r.content[0].text if r.content else r
    data: dict[str, Any] = r.structured_content
    return data


def _error(r: Any) -> str:
    assert r.is_error, r.structured_content
    text: str = r.content[0].text
    return text


async def agent_session(client: Client, user: str | None) -> None:
    """What an agent does, on a connection that acts for maya (``user``: the user_id argument to send)."""
    who = {"user_id": user} if user else {}
    names = {t.name for t in (await client.list_tools()).tools}
    assert {"add_session", "add_memory", "search", "reasoning_state", "answer", "list_facts", "fact_history",
            "forget", "purge", "cypher", "reasoning_state_external"} <= names

    added = _data(await client.call_tool("add_session", who | {"turns": [
        {"role": "user", "text": "I started learning the cello last month and I practise every evening."},
        {"role": "assistant", "text": "That is wonderful."}]}))
    assert added["status"] == "committed" and added["facts_added"] >= 1, added
    again = _data(await client.call_tool("add_session", who | {"turns": [
        {"role": "user", "text": "I started learning the cello last month and I practise every evening."},
        {"role": "assistant", "text": "That is wonderful."}]}))
    assert again["status"] == "unchanged"  # the content-derived session id makes it idempotent

    found = _data(await client.call_tool("search", who | {"query": "cello practice"}))
    cello = [i for i in found["items"] if "cello" in i["fact"]["statement"].lower()]
    assert cello and cello[0]["state"]["validity"] == "current" and found["user_id"] == "maya"
    fact_id = cello[0]["fact"]["fact_id"]
    assert all(i["fact"]["user_id"] == "maya" for i in found["items"])

    st = _data(await client.call_tool("reasoning_state", who | {"query": "Suggest a vacation for me"}))
    assert st["reasoning_state"] and st["aliases"] and st["parsed"]["facts"]
    assert set(st["aliases"].values()) <= {f["fact"]["fact_id"] for f in _data(await client.call_tool(
        "list_facts", who | {"include": ["all"], "limit": 500}))["facts"]}

    current = _data(await client.call_tool("list_facts", who))
    assert current["facts"] and {f["state"]["validity"] for f in current["facts"]} == {"current"}
    everything = _data(await client.call_tool("list_facts", who | {"include": ["all"], "limit": 500}))
    assert everything["total"] > current["total"]  # maya's history holds superseded facts, hidden by default

    gone = _data(await client.call_tool("forget", who | {"fact_id": fact_id, "reason": "asked to"}))
    assert gone["status"] == "retracted"
    assert fact_id not in {f["fact"]["fact_id"] for f in _data(await client.call_tool("list_facts", who))["facts"]}
    retracted = _data(await client.call_tool("list_facts", who | {"include": ["retracted"]}))
    assert fact_id in {f["fact"]["fact_id"] for f in retracted["facts"]}
    hist = _data(await client.call_tool("fact_history", who | {"fact_id": fact_id}))
    assert hist["state"]["validity"] == "retracted" and "RETRACT" in {e["op"] for e in hist["edits"]}
    assert "already retracted" in _error(await client.call_tool("forget", who | {"fact_id": fact_id}))

    rows = _data(await client.call_tool("cypher", who | {"query": "MATCH (f:Fact) RETURN f.fact_id AS id"}))
    assert rows["rows"] and all(r["id"].startswith("maya::") for r in rows["rows"])
    assert "read-only" in _error(await client.call_tool("cypher", who | {"query": "MATCH (f:Fact) DETACH DELETE f"}))
    assert "confirm" in _error(await client.call_tool("purge", who | {"confirm": "yes"}))
    assert "could not be reached" in _error(await client.call_tool("answer", who | {"query": "Where should I go?"}))

    ext = _data(await client.call_tool("reasoning_state_external", {"query": "What should I cook tonight?", "items": [
        {"text": "I am vegetarian and I love Thai food.", "id": "other-1", "at": "2024-03-01T00:00:00"}]}))
    assert ext["items"][0]["item_id"] == "other-1" and ext["items"][0]["fact_ids"] and ext["reasoning_state"]
    assert not any(f.startswith("maya::") for f in ext["items"][0]["fact_ids"])  # a scratch store, not maya's

    tree = json.loads((await client.read_resource("evomem://users/maya/concepts")).contents[0].text)
    assert tree["user_id"] == "maya" and tree["root"]["children"]
    prof = json.loads((await client.read_resource("evomem://users/maya/profile")).contents[0].text)
    assert prof["user_id"] == "maya" and prof["counts"]["retracted"] >= 1 and prof["concepts"]

    # never another user's memories: not by argument, not through a resource
    for tool, args in [("search", {"query": "peanuts"}), ("list_facts", {}), ("reasoning_state", {"query": "dinner"}),
                       ("forget", {"fact_id": "leo::f::1"}), ("cypher", {"query": "MATCH (f:Fact) RETURN f"})]:
        assert "may not access user 'leo'" in _error(await client.call_tool(tool, args | {"user_id": "leo"}))
    for uri in ("evomem://users/leo/concepts", "evomem://users/leo/profile"):
        with pytest.raises(Exception, match="may not access user 'leo'"):
            await client.read_resource(uri)


def test_mcp_stdio(store_args: list[str]) -> None:
    params = StdioServerParameters(command=sys.executable, cwd=str(REPO), env=_env(),
                                   args=["-m", "evomem.cli", "mcp", *store_args, "--user", "maya", *DEAD_ANSWER])

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await agent_session(client, None)

    anyio.run(main)


@pytest.fixture
def mcp_http(store_args: list[str], tmp_path: Path) -> Iterator[str]:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps(KEYS))
    port = free_port()
    log = (tmp_path / "mcp-http.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "evomem.cli", "mcp", *store_args, "--transport", "http", "--port",
                             str(port), "--api-keys-file", str(keys), *DEAD_ANSWER], cwd=str(REPO), env=_env(),
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (tmp_path / "mcp-http.log").read_text()[-3000:]
            try:
                if httpx.post(url, json={}, timeout=1.0, trust_env=False).status_code == 401:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "mcp-http.log").read_text()[-3000:]
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


def _http_client(url: str, key: str | None) -> Client:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120.0), trust_env=False)
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120)


def test_mcp_http(mcp_http: str) -> None:
    r = httpx.post(mcp_http, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=10, trust_env=False)
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"

    async def main() -> None:
        async with _http_client(mcp_http, KEYS[0]["key"]) as client:  # a key bound to maya
            await agent_session(client, "maya")
        async with _http_client(mcp_http, KEYS[1]["key"]) as admin:  # a key for every user: leo is reachable
            leo = _data(await admin.call_tool("list_facts", {"user_id": "leo"}))
            assert leo["facts"] and all(f["fact"]["user_id"] == "leo" for f in leo["facts"])
            assert "user_id is required" in _error(await admin.call_tool("search", {"query": "peanuts"}))

    anyio.run(main)
