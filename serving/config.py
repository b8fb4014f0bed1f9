"""The serving layer's settings: the answer pipeline's and the HTTP API's (plain pydantic, light to import).

They live apart from the code that uses them so ``evomem.settings`` (built by every CLI command) imports
no web framework, policy or model code; ``serving.pipeline`` and ``serving.deps`` re-export them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class PipelineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int = Field(default=10, ge=1, le=1000, description="Seed facts per request.")
    traverse: bool = Field(default=True, description="Ablation switch: follow SUPERSEDES/CONFLICTS_WITH to closure.")
    relational_states: bool = Field(default=True, description="Ablation switch: show facts with their relational "
                                    "states (off: every fact looks current and unrelated, to policy and answer model).")
    reasoning_state: bool = Field(default=True, description="Ablation switch: ask the policy for a Reasoning State.")
    context_budget: int | None = Field(default=1500, ge=1, description="Whitespace-token budget for the rendered "
                                       "facts; whole relation groups are dropped past it.")
    prompt: str = Field(default="default", description="Answer prompt name (policy/answer_prompts/answer_<name>.yaml) or path.")
    max_answer_tokens: int | None = Field(default=None, ge=1, description="Answer cap (None = the prompt's max_tokens).")
    temperature: float = Field(default=0.0, ge=0, le=2, description="Answer sampling temperature (0 = greedy).")
    policy_prompt: str = Field(default="policy_v1", description="Prompt of a policy behind an endpoint (policy/prompts): "
                               "the one it was trained with. A checkpoint loaded in process brings its own.")
    policy_max_tokens: int = Field(default=512, ge=16, description="Reasoning State cap (paper: <= 512 tokens).")
    as_of: datetime | None = Field(default=None, description="Valid time: answer from what was true at this date.")
    known_at: datetime | None = Field(default=None, description="Recorded time: answer from what memory knew then.")
    on_policy_error: Literal["rule", "none", "raise"] = Field(
        default="rule", description="When a model policy's output does not parse: fall back to the rule baseline, "
        "answer without a state, or fail the request.")


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
    max_session_chars: int = Field(default=200_000, ge=100, description="Text one session (or one memory) may carry, "
                                   "HTTP and MCP alike; more is refused with 413 (ingestion time grows with it).")
    external_budget_s: float = Field(default=120.0, gt=0, description="Seconds of work /v1/state/external may spend "
                                     "per API key in each window; past it, 429 until the window moves on.")
    external_window_s: float = Field(default=600.0, gt=0, description="The window of external_budget_s.")
    max_page: int = Field(default=500, ge=1, description="Largest 'limit' for fact listings.")
    warm_after_ingest: bool = Field(default=True, description="After a session commits, rebuild that user's route "
                                    "index in the background, so their next request does not pay for it "
                                    "(retrieval.seeds.index.RouteIndexCache.warm).")
    warm_at_start: bool = Field(default=True, description="At start, build the route index of the store's users "
                                "(up to the cache's 64) in the background, so a user's first request does not "
                                "build it (retrieval.seeds.index.RouteIndexCache.warm_users).")
