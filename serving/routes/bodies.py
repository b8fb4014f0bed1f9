"""Request bodies shared by the retrieval and answer routes."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graph.models import Instant
from policy.answer_prompts import known_prompts
from policy.external import ExternalItem

_PROMPT_NAME = re.compile(r"^[a-z0-9_-]{1,40}$")


class QueryBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=4000, description="The request.")
    k: int | None = Field(default=None, ge=1, le=200, description="Seed facts.")
    traverse: bool | None = Field(default=None, description="Follow SUPERSEDES/CONFLICTS_WITH (ablation when false).")
    relational_states: bool | None = Field(default=None, description="Show relational states (ablation when false).")
    as_of: Instant | None = Field(default=None, description="Valid time (ISO 8601): what was true at this date.")
    known_at: Instant | None = Field(default=None, description="Recorded time (ISO 8601): what memory knew then.")

    def time_view(self) -> dict[str, Any]:
        return {"as_of": self.as_of, "known_at": self.known_at}


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

    def overrides(self) -> dict[str, Any]:
        """The pipeline overrides this body asks for (None = the server's default)."""
        return {"k": self.k, "traverse": self.traverse, "relational_states": self.relational_states,
                "reasoning_state": self.reasoning_state, "prompt": self.prompt, "max_answer_tokens": self.max_tokens,
                **self.time_view()}


class ExplainBody(AnswerBody):
    answer: bool = Field(default=False, description="Also run the answer model (its timing then appears too).")


class TransferBody(BaseModel):
    """Memory items from another system and the request to build a Reasoning State for."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=4000, description="The request.")
    items: list[ExternalItem] = Field(min_length=1, max_length=100, description="What the other memory returned.")
