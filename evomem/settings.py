"""One settings object, built at the entry point (CLI or server) and passed down.

Nothing reads the environment at import time; ``Settings.from_env`` is called by entry points only.
Every configurable part is reachable from here: the store, the embedder, retrieval, the three model
roles (policy, answer, extraction), ingestion, the answer pipeline and the HTTP API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from retrieval.retrieve import RetrievalConfig
from induction.config import IngestConfig
from llmclients.config import ModelsConfig
from llmclients.embeddings import EmbedderConfig
from memcore.stores import StoreConfig
from serving.config import ApiSettings, PipelineConfig


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    store: StoreConfig = Field(default_factory=StoreConfig)
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    models: ModelsConfig = Field(default_factory=ModelsConfig,
                                 description="Policy, answer and extraction model endpoints.")
    ingest: IngestConfig = Field(default_factory=IngestConfig, description="Session ingestion; an 'llm' extractor "
                                 "or adjudicator uses models.extraction.")
    pipeline: PipelineConfig = Field(default_factory=PipelineConfig, description="The answer pipeline.")
    api: ApiSettings = Field(default_factory=ApiSettings, description="The HTTP API (keys are loaded by `evomem serve`).")

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: Any) -> Settings:
        """EVOMEM_STORE, EVOMEM_STORE_PATH, EVOMEM_NEO4J_URI/USER/PASSWORD/DATABASE, EVOMEM_PARTITIONS (a JSON or
        YAML file of graph.partition.PartitionConfig, for EVOMEM_STORE=partitioned), EVOMEM_EMBEDDER,
        EVOMEM_CYPHER_TIMEOUT_S and EVOMEM_CYPHER_WORKERS (the user-Cypher
        sandbox), EVOMEM_EXTRACTOR (offline|llm), EVOMEM_ADJUDICATOR (rules|llm; default llm with the llm extractor),
        and the model endpoints (EVOMEM_{ANSWER,POLICY,EXTRACTION}_{CONNECTION,KIND,URL,MODEL,API_KEY,PATH}; see
        llmclients/config.py). ``overrides``: per-section dicts whose non-None values win."""
        def given(section: str) -> dict[str, Any]:
            return {k: v for k, v in (overrides.pop(section, None) or {}).items() if v is not None}

        store = {
            "backend": env.get("EVOMEM_STORE", "embedded"),
            "path": env.get("EVOMEM_STORE_PATH", ".evomem/store"),
            "neo4j_uri": env.get("EVOMEM_NEO4J_URI"),
            "neo4j_user": env.get("EVOMEM_NEO4J_USER"),
            "neo4j_password": env.get("EVOMEM_NEO4J_PASSWORD"),
            "neo4j_database": env.get("EVOMEM_NEO4J_DATABASE"),
        } | given("store")
        if isinstance(store.get("partitions"), str) or (not store.get("partitions") and env.get("EVOMEM_PARTITIONS")):
            from graph.partition import PartitionConfig

            store["partitions"] = PartitionConfig.from_file(store.get("partitions") or env["EVOMEM_PARTITIONS"])
        cypher = {k: v for k, v in {"timeout_s": env.get("EVOMEM_CYPHER_TIMEOUT_S"),
                                    "workers": env.get("EVOMEM_CYPHER_WORKERS")}.items() if v}
        if cypher:
            store["cypher"] = cypher
        emb = {"kind": env.get("EVOMEM_EMBEDDER", "minilm")} | given("embedder")
        ingest = {k: v for k, v in {"extractor": env.get("EVOMEM_EXTRACTOR"),
                                     "adjudicator": env.get("EVOMEM_ADJUDICATOR")}.items() if v} | given("ingest")
        if ingest.get("extractor") == "llm":
            ingest.setdefault("adjudicator", "llm")
        models = ModelsConfig.from_env(env, **(overrides.pop("models", None) or {}))
        return cls(store=StoreConfig.model_validate(store), embedder=EmbedderConfig.model_validate(emb), models=models,
                   ingest=IngestConfig.model_validate(ingest), **overrides)
