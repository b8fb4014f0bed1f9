"""`evomem mcp` end to end with the official SDK's own client: over stdio (the client spawns
``python -m evomem.cli mcp``) and over streamable HTTP (a real server process on 127.0.0.1), on both
backends. One agent session adds a conversation, searches, gets a Reasoning State, lists facts, forgets
one and reads its history; and it never reaches another user's memories (a bound server refuses other
users; over HTTP a key bound to one user is refused for others, and no key gets 401)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.servers import REPO, FaultServer, _env, free_port, start_model_server

try:
    import mcp  # noqa: F401
except ImportError:  # a skip on a developer's machine without the SDK, a failure under CI (like Neo4j)
    if os.environ.get("CI"):
        pytest.fail("CI must run the MCP tests, but the mcp SDK is not installed (make setup installs it)",
                    pytrace=False)
    pytest.skip("the mcp SDK is not installed (make setup installs it)", allow_module_level=True)
from mcp import Client, StdioServerParameters  # noqa: E402

DEAD_ANSWER = ["--answer-url", "http://127.0.0.1:9/v1", "--answer-model", "m", "--answer-timeout-s", "2",
               "--answer-retries", "0"]
EXAMPLE_USERS = ("maya", "leo", "sara")
KEYS = [{"key": "key-maya-0123456789", "name": "maya-agent", "users": ["maya"]},
        {"key": "key-admin-0123456789", "name": "admin"}]


def _load_example(*store_args: str) -> None:
    """`evomem load-example` in this process: the same command as a subprocess, without a CLI start per test
    (the MCP servers under test are real subprocesses)."""
    from evomem.cli import main

    assert main(["load-example", *store_args]) == 0


@pytest.fixture(params=["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def store_args(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """CLI store options of a store holding the shipped example history (users maya, leo, sara)."""
    if request.param == "embedded":
        args = ["--store", "embedded", "--store-path", str(tmp_path / "store"), "--embedder", "hash"]
    else:
        neo = request.getfixturevalue("_neo4j_store")
        for u in EXAMPLE_USERS:  # only the example's users: the server is shared with other tests
            neo.purge_user(u)
        args = ["--store", "neo4j", "--neo4j-uri", request.getfixturevalue("neo4j_uri"), "--embedder", "hash"]
    _load_example(*args)
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


def _stdio(store_args: list[str], *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, cwd=str(REPO), env=_env(),
                                 args=["-m", "evomem.cli", "mcp", *store_args, *extra])


async def _fact_ids(client: Client, user: str) -> set[str]:
    d = _data(await client.call_tool("list_facts", {"user_id": user, "include": ["all"], "limit": 500}))
    return {f["fact"]["fact_id"] for f in d["facts"]}


def _open_store(store_args: list[str], request: pytest.FixtureRequest) -> Any:
    if "neo4j" in store_args:
        return request.getfixturevalue("_neo4j_store")
    from graph.embedded import EmbeddedStore

    return EmbeddedStore(store_args[store_args.index("--store-path") + 1])


def test_mcp_purge(store_args: list[str], request: pytest.FixtureRequest) -> None:
    """purge over MCP: refused unless confirm is the user id (nothing deleted), then the user is gone —
    from every tool, from the store's counts and (embedded) from the store's bytes — and the other users
    are untouched."""
    others = EXAMPLE_USERS[1:]

    async def main() -> dict[str, set[str]]:
        async with Client(_stdio(store_args, *DEAD_ANSWER), read_timeout_seconds=120) as client:  # unbound
            before = {u: await _fact_ids(client, u) for u in EXAMPLE_USERS}
            assert all(before.values()), before
            for wrong in ("yes", "leo", "MAYA", ""):
                err = _error(await client.call_tool("purge", {"user_id": "maya", "confirm": wrong}))
                assert "confirmation_required" in err and "confirm='maya'" in err, err
            assert await _fact_ids(client, "maya") == before["maya"]  # a refused purge deletes nothing

            out = _data(await client.call_tool("purge", {"user_id": "maya", "confirm": "maya"}))
            assert out["status"] == "purged" and out["user_id"] == "maya", out
            assert out["nodes_removed"] > len(before["maya"])  # facts, and their turns, edits, concepts, sessions

            # maya is gone: every tool and resource answers as for a user that never existed
            for tool, args in [("list_facts", {}), ("search", {"query": "hiking"}), ("reasoning_state", {"query": "trip"}),
                               ("fact_history", {"fact_id": next(iter(before["maya"]))}),
                               ("cypher", {"query": "MATCH (n) RETURN n"}), ("purge", {"confirm": "maya"})]:
                err = _error(await client.call_tool(tool, args | {"user_id": "maya"}))
                assert "user_not_found" in err, (tool, err)
            with pytest.raises(Exception, match="user_not_found"):
                await client.read_resource("evomem://users/maya/profile")
            for u in others:
                assert await _fact_ids(client, u) == before[u], u
            return before

    before = anyio.run(main)
    # the store itself, after the server has exited
    store = _open_store(store_args, request)
    try:
        assert not any(store.counts("maya").values()), store.counts("maya")
        for u in others:
            assert store.counts(u)["Fact"] == len(before[u]) and set(store.load_snapshot(u).facts) == before[u]
    finally:
        if "neo4j" not in store_args:
            store.close()
    if "neo4j" not in store_args:  # purge rewrites the file: no byte of maya's rows is left on disk
        folder = Path(store_args[store_args.index("--store-path") + 1]).parent
        raw = b"".join(f.read_bytes() for f in folder.iterdir() if f.is_file())
        assert b"leo::" in raw and b"maya::" not in raw


ANSWER_QUERY = "Suggest a weekend trip for me."


def _answer_checks(res: dict[str, Any], max_tokens: int) -> None:
    assert res["user_id"] == "maya" and res["request"] == ANSWER_QUERY
    assert res["answer"] and res["finish_reason"] in ("stop", "length"), res
    assert res["evidence"] and all(e["fact_id"].startswith("maya::") for e in res["evidence"])
    assert res["reasoning_state"] and res["context"]
    # the server's own usage figures: it read a prompt holding maya's memory and wrote at most max_tokens
    assert res["tokens"]["answer_prompt"] > res["tokens"]["context"] > 0
    assert 1 <= res["tokens"]["answer_completion"] <= max_tokens
    assert res["timings_ms"]["answer"] > 0


def test_mcp_answer_with_a_scripted_answer_server(store_args: list[str]) -> None:
    """What the answer model is sent and what comes back, over a scripted OpenAI-compatible server
    (tests/servers.py FaultServer in 'ok' mode): maya's evidence and Reasoning State are in the prompt,
    the reply is the tool's answer."""
    with FaultServer("ok", text="Try the coast: a quiet beach weekend with a book.") as srv:
        live = ["--answer-url", srv.url, "--answer-model", "scripted", "--answer-timeout-s", "30",
                "--answer-retries", "0"]

        async def main() -> dict[str, Any]:
            async with Client(_stdio(store_args, "--user", "maya", *live), read_timeout_seconds=120) as client:
                return _data(await client.call_tool("answer", {"query": ANSWER_QUERY, "max_tokens": 40}))

        res = anyio.run(main)
    assert res["answer"] == "Try the coast: a quiet beach weekend with a book." and res["answer_model"] == "scripted"
    [sent] = srv.requests
    assert sent["model"] == "scripted" and sent["max_tokens"] == 40
    prompt = "\n".join(m["content"] for m in sent["messages"])
    assert ANSWER_QUERY in prompt and res["reasoning_state"] in prompt
    assert all(e["statement"] in prompt for e in res["evidence"] if e["in_context"])


@pytest.mark.slow
def test_mcp_answer_with_a_live_smollm2_server(tmp_path: Path) -> None:
    """MCP answer end to end against a real OpenAI-compatible answer server: ``evomem serve-model``
    with SmolLM2-135M on 127.0.0.1 (embedded store; a few seconds per answer on 2 cores)."""
    args = ["--store", "embedded", "--store-path", str(tmp_path / "store"), "--embedder", "hash"]
    _load_example(*args)
    srv = start_model_server(tmp_path, served_name="smollm2", timeout_s=600)
    try:
        live = ["--answer-url", f"{srv.url}/v1", "--answer-model", "smollm2", "--answer-timeout-s", "300",
                "--answer-retries", "0"]

        async def main() -> dict[str, Any]:
            async with Client(_stdio(args, "--user", "maya", *live), read_timeout_seconds=300) as client:
                return _data(await client.call_tool("answer", {"query": ANSWER_QUERY, "max_tokens": 12}))

        res = anyio.run(main)
    finally:
        srv.stop()
    _answer_checks(res, 12)
    assert res["answer_model"] == "smollm2"
