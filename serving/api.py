"""The HTTP API (FastAPI): ingest, facts with relational states, search/explain, Reasoning State,
answer, forget/purge, read-only Cypher, health, metrics — and an OpenAI-compatible
``/v1/chat/completions`` that injects the user's memory, so agent clients can point at it unchanged.

Security model: one or more API keys per deployment (``Authorization: Bearer``); a key may be bound
to a set of users, and every route that names a user checks the binding (403 otherwise). Errors
always have the OpenAI shape ``{"error": {"message", "type", "code"}}``. Reads never write; writes
go through ``Memory.apply`` (one atomic batch) or the injected ingest function (atomic per session),
so a failed request leaves the store as it was.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from graph.cypher_guard import CypherRefused
from graph.edits import EditBatch, EditRejected, Retract
from graph.models import Fact, RelationalState, Turn, utcnow
from graph.render import render_context
from graph.rules import derive_state
from graph.store import ConcurrentModification, ReadOnlyViolation, StoreError, UnknownUser
from llmclients.chat import ChatError
from llmclients.local_engine import ContextTooLong
from llmclients.openai_client import ChatHTTPError
from policy.state import ReasoningState, StateParseError
from serving.cypher_route import CypherGate, cypher_body
from serving.model_server import (ApiError, BodyLimitMiddleware, ChatCompletionRequest, Metrics, bearer_ok,
                                  completion_body, error_body, install_error_handlers, install_metrics, sse_chunks)
from serving.pipeline import AnswerPipeline, AnswerResult
from serving.prompts import known_prompts

IngestFn = Callable[[str, dict[str, Any]], dict[str, Any]]
USER_HEADER = "X-EvoMem-User"


class ApiKey(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str = Field(min_length=8, description="The bearer token.")
    name: str = Field(default="default", description="Label for logs and metrics (never the key itself).")
    users: list[str] | None = Field(default=None, description="Users this key may act for (None = every user).")

    def allows(self, user_id: str) -> bool:
        return self.users is None or user_id in self.users


class ApiSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keys: list[ApiKey] = Field(default_factory=list, description="Accepted keys.")
    require_auth: bool = Field(default=True, description="False only for loopback experiments (evomem serve --no-auth).")
    max_body_bytes: int = Field(default=2 * 1024 * 1024, ge=1024, description="Larger bodies are refused with 413.")
    max_cypher_rows: int = Field(default=1000, ge=1, description="Rows returned by /cypher at most.")
    max_page: int = Field(default=500, ge=1, description="Largest 'limit' for fact listings.")


def load_api_keys(single: str | None, path: str | None) -> list[ApiKey]:
    """``single``: one key for every user. ``path``: YAML/JSON list of {key, name?, users?}."""
    keys = [ApiKey(key=single, name="deployment")] if single else []
    if path:
        import yaml

        data = yaml.safe_load(Path(path).read_text())
        data = data.get("keys", data) if isinstance(data, dict) else data
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a list of {{key, name, users}}")
        keys += [ApiKey.model_validate(d) for d in data]
    return keys


# -- request / response bodies --

_PROMPT_NAME = re.compile(r"^[a-z0-9_-]{1,40}$")


class QueryBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=4000, description="The request.")
    k: int | None = Field(default=None, ge=1, le=200, description="Seed facts.")
    traverse: bool | None = Field(default=None, description="Follow SUPERSEDES/CONFLICTS_WITH (ablation when false).")
    relational_states: bool | None = Field(default=None, description="Show relational states (ablation when false).")


class SearchBody(QueryBody):
    budget: int | None = Field(default=None, ge=1, le=100_000, description="Token budget of the rendered context.")


class AnswerBody(QueryBody):
    reasoning_state: bool | None = Field(default=None, description="Use a Reasoning State (ablation when false).")
    prompt: str | None = Field(default=None, description="Answer prompt name (default, locomo, memsyco).")
    choices: list[str] | None = Field(default=None, max_length=26, description="Answer options, if any.")
    max_tokens: int | None = Field(default=None, ge=1, le=4096, description="Answer length cap.")

    @field_validator("prompt")
    @classmethod
    def _known_prompt(cls, v: str | None) -> str | None:
        # names only: a path here would let a caller read arbitrary YAML files on the server
        if v is not None and (not _PROMPT_NAME.match(v) or v not in known_prompts()):
            raise ValueError(f"unknown prompt {v!r} (known: {', '.join(known_prompts())})")
        return v


class ExplainBody(AnswerBody):
    answer: bool = Field(default=False, description="Also run the answer model (its timing then appears too).")


class ForgetBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(default="", max_length=1000, description="Why the user asked to forget it.")


class CypherBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=10_000, description="Read-only Cypher (MATCH ... RETURN ...).")
    params: dict[str, Any] = Field(default_factory=dict, description="Query parameters.")


class FactWithState(BaseModel):
    fact: Fact
    state: RelationalState


class FactDetail(FactWithState):
    source_turns: list[Turn]


class FactList(BaseModel):
    user_id: str
    total: int
    facts: list[FactWithState]


class StateOut(BaseModel):
    user_id: str
    request: str
    policy: str
    reasoning_state: str | None
    parsed: ReasoningState | None
    fallback: str | None
    aliases: dict[str, str] = Field(description="alias -> fact id")
    timings_ms: dict[str, float]


@dataclass
class ApiDeps:
    memory: Any  # evomem.memory.Memory (typed loosely: serving sits below the facade)
    pipeline: AnswerPipeline
    settings: ApiSettings = field(default_factory=ApiSettings)
    ingest: IngestFn | None = None
    metrics: Metrics = field(default_factory=Metrics)


def facts_with_states(store: Any, user_id: str) -> list[FactWithState]:
    """Every fact of the user with its derived relational state (newest first)."""
    snap = store.load_snapshot(user_id)
    rels: dict[str, list[Any]] = defaultdict(list)
    for r in snap.relations.values():
        rels[r.src].append(r)
        rels[r.dst].append(r)
    now = utcnow()
    out = [FactWithState(fact=f, state=derive_state(f, rels[fid], snap.facts,
                                                    snap.concept_path(snap.fact_concept[fid])
                                                    if fid in snap.fact_concept else (), now))
           for fid, f in snap.facts.items()]
    out.sort(key=lambda x: ((x.fact.observed_at or x.fact.recorded_at or utcnow()).isoformat(), x.fact.fact_id),
             reverse=True)
    return out


def _chat_error(e: ChatError) -> ApiError:
    if isinstance(e, ChatHTTPError) and e.status in (400, 413, 422):
        # the model server refused this request's size or parameters: the caller can fix that
        return ApiError(400, f"the model server refused the request: {e}", "model_request_rejected")
    if e.kind == "timeout":
        return ApiError(504, f"model server timed out: {e}", "model_server_timeout")
    code = {"connection": "model_server_unreachable", "invalid_response": "model_server_bad_response"}.get(
        e.kind, "model_server_error")
    return ApiError(502, f"model server failed: {e}", code)


def create_app(deps: ApiDeps) -> Any:
    from fastapi import Body, Depends, FastAPI, Header, Query, Request
    from fastapi.responses import JSONResponse, StreamingResponse

    app = FastAPI(title="EvoMemState API", version="1",
                  description="Personal long-term memory with relational states and Reasoning States.")
    install_error_handlers(app, validation_status=422)
    mem, pipe, cfg = deps.memory, deps.pipeline, deps.settings

    def _err(status: int, message: str, code: str) -> JSONResponse:
        return JSONResponse(error_body(status, message, code), status_code=status)

    @app.exception_handler(UnknownUser)
    async def _unknown_user(_: Request, e: UnknownUser) -> JSONResponse:
        return _err(404, str(e.args[0]) if e.args else "unknown user", "user_not_found")  # str(KeyError) adds quotes

    @app.exception_handler(EditRejected)
    async def _rejected(_: Request, e: EditRejected) -> JSONResponse:
        return _err(422, f"edit rejected, nothing was written: {e}", e.rule)

    @app.exception_handler(CypherRefused)
    async def _cypher(_: Request, e: CypherRefused) -> JSONResponse:
        return _err(400, f"cypher refused: {e}", "cypher_refused")

    @app.exception_handler(ReadOnlyViolation)
    async def _ro(_: Request, e: ReadOnlyViolation) -> JSONResponse:
        return _err(400, f"cypher refused: {e}", "cypher_not_read_only")

    @app.exception_handler(ChatError)
    async def _chat(_: Request, e: ChatError) -> JSONResponse:
        a = _chat_error(e)
        return _err(a.status, a.message, a.code or "model_server_error")

    @app.exception_handler(ContextTooLong)
    async def _too_long(_: Request, e: ContextTooLong) -> JSONResponse:
        return _err(400, str(e), "context_length_exceeded")

    @app.exception_handler(StateParseError)
    async def _state(_: Request, e: StateParseError) -> JSONResponse:
        return _err(502, f"the policy model returned an invalid Reasoning State: {e}", "policy_output_invalid")

    @app.exception_handler(ConcurrentModification)
    async def _conc(_: Request, e: ConcurrentModification) -> JSONResponse:
        return _err(409, f"concurrent update of this user's memory, retry: {e}", "concurrent_modification")

    @app.exception_handler(StoreError)
    async def _store(_: Request, e: StoreError) -> JSONResponse:
        return _err(503, f"store error: {e}", "store_error")

    @app.exception_handler(ValidationError)
    async def _invalid(_: Request, e: ValidationError) -> JSONResponse:
        return _err(422, f"invalid value: {e.errors()[0].get('msg')}", "validation_error")

    # -- auth: every route below depends on it --
    def principal(authorization: str | None = Header(default=None)) -> ApiKey | None:
        if not cfg.require_auth:
            return None
        for k in cfg.keys:
            if bearer_ok(authorization, [k.key]):
                return k
        raise ApiError(401, "missing or invalid API key (send 'Authorization: Bearer <key>')", "invalid_api_key")

    def user_scope(user_id: str, who: ApiKey | None) -> str:
        if who is not None and not who.allows(user_id):
            raise ApiError(403, f"this API key may not access user {user_id!r}", "user_not_allowed")
        return user_id

    def scoped(user_id: str, who: ApiKey | None = Depends(principal)) -> str:
        return user_scope(user_id, who)

    def existing(user_id: str = Depends(scoped)) -> str:
        mem.require_user(user_id)
        return user_id

    # -- operations --
    @app.get("/health", tags=["ops"])
    def health() -> dict[str, Any]:
        return {"status": "ok", "store": getattr(mem.store, "name", "?"), "policy": getattr(pipe.policy, "name", "?"),
                "answer_model": getattr(pipe.answer_model, "name", "?"), "ingest": deps.ingest is not None}

    @app.get("/metrics", tags=["ops"])
    def metrics(_: ApiKey | None = Depends(principal)) -> dict[str, Any]:
        return deps.metrics.snapshot()

    @app.get("/v1/users", tags=["users"])
    def users(who: ApiKey | None = Depends(principal)) -> dict[str, list[str]]:
        return {"users": [u for u in mem.store.users() if who is None or who.allows(u)]}

    # -- writes --
    @app.post("/v1/users/{user_id}/sessions", tags=["ingest"])
    def ingest_session(session: dict[str, Any] = Body(...), user_id: str = Depends(scoped)) -> dict[str, Any]:
        if deps.ingest is None:
            raise ApiError(501, "session ingestion is not configured on this server; POST an edit batch to "
                           f"/v1/users/{user_id}/edits instead", "ingest_not_configured")
        if session.get("user_id") not in (None, user_id):
            raise ApiError(400, f"session.user_id {session.get('user_id')!r} does not match the path user {user_id!r}",
                           "user_mismatch", "user_id")
        try:
            return deps.ingest(user_id, session)
        except ChatError as e:
            raise _chat_error(e) from e
        except ValueError as e:  # malformed session (SessionFormatError) or a rejected batch
            raise ApiError(422, f"session not ingested, nothing was written: {e}", getattr(e, "rule", None)
                           or "invalid_session") from e
        except RuntimeError as e:  # induction.IngestError: conflict / extraction / validation
            kind = getattr(e, "kind", None)
            if kind is None:
                raise
            status = 409 if kind in ("session_conflict", "turn_conflict", "concurrency") else 422
            if isinstance(e.__cause__, ChatError):
                raise _chat_error(e.__cause__) from e
            raise ApiError(status, f"session not ingested, nothing was written: {e}", kind) from e

    @app.post("/v1/users/{user_id}/edits", tags=["ingest"])
    def apply_edits(batch: EditBatch, user_id: str = Depends(scoped)) -> dict[str, Any]:
        if batch.user_id != user_id:
            raise ApiError(400, f"batch.user_id {batch.user_id!r} does not match the path user {user_id!r}",
                           "user_mismatch", "user_id")
        snap, cs = mem.apply(batch)
        return {"user_id": user_id, "version": cs.new_version, "facts_created": [f.fact_id for f in cs.facts_create],
                "relations_added": len(cs.relations_add), "concepts_upserted": len(cs.concepts_upsert),
                "edit_ids": [e.edit_id for e in cs.edits_upsert]}

    @app.post("/v1/users/{user_id}/facts/{fact_id}/forget", tags=["forget"])
    def forget(fact_id: str, body: ForgetBody | None = None, user_id: str = Depends(existing)) -> dict[str, Any]:
        snap = mem.store.load_snapshot(user_id)
        f = snap.facts.get(fact_id)
        if f is None:
            raise ApiError(404, f"user {user_id!r} has no fact {fact_id!r}", "fact_not_found")
        if f.retracted_at is not None:
            raise ApiError(409, f"fact {fact_id!r} is already retracted", "already_retracted")
        _, cs = mem.apply(EditBatch(user_id=user_id, edits=[Retract(fact_id=fact_id, reason=(body.reason if body else ""))]))
        return {"user_id": user_id, "fact_id": fact_id, "status": "retracted", "version": cs.new_version}

    @app.delete("/v1/users/{user_id}", tags=["forget"])
    def purge(confirm: bool = Query(default=False, description="Must be true: purge is irreversible."),
              user_id: str = Depends(existing)) -> dict[str, Any]:
        if not confirm:
            raise ApiError(400, "purge deletes every fact, turn, embedding and edit of the user irreversibly; "
                           "repeat with ?confirm=true", "confirmation_required", "confirm")
        return {"user_id": user_id, "status": "purged", "nodes_removed": mem.store.purge_user(user_id)}

    # -- reads --
    @app.get("/v1/users/{user_id}/facts", tags=["facts"])
    def list_facts(validity: str | None = Query(default=None, description="current, superseded, disputed, expired, "
                                                "retracted"),
                   kind: str | None = Query(default=None, description="Fact kind filter."),
                   limit: int = Query(default=100, ge=1), offset: int = Query(default=0, ge=0),
                   user_id: str = Depends(existing)) -> FactList:
        if limit > cfg.max_page:
            raise ApiError(422, f"limit must be <= {cfg.max_page}", "validation_error", "limit")
        rows = [r for r in facts_with_states(mem.store, user_id)
                if (validity is None or r.state.validity == validity) and (kind is None or r.fact.kind == kind)]
        return FactList(user_id=user_id, total=len(rows), facts=rows[offset:offset + limit])

    @app.get("/v1/users/{user_id}/facts/{fact_id}", tags=["facts"])
    def get_fact(fact_id: str, user_id: str = Depends(existing)) -> FactDetail:
        row = next((r for r in facts_with_states(mem.store, user_id) if r.fact.fact_id == fact_id), None)
        if row is None:
            raise ApiError(404, f"user {user_id!r} has no fact {fact_id!r}", "fact_not_found")
        return FactDetail(fact=row.fact, state=row.state,
                          source_turns=mem.store.turns(user_id, list(row.fact.source_turn_ids)))

    @app.post("/v1/users/{user_id}/search", tags=["retrieval"])
    def search(body: SearchBody, user_id: str = Depends(existing)) -> dict[str, Any]:
        cfg_ = pipe.with_config(k=body.k, traverse=body.traverse, relational_states=body.relational_states)
        bundle = pipe.evidence(user_id, body.query, cfg_)
        ctx = render_context(bundle, body.budget, with_state=cfg_.relational_states)
        return {"user_id": user_id, "query": body.query,
                "items": [FactWithState(fact=i.fact, state=i.state).model_dump(mode="json") | {
                    "alias": i.alias, "seed": i.seed, "score": i.score, "group": i.group} for i in bundle.items],
                "context": ctx.model_dump(), "explain": bundle.explain.model_dump(mode="json")}

    @app.post("/v1/users/{user_id}/explain", tags=["retrieval"])
    def explain(body: ExplainBody, user_id: str = Depends(existing)) -> AnswerResult:
        return pipe.answer(user_id, body.query, choices=body.choices, generate=body.answer, **_overrides(body))

    @app.post("/v1/users/{user_id}/state", tags=["answer"])
    def reasoning_state(body: QueryBody, user_id: str = Depends(existing)) -> StateOut:
        res = pipe.answer(user_id, body.query, generate=False, k=body.k, traverse=body.traverse,
                          relational_states=body.relational_states)
        return StateOut(user_id=user_id, request=body.query, policy=res.policy, reasoning_state=res.reasoning_state,
                        parsed=res.reasoning_state_parsed, fallback=res.policy_fallback,
                        aliases={e.alias: e.fact_id for e in res.evidence},
                        timings_ms={k: v for k, v in res.timings_ms.items() if k != "answer"})

    @app.post("/v1/users/{user_id}/answer", tags=["answer"])
    def answer(body: AnswerBody, user_id: str = Depends(existing)) -> AnswerResult:
        return pipe.answer(user_id, body.query, choices=body.choices, **_overrides(body))

    cypher_gate = CypherGate()

    @app.post("/v1/users/{user_id}/cypher", tags=["inspect"])
    async def cypher(body: CypherBody, user_id: str = Depends(existing),
                     who: ApiKey | None = Depends(principal)) -> dict[str, Any]:
        rows = await cypher_gate.run(who.key if who else "", lambda: mem.cypher(user_id, body.query, body.params))
        return cypher_body(user_id, rows, cfg.max_cypher_rows)

    # -- OpenAI-compatible chat with memory --
    @app.get("/v1/models", tags=["openai"])
    def models(_: ApiKey | None = Depends(principal)) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "evomem", "object": "model", "owned_by": "evomem",
                                            "answer_model": getattr(pipe.answer_model, "name", "?")}]}

    @app.post("/v1/chat/completions", tags=["openai"])
    def chat_completions(req: ChatCompletionRequest, who: ApiKey | None = Depends(principal),
                         x_evomem_user: str | None = Header(default=None, alias=USER_HEADER)) -> Any:
        if req.user and x_evomem_user and req.user != x_evomem_user:
            raise ApiError(400, f"'user' ({req.user!r}) and {USER_HEADER} ({x_evomem_user!r}) disagree", "user_mismatch",
                           "user")
        user_id = req.user or x_evomem_user
        if not user_id:
            raise ApiError(400, f"say whose memory to use: the 'user' field or the {USER_HEADER} header", "user_required",
                           "user")
        user_scope(user_id, who)
        mem.require_user(user_id)
        if (req.max_completion_tokens or req.max_tokens or 0) > 4096:
            raise ApiError(422, "max_tokens must be <= 4096", "validation_error", "max_tokens")
        res, info = pipe.chat(user_id, req.chat_messages(), max_tokens=req.max_completion_tokens or req.max_tokens,
                              temperature=req.temperature, stop=req.stop_list(), json_schema=req.json_schema())
        model = req.model or "evomem"
        if req.stream:
            return StreamingResponse(sse_chunks(res, model, bool((req.stream_options or {}).get("include_usage"))),
                                     media_type="text/event-stream")
        return completion_body(res, model, {"evomem": {
            "user": user_id, "reasoning_state": info.reasoning_state, "policy": info.policy,
            "evidence": [{"alias": e.alias, "fact_id": e.fact_id, "validity": e.validity} for e in info.evidence],
            "timings_ms": info.timings_ms}})

    install_metrics(app, deps.metrics)
    app.add_middleware(BodyLimitMiddleware, max_bytes=cfg.max_body_bytes)
    return app


def _overrides(body: AnswerBody) -> dict[str, Any]:
    return {"k": body.k, "traverse": body.traverse, "relational_states": body.relational_states,
            "reasoning_state": body.reasoning_state, "prompt": body.prompt, "max_answer_tokens": body.max_tokens}
