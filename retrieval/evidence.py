"""What retrieval returns: seeds, evidence items and the bundle, with its explanation.

Kept apart from ``retrieval.retrieve`` (numpy, the route index) so wire models and the client library can
type retrieval results without importing the retrieval machinery.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from graph.models import Fact, RelationalState


class SeedHit(BaseModel):
    fact_id: str
    score: float
    routes: dict[str, int] = Field(default_factory=dict, description="Route -> rank at which that route found it.")
    dense_rank: int | None = None
    dense_score: float | None = None
    text_rank: int | None = None
    text_score: float | None = None
    window: bool = Field(default=False, description=(
        "Added by the neighbour route around a matched seed, on top of K (retrieval/seeds/rank.py)."))


class EvidenceItem(BaseModel):
    alias: str = Field(description="Short handle used in rendered context and reasoning states (F1, F2, ...).")
    fact: Fact
    state: RelationalState
    seed: bool
    score: float | None = None
    group: int
    brief: str | None = Field(default=None, description=(
        "The statement's most informative words, set by retrieval for a request that spans the conversation "
        "(retrieval/seeds/breadth.py); the compact context writes it in place of the statement."))


class Explain(BaseModel):
    query: str
    k: int
    seeds: list[SeedHit]
    added_by_traversal: list[str]
    added_by_update_turn: list[str] = Field(default_factory=list, description="Facts handed on because they share "
                                            "a source turn with an update in the bundle (RetrievalConfig.update_turns).")
    traversal_rounds: int = 0
    capped: bool = False
    timings_ms: dict[str, float] = Field(default_factory=dict)


class EvidenceBundle(BaseModel):
    user_id: str
    query: str
    items: list[EvidenceItem]
    explain: Explain

    def by_id(self) -> dict[str, EvidenceItem]:
        return {i.fact.fact_id: i for i in self.items}

    def alias_of(self) -> dict[str, str]:
        return {i.fact.fact_id: i.alias for i in self.items}


__all__ = ["EvidenceBundle", "EvidenceItem", "Explain", "SeedHit"]
