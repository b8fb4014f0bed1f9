"""TrainConfig: one pydantic model for a GRPO run, in the style of TRL's GRPOConfig (same field names
for everything TRL owns), loaded from YAML with ``key.sub=value`` overrides, plus named presets
(``configs/<preset>.yaml``; experiments that did not ship: ``configs/experiments/<preset>.yaml``).

    cfg = load_config("configs/grpo-cpu-smoke.yaml", ["max_steps=3", "lora.r=4"])
    cfg = load_config("grpo-qwen3-4b")          # a preset name
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from llmclients.config import ModelEndpointConfig
from policy.models import ModelConfig
from policy.perfact import is_per_fact
from policy.rewards import RewardConfig
from training_data.synthetic import SyntheticConfig

M = TypeVar("M", bound=BaseModel)

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"


class LoraSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(default=True, description="Train a LoRA adapter (PEFT) instead of all weights.")
    r: int = Field(default=16, ge=1, description="LoRA rank.")
    alpha: int = Field(default=32, ge=1, description="LoRA alpha (scale = alpha / r).")
    dropout: float = Field(default=0.0, ge=0, lt=1, description="LoRA dropout.")
    target_modules: list[str] | Literal["all-linear"] = Field(
        default="all-linear", description="Modules to adapt; all-linear excludes lm_head, which vLLM LoRA needs.")
    init_adapter: str | None = Field(
        default=None, description="Continue this saved LoRA adapter (a folder, e.g. policy/artefact/smollm2-read-v1) "
        "instead of a fresh one: GRPO's warm start is then that adapter (warmup.steps must be 0; r, alpha and "
        "layers come from the adapter's own config).")
    top_layers: int | None = Field(
        default=None, ge=1, description="Adapt only the last N transformer blocks (None: all). Backward then stops "
        "at the lowest adapted block: with 12 of SmolLM2-135M's 30 blocks a CPU step costs ~half.")

    def peft_config(self, num_layers: int | None = None) -> Any:
        """The PEFT LoraConfig these settings describe (``num_layers``: the base model's block count,
        needed with ``top_layers``)."""
        from peft import LoraConfig

        layers = None
        if self.top_layers is not None:
            if num_layers is None:
                raise ValueError("lora.top_layers needs the base model's number of layers")
            if isinstance(self.target_modules, str):
                raise ValueError("lora.top_layers needs lora.target_modules as a list of module names (PEFT "
                                 "cannot restrict all-linear to some layers), e.g. [q_proj, k_proj, v_proj, o_proj, "
                                 "gate_proj, up_proj, down_proj]")
            layers = list(range(max(num_layers - self.top_layers, 0), num_layers))
        return LoraConfig(r=self.r, lora_alpha=self.alpha, lora_dropout=self.dropout,
                          target_modules=self.target_modules, task_type="CAUSAL_LM", layers_to_transform=layers)


class DataConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    train_path: str | None = Field(default=None, description="JSONL from `evomem build-data` (instances.jsonl). "
                                   "None: generate synthetic instances in memory.")
    eval_path: str | None = Field(default=None, description="Held-out JSONL; None: synthetic with eval_seed.")
    synthetic: SyntheticConfig = Field(default_factory=SyntheticConfig, description="In-memory synthetic training set.")
    n_eval: int = Field(default=100, ge=0, description="Held-out instances evaluated during training.")
    eval_seed: int = Field(default=10_000, description="Seed of the in-memory held-out set (differs from `seed`).")
    n_val: int = Field(default=0, ge=0, description="Validation instances (synthetic, val_seed) scored every "
                       "eval_every steps to keep the best adapter in best/ (0 = no selection). Selection never "
                       "looks at the held-out set, so held-out numbers of best/ stay unbiased.")
    val_seed: int = Field(default=20_000, description="Seed of the in-memory validation set (differs from both).")
    val_from_train: int = Field(default=0, ge=0, description="With train_path: hold out this many training "
                                "instances (the last by a hash of their id) as the validation set instead of "
                                "synthetic ones; they are not trained on.")
    prompt: str = Field(default="policy_v1", description="Prompt file in policy/prompts (versioned).")
    max_prompt_tokens: int = Field(default=8192, ge=64, description="Prompts over this (policy tokens) are shortened "
                                   "by dropping whole fact groups, then skipped.")
    filter_solved: bool = Field(default=False, description="Drop instances the answer model already solves without a "
                                "state (their reward can only be <= 0).")
    deciding_only: bool = Field(default=False, description="Per-fact prompts: GRPO prompts only for the facts an "
                                "instance's metadata['deciding'] names (training_data/state_decides.py: the two "
                                "competing facts); a distractor's line moves no reader, so its group has no spread.")


class AnswerModelSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["reader", "lm", "chat"] = Field(default="reader", description="reader: the deterministic CPU reader "
                                                  "(policy/reader.py); lm: SmolLM2-135M scoring the options by "
                                                  "log-likelihood (policy/lmreader.py, frozen; with reward.graded the "
                                                  "reward is P(reference) lift); chat: a ChatModel endpoint (vLLM "
                                                  "serving Qwen3-8B).")
    reader_adapter: str | None = Field(default=None, description="lm only: a fine-tuned reader adapter folder "
                                       "(`evomem train-reader`, e.g. policy/artefact/smollm2-reader-v1); None: the "
                                       "base SmolLM2.")
    endpoint: ModelEndpointConfig | None = Field(default=None, description="The answer model's endpoint (chat only); "
                                                 "timeout_s there bounds each call, and a timeout drops the sample.")
    reader_ignored_weight: float = Field(default=0.0, ge=0, description="reader only: how much a fact the state "
                                         "marks ignore counts against the options it supports (0 = reader-v1; "
                                         "1 for instances from real retrieval, see policy/reader.py).")
    judge: ModelEndpointConfig | None = Field(default=None, description="LLM judge for judge-scored rows; None: those "
                                              "rows fall back to token F1.")
    max_tokens: int = Field(default=512, ge=1, description="Answer length cap (512 in the paper).")
    concurrency: int = Field(default=32, ge=1, description="Parallel answer calls per reward batch (chat only).")

    @model_validator(mode="after")
    def _chat_needs_endpoint(self) -> AnswerModelSettings:
        if self.kind == "chat" and self.endpoint is None:
            raise ValueError("answer.kind=chat needs answer.endpoint (connection: openai, base_url, model)")
        return self


class WarmupSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: int = Field(default=0, ge=0, description="Format warm-up batches before GRPO (0 = off; tiny models only).")
    learning_rate: float = Field(default=3e-3, gt=0, description="Warm-up learning rate.")
    batch_size: int = Field(default=16, ge=1, description="Warm-up batch size.")
    targets: Literal["subset", "all", "answer-key"] = Field(
        default="subset", description="Warm-up targets: subset = 1-3 random facts in random order (teaches copying "
        "a fact's handle); all = every fact in order (use/ignore and priority random for both); answer-key = "
        "full states correct by construction (policy/targets.py: the rule baseline's state where it is right, "
        "else the best of a few corrections, picked with the training instance's answer key). With a "
        "pretrained model and lora.enabled the warm-up trains the LoRA adapter that GRPO then continues.")
    subset_max: int = Field(default=3, ge=1, description="targets=subset: name 1..subset_max facts. 1 makes the "
                            "state a single pointer, the cleanest credit assignment for a tiny policy.")
    decisions: Literal["random", "use"] = Field(
        default="random", description="Warm-up decisions: random use/ignore and priority, or 'use | ... | high' for "
        "every named fact — with targets=subset, subset_max=1 the state is then a pointer whose only free choice "
        "is which fact applies, the choice GRPO has to learn.")
    roles: Literal["random", "descriptive"] = Field(
        default="descriptive", description="Warm-up roles: random, or copied from the relational state — what a "
        "fact *is*, never whether to use it (see policy/warmup.py).")
    target_style: Literal["full", "facts", "described"] = Field(
        default="full", description="targets=answer-key: full = the chosen state as policy/targets.py renders it "
        "(fact lines + the rule baseline's RULE lines); facts = fact lines only. The reader never reads rules, so "
        "both earn the same reward; facts is 2-3x shorter to learn and to generate on CPU; described = facts "
        "role first with the role read off the memory record (historical, constraint, evidence, "
        "current-preference), for a prompt that asks for that order (policy_described_v1).")
    target_margin: float = Field(
        default=0.0, ge=0, description="targets=answer-key: a correction replaces the rule baseline's state only "
        "when it earns more than this above it (policy/targets.py target_state); 0 = any gain.")
    target_evidence_first: bool = Field(
        default=False, description="targets=answer-key: never pick a correction that sets aside disputed outside "
        "evidence (a fact held by the assistant or a document) — the side graph/rules.py ranks above the user's "
        "belief. Off = the original choice, where a tie with the user's side went to the earlier alias.")
    sampling: Literal["replacement", "epochs", "balanced"] = Field(
        default="replacement", description="Which prompt each warm-up example comes from: replacement = uniform "
        "draws (the original behaviour); epochs = every prompt once per pass, reshuffled each pass — with a few "
        "hundred instances no instance is skipped and none repeated within a pass; balanced (per-fact prompts "
        "with answer-key targets) = a state signature (validity, relation sides, holder class) drawn with "
        "probability proportional to the square root of its count, then its examples once per pass.")
    shuffle_copies: int = Field(
        default=0, ge=0, le=8, description="targets=answer-key: add this many copies of each training instance with "
        "its facts in a random order (relation groups kept together) and aliases renumbered, the target remapped "
        "to match — so a fact's position stops predicting its decision and the policy has to read the line "
        "(policy/warmup.py shuffled_instance). 0 = the retrieval order only.")


class TrainConfig(BaseModel):
    """A GRPO run. Fields below ``# GRPO`` keep TRL's GRPOConfig names and are passed through."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(default="grpo", description="Run name (metrics and plot titles).")
    output_dir: str = Field(default="runs/grpo", description="Checkpoints, metrics.jsonl, metrics.png, final adapter.")
    seed: int = Field(default=0, description="Seeds data generation, model init, sampling.")
    num_threads: int = Field(default=1, ge=1, description="torch intra-op threads on CPU, fixed by the config (never "
                             "read from OMP_NUM_THREADS): the thread count changes the order of float reductions, "
                             "and over hundreds of sampled GRPO steps a last-bit difference grows into a different "
                             "run. Same seed + same num_threads + same CPU = identical metrics.jsonl.")
    deterministic: bool = Field(default=True, description="torch.use_deterministic_algorithms (warn-only): no "
                                "nondeterministic kernels where a deterministic one exists.")
    model: ModelConfig = Field(default_factory=ModelConfig)
    lora: LoraSettings = Field(default_factory=LoraSettings)
    data: DataConfig = Field(default_factory=DataConfig)
    answer: AnswerModelSettings = Field(default_factory=AnswerModelSettings)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    warmup: WarmupSettings = Field(default_factory=WarmupSettings)
    eval_every: int = Field(default=0, ge=0, description="Held-out evaluation every N steps (0 = only at the end; "
                            "single-process runs only).")
    eval_max_new_tokens: int | None = Field(default=None, description="Held-out generation cap (default: "
                                            "max_completion_length).")
    # GRPO (TRL GRPOConfig names)
    num_generations: int = Field(default=8, ge=2, description="G: candidate states per prompt.")
    temperature: float = Field(default=1.0, gt=0, description="Sampling temperature of the rollouts.")
    top_p: float = Field(default=1.0, gt=0, le=1, description="Nucleus sampling.")
    learning_rate: float = Field(default=1e-5, gt=0, description="1e-6 full fine-tune (paper), ~1e-5 LoRA.")
    beta: float = Field(default=0.001, ge=0, description="KL coefficient (k3 estimator).")
    epsilon: float = Field(default=0.2, gt=0, description="Lower clip.")
    epsilon_high: float | None = Field(default=0.28, description="Upper clip (clip-higher).")
    loss_type: Literal["grpo", "dapo", "dr_grpo", "bnpo"] = Field(default="grpo", description="grpo = Eq. 12 (1/T_i).")
    scale_rewards: Literal["group", "batch", "none"] = Field(default="group", description="Advantage scaling.")
    max_completion_length: int = Field(default=512, ge=8, description="State length cap in tokens (512 in the paper).")
    per_device_train_batch_size: int = Field(default=8, ge=1, description="Completions per device per step.")
    gradient_accumulation_steps: int = Field(default=1, ge=1, description="Micro-batches per optimizer step.")
    num_iterations: int = Field(default=1, ge=1, description="Policy updates per generation batch (mu).")
    max_steps: int = Field(default=-1, description="Optimizer steps (-1: use num_train_epochs).")
    num_train_epochs: float = Field(default=1.0, gt=0, description="Epochs when max_steps is -1.")
    lr_scheduler_type: str = Field(default="constant", description="Constant in the paper.")
    warmup_steps: float = Field(default=0, ge=0, description="LR warm-up: steps, or a fraction of training if < 1.")
    adam_beta1: float = Field(default=0.9, description="Adam beta1.")
    adam_beta2: float = Field(default=0.98, description="Adam beta2 (0.98 in the paper).")
    weight_decay: float = Field(default=0.01, ge=0, description="Weight decay.")
    max_grad_norm: float = Field(default=1.0, gt=0, description="Gradient clipping.")
    bf16: bool = Field(default=False, description="bf16 mixed precision (GPU).")
    use_cpu: bool = Field(default=False, description="Force CPU.")
    gradient_checkpointing: bool = Field(default=False, description="Trade compute for memory (large models).")
    logging_steps: int = Field(default=1, ge=1, description="Log every N steps.")
    save_steps: int = Field(default=0, ge=0, description="Checkpoint every N steps (0 = only the final adapter).")
    save_total_limit: int | None = Field(default=2, description="Keep at most N checkpoints.")
    use_vllm: bool = Field(default=False, description="vLLM rollouts (GPU).")
    vllm_mode: Literal["colocate", "server"] = Field(default="colocate", description="colocate: in-process; server: "
                                                     "`trl vllm-serve` on separate GPUs.")
    vllm_server_base_url: str | None = Field(default=None, description="server mode: http://HOST:8000.")
    vllm_gpu_memory_utilization: float = Field(default=0.3, gt=0, le=1, description="colocate: vLLM's share of GPU.")
    vllm_tensor_parallel_size: int = Field(default=1, ge=1, description="colocate: TP size.")
    vllm_enable_sleep_mode: bool = Field(default=False, description="colocate: offload vLLM weights during training.")
    chat_template_kwargs: dict[str, Any] = Field(default_factory=dict,
                                                 description="e.g. {enable_thinking: false} for Qwen3 (paper).")
    deepspeed: str | None = Field(default=None, description="DeepSpeed JSON (or use an accelerate config).")
    report_to: list[str] = Field(default_factory=list, description="Extra loggers (wandb, tensorboard).")
    extra_grpo_args: dict[str, Any] = Field(default_factory=dict, description="Any other GRPOConfig field, verbatim.")

    @model_validator(mode="after")
    def _consistent(self) -> TrainConfig:
        if self.use_cpu and (self.use_vllm or self.bf16):
            raise ValueError("use_cpu excludes use_vllm and bf16")
        # per fact, the cap applies to the assembled state, which is longer than one completion
        if self.reward.max_state_tokens > self.max_completion_length and not is_per_fact(self.data.prompt):
            raise ValueError(f"reward.max_state_tokens ({self.reward.max_state_tokens}) exceeds max_completion_length "
                             f"({self.max_completion_length}): the cap could never fire")
        if self.vllm_mode == "server" and self.use_vllm and not self.vllm_server_base_url:
            raise ValueError("vllm_mode=server needs vllm_server_base_url (where `trl vllm-serve` listens)")
        if self.model.source == "tiny" and self.model.tokenizer == "auto":
            raise ValueError("model.source=tiny needs model.tokenizer bpe or smollm2")
        if len({self.seed, self.data.eval_seed, self.data.val_seed}) < 3 and not self.data.train_path:
            raise ValueError("seed, data.eval_seed and data.val_seed must differ: held-out and validation "
                             "instances would repeat training ones")
        if self.warmup.targets == "answer-key" and (self.model.source == "tiny" or not self.lora.enabled):
            raise ValueError("warmup.targets=answer-key trains a LoRA adapter on a pretrained base (model.source "
                             "gguf/hf/checkpoint with lora.enabled)")
        if (self.data.n_val or self.data.val_from_train) and not self.eval_every:
            raise ValueError("data.n_val needs eval_every > 0 (validation runs at evaluation steps)")
        if is_per_fact(self.data.prompt) and (self.warmup.shuffle_copies or self.model.source == "tiny"):
            raise ValueError(f"data.prompt {self.data.prompt} asks one line per fact: positions do not exist there "
                             "(warmup.shuffle_copies must be 0), and it needs a pretrained base (not model.source=tiny)")
        if self.warmup.sampling == "balanced" and not (is_per_fact(self.data.prompt)
                                                       and self.warmup.targets == "answer-key"):
            raise ValueError("warmup.sampling=balanced draws per-fact examples by state signature: it needs a "
                             "per-fact data.prompt (policy_fact_v1) and warmup.targets=answer-key")
        if self.lora.init_adapter and (self.warmup.steps or not self.lora.enabled or self.model.source == "tiny"):
            raise ValueError("lora.init_adapter continues a saved adapter on a pretrained base: it needs lora.enabled, "
                             "warmup.steps 0 and model.source gguf/hf/checkpoint")
        if self.model.source == "tiny" and self.warmup.steps == 0 and self.max_steps > 10:
            raise ValueError("a from-scratch tiny model needs warmup.steps > 0 to learn the format before GRPO")
        return self

    def grpo_args(self, output_dir: str | None = None) -> dict[str, Any]:
        """Keyword arguments for trl.GRPOConfig."""
        keys = ["num_generations", "temperature", "top_p", "learning_rate", "beta", "epsilon", "epsilon_high",
                "loss_type", "scale_rewards", "max_completion_length", "per_device_train_batch_size",
                "gradient_accumulation_steps", "num_iterations", "max_steps", "num_train_epochs", "lr_scheduler_type",
                "warmup_steps", "adam_beta1", "adam_beta2", "weight_decay", "max_grad_norm", "bf16", "use_cpu",
                "gradient_checkpointing", "logging_steps", "save_total_limit", "use_vllm", "vllm_mode",
                "vllm_gpu_memory_utilization", "vllm_tensor_parallel_size", "vllm_enable_sleep_mode",
                "chat_template_kwargs", "seed", "report_to"]
        args = {k: getattr(self, k) for k in keys}
        if self.vllm_server_base_url:
            args["vllm_server_base_url"] = self.vllm_server_base_url
        if self.deepspeed:
            args["deepspeed"] = self.deepspeed
        args.update(output_dir=output_dir or self.output_dir, save_strategy="steps" if self.save_steps else "no",
                    remove_unused_columns=False, disable_tqdm=True, log_completions=False)
        if self.save_steps:
            args["save_steps"] = self.save_steps
        args.update(self.extra_grpo_args)
        return args


def preset_candidates(name: str) -> list[Path]:
    """Where a preset name is looked for, in order: ``configs/`` and ``configs/experiments/`` under the working
    directory, then the same two under the repository (the shipped presets sit at the top, the experiments
    that did not ship one floor down)."""
    return [d / f"{name}.yaml" for root in (Path("configs"), CONFIG_DIR) for d in (root, root / "experiments")]


def preset_path(name: str, family: str = "grpo") -> Path:
    """A preset name (``grpo-cpu-smoke``) or a YAML path; a missing preset names the known ones of ``family``
    (the file-name prefix: ``grpo``, ``relations``, ``reader``)."""
    p = Path(name)
    if p.suffix in (".yaml", ".yml"):
        return p
    for cand in preset_candidates(name):
        if cand.is_file():
            return cand
    known = sorted(x.stem for d in (CONFIG_DIR, CONFIG_DIR / "experiments") for x in d.glob(f"{family}-*.yaml"))
    raise FileNotFoundError(f"no preset {name!r} (known: {', '.join(known)})")


def load_preset(name: str, model: type[M], overrides: list[str] | None = None, family: str = "grpo") -> M:
    """A typed config from a preset name or YAML path, with ``KEY=VALUE`` overrides (dotted keys) applied:
    the one loader behind train-policy, train-relations and train-reader."""
    data = yaml.safe_load(preset_path(name, family).read_text()) or {}
    if not overrides:
        return model.model_validate(data)
    # Overrides apply to the validated preset with its defaults filled in, so ``weights.wrong=0`` changes
    # one entry of a default dict instead of replacing the whole dict with ``{"wrong": 0}``.
    full = model.model_validate(data).model_dump(mode="python", by_alias=True)
    return model.model_validate(apply_overrides(full, list(overrides)))


def parse_override(item: str) -> tuple[list[str], Any]:
    """``a.b=value`` with the value read as YAML (numbers, booleans, lists).

    >>> parse_override("lora.r=8"), parse_override("report_to=[wandb]")
    ((['lora', 'r'], 8), (['report_to'], ['wandb']))
    """
    if "=" not in item:
        raise ValueError(f"override {item!r} is not KEY=VALUE")
    key, raw = item.split("=", 1)
    return key.strip().split("."), yaml.safe_load(raw) if raw.strip() else None


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    for item in overrides:
        path, value = parse_override(item)
        node = data
        for k in path[:-1]:
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise ValueError(f"override {item!r}: {k} is not a section")
        node[path[-1]] = value
    return data


def load_config(path_or_preset: str, overrides: list[str] | None = None) -> TrainConfig:
    return load_preset(path_or_preset, TrainConfig, overrides)
