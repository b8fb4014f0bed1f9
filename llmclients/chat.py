"""The chat-model protocol every model client implements (OpenAI-compatible HTTP, in-process engine, fakes).

Policy, answer model, extractor and judge all take a ``ChatModel``; which one is a configuration choice.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["system", "user", "assistant"]
    content: str


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ChatResult(BaseModel):
    text: str
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    logprobs: list[float] | None = Field(default=None, description="Per-token logprobs when the server gives them.")
    model: str | None = None
    latency_ms: float = 0.0


class ChatError(RuntimeError):
    """A model call failed after retries (server down, timeout, refused, garbage)."""

    def __init__(self, message: str, kind: Literal["timeout", "connection", "http", "invalid_response"] = "http"):
        super().__init__(message)
        self.kind = kind


@runtime_checkable
class ChatModel(Protocol):
    name: str

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        json_schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
        logprobs: bool = False,
    ) -> ChatResult:
        """One chat completion. ``json_schema`` asks for structured output (vLLM guided decoding)."""
