"""The LLM path over real HTTP on 127.0.0.1: the OpenAI-compatible client against (a) a scripted
OpenAI-compatible server that answers each call as told (valid JSON, malformed JSON, schema violations,
refusals, a stall past the client timeout) and (b) the project's own ``evomem serve-model`` with a tiny
model. Every failure is a clear per-session error or the keep-as-new path, never a partial commit;
LLM calls per session are counted (extract + adjudicate ≤ 2)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from servers import ServerProcess, shared_tiny_model, start_model_server

from memcore.memory import Memory
from graph.embedded import EmbeddedStore
from induction.config import IngestConfig, LLMCallConfig
from induction.pipeline import IngestError, make_ingestor
from induction.session import Session
from llmclients.config import ModelEndpointConfig
from llmclients.embeddings import HashEmbedder
from llmclients.openai_client import OpenAIChatClient


class ScriptedServer:
    """OpenAI-compatible /v1/chat/completions answering call n with ``script[n]``: a dict/str body
    for the message content, ``("sleep", s, content)`` to stall first, or ``("status", code)``."""

    def __init__(self, script: list[Any]):
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self) -> None:  # noqa: N802
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                outer.requests.append(req)
                step = outer.script.pop(0) if outer.script else {"facts": []}
                if isinstance(step, tuple) and step[0] == "status":
                    self._send(step[1], {"error": {"message": "scripted failure", "type": "server_error"}})
                    return
                if isinstance(step, tuple) and step[0] == "sleep":
                    time.sleep(step[1])
                    step = step[2]
                content = step if isinstance(step, str) else json.dumps(step)
                self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "scripted",
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                              "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 1, "completion_tokens": 1}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    s = EmbeddedStore(tmp_path / "store")
    s.setup()
    yield Memory(s, HashEmbedder(256))
    s.close()


def _client(url: str, timeout_s: float = 10.0) -> OpenAIChatClient:
    return OpenAIChatClient(ModelEndpointConfig(kind="openai", base_url=url, model="m", max_retries=0, timeout_s=timeout_s))


def _sess(sid: str, text: str, at: str) -> Session:
    return Session.model_validate({"session_id": sid, "user_id": "maya", "started_at": at,
                                   "turns": [{"role": "user", "text": text}, {"role": "assistant", "text": "Noted."}]})


S1 = _sess("s1", "I really enjoy hiking in the mountains on weekends.", "2025-08-10T18:00:00Z")
S2 = _sess("s2", "These days I no longer enjoy hiking in the mountains on weekends.", "2025-10-12T09:30:00Z")


def _fact(sid: str, statement: str, evidence: str, change: bool = False) -> dict[str, Any]:
    return {"facts": [{"statement": statement, "kind": "preference", "holder": "user", "evidence": evidence,
                       "turn_ids": [f"{sid}:0"], "time": None, "concept": "travel/activities", "change": change}]}


E1 = _fact("s1", "Enjoys hiking in the mountains on weekends", "I really enjoy hiking in the mountains on weekends")
E2 = _fact("s2", "No longer enjoys hiking in the mountains on weekends",
           "I no longer enjoy hiking in the mountains on weekends", change=True)
CFG = IngestConfig(extractor="llm", adjudicator="llm", llm=LLMCallConfig(max_tokens=512))


def test_llm_path_two_calls_per_session_over_http(mem: Memory) -> None:
    srv = ScriptedServer([E1, E2, {"labels": [{"fact": "N1", "label": "supersedes", "targets": ["E1"],
                                               "reason": "no longer enjoys it"}]}])
    try:
        ing = make_ingestor(mem, CFG, _client(srv.url))
        r1, r2 = ing.ingest(S1), ing.ingest(S2)
    finally:
        srv.close()
    assert (r1.llm_calls, r2.llm_calls) == (1, 2)  # nothing to adjudicate in a fresh memory: no call
    assert r2.supersessions == 1 and r2.facts_added == 1 and not r2.adjudication_fallback
    assert srv.requests[0]["response_format"]["type"] == "json_schema"  # structured output asked for
    assert "existing memory" in srv.requests[1]["messages"][-1]["content"].lower()
    assert "Enjoys hiking in the mountains" in srv.requests[1]["messages"][-1]["content"]  # the branch is shown
    snap = mem.store.load_snapshot("maya")
    (rel,) = snap.relations.values()
    assert rel.type == "SUPERSEDES" and rel.reason == "no longer enjoys it"


@pytest.mark.parametrize("reply, kind", [
    ('{"facts": [{"statement": "x"', "malformed_json"),
    ({"facts": [{"statement": "x", "kind": "feeling", "evidence": "x", "turn_ids": ["s1:0"]}]}, "schema"),
    ("I'm sorry, I can't help with that.", "refusal"),
    (("status", 400), "http"),
])
def test_extraction_failures_are_clear_and_write_nothing(mem: Memory, reply: Any, kind: str) -> None:
    srv = ScriptedServer([reply])
    try:
        with pytest.raises(IngestError) as e:
            make_ingestor(mem, CFG, _client(srv.url)).ingest(S1)
    finally:
        srv.close()
    assert e.value.kind == "extraction" and f"({kind})" in str(e.value) and "s1" in str(e.value)
    assert mem.store.users() == []


def test_extraction_timeout_is_a_session_error(mem: Memory) -> None:
    srv = ScriptedServer([("sleep", 2.0, E1)])
    try:
        t0 = time.perf_counter()
        with pytest.raises(IngestError) as e:
            make_ingestor(mem, CFG, _client(srv.url, timeout_s=0.3)).ingest(S1)
    finally:
        srv.close()
    assert "(timeout)" in str(e.value) and time.perf_counter() - t0 < 5 and mem.store.users() == []


@pytest.mark.parametrize("adj_reply", [("sleep", 2.0, {"labels": []}), "not json at all",
                                       {"labels": [{"fact": "N1", "label": "explode"}]}, ("status", 503)])
def test_adjudication_failure_keeps_facts_as_new(mem: Memory, adj_reply: Any) -> None:
    srv = ScriptedServer([E1, E2, adj_reply])
    try:
        ing = make_ingestor(mem, CFG, _client(srv.url, timeout_s=0.5))
        ing.ingest(S1)
        rep = ing.ingest(S2)
    finally:
        srv.close()
    assert rep.status == "committed" and rep.facts_added == 1 and rep.supersessions == 0
    assert rep.adjudication_fallback and rep.llm_calls == 2
    assert len(mem.store.load_snapshot("maya").facts) == 2  # never lost


@pytest.fixture(scope="module")
def tiny_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    d = tmp_path_factory.mktemp("induction-model")
    srv = start_model_server(d, shared_tiny_model(tmp_path_factory.getbasetemp()), served_name="tiny")
    yield srv
    srv.stop()


@pytest.mark.slow
def test_against_the_project_model_server(mem: Memory, tiny_server: ServerProcess) -> None:
    """A real transformers-backed server: the tiny random model writes garbage JSON, which must end as
    one clear per-session error after exactly one extraction call, with nothing written."""
    client = OpenAIChatClient(ModelEndpointConfig(kind="openai", base_url=tiny_server.url + "/v1", model="tiny",
                                                  max_retries=0, timeout_s=60))
    ing = make_ingestor(mem, IngestConfig(extractor="llm", adjudicator="llm", llm=LLMCallConfig(max_tokens=24)), client)
    with pytest.raises(IngestError) as e:
        ing.ingest(S1)
    assert e.value.kind == "extraction" and ("malformed_json" in str(e.value) or "schema" in str(e.value))
    assert mem.store.users() == []
    slow = OpenAIChatClient(ModelEndpointConfig(kind="openai", base_url=tiny_server.url + "/v1", model="tiny",
                                                max_retries=0, timeout_s=0.05))
    with pytest.raises(IngestError, match=r"\(timeout\)"):
        make_ingestor(mem, IngestConfig(extractor="llm", llm=LLMCallConfig(max_tokens=200)), slow).ingest(S1)
