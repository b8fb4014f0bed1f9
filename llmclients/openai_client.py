"""OpenAI-compatible chat client: vLLM in production, ``evomem serve-model`` on CPU, anything that speaks
``POST {base_url}/chat/completions``.

Transient failures (connection refused, timeouts, 429, 5xx) are retried with exponential backoff and
jitter; everything that still fails becomes ``ChatError`` with a ``kind`` the caller can map to an
HTTP status (connection -> 502, timeout -> 504, ...). Responses are parsed defensively: a 200 whose
body is not a chat completion is ``invalid_response``, never a crash deeper in the pipeline.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

import httpx

from llmclients.chat import ChatError, ChatMessage, ChatModel, ChatResult, Usage
from llmclients.config import ModelEndpointConfig

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class ChatHTTPError(ChatError):
    """The server answered with an HTTP error status (kept, so callers can tell a refused request
    — 400: prompt too long, max_tokens over the cap — from a broken or misconfigured server)."""

    def __init__(self, message: str, status: int):
        super().__init__(message, "http")
        self.status = status


def structured_fields(schema: dict[str, Any], mode: str, name: str = "response") -> dict[str, Any]:
    """The request fields that ask for JSON matching ``schema``, in the dialect ``mode``.

    >>> structured_fields({"type": "object"}, "structured_outputs")
    {'structured_outputs': {'json': {'type': 'object'}}}
    """
    if mode == "response_format":
        return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}}
    if mode == "structured_outputs":
        return {"structured_outputs": {"json": schema}}
    if mode == "guided_json":
        return {"guided_json": schema}
    raise ValueError(f"unknown structured output mode {mode!r}")


def build_body(cfg: ModelEndpointConfig, messages: list[ChatMessage], *, max_tokens: int, temperature: float,
               json_schema: dict[str, Any] | None, stop: list[str] | None, logprobs: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": cfg.model, "messages": [m.model_dump() for m in messages],
                            "max_tokens": max_tokens, "temperature": temperature}
    if stop:
        body["stop"] = stop
    if logprobs:
        body["logprobs"] = True
    if json_schema is not None:
        body.update(structured_fields(json_schema, cfg.structured_output))
    if cfg.chat_template_kwargs:
        body["chat_template_kwargs"] = cfg.chat_template_kwargs
    body.update(cfg.extra_body)
    return body


def parse_completion(data: Any, latency_ms: float) -> ChatResult:
    """A chat.completion JSON object -> ChatResult; anything else -> ChatError(invalid_response)."""
    try:
        choice = data["choices"][0]
        msg = choice["message"]
        text = msg.get("content")
        if text is None:
            # vLLM with a reasoning parser may put everything in reasoning_content when max_tokens ran out.
            raise ChatError(f"completion has no message content (finish_reason={choice.get('finish_reason')!r})",
                            "invalid_response")
        if not isinstance(text, str):
            raise TypeError("content is not a string")
        lp = None
        if isinstance(choice.get("logprobs"), dict) and choice["logprobs"].get("content") is not None:
            lp = [float(t["logprob"]) for t in choice["logprobs"]["content"]]
        u = data.get("usage") or {}
        return ChatResult(text=text, finish_reason=choice.get("finish_reason"), model=data.get("model"),
                          usage=Usage(prompt_tokens=int(u.get("prompt_tokens") or 0),
                                      completion_tokens=int(u.get("completion_tokens") or 0)),
                          logprobs=lp, latency_ms=latency_ms)
    except ChatError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise ChatError(f"model server returned something that is not a chat completion ({type(e).__name__}: {e}): "
                        f"{json.dumps(data)[:200] if not isinstance(data, str) else data[:200]!r}", "invalid_response") from e


def _error_message(resp: httpx.Response) -> str:
    try:
        err = resp.json().get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    except (ValueError, AttributeError):
        pass
    return resp.text[:300]


class OpenAIChatClient:
    """``ChatModel`` over HTTP. Thread-safe: one pooled httpx client per instance."""

    def __init__(self, cfg: ModelEndpointConfig, transport: httpx.BaseTransport | None = None,
                 sleep: Any = time.sleep):
        if cfg.connection != "openai":
            raise ValueError(f"OpenAIChatClient needs connection 'openai', got {cfg.connection!r}")
        self.cfg = cfg
        self.name = cfg.model or "model"
        self.base_url = (cfg.base_url or "").rstrip("/")
        headers = {"Content-Type": "application/json", **cfg.extra_headers}
        if cfg.api_key:
            headers["Authorization"] = f"Bearer {cfg.api_key}"
        timeout = httpx.Timeout(cfg.timeout_s, connect=cfg.connect_timeout_s)
        # trust_env=False: a proxy from the environment must never reroute calls to a loopback model server.
        self._http = httpx.Client(timeout=timeout, headers=headers, transport=transport, trust_env=False)
        self._sleep = sleep
        self.attempts_last_call = 0

    def close(self) -> None:
        self._http.close()

    def _delay(self, attempt: int) -> float:
        base = min(self.cfg.backoff_max_s, self.cfg.backoff_s * (2.0 ** attempt))
        return base * (0.5 + random.random() / 2)  # jitter so synchronized clients do not retry in lockstep

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        url = f"{self.base_url}{path}"
        last: ChatError | None = None
        for attempt in range(self.cfg.max_retries + 1):
            self.attempts_last_call = attempt + 1
            if attempt:
                self._sleep(self._delay(attempt - 1))
            try:
                resp = self._http.request(method, url, json=body)
            except httpx.TimeoutException as e:
                last = ChatError(f"model server at {self.base_url} timed out after {self.cfg.timeout_s:g}s "
                                 f"({type(e).__name__})", "timeout")
                continue
            except httpx.TransportError as e:
                last = ChatError(f"cannot reach model server at {self.base_url}: {type(e).__name__}: {e}", "connection")
                continue
            if resp.status_code in RETRY_STATUS:
                last = ChatHTTPError(f"model server at {self.base_url} answered {resp.status_code}: "
                                     f"{_error_message(resp)}", resp.status_code)
                continue
            if resp.status_code >= 400:
                raise ChatHTTPError(f"model server at {self.base_url} refused the request ({resp.status_code}): "
                                    f"{_error_message(resp)}", resp.status_code)
            try:
                return resp.json()
            except ValueError as e:
                raise ChatError(f"model server at {self.base_url} returned non-JSON ({resp.text[:120]!r})",
                                "invalid_response") from e
        assert last is not None
        msg = f"{last} (after {self.cfg.max_retries + 1} attempts)"
        raise ChatHTTPError(msg, last.status) if isinstance(last, ChatHTTPError) else ChatError(msg, last.kind)

    def complete(self, messages: list[ChatMessage], *, max_tokens: int = 256, temperature: float = 0.0,
                 json_schema: dict[str, Any] | None = None, stop: list[str] | None = None,
                 logprobs: bool = False) -> ChatResult:
        body = build_body(self.cfg, messages, max_tokens=max_tokens, temperature=temperature,
                          json_schema=json_schema, stop=stop, logprobs=logprobs)
        t0 = time.perf_counter()
        data = self._request("POST", "/chat/completions", body)
        return parse_completion(data, (time.perf_counter() - t0) * 1e3)

    def models(self) -> list[str]:
        data = self._request("GET", "/models")
        try:
            return [m["id"] for m in data["data"]]
        except (KeyError, TypeError) as e:
            raise ChatError(f"/models answer is not a model list: {str(data)[:120]!r}", "invalid_response") from e
