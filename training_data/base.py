"""What a policy-training instance is, and how a source assembles one (D.1 of the EvoMemState paper).

An instance is ``(request, evidence with relational states, reference answer, choices, scorer id,
category, metadata)``. The evidence reuses the serving models (``retrieval.retrieve.EvidenceItem`` with a
real ``Fact`` and a ``RelationalState`` derived by ``graph.rules.derive_state``), so the policy trains on
exactly what retrieval hands it at inference time. ``gold`` is an answer key (which fact should be used,
in which role) for diagnostics and the oracle upper bound; it is never shown to the policy.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from graph.models import Fact, FactKind, Relation
from retrieval.retrieve import EvidenceBundle, EvidenceItem, Explain, components
from graph.rules import derive_state

# training_data sits below policy in the dependency order, so the Reasoning State vocabulary is repeated
# here; tests/test_training_data_synthetic.py checks it matches policy.state.ROLES / PRIORITIES.
Role = Literal["current-preference", "historical", "constraint", "evidence", "irrelevant"]
Priority = Literal["high", "medium", "low"]
Category = Literal["preference-use", "update", "conflict", "scope", "constraint", "belief-vs-evidence"]
CATEGORIES: tuple[str, ...] = ("preference-use", "update", "conflict", "scope", "constraint", "belief-vs-evidence")
ScorerId = Literal["choice", "exact", "token_f1", "judge"]

# A fixed clock so that validity (expired / current) and rendered dates never depend on when data is built.
EPOCH = datetime(2025, 1, 6, tzinfo=timezone.utc)


class GoldUse(BaseModel):
    """The answer key for one fact: how a good Reasoning State treats it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    use: bool
    role: Role
    priority: Priority


class TrainingInstance(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    instance_id: str = Field(description="Stable id: '<source>:<source row or seed-derived key>'.")
    source: str = Field(description="Which builder made it: synthetic, memsyco, fever, scifact, personamem.")
    category: Category
    user_id: str
    request: str = Field(min_length=1, description="The user's new request (what the policy and answerer see).")
    evidence: tuple[EvidenceItem, ...] = Field(min_length=1,
                                               description="Facts with aliases F1.. and relational states.")
    reference_answer: str = Field(min_length=1)
    choices: tuple[str, ...] | None = Field(default=None, description="Answer options for choice questions.")
    scorer: ScorerId = Field(description="Task scorer: choice/exact match, token F1, or LLM judge.")
    gold: dict[str, GoldUse] = Field(default_factory=dict, description="Answer key per alias (never shown).")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> TrainingInstance:
        aliases = [it.alias for it in self.evidence]
        if len(set(aliases)) != len(aliases):
            raise ValueError(f"{self.instance_id}: repeated alias")
        if unknown := set(self.gold) - set(aliases):
            raise ValueError(f"{self.instance_id}: gold names unknown aliases {sorted(unknown)}")
        if self.choices is not None and self.reference_answer not in self.choices:
            raise ValueError(f"{self.instance_id}: reference answer is not one of the choices")
        if self.scorer == "choice" and not self.choices:
            raise ValueError(f"{self.instance_id}: the choice scorer needs choices")
        return self

    @property
    def aliases(self) -> list[str]:
        return [it.alias for it in self.evidence]

    def bundle(self) -> EvidenceBundle:
        """The evidence as the bundle retrieval would have returned (explain is a stub: nothing was searched)."""
        seeds = [it.fact.fact_id for it in self.evidence if it.seed]
        return EvidenceBundle(user_id=self.user_id, query=self.request, items=list(self.evidence),
                              explain=Explain(query=self.request, k=len(seeds), seeds=[],
                                              added_by_traversal=[it.fact.fact_id for it in self.evidence
                                                                  if not it.seed]))


@runtime_checkable
class Source(Protocol):
    """One builder per data source; ``instances`` is deterministic given the seed."""

    name: str

    def instances(self, seed: int) -> Iterator[TrainingInstance]: ...


class FactSpec(BaseModel):
    """A fact before assembly: ``key`` is local to the instance; ``days`` is its age relative to the request."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: str
    statement: str
    kind: FactKind = "preference"
    holder: str = "user"
    scope: str | None = None
    days: int = Field(default=30, ge=0, description="How many days before the request it was said.")
    valid_days: int | None = Field(default=None, ge=0, description="Valid until this many days before the request "
                                   "(expired after; a plan whose window has passed); None: no end.")
    retracted: bool = Field(default=False, description="The user took it back (a Retract after it was said).")
    gold: GoldUse | None = None

    def valid_to(self, now: datetime) -> datetime | None:
        return None if self.valid_days is None else now - timedelta(days=self.valid_days)


def assemble(instance_key: str, user_id: str, specs: Sequence[FactSpec],
             relations: Sequence[tuple[Literal["SUPERSEDES", "CONFLICTS_WITH"], str, str]],
             rng: random.Random, now: datetime = EPOCH, order: Literal["retrieval", "shuffled"] = "retrieval",
             ) -> tuple[tuple[EvidenceItem, ...], dict[str, GoldUse], dict[str, str]]:
    """Turn fact specs + relations into evidence items the way retrieval orders them.

    Retrieval puts connected facts in one group, groups in seed order, and each group in time order;
    here the group order is shuffled by ``rng``. Position still carries a hint — an update always comes
    right after what it replaced — so ``order="shuffled"`` shuffles every fact (relations and states are
    unchanged) for training a policy that must read content, not count (D.1: the policy must not rely on
    memory count or position). Returns (items, gold by alias, alias by key).
    """
    ids = {s.key: f"{instance_key}::{s.key}" for s in specs}
    facts = {ids[s.key]: Fact(fact_id=ids[s.key], user_id=user_id, statement=s.statement, kind=s.kind,
                              holder=s.holder, scope=s.scope, observed_at=now - timedelta(days=s.days),
                              recorded_at=now - timedelta(days=s.days),
                              valid_to=s.valid_to(now),
                              retracted_at=now - timedelta(days=max(s.days - 1, 0)) if s.retracted else None)
             for s in specs}
    rels = [Relation(type=t, src=ids[a], dst=ids[b], at=now - timedelta(days=min(_days(specs, a), _days(specs, b))))
            for t, a, b in relations]
    fids = [ids[s.key] for s in specs]
    comp = components(fids, [(r.src, r.dst) for r in rels])
    group_ids = sorted(set(comp.values()))
    rng.shuffle(group_ids)
    rank = {g: n for n, g in enumerate(group_ids)}
    fids.sort(key=lambda fid: (rank[comp[fid]], facts[fid].observed_at, fid))
    if order == "shuffled":
        rng.shuffle(fids)
    items: list[EvidenceItem] = []
    alias_by_key: dict[str, str] = {}
    key_of = {v: k for k, v in ids.items()}
    for n, fid in enumerate(fids, start=1):
        touching = [r for r in rels if fid in (r.src, r.dst)]
        state = derive_state(facts[fid], touching, facts, ("root",), now)
        items.append(EvidenceItem(alias=f"F{n}", fact=facts[fid], state=state, seed=True, score=None,
                                  group=rank[comp[fid]]))
        alias_by_key[key_of[fid]] = f"F{n}"
    gold = {alias_by_key[s.key]: s.gold for s in specs if s.gold is not None}
    return tuple(items), gold, alias_by_key


def _days(specs: Sequence[FactSpec], key: str) -> int:
    return next(s.days for s in specs if s.key == key)


def shuffled_choices(correct: str, wrong: Sequence[str], rng: random.Random) -> tuple[str, ...]:
    """Options in a random order (the answer's position carries no signal)."""
    opts = [correct, *[w for w in wrong if w != correct]]
    rng.shuffle(opts)
    return tuple(opts)
