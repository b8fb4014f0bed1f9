"""``evomem vllm-command``: the exact ``vllm serve`` lines for the production models, and the evomem
settings that point at them.

Production layout (DESIGN.md): Qwen3-8B answer model, Qwen3-4B policy served as base + LoRA adapter
(``--enable-lora --lora-modules policy=PATH``; requests then use ``model="policy"``), bge-m3
embeddings (``--runner pooling``). On one GPU the three servers share it by memory fraction; on N
GPUs the two generators get disjoint GPU sets with tensor parallelism. The one-GPU fractions assume an
80 GB-class card (Qwen3-8B's bf16 weights alone are ~16 GB).

Flags follow current vLLM (>= 0.11): ``--runner pooling`` replaced ``--task embed``, and structured
output is requested per call (``response_format``/``structured_outputs``), so no server flag is needed.
``--generation-config vllm`` stops a model's generation_config.json (Qwen3 ships top_k/top_p defaults)
from silently changing sampling: our requests' parameters are then the whole story.
"""

from __future__ import annotations

import re
import shlex

from pydantic import BaseModel, ConfigDict, Field, model_validator


class VllmPlanConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gpus: int = Field(default=1, ge=1, le=64, description="GPUs on the machine (1 = all three servers share GPU 0).")
    host: str = Field(default="127.0.0.1", description="Bind address for the vLLM servers.")
    answer_model: str = Field(default="Qwen/Qwen3-8B", description="Answer model (HF id or local folder).")
    answer_name: str = Field(default="qwen3-8b", description="--served-model-name of the answer model.")
    answer_port: int = Field(default=8000, ge=1, le=65535, description="Answer server port.")
    policy_base: str = Field(default="Qwen/Qwen3-4B", description="Base model of the policy.")
    policy_base_name: str = Field(default="qwen3-4b", description="--served-model-name of the policy base.")
    policy_lora: str = Field(default="checkpoints/policy-lora", description="Trained LoRA adapter folder.")
    policy_lora_name: str = Field(default="policy", description="Adapter name clients send as 'model'.")
    policy_port: int = Field(default=8001, ge=1, le=65535, description="Policy server port.")
    max_lora_rank: int = Field(default=64, ge=1, description="--max-lora-rank (>= the adapter's r).")
    embed_model: str = Field(default="BAAI/bge-m3", description="Embedding model.")
    embed_name: str = Field(default="bge-m3", description="--served-model-name of the embedder.")
    embed_port: int = Field(default=8002, ge=1, le=65535, description="Embedding server port.")
    answer_max_len: int = Field(default=16384, ge=1024, description="--max-model-len for the answer model.")
    policy_max_len: int = Field(default=9216, ge=1024, description="--max-model-len for the policy "
                                "(paper: prompts <= 8192 tokens + states <= 512, rounded up).")
    api_key_env: str | None = Field(default="VLLM_API_KEY", description="Env var holding the servers' --api-key "
                                    "(None = no key; fine on loopback only).")
    tensor_parallel: int | None = Field(default=None, ge=1, description="Force the TP size of each generator "
                                        "(default: split the GPUs in two power-of-two halves).")

    @model_validator(mode="after")
    def _ports_differ(self) -> VllmPlanConfig:
        if len({self.answer_port, self.policy_port, self.embed_port}) != 3:
            raise ValueError("answer, policy and embedding ports must differ")
        if self.tensor_parallel and self.gpus > 1 and 2 * self.tensor_parallel > self.gpus:
            raise ValueError(f"tensor_parallel={self.tensor_parallel} needs {2 * self.tensor_parallel} GPUs "
                             f"(answer and policy each get their own), only {self.gpus} given")
        return self


class VllmLine(BaseModel):
    role: str
    gpus: list[int]
    tensor_parallel: int
    gpu_memory_utilization: float
    argv: list[str]
    env: dict[str, str]

    def shell(self) -> str:
        env = " ".join(f"{k}={v}" for k, v in self.env.items())
        # "${VAR}" must stay expandable (shlex.quote would single-quote it); everything else is quoted.
        args = " ".join(f'"{a}"' if re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}", a) else shlex.quote(a)
                        for a in self.argv)
        return (env + " " if env else "") + args


def _pow2_floor(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def plan(cfg: VllmPlanConfig) -> list[VllmLine]:
    """GPU placement and argv for the three servers."""
    if cfg.gpus == 1:
        # One GPU: fractions sum to 0.90 so the three CUDA contexts and activations still fit.
        place = {"answer": ([0], 1, 0.50), "policy": ([0], 1, 0.30), "embed": ([0], 1, 0.10)}
    else:
        tp = cfg.tensor_parallel or _pow2_floor(cfg.gpus // 2)
        answer = list(range(tp))
        policy = list(range(tp, 2 * tp))
        # the embedder is small: it rides on the last policy GPU with a small fraction
        place = {"answer": (answer, tp, 0.90), "policy": (policy, tp, 0.80), "embed": ([policy[-1]], 1, 0.10)}
    key = ["--api-key", f"${{{cfg.api_key_env}}}"] if cfg.api_key_env else []
    common = ["--host", cfg.host]
    specs = {
        "answer": [cfg.answer_model, "--served-model-name", cfg.answer_name, "--port", str(cfg.answer_port),
                   "--max-model-len", str(cfg.answer_max_len), "--enable-prefix-caching", "--generation-config", "vllm"],
        "policy": [cfg.policy_base, "--served-model-name", cfg.policy_base_name, "--port", str(cfg.policy_port),
                   "--max-model-len", str(cfg.policy_max_len), "--enable-lora", "--lora-modules",
                   f"{cfg.policy_lora_name}={cfg.policy_lora}", "--max-lora-rank", str(cfg.max_lora_rank),
                   "--max-loras", "1", "--enable-prefix-caching", "--generation-config", "vllm"],
        "embed": [cfg.embed_model, "--runner", "pooling", "--served-model-name", cfg.embed_name,
                  "--port", str(cfg.embed_port)],
    }
    out = []
    for role in ("answer", "policy", "embed"):
        gpus, tp, util = place[role]
        argv = ["vllm", "serve", *specs[role], *common, "--tensor-parallel-size", str(tp),
                "--gpu-memory-utilization", f"{util:.2f}", *key]
        out.append(VllmLine(role=role, gpus=gpus, tensor_parallel=tp, gpu_memory_utilization=util, argv=argv,
                            env={"CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus))}))
    return out


def client_env(cfg: VllmPlanConfig) -> dict[str, str]:
    """The evomem settings that point the pipeline at these servers (nothing else changes)."""
    base = f"http://{'127.0.0.1' if cfg.host in ('0.0.0.0', '::') else cfg.host}"
    env = {"EVOMEM_ANSWER_URL": f"{base}:{cfg.answer_port}/v1", "EVOMEM_ANSWER_MODEL": cfg.answer_name,
           "EVOMEM_POLICY_URL": f"{base}:{cfg.policy_port}/v1", "EVOMEM_POLICY_MODEL": cfg.policy_lora_name}
    env["EVOMEM_ANSWER_CHAT_TEMPLATE_KWARGS"] = env["EVOMEM_POLICY_CHAT_TEMPLATE_KWARGS"] = '{"enable_thinking": false}'
    if cfg.api_key_env:
        env["EVOMEM_ANSWER_API_KEY"] = f"${cfg.api_key_env}"
        env["EVOMEM_POLICY_API_KEY"] = f"${cfg.api_key_env}"
    return env


def render(cfg: VllmPlanConfig) -> str:
    lines = [f"# vLLM for EvoMemState on {cfg.gpus} GPU{'s' if cfg.gpus > 1 else ''} "
             "(run each line in its own shell or under a process manager)"]
    for ln in plan(cfg):
        what = {"answer": "answer model", "policy": "policy = base + LoRA adapter", "embed": "embeddings"}[ln.role]
        lines.append(f"# {what}: GPUs {ln.gpus}, tensor parallel {ln.tensor_parallel}, "
                     f"memory fraction {ln.gpu_memory_utilization:.2f}")
        lines.append(ln.shell())
    lines.append("# point evomem at them (only base URLs and model names change; Qwen3 thinking is turned off per request):")
    lines.append("export " + " ".join(f"{k}={shlex.quote(v) if not v.startswith('$') else chr(34) + v + chr(34)}"
                                      for k, v in client_env(cfg).items()))
    from policy.learned import is_policy_checkpoint, read_meta

    if is_policy_checkpoint(cfg.policy_lora):  # an adapter only works behind the prompt it was trained on
        prompt = read_meta(cfg.policy_lora).prompt
        lines.append(f"# the adapter was trained on prompt {prompt}: evomem serve / answer --policy-prompt {prompt}")
    return "\n".join(lines)
