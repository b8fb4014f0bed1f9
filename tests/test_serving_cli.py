"""Serving subcommands: vllm-command lines, `evomem answer` end to end (real HTTP to a stand-in answer
server), and the demo's answering half with SmolLM2 (slow)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from servers import FaultServer

from evomem.cli import main
from serving.vllm import VllmPlanConfig, client_env, plan


def test_vllm_lines_for_one_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vllm-command", "--policy-lora", "/ckpt/policy v2"]) == 0
    out = capsys.readouterr().out
    serve = [ln for ln in out.splitlines() if " vllm serve " in ln]
    assert len(serve) == 3 and all(ln.startswith("CUDA_VISIBLE_DEVICES=0 ") for ln in serve)
    answer, policy, embed = (shlex.split(ln.split(" ", 1)[1]) for ln in serve)
    assert answer[2] == "Qwen/Qwen3-8B" and policy[2] == "Qwen/Qwen3-4B" and embed[2] == "BAAI/bge-m3"
    assert policy[policy.index("--lora-modules") + 1] == "policy=/ckpt/policy v2"  # quoted, survives spaces
    assert "--enable-lora" in policy and "--runner" in embed and embed[embed.index("--runner") + 1] == "pooling"
    fractions = [float(a[a.index("--gpu-memory-utilization") + 1]) for a in (answer, policy, embed)]
    assert sum(fractions) <= 0.95
    assert '--api-key "${VLLM_API_KEY}"' in serve[0]  # left for the shell to expand
    assert "EVOMEM_ANSWER_URL=http://127.0.0.1:8000/v1" in out and "EVOMEM_POLICY_MODEL=policy" in out


def test_vllm_lines_for_a_small_policy_adapter(capsys: pytest.CaptureFixture[str]) -> None:
    """The CPU policy's base (SmolLM2-135M, 8192-token context) served with its adapter."""
    assert main(["vllm-command", "--policy-base", "/cache/smollm2-hf", "--policy-base-name", "smollm2-135m",
                 "--policy-max-len", "8192", "--policy-lora", "/runs/best"]) == 0
    policy = next(shlex.split(ln.split(" ", 1)[1]) for ln in capsys.readouterr().out.splitlines()
                  if " vllm serve /cache/smollm2-hf" in ln)
    assert policy[policy.index("--served-model-name") + 1] == "smollm2-135m"
    assert policy[policy.index("--max-model-len") + 1] == "8192"
    assert policy[policy.index("--lora-modules") + 1] == "policy=/runs/best"


@pytest.mark.parametrize("gpus,tp", [(2, 1), (4, 2), (8, 4), (6, 2)])
def test_vllm_tensor_parallel_layouts(gpus: int, tp: int) -> None:
    lines = {ln.role: ln for ln in plan(VllmPlanConfig(gpus=gpus))}
    assert lines["answer"].tensor_parallel == tp == lines["policy"].tensor_parallel
    assert not set(lines["answer"].gpus) & set(lines["policy"].gpus)  # generators never share a GPU
    assert max(lines["policy"].gpus) < gpus and lines["embed"].gpus[0] in lines["policy"].gpus
    assert f"--tensor-parallel-size {tp}" in lines["answer"].shell()
    with pytest.raises(ValueError):
        VllmPlanConfig(gpus=2, tensor_parallel=2)


def test_vllm_json_and_client_env(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vllm-command", "--gpus", "4", "--json", "--api-key-env", ""]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["role"] for s in data["servers"]] == ["answer", "policy", "embed"]
    assert "--api-key" not in data["servers"][0]["argv"] and "EVOMEM_ANSWER_API_KEY" not in data["env"]
    assert client_env(VllmPlanConfig(host="0.0.0.0"))["EVOMEM_ANSWER_URL"] == "http://127.0.0.1:8000/v1"


def test_answer_command_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = ["--store-path", str(tmp_path / "store"), "--embedder", "hash"]
    assert main(["load-example", *store]) == 0
    capsys.readouterr()
    with FaultServer("ok", text="Go for a gentle beach holiday.") as fs:
        rc = main(["answer", *store, "--answer-url", fs.url, "--answer-model", "stand-in", "--user", "maya", "--k", "4",
                   "--json", "Suggest a vacation for me"])
        assert rc == 0 and fs.hits == 1
    res = json.loads(capsys.readouterr().out)
    # the default policy is the shipped learned adapter, loaded from the package (not the rule baseline's stand-in)
    assert res["answer"] == "Go for a gentle beach holiday." and res["policy"] == "learned:smollm2-read-v1"
    assert "F" in res["reasoning_state"] and any(e["validity"] == "superseded" for e in res["evidence"])
    with FaultServer("ok") as fs:
        assert main(["answer", *store, "--answer-url", fs.url, "--answer-model", "m", "--user", "maya",
                     "--no-reasoning-state", "--no-traverse", "Suggest a vacation"]) == 0
    text = capsys.readouterr().out
    assert "; ablated):" in text and "seed current" in text
    assert not re.search(r"F\d+\s+trav ", text)  # no fact arrived by traversal


@pytest.mark.slow
def test_demo_answers_with_smollm2(tmp_path: Path) -> None:
    from evomem.examples import load_fixture, load_history
    from memcore.memory import Memory
    from graph.embedded import EmbeddedStore
    from llmclients.embeddings import HashEmbedder
    from serving.demo import run_demo_answers
    from serving.pipeline import PipelineConfig

    store = EmbeddedStore(tmp_path / "s")
    store.setup()
    mem = Memory(store, HashEmbedder(64))
    history = load_history()
    load_fixture(mem, history)
    printed: list[str] = []
    results = run_demo_answers(mem, history["requests"][:2], config=PipelineConfig(k=4, max_answer_tokens=12),
                               out=printed.append)
    mem.close()
    assert len(results) == 2 and all(r.answer and r.answer_model == "smollm2-135m-instruct" for r in results)
    text = "\n".join(printed)
    assert "reasoning state (rule-baseline):" in text and "superseded" in text
    assert "answer (smollm2-135m-instruct — a 135M plumbing model, not answer quality):" in text
    assert text.count("state check — does the Reasoning State use") == 2 and "answer text is not checked" in text
