"""One settings object, built at the entry point (CLI or server) and passed down.

Nothing reads the environment at import time; ``Settings.from_env`` is called by entry points only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pydantic import BaseModel, ConfigDict, Field

from graph.retrieval import RetrievalConfig
from llmclients.config import ModelsConfig
from llmclients.embeddings import EmbedderConfig
from memcore.stores import StoreConfig


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    store: StoreConfig = Field(default_factory=StoreConfig)
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    models: ModelsConfig = Field(default_factory=ModelsConfig, description="Policy and answer model endpoints.")

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: object) -> Settings:
        """EVOMEM_STORE, EVOMEM_STORE_PATH, EVOMEM_NEO4J_URI/USER/PASSWORD/DATABASE, EVOMEM_EMBEDDER, and the
        model endpoints (EVOMEM_{ANSWER,POLICY}_{KIND,URL,MODEL,API_KEY,PATH}; see llmclients/config.py)."""
        store = {
            "backend": env.get("EVOMEM_STORE", "embedded"),
            "path": env.get("EVOMEM_STORE_PATH", ".evomem/store"),
            "neo4j_uri": env.get("EVOMEM_NEO4J_URI"),
            "neo4j_user": env.get("EVOMEM_NEO4J_USER"),
            "neo4j_password": env.get("EVOMEM_NEO4J_PASSWORD"),
            "neo4j_database": env.get("EVOMEM_NEO4J_DATABASE"),
        }
        store.update({k: v for k, v in overrides.pop("store", {}).items() if v is not None})  # type: ignore[attr-defined]
        emb = {"kind": env.get("EVOMEM_EMBEDDER", "minilm")}
        emb.update({k: v for k, v in overrides.pop("embedder", {}).items() if v is not None})  # type: ignore[attr-defined]
        models = ModelsConfig.from_env(env, **(overrides.pop("models", None) or {}))  # type: ignore[arg-type]
        return cls(store=StoreConfig(**store), embedder=EmbedderConfig(**emb), models=models,
                   **overrides)  # type: ignore[arg-type]
