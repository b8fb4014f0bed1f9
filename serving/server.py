"""``evomem serve``: build the API's dependencies from typed config and run it under uvicorn.

One process owns the embedded store (LadybugDB takes a file lock), so this runs a single uvicorn
worker; concurrency comes from the thread pool (the store serializes its own transactions). With
Neo4j, scale out by running several of these behind a load balancer.
"""

from __future__ import annotations

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
        policy, answer_model = build_models(models, pipeline)
        ingestor = default_ingestor(memory, ingest_config, models.extraction) if ingest is True else None
        fn: IngestFn | None = (ingest_with(ingestor, api.warm_after_ingest) if ingestor is not None
                               else ingest if callable(ingest) else None)
    except Exception:
        memory.close()
        raise
    return ApiDeps(memory=memory, pipeline=AnswerPipeline(memory, policy, answer_model, pipeline), settings=api,
                   ingest=fn, ingestor=ingestor, redact=(ingest_config or IngestConfig()).redact)


def run_server(settings: MemorySettings, models: ModelsConfig, pipeline: PipelineConfig, api: ApiSettings, host: str, port: int,
               log_level: str = "info", ingest_config: IngestConfig | None = None) -> None:
    import uvicorn

    deps = build_deps(settings, models, pipeline, api, ingest_config=ingest_config)
    app = create_app(deps)
    print(f"evomem serve: http://{host}:{port}  store={settings.store.backend}  policy={deps.pipeline.policy.name}  "
          f"answer={deps.pipeline.answer_model.name}  auth={'on' if api.require_auth else 'OFF'}", flush=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=log_level == "debug", workers=1)
    finally:
        deps.memory.close()
