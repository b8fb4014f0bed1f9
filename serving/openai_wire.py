"""The OpenAI chat-completions wire format, shared by both HTTP servers: ``evomem serve-model`` (the model
server, serving/model_server.py) and ``evomem serve``'s memory-injecting ``/v1/chat/completions``
(serving/routes/chat.py).

Here: request/response models, the error shape ``{"error": {"message", "type", "code", "param"}}``
(``error_body`` / ``ApiError``), emulated SSE streaming, the request-body limit (413, also for chunked
bodies) and the error handlers every app installs, so both servers fail the same way.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from llmclients.chat import ChatMessage, ChatResult

log = logging.getLogger("evomem.http")

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
                    raise ApiError(400, "The response_format's json_schema.schema must be a JSON object.",
                                   "invalid_schema", "response_format")
                return schema
            if kind == "json_object":
                return {"type": "object"}
            if kind not in (None, "text"):
                raise ApiError(400, "This response_format type is not supported; use json_schema, json_object or "
                               "text.", "invalid_value", "response_format")
        if self.structured_outputs and "json" in self.structured_outputs:
            return _schema(self.structured_outputs["json"], "structured_outputs")
        if self.guided_json is not None:
            return _schema(self.guided_json, "guided_json")
        return None


def _schema(value: Any, param: str) -> dict[str, Any]:
    """A JSON schema given as an object or as a JSON string; 400 (not a crash) for anything else."""
    try:
        schema = json.loads(value) if isinstance(value, str) else value
    except ValueError as e:
        raise ApiError(400, f"The {param} schema is not valid JSON.", "invalid_schema", param) from e
    if not isinstance(schema, dict):
        raise ApiError(400, f"The {param} schema must be a JSON object.", "invalid_schema", param)
    return schema


def completion_body(result: ChatResult, model: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    lp: dict[str, Any] | None = None
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
    so an oversized request never reaches JSON parsing (or the store).

    A chunked body is cut off here, not by raising into the app: an exception raised from ``receive``
    reaches FastAPI's body reader wrapped (by any BaseHTTPMiddleware's task group) and came back as
    400. Instead the 413 is sent at once, the app is told the client disconnected, and whatever the
    app answers or raises about its cut-off body afterwards is dropped."""

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
        started = rejected = False

        async def counting_receive() -> dict[str, Any]:
            nonlocal seen, started, rejected
            if rejected:
                return {"type": "http.disconnect"}
            msg: dict[str, Any] = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_bytes:
                    rejected = True
                    if not started:
                        started = True
                        await self._reject(send)
                    return {"type": "http.disconnect"}
            return msg

        async def tracking_send(msg: dict[str, Any]) -> None:
            nonlocal started
            if rejected:
                return
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except Exception:
            if not rejected:
                raise
            log.debug("request cut off at %d bytes; the app's error about it is dropped", self.max_bytes)

    async def _reject(self, send: Any) -> None:
        body = json.dumps(error_body(413, f"The request body exceeds the limit of {self.max_bytes} bytes.",
                                     "request_too_large")).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


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
            return JSONResponse(error_body(400, "The request body is not valid JSON: "
                                           + "; ".join(str(x.get("ctx", {}).get("error", x.get("msg"))) for x in errs) + ".",
                                           "invalid_json"), status_code=400)
        msg = "; ".join(f"{'.'.join(str(p) for p in x.get('loc', ())[1:]) or 'body'}: {x.get('msg')}" for x in errs[:5])
        param = ".".join(str(p) for p in errs[0].get("loc", ())[1:]) if errs else None
        return JSONResponse(error_body(validation_status, f"Invalid request: {msg}.", "validation_error", param or None),
                            status_code=validation_status)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, e: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(e.status_code)
        # Starlette's own details are two words ("Not Found"); say what happened instead
        # (the path is not echoed: it is the caller's input and may be anything)
        message = {404: "No route matches this path.", 405: f"This route does not accept {request.method}."}.get(
            e.status_code, str(e.detail))
        return JSONResponse(error_body(e.status_code, message, code), status_code=e.status_code)

    @app.exception_handler(Exception)
    async def _crash(request: Request, e: Exception) -> JSONResponse:
        # the exception's text may be a driver's or engine's message (ids, file paths, query text):
        # it goes to the server log with an incident id, the caller gets a sentence and that id
        incident = uuid.uuid4().hex[:12]
        log.error("internal error %s on %s %s", incident, request.method, request.url.path, exc_info=e)
        return JSONResponse(error_body(500, f"The server failed on this request (incident {incident}); nothing "
                                       "more is said here, the server log has the details.", "internal_error"),
                            status_code=500)


def bearer_ok(header: str | None, keys: list[str]) -> bool:
    if not header or not header.lower().startswith("bearer "):
        return False
    token = header[7:].strip()
    # compare against every key (no early exit) so timing does not reveal which prefix matched
    return any([hmac.compare_digest(token.encode(), k.encode()) for k in keys])
