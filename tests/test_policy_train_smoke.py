"""CPU smoke of the GRPO job: a config-built tiny model, 3 GRPO steps with LoRA, metrics, plot, adapter reload."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def test_grpo_cpu_smoke_trains_lora_and_checkpoint_reloads(tmp_path: Path) -> None:
    import torch
    from peft import get_peft_model_state_dict

    from policy.config import load_config
    from policy.learned import LocalLearnedPolicy, read_meta
    from policy.state import ReasoningState, StateParseError
    from policy.train import finish, prepare

    cfg = load_config("grpo-cpu-smoke", [f"output_dir={tmp_path / 'run'}", "data.n_val=6", "eval_every=2"])
    run = prepare(cfg)
    model = run.trainer.model
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    assert before and all("lora_" in n for n in before), "only LoRA parameters are trainable"
    run.trainer.train()
    changed = [n for n, p in model.named_parameters() if n in before and not torch.equal(before[n], p.detach())]
    assert changed, "GRPO must move the LoRA parameters"
    assert any("lora_B" in n for n in changed)  # lora_B starts at zero: moving it changes the model's output
    res = finish(run)
    assert res.steps == 3

    rows = [json.loads(x) for x in Path(res.metrics_path).read_text().splitlines()]
    grpo = [r for r in rows if r.get("phase") == "grpo" and "reward" in r]
    assert len(grpo) == 3
    for r in grpo:
        for key in ("reward", "reward_std", "kl", "state/format_fail_rate"):
            assert key in r, key
    assert any(r.get("phase") == "warmup" for r in rows)
    assert any("heldout/accuracy" in r for r in rows)
    assert Path(res.plot_path).stat().st_size > 1000
    vals = [r for r in rows if r.get("phase") == "validation"]
    assert [r["step"] for r in vals] == [0, 2]  # the start competes, then every eval_every steps
    best_val = max(r["val/reward"] for r in vals)
    assert res.best_val_reward == best_val and res.best_step in (0, 2)
    assert read_meta(res.best_dir).adapter and Path(res.best_dir, "adapter_model.safetensors").is_file()

    final = Path(res.final_dir)
    for name in ("adapter_config.json", "adapter_model.safetensors", "tokenizer.json", "evomem_policy.json"):
        assert (final / name).is_file(), name  # what vLLM --lora-modules and policy.learned load
    meta = read_meta(final)
    assert meta.adapter and meta.prompt == "policy_tiny_v1" and Path(meta.base_model, "config.json").is_file()

    pol = LocalLearnedPolicy.from_checkpoint(final, max_new_tokens=48, temperature=0.0)
    trained = {k: v.detach().cpu() for k, v in get_peft_model_state_dict(model).items()}
    loaded = get_peft_model_state_dict(pol.model)
    assert trained.keys() == loaded.keys()
    assert all(torch.allclose(trained[k], loaded[k].cpu()) for k in trained)

    from training_data.synthetic import SyntheticConfig, SyntheticSource

    inst = next(SyntheticSource(SyntheticConfig(n=2)).instances(99))
    try:  # a 3-step tiny model may or may not write a valid state; either outcome must be typed
        st = pol.state(inst.request, inst.bundle(), inst.choices)
        assert isinstance(st, ReasoningState)
    except StateParseError:
        pass


def test_cli_train_policy_runs_one_step(tmp_path: Path) -> None:
    from evomem.cli import main

    rc = main(["train-policy", "--config", "grpo-cpu-smoke", "--json", "--set", f"output_dir={tmp_path / 'cli'}",
               "max_steps=1", "data.synthetic.n=16", "data.n_eval=0"])
    assert rc == 0
    assert (tmp_path / "cli" / "final" / "adapter_model.safetensors").is_file()


@pytest.mark.parametrize("store", ["embedded"], indirect=True)  # the policy is what is under test here
def test_trained_checkpoint_serves_in_process_and_behind_serve_model(tmp_path: Path, memory: Any) -> None:
    """A LoRA checkpoint replaces the rule baseline two ways: in process (EVOMEM_POLICY_KIND=local,
    EVOMEM_POLICY_PATH) and behind `evomem serve-model` over real HTTP, as vLLM would serve it with
    --lora-modules. Whatever the 1-step model writes is used as the state or reported as a fallback."""
    from llmclients.chat import ChatMessage, ChatResult, Usage
    from llmclients.config import ModelsConfig
    from policy.config import load_config
    from policy.learned import LocalLearnedPolicy
    from policy.train import train
    from policy.learned import EndpointLearnedPolicy
    from serving.pipeline import AnswerPipeline, PipelineConfig, build_models
    from servers import start_model_server

    class Fixed:
        name = "fixed"

        def complete(self, messages: list[ChatMessage], **kw: object) -> ChatResult:
            return ChatResult(text="ok", finish_reason="stop", usage=Usage(prompt_tokens=1, completion_tokens=1))

    def check(policy: Any, name: str) -> None:
        out = AnswerPipeline(memory, policy, Fixed()).answer("maya", "Suggest a vacation for me")
        assert out.policy == name and out.answer == "ok"
        assert out.reasoning_state is not None  # the learned state, or the rule baseline's after a logged fallback
        assert out.policy_fallback is None or out.policy_fallback.startswith("policy output invalid")

    res = train(load_config("grpo-cpu-smoke", [f"output_dir={tmp_path / 'run'}", "max_steps=1", "data.n_eval=0"]))
    env = {"EVOMEM_POLICY_KIND": "local", "EVOMEM_POLICY_PATH": res.final_dir}
    local, _ = build_models(ModelsConfig.from_env(env, answer={"kind": "openai", "base_url": "http://127.0.0.1:9/v1",
                                                               "model": "unused"}))
    assert isinstance(local, LocalLearnedPolicy) and local.name == "learned:final"
    check(local, "learned:final")

    server = start_model_server(tmp_path, model_path=Path(res.final_dir), served_name="policy")
    try:
        models = ModelsConfig.from_env({"EVOMEM_POLICY_URL": f"{server.url}/v1", "EVOMEM_POLICY_MODEL": "policy"},
                                       answer={"kind": "openai", "base_url": f"{server.url}/v1", "model": "policy"})
        served, _ = build_models(models, PipelineConfig(policy_prompt="policy_tiny_v1"))
        assert isinstance(served, EndpointLearnedPolicy) and served.prompt == "policy_tiny_v1"
        check(served, served.name)
        assert served.name.startswith("learned:policy:") and served.temperature == 0.0
        assert served.last_result is not None and served.last_result.usage.prompt_tokens > 0  # it really answered
    finally:
        server.stop()


def test_full_finetune_of_a_tiny_model_keeps_a_reference_and_reloads(tmp_path: Path) -> None:
    """lora.enabled=false (what the CPU learning demo uses): TRL needs a KL reference model from the
    warmed-up weights; the saved folder holds full weights and loads back."""
    import torch

    from policy.config import load_config
    from policy.learned import LocalLearnedPolicy, read_meta
    from policy.train import finish, prepare

    cfg = load_config("grpo-cpu-smoke", [f"output_dir={tmp_path / 'full'}", "lora.enabled=false", "max_steps=2",
                                         "data.n_eval=0", "beta=0.01"])
    run = prepare(cfg)
    assert run.trainer.ref_model is not None  # beta > 0: the reference was built from the saved start
    before = {n: p.detach().clone() for n, p in run.trainer.model.named_parameters()}
    run.trainer.train()
    res = finish(run)
    moved = [n for n, p in run.trainer.model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert moved, "full fine-tuning must change the weights"
    assert not read_meta(res.final_dir).adapter and Path(res.final_dir, "model.safetensors").is_file()
    pol = LocalLearnedPolicy.from_checkpoint(res.final_dir)
    loaded = dict(pol.model.named_parameters())
    assert all(torch.allclose(p.detach(), loaded[n].detach()) for n, p in run.trainer.model.named_parameters())
