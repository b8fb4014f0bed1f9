"""Every CLI subcommand, given its typical wrong input, fails with a sentence: non-zero exit, one or two
lines on stderr, no traceback. The table is checked against the parser, so a new subcommand without a
row fails here."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evomem.cli import build_parser, main
from servers import FaultServer, free_port

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An embedded store with the shipped example users (maya, leo, sara)."""
    path = tmp_path_factory.mktemp("cli-errors") / "store"
    assert main(["load-example", "--embedder", "hash", "--store-path", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def dead_neo4j() -> str:
    return f"bolt://127.0.0.1:{free_port()}"  # nothing listens there


@pytest.fixture
def locked_store(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A store held open by another process, as `evomem serve` would hold it: (path, holder pid)."""
    path = tmp_path / "locked"
    code = ("import sys, time; from graph.embedded import EmbeddedStore; s = EmbeddedStore(sys.argv[1]); "
            "print('ready', flush=True); time.sleep(120)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        yield path, holder.pid
    finally:
        holder.kill()
        holder.wait()


def _rows(store: Path, neo4j: str, locked: tuple[Path, int]) -> dict[str, tuple[list[str], str]]:
    """subcommand -> (argv, a phrase the sentence must contain)."""
    s = ["--embedder", "hash", "--store-path", str(store)]
    dead = f"http://127.0.0.1:{free_port()}/v1"
    return {
        "demo": (["demo", "--store", "neo4j", "--neo4j-uri", neo4j, "--embedder", "hash", "--no-answers"],
                 "Neo4j is not reachable"),
        "retrieve": (["retrieve", *s, "--user", "ghost", "beach"], "no memories are stored for user 'ghost'"),
        "cypher": (["cypher", *s, "--user", "maya", "MATCH (n) DETACH DELETE n RETURN 1"], "read-only"),
        "undo": (["undo", *s, "--user", "ghost", "E1"], "no memories are stored for user 'ghost'"),
        "load-example": (["load-example", "--embedder", "hash", "--store-path", str(locked[0])],
                         f"open in another process, PID {locked[1]}"),
        "users": (["users", "--store", "neo4j", "--neo4j-uri", neo4j, "--embedder", "hash"], "Neo4j is not reachable"),
        "ingest": (["ingest", *s, "--user", "maya", str(store.parent / "missing.jsonl")], "missing.jsonl"),
        "forget": (["forget", *s, "--user", "maya"], "give exactly one of --fact or --request"),
        "purge": (["purge", *s, "--user", "maya"], "pass --yes"),
        "history": (["history", *s, "--user", "maya", "no-such-fact"], "has no fact"),
        "serve": (["serve", *s], "no API key configured"),
        "mcp": (["mcp", "--transport", "http", *s], "the HTTP transport needs an API key"),
        "serve-model": (["serve-model", "--model-path", str(store.parent / "no-weights"), "--port", "0"],
                        "no-weights"),
        "vllm-command": (["vllm-command", "--gpus", "0"], "gpus"),
        # the default (shipped) policy: the answer server is probed before it loads, so no conversion progress
        # bar precedes the error (test_a_dead_answer_server_is_reported_before_the_policy_loads)
        "answer": (["answer", *s, "--user", "maya", "--answer-url", dead, "--answer-model", "m", "--answer-retries", "0",
                    "Suggest a vacation"], "cannot reach model server"),
        "build-data": (["build-data", "--out", str(store.parent / "d"), "--synthetic-n", "0", "--memsyco-root",
                        str(store.parent / "no-memsyco")], "no-memsyco"),
        "build-instances": (["build-instances", "--out", str(store.parent / "bi"), "--synthetic-n", "0",
                             "--memsyco-root", str(store.parent / "no-memsyco")], "no-memsyco"),
        "train-relations": (["train-relations", "--config", str(store.parent / "no-such-config.yaml")],
                            "no-such-config.yaml"),
        "train-reader": (["train-reader", "--config", str(store.parent / "no-such-reader.yaml")], "no-such-reader.yaml"),
        "ship-policy": (["ship-policy", "--run", str(store.parent / "no-run")], "is not a finished `evomem train-policy` run"),
        "train-policy": (["train-policy", "--config", "grpo-qwen3-4b"], "run `evomem build-data --out data/policy` first"),
        "export": (["export", *s, "--user", "ghost", "--out", str(store.parent / "ghost.jsonl")],
                   "no memories are stored for user 'ghost'"),
        "import": (["import", *s, str(store.parent / "missing-export.jsonl")], "missing-export.jsonl"),
        "migrate": (["migrate", *s, "--to", "ftp://somewhere"], "give neo4j://host:port"),
        "profile": (["profile", *s, "--user", "ghost"], "no memories are stored for user 'ghost'"),
        "concepts": (["concepts", *s, "--user", "ghost"], "no memories are stored for user 'ghost'"),
        "facts": (["facts", *s, "--user", "maya", "--include", "bogus"], "unknown include value"),
        "eval": (["eval", "locomo", "--data", str(store.parent / "no-locomo"), "--embedder", "hash", "--no-progress"],
                 "no-locomo"),
    }


def _subcommands() -> set[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def _check(rc: int, err: str, phrase: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc != 0, err
    assert "Traceback" not in err, err
    assert 1 <= len(lines) <= 2, err
    assert phrase in err, err


def test_every_subcommand_has_a_row(store_dir: Path, dead_neo4j: str, tmp_path: Path) -> None:
    assert set(_rows(store_dir, dead_neo4j, (tmp_path, 0))) == _subcommands()


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_wrong_input_is_a_sentence(command: str, store_dir: Path, dead_neo4j: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                   request: pytest.FixtureRequest) -> None:
    monkeypatch.chdir(tmp_path)  # train-policy's relative data/policy/ does not exist here
    monkeypatch.delenv("EVOMEM_API_KEY", raising=False)
    monkeypatch.delenv("EVOMEM_API_KEYS_FILE", raising=False)
    monkeypatch.delenv("EVOMEM_DEBUG", raising=False)
    locked = request.getfixturevalue("locked_store") if command == "load-example" else (tmp_path, 0)
    argv, phrase = _rows(store_dir, dead_neo4j, locked)[command]
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse-level errors exit; they must be sentences too
        rc = int(e.code or 0)
    _check(rc, capsys.readouterr().err, phrase)


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["retrieve", "--embedder", "hash"])
    assert e.value.code == 2
    _check(2, capsys.readouterr().err, "required: --user")


def _cli(*argv: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evomem.cli", *argv], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def test_real_entry_point_sentence_and_debug_traceback(tmp_path: Path, dead_neo4j: str) -> None:
    """Through the interpreter, as a user runs it: the issue's two examples, then --debug and EVOMEM_DEBUG."""
    res = _cli("train-policy", "--config", "grpo-qwen3-4b", cwd=tmp_path)
    assert res.returncode == 2
    _check(res.returncode, res.stderr, "evomem build-data")
    res = _cli("users", "--store", "neo4j", "--neo4j-uri", dead_neo4j, "--embedder", "hash")
    assert res.returncode == 1
    _check(res.returncode, res.stderr, "Neo4j is not reachable")
    res = _cli("users", "--store", "neo4j", "--neo4j-uri", dead_neo4j, "--embedder", "hash", "--debug")
    assert res.returncode == 1 and "Traceback" in res.stderr and "Neo4j is not reachable" in res.stderr
    res = _cli("train-policy", "--config", "grpo-qwen3-4b", env={"EVOMEM_DEBUG": "1"}, cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" in res.stderr and "MissingInput" in res.stderr


def test_a_dead_answer_server_is_reported_before_the_policy_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """`evomem answer` probes the answer server first: loading the shipped policy takes minutes on a cold
    cache, and a server that cannot be reached should not wait for it."""
    import serving.pipeline as pipeline
    from llmclients.chat import ChatError
    from llmclients.config import ModelsConfig

    def no_policy(*a: object, **kw: object) -> None:
        raise AssertionError("the policy was loaded before the answer server was probed")

    monkeypatch.setattr(pipeline, "make_policy", no_policy)
    dead = {"kind": "openai", "base_url": f"http://127.0.0.1:{free_port()}/v1", "model": "m", "max_retries": 0}
    with pytest.raises(ChatError, match="cannot reach model server"):
        pipeline.build_models(ModelsConfig.from_env({}, answer=dead), probe=True)
    with pytest.raises(AssertionError, match="before the answer server"):  # without the probe: policy first
        pipeline.build_models(ModelsConfig.from_env({}, answer=dead))
    with FaultServer("ok") as fs:  # reachable, but GET /models is no model list: the probe lets it through
        up = {"kind": "openai", "base_url": fs.url, "model": "m", "max_retries": 0}
        with pytest.raises(AssertionError, match="before the answer server"):
            pipeline.build_models(ModelsConfig.from_env({}, answer=up), probe=True)
