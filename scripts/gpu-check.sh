#!/usr/bin/env bash
# GPU readiness check for GRPO training: a few steps of a config-built ~0.5B Llama in bf16 on CUDA (random
# weights, SmolLM2 tokenizer from the shipped GGUF; nothing downloaded). Prints one JSON object: seconds per
# step, peak CUDA memory, parameter counts. Budget: <= 8 minutes on one H200 (hard timeout below).
#
#   scripts/gpu-check.sh                 # default: 3 steps, ~0.5B, bf16
#   scripts/gpu-check.sh --steps 5
#   scripts/gpu-check.sh --vllm          # vLLM rollouts (TRL colocate): prints reward per step and tokens/s
#   scripts/gpu-check.sh --tiny --cpu    # the same logic, CPU-sized (no GPU needed)
#
# The JSON also goes to $OUT/gpu-grpo-check.json when OUT is a folder (device runners), else ./gpu-grpo-check.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
RESULT="gpu-grpo-check.json"
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then RESULT="$OUT/gpu-grpo-check.json"; fi
set +e
timeout "${GPU_CHECK_TIMEOUT_S:-470}" "$PY" bench/gpu_grpo_check.py --save "$RESULT" "$@"
rc=$?
set -e
if [ "$rc" = 124 ]; then
  echo "{\"ok\": false, \"error\": \"timed out after ${GPU_CHECK_TIMEOUT_S:-470}s\"}" | tee "$RESULT"
fi
exit "$rc"
