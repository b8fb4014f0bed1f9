"""Shipping a learned policy: the artefact (portable base alias, manifest, sha256, size cap), the
fallback when it is absent, the example-history gate `evomem ship-policy` applies, and vLLM serving."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from llmclients.config import ModelEndpointConfig
from policy.learned import META_FILE, SMOLLM2_BASE, PolicyMeta, read_meta, write_meta
from policy.shipped import (ADAPTER_FILES, MANIFEST_FILE, MAX_ADAPTER_BYTES, ShippedPolicyMissing, check_shipped,
                            ship_checkpoint, shipped_policy_dir)
from serving.pipeline import make_policy


def _fake_checkpoint(folder: Path, base: str, adapter_bytes: int = 64) -> Path:
    folder.mkdir(parents=True)
    (folder / ADAPTER_FILES[0]).write_bytes(b"\0" * adapter_bytes)
    (folder / ADAPTER_FILES[1]).write_text(json.dumps({"base_model_name_or_path": base, "r": 8}))
    write_meta(folder, PolicyMeta(base_model=base, prompt="policy_short_v1", prompt_version="1"))
    return folder


def test_ship_rewrites_the_base_to_the_alias_and_refuses_what_cannot_travel(tmp_path: Path) -> None:
    from policy.models import smollm2_hf_dir

    data = tmp_path / "manifest.json"
    data.write_text(json.dumps({"hash": "abc", "files": {}}))
    ckpt = _fake_checkpoint(tmp_path / "best", str(smollm2_hf_dir().resolve()))
    man = ship_checkpoint(ckpt, tmp_path / "out", data_manifest=data, train_config={"seed": 3})
    assert check_shipped(tmp_path / "out") == man and man.data["hash"] == "abc"
    assert read_meta(tmp_path / "out").base_model == SMOLLM2_BASE
    assert json.loads((tmp_path / "out" / ADAPTER_FILES[1]).read_text())["base_model_name_or_path"] == SMOLLM2_BASE
    with pytest.raises(ValueError, match="not the shipped SmolLM2"):
        ship_checkpoint(_fake_checkpoint(tmp_path / "qwen", "/models/Qwen3-4B"), tmp_path / "o2",
                        data_manifest=data, train_config={})
    with pytest.raises(ValueError, match="over the 10 MB"):
        ship_checkpoint(_fake_checkpoint(tmp_path / "big", SMOLLM2_BASE, MAX_ADAPTER_BYTES + 1), tmp_path / "o3",
                        data_manifest=data, train_config={})
    (tmp_path / "out" / ADAPTER_FILES[0]).write_bytes(b"\1" * 64)  # tampered or truncated on disk
    with pytest.raises(ShippedPolicyMissing, match="does not match"):
        check_shipped(tmp_path / "out")


def test_a_missing_artefact_falls_back_to_the_rule_baseline_and_says_why(tmp_path: Path) -> None:
    policy = make_policy(ModelEndpointConfig(kind="shipped", model_path=str(tmp_path)))
    name = getattr(policy, "name", "")
    assert name.startswith("rule-baseline (shipped policy unavailable") and ADAPTER_FILES[0] in name


def test_vllm_command_serves_the_shipped_adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from evomem.cli import main
    from policy import shipped

    monkeypatch.setattr(shipped, "ARTEFACT_ROOT", tmp_path / "artefact")
    assert main(["vllm-command", "--shipped-policy"]) == 1  # nothing ships: a clear error, not a bad command line
    assert "no learned policy ships" in capsys.readouterr().err
    data = tmp_path / "manifest.json"
    data.write_text(json.dumps({"hash": "abc", "files": {}}))
    ship_checkpoint(_fake_checkpoint(tmp_path / "best", SMOLLM2_BASE), shipped_policy_dir(), data_manifest=data,
                    train_config={})
    assert main(["vllm-command", "--shipped-policy"]) == 0
    out = capsys.readouterr().out
    policy = next(shlex.split(ln.split(" ", 1)[1]) for ln in out.splitlines() if "--lora-modules" in ln)
    assert policy[policy.index("--lora-modules") + 1] == f"policy={shipped_policy_dir()}"
    assert Path(policy[2], "config.json").is_file()  # the converted SmolLM2 folder vLLM loads as the base
    assert policy[policy.index("--served-model-name") + 1] == "smollm2-135m"
    assert "--policy-prompt policy_short_v1" in out


@pytest.mark.slow
def test_the_rule_baseline_meets_the_example_history_needs(tmp_path: Path) -> None:
    """The needs in history.json are satisfiable: the rule baseline's five states (MiniLM store, k=4, as
    `make demo`) miss nothing. A learned policy must do as well to ship."""
    from evomem.examples import load_fixture, load_history
    from evomem.settings import Settings
    from memcore.memory import Memory
    from policy.needs import StateNeeds
    from policy.rule import RulePolicy

    mem = Memory.from_settings(Settings.from_env({}, store={"path": str(tmp_path / "s")}))
    history = load_history()
    load_fixture(mem, history)
    rule = RulePolicy()
    for req in history["requests"]:
        bundle = mem.retrieve(req["user_id"], req["request"], k=4)
        state = rule.state(req["request"], bundle)
        needs = StateNeeds.model_validate(req["needs"])
        assert needs.misses([(it.alias, it.fact.statement) for it in bundle.items], state) == [], req
        # and the check has teeth: the same state with its first needed fact ignored misses it
        first = next(it.alias for it in bundle.items if needs.use[0].lower() in it.fact.statement.lower())
        from policy.state import parse_state

        broken = parse_state(state.render().replace(f"{first}: use", f"{first}: ignore"), [it.alias for it in bundle.items])
        assert needs.misses([(it.alias, it.fact.statement) for it in bundle.items], broken)[0].startswith("not used")
    mem.close()


@pytest.mark.slow
def test_ship_policy_refuses_an_adapter_that_does_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real LoRA adapter on the shipped SmolLM2 (freshly initialised: the base model's behaviour), saved as
    `evomem train-policy` saves it: it loads through the portable base alias, and `evomem ship-policy`
    refuses it because its states on the example history miss what the requests need."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from evomem.cli import main
    from policy.models import smollm2_hf_dir

    run = tmp_path / "run"
    best = run / "best"
    base = AutoModelForCausalLM.from_pretrained(str(smollm2_hf_dir()))
    model = get_peft_model(base, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"]))
    model.save_pretrained(str(best))
    write_meta(best, PolicyMeta(base_model=SMOLLM2_BASE, prompt="policy_short_v1", prompt_version="1"))
    from policy.learned import LocalLearnedPolicy

    pol = LocalLearnedPolicy.from_checkpoint(best, temperature=0.0, max_new_tokens=8)
    assert pol.name == "learned:best" and pol.tokenizer.eos_token == "<|im_end|>"  # base + tokenizer from the GGUF
    data = tmp_path / "data"
    data.mkdir()
    (data / "manifest.json").write_text(json.dumps({"hash": "abc", "files": {}}))
    (run / "config.json").write_text(json.dumps({"name": "t", "seed": 0, "data": {"train_path": str(data / "train.jsonl")}}))
    (run / "metrics.jsonl").write_text(json.dumps({"phase": "validation", "step": 0, "val/reward": 0.0}) + "\n")
    out = tmp_path / "shipped"
    rc = main(["ship-policy", "--run", str(run), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists()
    assert "does not ship" in err and "Suggest a vacation for me" in err, err
