"""What adjudication decides: per new fact a Decision (new or duplicate; what it supersedes or conflicts
with; its concept), for a batch an Adjudication, and the Adjudicator contract every proposer meets.

``base_decision`` is where every adjudicator starts for a fact: a text duplicate found by resolve is
settled without a model, anything else is new until a proposer relates it. ``keep_as_new`` is the safe
answer for a whole batch (facts are never lost).
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from graph.edits import MergeConcepts, SplitConcept
from graph.snapshot import Snapshot
from induction.extract import RejectedItem
from induction.resolve import Resolution, ResolvedFact

# Kinds that hold a state a later statement can replace or contradict (rules and model alike).
STATIVE = frozenset({"preference", "constraint", "belief", "circumstance", "plan"})


class Decision(BaseModel):
    fact_id: str
    label: Literal["new", "duplicate"]
    duplicate_of: str | None = None
    supersedes: list[str] = Field(default_factory=list)
    conflicts_with: list[str] = Field(default_factory=list)
    concept_path: tuple[str, ...] = Field(description="Names from below the root; created if missing.")
    concept_id: str | None = Field(default=None, description="An existing live concept chosen instead of the path.")
    kind: str | None = Field(default=None, description="Corrected kind (an update takes the kind of what it replaces).")
    reason: str = ""


class Adjudication(BaseModel):
    decisions: list[Decision]
    concept_ops: list[MergeConcepts | SplitConcept] = Field(default_factory=list)
    rejected: list[RejectedItem] = Field(default_factory=list)
    llm_calls: int = 0
    fallback: str | None = Field(default=None, description="Why the adjudicator's own answer was not used.")


@runtime_checkable
class Adjudicator(Protocol):
    name: str

    def adjudicate(self, res: Resolution, snap: Snapshot) -> Adjudication: ...


def keep_as_new(res: Resolution, reason: str | None = None) -> Adjudication:
    """The safe path: text duplicates are still dropped (decided without a model), all else is new."""
    return Adjudication(decisions=[base_decision(r) for r in res.facts], fallback=reason)


def base_decision(r: ResolvedFact) -> Decision:
    """A fact's decision before any proposer: a duplicate of what resolve matched by text, else new."""
    c = r.candidate
    if r.duplicate_of is not None:
        return Decision(fact_id=c.fact_id, label="duplicate", duplicate_of=r.duplicate_of, concept_path=c.concept,
                        reason=r.duplicate_reason or "")
    return Decision(fact_id=c.fact_id, label="new", concept_path=c.concept)


def kind_of(fid: str, res: Resolution, by_id: dict[str, ResolvedFact]) -> str | None:
    if fid in by_id:
        return by_id[fid].candidate.kind
    f = res.existing.get(fid)
    return f.kind if f else None


def holder_of(fid: str, res: Resolution, by_id: dict[str, ResolvedFact]) -> str:
    if fid in by_id:
        return by_id[fid].candidate.holder
    f = res.existing.get(fid)
    return f.holder if f else ""
