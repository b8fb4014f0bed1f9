"""``evomem mcp``: the memory as an MCP server (official ``mcp`` SDK 2.x, ``MCPServer``), over stdio or
streamable HTTP. Every tool is a thin adapter over serving/service.py — the same functions the HTTP
routes call — so an agent gets exactly the API's behaviour, errors included (as tool errors whose text
is the API's sentence and code).

Who may reach which user (never another's memories):
- A server started with ``--user U`` is bound to U: every tool and resource acts for U; naming another
  user is refused.
- Otherwise each call names ``user_id``. Over HTTP the caller's ``Authorization: Bearer`` key must be
  one of the deployment's keys (the same keys file as ``evomem serve``) and the key's ``users`` must
  allow that user; requests without a valid key get 401 before MCP sees them. Over stdio the server is
  the local operator's own process (like the CLI) and the store is theirs; bind it with ``--user`` when
  an agent should see one user only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from induction.session import SessionTurn
from policy.external import ExternalItem
from serving import service
from serving.deps import ApiDeps, ApiKey, checked_user_id, user_scope
from serving.errors import domain_error
from serving.openai_wire import ApiError, bearer_ok
from serving.pipeline import AnswerResult
from serving.limits import check_body_size
from serving.routes.bodies import AnswerBody, QueryBody, SearchBody, TransferBody
from serving.routes.cypher import CypherBody
from serving.routes.forget import ForgetBody
from serving.wire import (ConceptTree, CypherOut, FactHistoryOut, FactList, ForgetOut, IngestOut, PurgeOut, SearchOut,
                          StateOut, TransferOut)

T = TypeVar("T")
Include = Literal["current", "superseded", "disputed", "expired", "retracted", "all"]


class McpSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: str | None = Field(default=None, description="Bind the server to this one user (None: each call names it).")
    name: str = Field(default="evomem", description="Server name shown to clients.")


def _tool_error(e: ApiError) -> ToolError:
    return ToolError(f"{e.message} ({e.code or 'error'}, HTTP {e.status})")


def _mapped(e: Exception, cypher: bool = False) -> ToolError | None:
    if isinstance(e, ApiError):
        return _tool_error(e)
    a = domain_error(e, cypher=cypher, where="mcp")
    return _tool_error(a) if a is not None else None


def call(fn: Callable[[], T], cypher: bool = False) -> T:
    """``fn()`` with the API's errors as tool errors carrying its sentence (crashes stay crashes: the SDK
    answers them with a generic error and logs them)."""
    try:
        return fn()
    except ToolError:
        raise
    except Exception as e:
        err = _mapped(e, cypher)
        if err is None:
            raise
        raise err from e


async def acall(fn: Callable[[], Awaitable[T]], cypher: bool = False) -> T:
    try:
        return await fn()
    except ToolError:
        raise
    except Exception as e:
        err = _mapped(e, cypher)
        if err is None:
            raise
        raise err from e


class Scope:
    """Resolves the user a call acts for, and the caller's key (HTTP), or refuses."""

    def __init__(self, deps: ApiDeps, settings: McpSettings):
        self.deps, self.settings = deps, settings

    def key(self, ctx: Context | None) -> ApiKey | None:
        headers = ctx.headers if ctx is not None else None
        if headers is None or not self.deps.settings.require_auth:
            return None  # stdio: the local operator's process
        auth = headers.get("authorization")
        for k in self.deps.settings.keys:
            if bearer_ok(auth, [k.key]):
                return k
        raise ApiError(401, "Missing or invalid API key; send 'Authorization: Bearer <key>'.", "invalid_api_key")

    def user(self, ctx: Context | None, user_id: str | None, must_exist: bool = True) -> str:
        bound = self.settings.user
        if bound is not None:
            if user_id not in (None, "", bound):
                raise ApiError(403, f"This MCP server is bound to one user and may not access user {user_id!r}.",
                               "user_not_allowed")
            user_id = bound
        if not user_id:
            raise ApiError(400, "Name the user: this MCP server is not bound to one, so user_id is required.",
                           "user_required", "user_id")
        uid = user_scope(checked_user_id(user_id), self.key(ctx))
        if must_exist:
            service.require_user(self.deps, uid)
        return uid


def _session_id(prefix: str, payload: Any) -> str:
    # content-derived: adding the same memory twice is an idempotent no-op ("unchanged")
    return f"{prefix}-" + hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def build_mcp_server(deps: ApiDeps, settings: McpSettings | None = None) -> MCPServer:
    settings = settings or McpSettings()
    scope = Scope(deps, settings)
    bound = f" This server is bound to user {settings.user!r}; user_id may be omitted." if settings.user else ""
    mcp = MCPServer(settings.name, title="EvoMemState memory", version="1", instructions=(
        "Long-term memory with relational states: facts are current, superseded, disputed, expired or "
        "retracted, and a Reasoning State says which to rely on for a request. Use `search` or "
        "`reasoning_state` before answering from memory, `add_memory`/`add_session` to remember, `forget` "
        "when the user asks to forget something." + bound))
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False)

    # -- writes --
    @mcp.tool(description="Remember a conversation session: its turns go through induction (facts, concepts, "
              "relations such as 'replaces' and 'conflicts with'). Atomic; the same session twice is a no-op.")
    def add_session(turns: list[SessionTurn], ctx: Context, session_id: str | None = None,
                    started_at: str | None = None, user_id: str | None = None) -> IngestOut:
        uid = call(lambda: scope.user(ctx, user_id, must_exist=False))
        body = {"session_id": session_id or _session_id("mcp", [t.model_dump(mode="json") for t in turns]),
                "started_at": started_at, "turns": [t.model_dump(mode="json", exclude_none=True) for t in turns]}
        call(lambda: check_body_size(deps.settings, body))  # the HTTP body cap, which MCP arguments never pass
        return call(lambda: service.ingest_session(deps, uid, {k: v for k, v in body.items() if v is not None}))

    @mcp.tool(description="Remember one thing the user said (a one-turn session), e.g. 'I moved to Lisbon'.")
    def add_memory(text: str, ctx: Context, at: str | None = None, user_id: str | None = None) -> IngestOut:
        uid = call(lambda: scope.user(ctx, user_id, must_exist=False))
        turn: dict[str, Any] = {"role": "user", "text": text} | ({"at": at} if at else {})
        session = {"session_id": _session_id("mcp-memory", turn), "turns": [turn]}
        call(lambda: check_body_size(deps.settings, session))
        return call(lambda: service.ingest_session(deps, uid, session))

    # -- reads --
    @mcp.tool(description="Search the user's memory: the most relevant facts plus the facts they replace or "
              "conflict with, each with its relational state, and the rendered context.", annotations=read_only)
    def search(query: str, ctx: Context, k: int | None = None, traverse: bool | None = None,
               relational_states: bool | None = None, budget: int | None = None, as_of: datetime | None = None,
               known_at: datetime | None = None, user_id: str | None = None) -> SearchOut:
        uid = call(lambda: scope.user(ctx, user_id))
        body = call(lambda: SearchBody(query=query, k=k, traverse=traverse, relational_states=relational_states,
                                       budget=budget, as_of=as_of, known_at=known_at))
        return call(lambda: service.search(deps, uid, body))

    @mcp.tool(description="The Reasoning State for a request: which remembered facts to use or ignore, with "
              "what priority, and the rules that follow (aliases F1, F2, ... name the facts).",
              annotations=read_only)
    def reasoning_state(query: str, ctx: Context, k: int | None = None, as_of: datetime | None = None,
                        known_at: datetime | None = None, user_id: str | None = None) -> StateOut:
        uid = call(lambda: scope.user(ctx, user_id))
        body = call(lambda: QueryBody(query=query, k=k, as_of=as_of, known_at=known_at))
        return call(lambda: service.reasoning_state(deps, uid, body))

    @mcp.tool(description="Answer a request with the user's memory (evidence, Reasoning State, answer model).",
              annotations=read_only)
    def answer(query: str, ctx: Context, choices: list[str] | None = None, max_tokens: int | None = None,
               user_id: str | None = None) -> AnswerResult:
        uid = call(lambda: scope.user(ctx, user_id))
        body = call(lambda: AnswerBody(query=query, choices=choices, max_tokens=max_tokens))
        return call(lambda: deps.pipeline.answer(uid, body.query, choices=body.choices, **body.overrides()))

    @mcp.tool(description="List the user's facts with their relational states, newest first. Current facts "
              "only unless include adds other validities (or 'all'); as_of / known_at (ISO dates) show what was "
              "true then / what memory knew then.", annotations=read_only)
    def list_facts(ctx: Context, include: list[Include] | None = None, kind: str | None = None,
                   as_of: datetime | None = None, known_at: datetime | None = None, limit: int = 100,
                   offset: int = 0, user_id: str | None = None) -> FactList:
        uid = call(lambda: scope.user(ctx, user_id))
        return call(lambda: service.list_facts(deps, uid, None, include, kind, as_of, known_at, limit, offset))

    @mcp.tool(description="A fact's history: its state, the facts it replaces or conflicts with, its evidence "
              "turns and every edit that touched it.", annotations=read_only)
    def fact_history(fact_id: str, ctx: Context, user_id: str | None = None) -> FactHistoryOut:
        uid = call(lambda: scope.user(ctx, user_id))
        return call(lambda: service.history(deps, uid, fact_id))

    @mcp.tool(description="Read-only Cypher over the user's own subgraph (MATCH ... RETURN ...); writes and "
              "other users' data are refused.", annotations=read_only)
    async def cypher(query: str, ctx: Context, params: dict[str, Any] | None = None,
                     user_id: str | None = None) -> CypherOut:
        uid = call(lambda: scope.user(ctx, user_id))
        key = call(lambda: scope.key(ctx))
        body = call(lambda: CypherBody(query=query, params=params or {}))  # the HTTP route's bounds
        call(lambda: check_body_size(deps.settings, body.model_dump()))
        return await acall(lambda: service.cypher(deps, uid, key.key if key else "mcp", body.query, body.params),
                           cypher=True)

    @mcp.tool(description="A Reasoning State for memory items from ANY other memory system (e.g. what mem0 or a "
              "RAG retrieved): relations between the items are inferred, nothing is stored.", annotations=read_only)
    def reasoning_state_external(query: str, items: list[ExternalItem], ctx: Context) -> TransferOut:
        key = call(lambda: scope.key(ctx))
        body = call(lambda: TransferBody(query=query, items=items))
        call(lambda: check_body_size(deps.settings, body.model_dump(mode="json")))
        return call(lambda: service.external_state(deps, body, key))

    # -- forgetting --
    @mcp.tool(description="Forget one fact (retract it): it stays as a tombstone that says 'never rely on this'.",
              annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
    def forget(fact_id: str, ctx: Context, reason: str = "", user_id: str | None = None) -> ForgetOut:
        uid = call(lambda: scope.user(ctx, user_id))
        body = call(lambda: ForgetBody(reason=reason))  # the HTTP route's bounds
        return call(lambda: service.forget_fact(deps, uid, fact_id, body.reason))

    @mcp.tool(description="Delete EVERYTHING of the user irreversibly. Refused unless confirm equals the user id.",
              annotations=ToolAnnotations(destructive_hint=True))
    def purge(confirm: str, ctx: Context, user_id: str | None = None) -> PurgeOut:
        uid = call(lambda: scope.user(ctx, user_id))
        return call(lambda: service.purge_user(deps, uid, confirm == uid,
                                               how=f"call again with confirm={uid!r} (the user id)"))

    # -- resources --
    def _resource(fn: Callable[[], str]) -> str:
        try:
            return call(fn)
        except ToolError as e:
            raise ResourceError(str(e)) from e

    @mcp.resource("evomem://users/{user_id}/concepts", name="concept-tree", mime_type="application/json",
                  description="The user's concept hierarchy, each concept with its live facts.")
    def concept_tree(user_id: str, ctx: Context) -> str:
        return _resource(lambda: _concepts(deps, scope.user(ctx, user_id)).model_dump_json())

    @mcp.resource("evomem://users/{user_id}/profile", name="profile", mime_type="application/json",
                  description="The user's profile: current facts by concept, counts of superseded, disputed and "
                  "retracted facts, the latest changes.")
    def profile(user_id: str, ctx: Context) -> str:
        return _resource(lambda: profile_json(deps, scope.user(ctx, user_id)))

    return mcp


def _concepts(deps: ApiDeps, user_id: str) -> ConceptTree:
    return service.concept_tree(deps, user_id)


def profile_json(deps: ApiDeps, user_id: str) -> str:
    """The profile view (memcore/profile.py, the same as GET /v1/users/{u}/profile and `evomem profile`)."""
    from memcore.profile import build_profile

    return build_profile(deps.memory, user_id).model_dump_json()


class _BearerGate:
    """ASGI middleware for the HTTP transport: 401 unless a deployment key is presented (checked again,
    with the key's users, inside every tool)."""

    def __init__(self, app: Any, deps: ApiDeps):
        self.app, self.deps = app, deps

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.deps.settings.require_auth:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            if not any(bearer_ok(headers.get("authorization"), [k.key]) for k in self.deps.settings.keys):
                body = json.dumps({"error": {"message": "Missing or invalid API key; send 'Authorization: Bearer "
                                             "<key>'.", "type": "authentication_error", "code": "invalid_api_key"}})
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body.encode()})
                return
        await self.app(scope, receive, send)


def http_app(mcp: MCPServer, deps: ApiDeps, path: str = "/mcp", host: str = "127.0.0.1") -> Any:
    """The streamable-HTTP ASGI app behind the key gate. ``host``: the bind address; on loopback the SDK
    turns on its DNS-rebinding protection (Host/Origin must be loopback), elsewhere the keys guard it."""
    return _BearerGate(mcp.streamable_http_app(streamable_http_path=path, host=host), deps)


def run_mcp(deps: ApiDeps, settings: McpSettings, transport: Literal["stdio", "http"], host: str = "127.0.0.1",
            port: int = 8765, path: str = "/mcp", log_level: str = "warning") -> None:
    mcp = build_mcp_server(deps, settings)
    try:
        if transport == "stdio":
            mcp.run("stdio")
        else:
            import sys

            import uvicorn

            print(f"evomem mcp: http://{host}:{port}{path}  store={getattr(deps.memory.store, 'name', '?')}  "
                  f"user={settings.user or '(per call)'}  auth={'on' if deps.settings.require_auth else 'OFF'}",
                  file=sys.stderr, flush=True)
            uvicorn.run(http_app(mcp, deps, path, host), host=host, port=port, log_level=log_level, workers=1)
    finally:
        deps.memory.close()
