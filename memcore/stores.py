"""Opening a store by backend name: the one place that maps ``StoreConfig.backend`` to a ``GraphStore``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from graph.cypher.pool import SandboxSettings
from graph.cypher.sandbox import configure_sandbox
from graph.partition import PartitionConfig
from graph.store import GraphStore


class StoreConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    backend: Literal["embedded", "neo4j", "partitioned"] = Field(
        default="embedded", description="Where the ontology lives: one embedded store, one Neo4j server (or "
        "cluster), or users partitioned over several Neo4j servers by a map (partitions).")
    path: str = Field(default=".evomem/store", description="Embedded store directory (LadybugDB).")
    neo4j_uri: str | None = Field(default=None, description="bolt:// or neo4j:// URI of a Neo4j 5 server/cluster.")
    neo4j_user: str | None = Field(default=None, description="Neo4j user (None = auth disabled).")
    neo4j_password: str | None = Field(default=None, description="Neo4j password.")
    neo4j_database: str | None = Field(default=None, description="Database name (None = server default).")
    partitions: PartitionConfig | None = Field(default=None, description="Backend 'partitioned': the Neo4j "
                                               "servers and the user -> server map (graph/partition.py; "
                                               "EVOMEM_PARTITIONS names a JSON or YAML file of it).")
    cypher: SandboxSettings = Field(default_factory=SandboxSettings,
                                    description="User Cypher: sandbox worker processes and their limits.")

    @model_validator(mode="after")
    def _neo4j_needs_uri(self) -> StoreConfig:
        if self.backend == "neo4j" and not self.neo4j_uri:
            raise ValueError("store backend 'neo4j' needs neo4j_uri (or EVOMEM_NEO4J_URI); "
                             "start a local one with scripts/neo4j-server start")
        if self.backend == "partitioned" and self.partitions is None:
            raise ValueError("store backend 'partitioned' needs partitions (or EVOMEM_PARTITIONS=FILE, a JSON or "
                             "YAML file with servers and the user map; see docs/operations.md)")
        return self


def _embedded(cfg: StoreConfig, dim: int) -> GraphStore:
    from graph.embedded import EmbeddedStore

    return EmbeddedStore(cfg.path)


def _neo4j(cfg: StoreConfig, dim: int) -> GraphStore:
    from graph.neo4j import Neo4jStore

    assert cfg.neo4j_uri is not None  # the validator above guarantees it
    return Neo4jStore(cfg.neo4j_uri, cfg.neo4j_user, cfg.neo4j_password, cfg.neo4j_database, embedding_dim=dim)


def _partitioned(cfg: StoreConfig, dim: int) -> GraphStore:
    from graph.partition import PartitionedStore

    assert cfg.partitions is not None  # the validator above guarantees it
    return PartitionedStore.open(cfg.partitions, embedding_dim=dim)


# The backend seam: a name maps to a constructor; nothing else in the code branches on the backend.
BACKENDS: dict[str, Callable[[StoreConfig, int], GraphStore]] = {"embedded": _embedded, "neo4j": _neo4j,
                                                                "partitioned": _partitioned}


def open_store(cfg: StoreConfig, embedding_dim: int = 384) -> GraphStore:
    store = BACKENDS[cfg.backend](cfg, embedding_dim)
    store.setup()
    configure_sandbox(store, cfg.cypher)
    return store
