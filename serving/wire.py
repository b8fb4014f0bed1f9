"""The HTTP API's response models, in one light module: it imports pydantic and the data models of
graph/ and policy/ only (no FastAPI, numpy, torch or database driver), so ``evomem.client`` can type
its answers with the very models the server returns without pulling in the server's dependencies
(tests/test_client.py checks that importing the client loads none of them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graph.models import Edit, Fact, RelationalState, Turn
from retrieval.render import RenderedContext
from retrieval.evidence import Explain
from policy.state import ReasoningState


class FactWithState(BaseModel):
    fact: Fact
    state: RelationalState


class FactDetail(FactWithState):
    source_turns: list[Turn]


class FactList(BaseModel):
    user_id: str
    total: int
    facts: list[FactWithState]


class FactHistoryOut(BaseModel):
    """A fact, its Relational State, the facts it is related to, its evidence turns and every edit that
    touched it (induction/history.py builds it)."""

    fact: Fact
    state: RelationalState
    related: dict[str, str] = Field(description="Other fact id -> its statement.")
    turns: list[Turn]
    edits: list[Edit]


class SearchItem(FactWithState):
    alias: str
    seed: bool
    score: float | None = None
    group: int | None = None


class SearchOut(BaseModel):
    user_id: str
    query: str
    items: list[SearchItem]
    context: RenderedContext
    explain: Explain


class StateOut(BaseModel):
    user_id: str
    request: str
    policy: str
    reasoning_state: str | None
    parsed: ReasoningState | None
    fallback: str | None
    aliases: dict[str, str] = Field(description="alias -> fact id")
    timings_ms: dict[str, float]


class ForgetOut(BaseModel):
    user_id: str
    fact_id: str
    status: Literal["retracted"]
    version: int


class PurgeOut(BaseModel):
    user_id: str
    status: Literal["purged"]
    nodes_removed: int


class IngestOut(BaseModel):
    """What a session ingestion did (induction's IngestReport; extra fields pass through)."""

    model_config = ConfigDict(extra="allow")
    session_id: str
    user_id: str
    status: Literal["committed", "unchanged"]
    facts_added: int = 0
    supersessions: int = 0
    conflicts: int = 0
    fact_ids: list[str] = Field(default_factory=list)


class EditsOut(BaseModel):
    user_id: str
    version: int
    facts_created: list[str]
    relations_added: int
    concepts_upserted: int
    edit_ids: list[str]
    redacted: dict[str, int] = Field(default_factory=dict, description="Secrets removed before storing, per kind.")


class CypherOut(BaseModel):
    user_id: str
    rows: list[dict[str, Any]]
    truncated: bool


class ConceptNode(BaseModel):
    """One concept of the user's ontology with its live facts and sub-concepts."""

    concept_id: str
    name: str
    description: str = ""
    facts: list[str] = Field(default_factory=list, description="Statements of the facts filed directly here.")
    children: list[ConceptNode] = Field(default_factory=list)


class ConceptTree(BaseModel):
    user_id: str
    root: ConceptNode | None


class ExternalItemView(BaseModel):
    """An external memory item as the scratch induction saw it."""

    item_id: str
    text: str
    alias: list[str] = Field(description="Aliases of the facts extracted from it (as the state names them).")
    fact_ids: list[str]
    validity: list[str] = Field(description="Relational state of each extracted fact.")


class TransferOut(BaseModel):
    """A Reasoning State built over memory items from another system (policy/transfer.py)."""

    request: str
    policy: str
    reasoning_state: str | None
    parsed: ReasoningState | None
    fallback: str | None
    context: str = Field(description="The items as facts with their inferred relational states (rendered).")
    items: list[ExternalItemView]
    relations: list[str] = Field(description="Inferred relations, e.g. 'F2 SUPERSEDES F1'.")
    timings_ms: dict[str, float]


class EvidenceView(BaseModel):
    alias: str
    fact_id: str
    statement: str
    kind: str
    holder: str
    validity: str
    scope: str | None = None
    concept_path: list[str] = Field(default_factory=list)
    relations: list[str] = Field(default_factory=list, description="e.g. 'SUPERSEDES -> F1', 'CONFLICTS_WITH <- F4'.")
    observed_at: str | None = None
    seed: bool
    score: float | None = None
    in_context: bool = Field(description="Its statement is in the context: False when the token budget "
                            "dropped it, or when only a marker line names it (a fact that a seed replaced).")


class AnswerResult(BaseModel):
    user_id: str
    request: str
    answer: str | None = Field(description="None for explain-only calls.")
    reasoning_state: str | None = Field(description="The state in the policy's text format (None: ablated/no evidence).")
    reasoning_state_parsed: ReasoningState | None = None
    policy: str
    policy_fallback: str | None = Field(default=None, description="Why the rule baseline or no state was used.")
    answer_model: str
    prompt: str
    prompt_version: str
    context: str = Field(description="The rendered facts the answer model saw.")
    evidence: list[EvidenceView]
    explain: Explain
    ablations: dict[str, bool]
    timings_ms: dict[str, float] = Field(description="retrieve, traverse, policy, answer, total (+ embed, seeds).")
    tokens: dict[str, int] = Field(description="context, policy_prompt, policy_completion, answer_prompt, "
                                   "answer_completion.")
    finish_reason: str | None = None

    def describe(self, state_line: Callable[[Any], str] | None = None, answer_note: str = "") -> str:
        """Human-readable; ``answer_note`` is written after the answer model's name (what kind of model it is)."""
        lines = [f"[{self.user_id}] {self.request}", "  evidence:"]
        for e in self.evidence:
            lines.append(f"    {e.alias:<4}{'seed' if e.seed else 'trav'} {e.validity:<11}{e.statement}"
                         + (f"  scope={e.scope}" if e.scope else "") + (f"  ({'; '.join(e.relations)})" if e.relations else ""))
        lines.append(f"  reasoning state ({self.policy}" + (f"; {self.policy_fallback}" if self.policy_fallback else "") + "):")
        lines += [f"    {ln}" for ln in (self.reasoning_state or "(none)").splitlines()]
        lines.append(f"  answer ({self.answer_model}{answer_note}):")
        lines += [f"    {ln}" for ln in (self.answer or "(not generated)").splitlines()]
        lines.append("  timings ms: " + ", ".join(f"{k} {v:.1f}" for k, v in self.timings_ms.items()))
        return "\n".join(lines)


