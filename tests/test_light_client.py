"""The light client (clients/python, distribution ``evomem-client``): installed alone in a fresh virtual
environment it pulls only httpx and pydantic (≤ 30 MB of site-packages, no torch), and ``from evomem_client
import MemoryClient`` works against a real ``evomem serve``. Its wire models are generated from the server's
(scripts/gen-client-models.py) and must be current; ``evomem.client`` is the same code, not a copy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import REPO, FaultServer, ServerProcess, _env, start_api_server

LIGHT = REPO / "clients" / "python"
KEY = "light-client-key-0123456789"
LIMIT_BYTES = 30 * 1024 * 1024
HEAVY = {"torch", "numpy", "fastapi", "starlette", "neo4j", "ladybug", "transformers", "uvicorn", "mcp", "evomem",
         "graph", "serving", "policy"}


def test_generated_wire_models_are_current() -> None:
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen-client-models.py"), "--check"], cwd=str(REPO),
                       env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_evomem_client_is_the_light_package_not_a_copy() -> None:
    import evomem.client
    import evomem_client

    assert evomem.client.MemoryClient is evomem_client.MemoryClient
    assert Path(evomem_client.__file__).resolve().parent == (LIGHT / "evomem_client").resolve()
    assert not (REPO / "evomem" / "client.py").read_text().count("def ")  # a re-export, no logic


def _site_packages(env_dir: Path) -> Path:
    return next((env_dir / "lib").glob("python3*/site-packages"))


def _install(env_dir: Path) -> None:
    """``uv pip install clients/python`` into ``env_dir`` (the uv of the project's venv, its package cache;
    offline first, then from the registry). Built from a copy, so no build folder lands in the checkout."""
    try:
        import uv  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("uv is missing from the project's venv (make setup installs it)")
        pytest.skip("uv is not installed in this venv (make setup installs it)")
    src = env_dir.parent / "evomem-client-src"
    shutil.copytree(LIGHT, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    base = [sys.executable, "-m", "uv", "pip", "install", "--python", str(env_dir / "bin" / "python"), "-q", str(src)]
    env = _env()
    r = subprocess.run([*base, "--offline"], env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        r = subprocess.run(base, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture(scope="module")
def light_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env_dir = tmp_path_factory.mktemp("light") / "venv"
    venv.EnvBuilder(with_pip=False, clear=True).create(env_dir)
    _install(env_dir)
    return env_dir


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("light-server")
    store = tmp / "store"
    r = subprocess.run([sys.executable, "-m", "evomem.cli", "load-example", "--store", "embedded", "--store-path",
                        str(store), "--embedder", "hash"], cwd=str(REPO), env=_env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    with FaultServer(mode="ok", text="The beach.") as model:  # a scripted answer model: no weights to load
        srv = start_api_server(tmp, store, model.url, "m", api_key=KEY, timeout_s=120)
        yield srv
        srv.stop()


@pytest.mark.slow
def test_the_light_install_is_small_and_has_no_torch(light_env: Path) -> None:
    site = _site_packages(light_env)
    size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
    top = {p.name.split("-")[0].split(".")[0].lower() for p in site.iterdir()}
    assert size <= LIMIT_BYTES, f"{size / 1e6:.1f} MB of site-packages"
    assert not (HEAVY & top), sorted(HEAVY & top)
    assert {"httpx", "pydantic", "evomem_client"} <= top, sorted(top)


LIGHT_SCRIPT = r"""
import json, sys
from evomem_client import MemoryClient, NotFoundError, AuthenticationError
url, key = sys.argv[1], sys.argv[2]
out = {"module": __import__("evomem_client").__file__}
with MemoryClient(url, api_key=key, user_id="maya") as mem:
    hits = mem.search("Suggest a vacation for me", k=3)
    out["statements"] = [i.fact.statement for i in hits.items]
    out["validities"] = sorted({i.state.validity for i in hits.items})
    out["context"] = hits.context.text
    out["state"] = mem.state("Suggest a vacation for me").reasoning_state
    added = mem.add("I started learning the cello this winter.", user_id="light-user")
    out["added"] = [added.status, len(added.fact_ids)]
    out["listed"] = [f.fact.statement for f in mem.get_all(user_id="light-user").facts]
    try:
        mem.get("no-such-fact")
    except NotFoundError as e:
        out["not_found"] = [e.status, e.code]
try:
    MemoryClient(url, api_key="wrong-key-0123456789", user_id="maya").users()
except AuthenticationError as e:
    out["auth"] = e.status
heavy = {"torch", "numpy", "fastapi", "starlette", "neo4j", "ladybug", "transformers"}
out["heavy_loaded"] = sorted(heavy & {m.split(".")[0] for m in sys.modules})
print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_light_client_talks_to_a_running_server(light_env: Path, server: ServerProcess, tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(LIGHT_SCRIPT)
    env = {k: v for k, v in _env().items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    r = subprocess.run([str(light_env / "bin" / "python"), str(script), server.url, KEY], cwd=str(tmp_path),
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert Path(out["module"]).resolve().is_relative_to(light_env.resolve())  # the installed copy, not the repo's
    assert out["statements"] and out["context"] and out["state"]
    assert "current" in out["validities"]
    assert out["added"][0] == "committed" and out["added"][1] >= 1
    assert any("cello" in s.lower() for s in out["listed"])
    assert out["not_found"] == [404, out["not_found"][1]] and out["auth"] == 401
    assert out["heavy_loaded"] == []
