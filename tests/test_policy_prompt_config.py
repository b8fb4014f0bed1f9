"""Prompt files, TrainConfig (YAML + overrides + presets + validation), the CLI wiring."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest
from pydantic import ValidationError

import policy.config
import policy.answer_prompts
from policy.config import TrainConfig, apply_overrides, load_config
from policy.prompt import answer_messages, load_prompt, policy_messages
from policy.state import FactUse, ReasoningState
from training_data.synthetic import SyntheticConfig, SyntheticSource

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("module", [policy.answer_prompts, policy.config])
def test_doctests(module) -> None:  # noqa: ANN001
    res = doctest.testmod(module)
    assert res.attempted > 0 and res.failed == 0


def test_every_prompt_file_has_a_version() -> None:
    names = sorted(p.stem for p in (ROOT / "policy" / "prompts").glob("*.yaml"))
    assert {"policy_v1", "policy_tiny_v1"} <= set(names)
    versions = [load_prompt(n).version for n in names]
    assert len(set(versions)) == len(versions)
    with pytest.raises(FileNotFoundError, match="known"):
        load_prompt("nope")


def test_policy_prompt_shows_request_options_facts_and_states_but_no_answer_key() -> None:
    inst = next(SyntheticSource(SyntheticConfig(n=50, categories=["update"], unlinked_update=0.0)).instances(0))
    sys_msg, user = policy_messages(inst.request, inst.bundle(), inst.choices)
    assert "F<n>: use | <role> | <priority>" in sys_msg.content
    assert inst.request in user.content and "(A)" in user.content
    for it in inst.evidence:
        assert f"[{it.alias}]" in user.content and it.fact.statement in user.content
    assert "superseded" in user.content and "replaced by" in user.content
    assert "gold" not in user.content and "current-preference | high" not in user.content


def test_budget_drops_whole_groups() -> None:
    inst = next(SyntheticSource(SyntheticConfig(n=50, categories=["update"], unlinked_update=0.0,
                                                max_distractors=2)).instances(1))
    full = policy_messages(inst.request, inst.bundle(), prompt="policy_tiny_v1")[1].content
    small = policy_messages(inst.request, inst.bundle(), prompt="policy_tiny_v1", facts_budget=25)[1].content
    assert small.count("[F") < full.count("[F")
    # The update and what it replaced form one group: at every budget both lines are in or both out,
    # and the budgets tried include one that keeps the pair and one that drops it but keeps others.
    kept = set()
    for budget in range(10, 101, 5):
        text = policy_messages(inst.request, inst.bundle(), prompt="policy_tiny_v1", facts_budget=budget)[1].content
        old, new = "superseded; replaced by" in text, "replaces F" in text
        assert old == new, (budget, text)
        kept.add((old, text.count("[F") > 0))
    assert {(True, True), (False, True)} <= kept


def test_answer_prompt_with_and_without_state() -> None:
    inst = next(SyntheticSource(SyntheticConfig(n=5)).instances(0))
    st = ReasoningState(facts=(FactUse(alias="F1", use=True, role="evidence", priority="high"),))
    without = answer_messages(inst.request, inst.bundle(), inst.choices, None)[1].content
    with_ = answer_messages(inst.request, inst.bundle(), inst.choices, st)[1].content
    assert "Reasoning State" not in without and "F1: use | evidence | high" in with_
    assert "exactly one option" in with_


def test_yaml_overrides_and_presets() -> None:
    cfg = load_config("grpo-cpu-smoke", ["max_steps=2", "lora.r=2", "data.synthetic.n=7", "report_to=[]"])
    assert (cfg.max_steps, cfg.lora.r, cfg.data.synthetic.n) == (2, 2, 7)
    assert load_config(str(ROOT / "configs" / "grpo-cpu-smoke.yaml")).name == "grpo-cpu-smoke"
    with pytest.raises(ValueError, match="KEY=VALUE"):
        apply_overrides({}, ["nonsense"])
    with pytest.raises(ValidationError):
        load_config("grpo-cpu-smoke", ["no_such_field=1"])
    with pytest.raises(FileNotFoundError, match="known"):
        load_config("grpo-nope")


@pytest.mark.parametrize("preset", ["grpo-cpu-smoke", "grpo-cpu-demo", "grpo-qwen3-4b", "grpo-qwen3-4b-multigpu"])
def test_presets_validate_and_map_onto_trl(preset: str) -> None:
    import dataclasses

    from trl import GRPOConfig

    cfg = load_config(preset)
    args = cfg.grpo_args()
    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    assert set(args) <= fields, set(args) - fields
    if preset.startswith("grpo-qwen3"):  # the paper's defaults (D.5)
        assert (cfg.num_generations, cfg.temperature, cfg.beta, cfg.epsilon, cfg.epsilon_high) == (8, 1.0, 0.001, 0.2, 0.28)
        assert cfg.max_completion_length == 512 and cfg.data.max_prompt_tokens == 8192
        assert cfg.lora.enabled and cfg.learning_rate == 1e-5 and cfg.adam_beta2 == 0.98
        assert cfg.use_vllm and cfg.chat_template_kwargs == {"enable_thinking": False}
    if preset.endswith("multigpu"):
        assert cfg.vllm_mode == "server" and cfg.vllm_server_base_url


def test_cpu_config_smoke_build_of_trl_args() -> None:
    from trl import GRPOConfig

    args = GRPOConfig(**load_config("grpo-cpu-smoke").grpo_args(output_dir="/tmp/evomem-unused"))
    assert args.use_cpu and not args.bf16 and args.num_generations == 4


def test_cross_field_validation() -> None:
    base = load_config("grpo-cpu-smoke").model_dump()
    with pytest.raises(ValidationError, match="use_cpu excludes"):
        TrainConfig.model_validate({**base, "use_vllm": True})
    with pytest.raises(ValidationError, match="could never fire"):
        TrainConfig.model_validate({**base, "reward": {"max_state_tokens": 999}})
    with pytest.raises(ValidationError, match="warmup"):
        TrainConfig.model_validate({**base, "warmup": {"steps": 0}, "max_steps": 50})
    with pytest.raises(ValidationError, match="answer.endpoint"):
        TrainConfig.model_validate({**base, "answer": {"kind": "chat"}})


def test_cli_registers_policy_commands() -> None:
    from evomem.cli import build_parser

    p = build_parser()
    ns = p.parse_args(["train-policy", "--config", "grpo-cpu-smoke", "--set", "max_steps=1", "lora.r=2"])
    assert ns.config == "grpo-cpu-smoke" and ns.set == ["max_steps=1", "lora.r=2"]
    ns = p.parse_args(["build-data", "--out", "x", "--synthetic-n", "3"])
    assert ns.out == "x" and ns.synthetic_n == 3


def test_cli_build_data_end_to_end(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from evomem.cli import main

    assert main(["build-data", "--out", str(tmp_path / "d"), "--synthetic-n", "12", "--seed", "5", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"hash"' in out and (tmp_path / "d" / "manifest.json").is_file()
