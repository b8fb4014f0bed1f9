"""`evomem serve --workers N` (issue 45 item 6): several uvicorn workers need the shared Neo4j store;
with the embedded store (one process's file) the command refuses before loading anything.
The served path itself is measured by bench/scaleout.py (N workers on one Neo4j: search/s, cross-user
rows, lost writes)."""

from __future__ import annotations

import pickle

import pytest

from evomem.cli import main


def test_workers_need_the_neo4j_store(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                      tmp_path: object) -> None:
    monkeypatch.setenv("EVOMEM_STORE", "embedded")
    monkeypatch.setenv("EVOMEM_STORE_PATH", str(tmp_path))
    called: list[object] = []
    monkeypatch.setattr("serving.server.run_server", lambda *a, **k: called.append(k))
    assert main(["serve", "--no-auth", "--workers", "2"]) == 2
    assert "needs the neo4j store" in capsys.readouterr().err and not called


def test_run_server_hands_workers_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """With neo4j, run_server pickles the config for worker_app and starts uvicorn with N workers."""
    import base64

    import uvicorn

    from evomem.settings import Settings
    from llmclients.config import ModelsConfig
    from serving import server
    from serving.config import ApiSettings, PipelineConfig

    seen: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(app=app, **kw))
    settings = Settings.from_env({"EVOMEM_STORE": "neo4j", "EVOMEM_NEO4J_URI": "bolt://127.0.0.1:1"})
    api = ApiSettings(require_auth=False)
    server.run_server(settings, ModelsConfig(), PipelineConfig(), api, "127.0.0.1", 0, workers=3)
    assert seen["app"] == "serving.server:worker_app" and seen["factory"] is True and seen["workers"] == 3
    got = pickle.loads(base64.b64decode(__import__("os").environ.pop(server.WORKER_CONFIG_ENV)))
    assert got[0] == settings and got[3] == api
    with pytest.raises(ValueError, match="shared store"):
        server.run_server(Settings.from_env({}), ModelsConfig(), PipelineConfig(), api, "127.0.0.1", 0, workers=2)
