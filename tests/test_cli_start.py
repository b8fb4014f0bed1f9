"""The CLI starts at once: commands that only read the store load no model (no torch, transformers or
sentence-transformers, with the default minilm embedder configured), a locked store is reported
before any model loads, and each command imports only its own module. bench/cli_start.py times it."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evomem.cli import _AREAS, COMMAND_MODULES, main
from llmclients.embeddings import EmbedderConfig, LazyEmbedder

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "sentence_transformers", "fastapi", "neo4j")
# Runs one command in a fresh interpreter, then says which heavy packages it imported.
PROBE = ("import json, sys\nfrom evomem.cli import main\nrc = main(sys.argv[1:])\n"
         f"heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
         "print('PROBE ' + json.dumps({'rc': rc, 'heavy': heavy}), flush=True)\n")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}  # the default embedder: minilm
    return {**env, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def probe(*argv: str) -> tuple[int, list[str], str]:
    """(exit code, heavy packages imported, stderr) of `evomem ARGV` in a fresh interpreter."""
    p = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=_env(), cwd=ROOT,
                       timeout=300)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("PROBE ")), None)
    assert line is not None, f"no probe line; stderr: {p.stderr[-2000:]}"
    got = json.loads(line.removeprefix("PROBE "))
    return got["rc"], got["heavy"], p.stderr


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli-start") / "store"
    assert main(["load-example", "--embedder", "hash", "--store-path", str(path)]) == 0
    return path


def _a_fact(store: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["facts", "--embedder", "hash", "--store-path", str(store), "--user", "maya", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)["facts"]
    assert facts
    return str(facts[0]["fact"]["fact_id"])


def test_reading_commands_load_no_model(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = ["--store-path", str(store_dir)]  # no --embedder: the default minilm is configured, and must not load
    fact = _a_fact(store_dir, capsys)
    for argv in (["users", *s], ["facts", *s, "--user", "maya"], ["profile", *s, "--user", "maya"],
                 ["cypher", *s, "--user", "maya", "MATCH (f:Fact) RETURN count(f) AS n"],
                 ["history", *s, "--user", "maya", fact]):
        rc, heavy, err = probe(*argv)
        assert rc == 0, (argv, err)
        assert heavy == [], f"evomem {argv[0]} imported {heavy}"


def test_the_probe_sees_a_model_load(store_dir: Path) -> None:
    """The check above can fail: a command that embeds (retrieve) does import torch and friends."""
    rc, heavy, err = probe("retrieve", "--store-path", str(store_dir), "--user", "maya", "beach", "--k", "2")
    assert rc == 0, err
    assert {"torch", "sentence_transformers", "transformers"} <= set(heavy)


@pytest.fixture
def locked_store(tmp_path: Path) -> Iterator[Path]:
    """A store held open by another process (as `evomem serve` holds it)."""
    path = tmp_path / "locked"
    code = ("import sys, time; from graph.embedded import EmbeddedStore; s = EmbeddedStore(sys.argv[1]); "
            "print('ready', flush=True); time.sleep(300)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True,
                              env=_env(), cwd=ROOT)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        yield path
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("argv", [["users"], ["retrieve", "--user", "maya", "beach"],
                                  ["answer", "--user", "maya", "Suggest a vacation"]])
def test_a_locked_store_is_reported_before_any_model_loads(locked_store: Path, argv: list[str]) -> None:
    rc, heavy, err = probe(argv[0], "--store-path", str(locked_store), *argv[1:])
    assert rc == 1
    assert "is open in another process" in err
    assert not {"torch", "transformers", "sentence_transformers"} & set(heavy), heavy
    assert "loading" not in err  # no model-loading notice came first


def test_every_command_is_in_the_module_table() -> None:
    """The table that lets a command import only its own module names every command, in the right module."""
    found = {name: area for area in _AREAS
             for name in importlib.import_module(f"evomem.commands.{area}").COMMANDS}
    assert found == COMMAND_MODULES


def test_lazy_embedder_loads_on_first_use() -> None:
    emb = LazyEmbedder(EmbedderConfig(kind="hash", dim=64))
    assert emb.dim == 64 and not emb.loaded  # the size is known from the config
    assert emb.embed(["a walk on the beach"]).shape == (1, 64) and emb.loaded
    custom = LazyEmbedder(EmbedderConfig(kind="sentence-transformers", model_path="/nowhere"))
    assert not custom.loaded  # built without touching the (missing) folder


def test_progress_bars_of_third_parties_are_off_for_commands(store_dir: Path) -> None:
    code = ("import os, sys\nfrom evomem.cli import main\nmain(sys.argv[1:])\n"
            "print('BARS', os.environ.get('HF_HUB_DISABLE_PROGRESS_BARS'))\n")
    env = {k: v for k, v in _env().items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    p = subprocess.run([sys.executable, "-c", code, "users", "--store-path", str(store_dir)], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=300)
    assert "BARS 1" in p.stdout, p.stderr


def test_the_policy_base_and_the_answer_model_share_one_smollm2_conversion(monkeypatch: pytest.MonkeyPatch,
                                                                             tmp_path: Path) -> None:
    """First run: one converted SmolLM2 (517 MB) in the cache, not one per role."""
    import llmclients.local_engine as le
    from policy.models import smollm2_hf_dir

    converted: list[Path] = []

    def fake_convert(gguf: Path, cache_dir: Path, name: str = le.SMOLLM2_NAME) -> tuple[Path, bool]:
        converted.append(cache_dir / name)
        return cache_dir / name, False

    class Loaded(Exception):
        pass

    def fake_init(self: object, folder: Path, *a: object, **kw: object) -> None:
        converted.append(Path(folder))
        raise Loaded

    monkeypatch.setenv("EVOMEM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(le, "ensure_converted", fake_convert)
    monkeypatch.setattr(le.LocalChatEngine, "__init__", fake_init)
    policy_base = smollm2_hf_dir()
    with pytest.raises(Loaded):
        le.LocalChatEngine.smollm2()  # the answer model's default
    assert converted == [policy_base, policy_base, policy_base]  # converted (once) and loaded from one folder
    assert policy_base.is_relative_to(tmp_path)
    from policy.models import is_smollm2_base, legacy_smollm2_dir

    # adapters trained on the old second copy (cache_root()/smollm2-hf) still count as on the shipped SmolLM2
    assert is_smollm2_base(str(policy_base.resolve())) and is_smollm2_base(str(legacy_smollm2_dir().resolve()))
    assert not is_smollm2_base("/models/Qwen3-4B")
