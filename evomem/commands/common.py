"""Options every subcommand shares, and output helpers."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evomem.settings import Settings

Command = tuple[type["CommonOptions"], Callable[[Any], int], str]


class CommonOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    store: Literal["embedded", "neo4j", "partitioned"] | None = Field(
        default=None, description="Backend (default: EVOMEM_STORE or embedded).")
    store_path: str | None = Field(default=None, description="Embedded store directory (default .evomem/store).")
    neo4j_uri: str | None = Field(default=None, description="Neo4j URI (default: EVOMEM_NEO4J_URI).")
    partitions: str | None = Field(default=None, description="Partition file (JSON or YAML: Neo4j servers and the "
                                   "user -> server map) for --store partitioned (default: EVOMEM_PARTITIONS).")
    embedder: Literal["minilm", "hash"] | None = Field(default=None, description="Embedder (default minilm).")
    as_json: bool = Field(default=False, description="Print one JSON object on stdout.",
                          json_schema_extra={"flag": "--json"})

    def settings(self) -> Settings:
        return Settings.from_env(os.environ, store={"backend": self.store, "path": self.store_path,
                                                    "neo4j_uri": self.neo4j_uri,
                                                    "partitions": self.partitions},
                                 embedder={"kind": self.embedder})


def _print(opts: CommonOptions, obj: Any, text: Callable[[], str]) -> None:
    print(json.dumps(obj, indent=2, default=str) if opts.as_json else text())


def _state_line(item: Any) -> str:
    s = item.state
    rel = ", ".join(f"{r.type}{'→' if r.direction == 'out' else '←'}{r.other_fact_id.split('::')[-1]}" for r in s.relations)
    return (f"  {item.alias:<4}{'seed ' if item.seed else 'trav '}{s.validity:<11} {item.fact.statement}"
            f"  [{' > '.join(s.concept_path[1:])}]" + (f" scope={s.scope}" if s.scope else "") + (f"  ({rel})" if rel else ""))


