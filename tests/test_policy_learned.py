"""Learned policy through a ChatModel endpoint (a real OpenAI-compatible HTTP server on 127.0.0.1) and the
GPU readiness script's CPU-sized path."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import FaultServer

from llmclients.config import ModelEndpointConfig
from llmclients.factory import make_chat_model
from policy.base import Policy
from policy.learned import EndpointLearnedPolicy, read_meta
from policy.state import StateParseError
from training_data.synthetic import SyntheticConfig, SyntheticSource

ROOT = Path(__file__).resolve().parents[1]


STATE = "F1: use | current-preference | high\nRULE: prefer the newest preference"


@pytest.fixture()
def server() -> Iterator[FaultServer]:
    with FaultServer(mode="ok", text=STATE) as srv:
        yield srv


def test_endpoint_policy_asks_the_adapter_by_name_and_parses(server) -> None:  # noqa: ANN001
    chat = make_chat_model(ModelEndpointConfig(kind="openai", base_url=server.url,
                                               model="policy", max_retries=0))
    pol = EndpointLearnedPolicy(chat, temperature=0.3)
    assert isinstance(pol, Policy)
    inst = next(SyntheticSource(SyntheticConfig(n=3)).instances(0))
    st = pol.state(inst.request, inst.bundle(), inst.choices)
    assert st.facts[0].alias == "F1" and st.rules == ("prefer the newest preference",)
    sent = server.requests[-1]
    assert sent["model"] == "policy" and sent["temperature"] == 0.3
    assert inst.request in sent["messages"][-1]["content"] and "[F1]" in sent["messages"][-1]["content"]


def test_endpoint_policy_garbage_is_a_typed_error(server) -> None:  # noqa: ANN001
    server.text = "Sure! Here is my reasoning state: use the beach one."
    chat = make_chat_model(ModelEndpointConfig(kind="openai", base_url=server.url, model="policy", max_retries=0))
    inst = next(SyntheticSource(SyntheticConfig(n=3)).instances(0))
    with pytest.raises(StateParseError):
        EndpointLearnedPolicy(chat).state(inst.request, inst.bundle())


def test_endpoint_policy_per_fact_asks_once_per_fact_and_assembles(server) -> None:  # noqa: ANN001
    """With a per-fact prompt the endpoint gets one short request per fact, each naming only that fact as the
    Memory; the replies (one line, with or without a handle) become one state line per fact."""
    server.text = "F9: evidence | use | high"
    chat = make_chat_model(ModelEndpointConfig(kind="openai", base_url=server.url, model="policy", max_retries=0))
    inst = next(SyntheticSource(SyntheticConfig(n=3)).instances(0))
    before = len(server.requests)
    st = EndpointLearnedPolicy(chat, prompt="policy_fact_v1", temperature=0.0).state(inst.request, inst.bundle())
    sent = server.requests[before:]
    assert len(sent) == len(inst.aliases) and all(r["max_tokens"] <= 32 for r in sent)
    assert [r["messages"][-1]["content"].split("Memory: [", 1)[1].split("]", 1)[0] for r in sent] == inst.aliases
    assert [f.alias for f in st.facts] == inst.aliases and all(f.use and f.role == "evidence" for f in st.facts)


def test_read_meta_explains_a_non_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a checkpoint"):
        read_meta(tmp_path)


def _gpu_check_module() -> Any:
    spec = importlib.util.spec_from_file_location("gpu_grpo_check", ROOT / "bench" / "gpu_grpo_check.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_gpu_check_without_cuda_fails_cleanly(capsys) -> None:  # noqa: ANN001
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert _gpu_check_module().main(["--steps", "1"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and "no CUDA device" in out["error"] and "--tiny --cpu" in out["error"]


@pytest.mark.slow
def test_gpu_check_cpu_sized_path(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    mod = _gpu_check_module()
    half = mod.check_config(False, False, 3, str(tmp_path / "unused"))
    assert half.model.dtype == "bfloat16" and half.bf16 and half.max_completion_length == 512
    assert mod.main(["--tiny", "--cpu", "--steps", "2", "--keep", str(tmp_path / "run"),
                     "--save", str(tmp_path / "out.json")]) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["ok"] and out["steps"] == 2 and len(out["step_seconds"]) == 2
    assert out["params_lora"] > 0 and out["params_total"] > out["params_lora"]
    # what the GPU run prints: reward per step and throughput (and the per-step share of groups without spread)
    assert len(out["reward_per_step"]) == 2 and out["completion_tokens_per_second"] > 0
    assert len(out["frac_reward_zero_std_per_step"]) == 2 and not out["vllm"]
    vllm = mod.check_config(False, False, 3, str(tmp_path / "unused"), vllm=True)
    assert vllm.use_vllm and vllm.vllm_mode == "colocate" and not half.use_vllm
    assert mod.main(["--tiny", "--cpu", "--vllm"]) == 2  # vLLM rollouts are GPU-only: refused cleanly on CPU


def test_gpu_check_model_is_about_half_a_billion_parameters() -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    conf = LlamaConfig(vocab_size=49152, tie_word_embeddings=True, **_gpu_check_module().HALF_B)
    with torch.device("meta"):  # shapes only: no memory, no init time
        n = sum(p.numel() for p in LlamaForCausalLM(conf).parameters())
    assert 0.45e9 < n < 0.55e9, n
