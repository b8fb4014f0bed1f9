"""``evomem serve``: build the API's dependencies from typed config and run it under uvicorn.

One process owns the embedded store (LadybugDB takes a file lock), so with it this runs a single
uvicorn worker; concurrency comes from the thread pool (the store serializes its own transactions).
With Neo4j, ``workers > 1`` runs N uvicorn worker processes behind one address (each builds its own
deps from the same pickled config: ``worker_app``), or run several of these behind a load balancer.
A user's writes stay serialized across processes: every Neo4j commit locks the user's ``UserMeta``
node and checks the version its batch was built on; the loser re-reads and retries
(``memcore/retry.py``), so no acknowledged write is lost (bench/scaleout.py counts them).
"""

from __future__ import annotations

import atexit
import base64
import os
import pickle
from typing import TYPE_CHECKING, Any

from graph.models import utcnow
from induction.config import IngestConfig
from llmclients.config import ModelEndpointConfig, ModelsConfig
from memcore.memory import Memory, MemorySettings
from serving.api import ApiDeps, ApiSettings, IngestFn, create_app
from serving.pipeline import AnswerPipeline, PipelineConfig, build_models

if TYPE_CHECKING:
    from induction.pipeline import Ingestor


def default_ingestor(memory: Memory, config: IngestConfig | None = None,
                     extraction: ModelEndpointConfig | None = None) -> Ingestor:
    """Induction's ingestor: offline by default; with an llm extractor/adjudicator in ``config`` the
    ``extraction`` model (default: SmolLM2 in process) does it."""
    from induction.pipeline import build_ingestor

    return build_ingestor(memory, config or IngestConfig(), extraction or ModelEndpointConfig())


def ingest_with(ingestor: Ingestor, warm: bool = False) -> IngestFn:
    """Session ingestion (a JSON session for a user) through ``ingestor``; ``warm``: rebuild the user's
    route index in the background after a commit (``ApiSettings.warm_after_ingest``)."""
    from induction.session import parse_session

    def ingest(user_id: str, session_json: dict[str, Any]) -> dict[str, Any]:
        session = parse_session(session_json, source="http", user_id=user_id)
        # a session sent without any date was said now: the request's clock dates it (expiry, "next week")
        report = ingestor.ingest(session, clock=utcnow())
        if warm and report.status == "committed":
            ingestor.memory.routes.warm(ingestor.memory.store, report.user_id)
        return report.model_dump(mode="json")

    return ingest


def default_ingest(memory: Memory, config: IngestConfig | None = None,
                   extraction: ModelEndpointConfig | None = None) -> IngestFn:
    return ingest_with(default_ingestor(memory, config, extraction))


def build_deps(settings: MemorySettings, models: ModelsConfig, pipeline: PipelineConfig, api: ApiSettings,
               ingest: IngestFn | None | bool = True, ingest_config: IngestConfig | None = None) -> ApiDeps:
    """``settings``: store, embedder, retrieval (``evomem.settings.Settings`` fits). ``ingest``: a function,
    None (no ingestion route), or True (induction's ingestor for ``ingest_config``, whose llm choices use
    ``models.extraction``)."""
    memory = Memory.from_settings(settings, load_embedder=True)  # loaded before the first request, not by it
    try:
        if api.warm_at_start:
            memory.routes.warm_users(memory.store)
        policy, answer_model = build_models(models, pipeline)
        ingestor = default_ingestor(memory, ingest_config, models.extraction) if ingest is True else None
        fn: IngestFn | None = (ingest_with(ingestor, api.warm_after_ingest) if ingestor is not None
                               else ingest if callable(ingest) else None)
    except Exception:
        memory.close()
        raise
    return ApiDeps(memory=memory, pipeline=AnswerPipeline(memory, policy, answer_model, pipeline), settings=api,
                   ingest=fn, ingestor=ingestor, redact=(ingest_config or IngestConfig()).redact)


WORKER_CONFIG_ENV = "EVOMEM_SERVE_WORKER_CONFIG"


def worker_app() -> Any:
    """The app of one uvicorn worker process (``workers > 1``): built from the config ``run_server``
    pickled into the environment (the parent's own, inherited; keys included, so never logged)."""
    settings, models, pipeline, api, ingest_config = pickle.loads(base64.b64decode(os.environ[WORKER_CONFIG_ENV]))
    deps = build_deps(settings, models, pipeline, api, ingest_config=ingest_config)
    app = create_app(deps)
    atexit.register(deps.memory.close)  # the worker's store connection closes with its process
    return app


def run_server(settings: MemorySettings, models: ModelsConfig, pipeline: PipelineConfig, api: ApiSettings, host: str, port: int,
               log_level: str = "info", ingest_config: IngestConfig | None = None, workers: int = 1) -> None:
    import uvicorn

    if workers > 1:
        backend = getattr(getattr(settings, "store", None), "backend", None)
        if backend not in ("neo4j", "partitioned"):
            raise ValueError(f"several workers need a shared store (neo4j or partitioned); the {backend} store is one process's")
        os.environ[WORKER_CONFIG_ENV] = base64.b64encode(
            pickle.dumps((settings, models, pipeline, api, ingest_config))).decode("ascii")
        print(f"evomem serve: http://{host}:{port}  store=neo4j  workers={workers}  "
              f"auth={'on' if api.require_auth else 'OFF'}", flush=True)
        uvicorn.run("serving.server:worker_app", factory=True, host=host, port=port, log_level=log_level,
                    access_log=log_level == "debug", workers=workers,
                    # a worker loads its models before it answers uvicorn's readiness ping (default 5 s)
                    timeout_worker_healthcheck=900)
        return
    deps = build_deps(settings, models, pipeline, api, ingest_config=ingest_config)
    app = create_app(deps)
    print(f"evomem serve: http://{host}:{port}  store={settings.store.backend}  policy={deps.pipeline.policy.name}  "
          f"answer={deps.pipeline.answer_model.name}  auth={'on' if api.require_auth else 'OFF'}", flush=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=log_level == "debug", workers=1)
    finally:
        deps.memory.close()
