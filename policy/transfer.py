"""Reasoning States for any memory system (the paper's transfer claim): memory items retrieved by
another system (mem0, a plain RAG, ...) go through induction on a scratch in-memory store — the
configured extractor, resolution and the relation step (the adjudicator of the deployment's
ingestor, so an improved relation model is picked up as is) — and the configured policy builds a
Reasoning State over the facts they became, with the SUPERSEDES / CONFLICTS_WITH relations inferred
between them. Nothing touches any user's store: the scratch store lives in memory and is closed.

Items are ingested one per session in time order (those without a time keep their given order, after
the timed ones), so a later item can supersede an earlier one exactly as it would in our own memory.
``holder`` is who said the item (the turn's speaker, default ``user``); ``item_state`` maps the
fact-level state back onto the items (what a caller holding only its own items can act on).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from retrieval.retrieve import EvidenceBundle, EvidenceItem, Explain
from induction.pipeline import IngestError, Ingestor
from induction.session import Session, SessionTurn
from memcore.memory import Memory
from policy.base import Policy
from policy.rule import RulePolicy
from policy.external import ExternalItem
from policy.state import FactUse, ReasoningState, StateParseError

SCRATCH_USER = "external"
_PRIORITY = {"high": 3, "medium": 2, "low": 1}


class TransferConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_items: int = Field(default=100, ge=1, le=1000, description="Most items per request.")
    on_policy_error: str = Field(default="rule", description="'rule': fall back to the rule baseline; 'raise'.")


class ScratchResult(BaseModel):
    """The items after scratch induction: the evidence bundle the policy sees and item -> facts."""

    bundle: EvidenceBundle
    item_ids: list[str]
    item_facts: dict[str, list[str]] = Field(description="item id -> fact ids extracted from it")
    errors: list[str] = Field(default_factory=list, description="Items induction refused (kept out).")


class TransferResult(BaseModel):
    request: str
    policy: str
    state: ReasoningState | None
    fallback: str | None
    scratch: ScratchResult
    timings_ms: dict[str, float]


_ID_SAFE = re.compile(r"[^A-Za-z0-9_.:-]")


def _order(items: Sequence[ExternalItem]) -> list[int]:
    timed = sorted((i for i, it in enumerate(items) if it.at is not None), key=lambda i: (items[i].at, i))
    return timed + [i for i, it in enumerate(items) if it.at is None]


def scratch_memory(like: Memory) -> Memory:
    """An empty in-memory store with ``like``'s embedder and retrieval settings."""
    from graph.embedded import EmbeddedStore

    store = EmbeddedStore(":memory:")
    store.setup()
    return Memory(store, like.embedder, like.retrieval)


def induce_items(items: Sequence[ExternalItem], request: str, base: Ingestor, cfg: TransferConfig | None = None,
                 ) -> ScratchResult:
    """The items through ``base``'s extractor, resolution and adjudicator on a scratch store, then
    retrieved for ``request`` (every fact, with relations to closure)."""
    cfg = cfg or TransferConfig()
    if not items:
        raise ValueError("give at least one memory item")
    if len(items) > cfg.max_items:
        raise ValueError(f"at most {cfg.max_items} memory items per request, got {len(items)}")
    ids = [it.id or f"item{i + 1}" for i, it in enumerate(items)]
    if len(set(ids)) != len(ids):
        raise ValueError("memory item ids must be unique")
    mem = scratch_memory(base.memory)
    try:
        ing = Ingestor(mem, base.extractor, base.adjudicator, base.config)
        item_facts: dict[str, list[str]] = {i: [] for i in ids}
        errors: list[str] = []
        for n, i in enumerate(_order(items)):
            it = items[i]
            turn_id = f"x{n}-{_ID_SAFE.sub('_', ids[i])[:80]}"
            session = Session(session_id=f"s{n}", user_id=SCRATCH_USER, started_at=it.at,
                              turns=(SessionTurn(role=it.holder, text=it.text, at=it.at, turn_id=turn_id),))
            try:
                ing.ingest(session)
            except IngestError as e:
                errors.append(f"{ids[i]}: {e}")
        snap = mem.store.load_snapshot(SCRATCH_USER) if SCRATCH_USER in mem.store.users() else None
        by_turn: dict[str, str] = {}
        for n, i in enumerate(_order(items)):
            by_turn[f"x{n}-{_ID_SAFE.sub('_', ids[i])[:80]}"] = ids[i]
        if snap is None or not snap.facts:
            empty = EvidenceBundle(user_id=SCRATCH_USER, query=request, items=[],
                                   explain=Explain(query=request, k=0, seeds=[], added_by_traversal=[]))
            return ScratchResult(bundle=empty, item_ids=ids, item_facts=item_facts, errors=errors)
        for fid, f in snap.facts.items():
            for t in f.source_turn_ids:
                if t in by_turn:
                    item_facts[by_turn[t]].append(fid)
        bundle = mem.retrieve(SCRATCH_USER, request, k=len(snap.facts), traverse=True)
        return ScratchResult(bundle=bundle, item_ids=ids, item_facts=item_facts, errors=errors)
    finally:
        mem.close()


def state_with_fallback(policy: Policy, request: str, bundle: EvidenceBundle, on_error: str = "rule",
                        ) -> tuple[ReasoningState | None, str | None]:
    """``policy``'s state; on unparsable model output the rule baseline (or raise)."""
    if not bundle.items:
        return None, "no evidence"
    try:
        return policy.state(request, bundle), None
    except StateParseError as e:
        if on_error == "raise":
            raise
        return RulePolicy().state(request, bundle), f"policy output invalid ({e}); rule baseline used"


def external_state(items: Sequence[ExternalItem], request: str, base: Ingestor, policy: Policy | None = None,
                   cfg: TransferConfig | None = None,
                   reason: Callable[[str, EvidenceBundle], tuple[ReasoningState | None, str | None]] | None = None,
                   ) -> TransferResult:
    """The Reasoning State ``policy`` (default: the rule baseline) builds over ``items`` for ``request``.
    ``reason``: how to get a state from a bundle instead (the server passes its pipeline's, with its
    fallback rules)."""
    cfg = cfg or TransferConfig()
    policy = policy or RulePolicy()
    t0 = time.perf_counter()
    scratch = induce_items(items, request, base, cfg)
    t1 = time.perf_counter()
    state, fallback = (reason(request, scratch.bundle) if reason is not None
                       else state_with_fallback(policy, request, scratch.bundle, cfg.on_policy_error))
    t2 = time.perf_counter()
    return TransferResult(request=request, policy=getattr(policy, "name", type(policy).__name__), state=state,
                          fallback=fallback, scratch=scratch,
                          timings_ms={"induction": round((t1 - t0) * 1e3, 2), "policy": round((t2 - t1) * 1e3, 2)})


def item_state(scratch: ScratchResult, state: ReasoningState | None) -> dict[str, FactUse | None]:
    """The state read per item: an item is used (with the highest priority among its used facts) if
    any of its facts is used, ignored if the state names its facts and uses none, and None (not named)
    otherwise. Aliases in the returned decisions are the item's position (F1 = first item)."""
    out: dict[str, FactUse | None] = {}
    named = {f.alias: f for f in state.facts} if state else {}
    alias_of = scratch.bundle.alias_of()
    for pos, iid in enumerate(scratch.item_ids):
        decisions = [named[alias_of[fid]] for fid in scratch.item_facts.get(iid, [])
                     if fid in alias_of and alias_of[fid] in named]
        used = [d for d in decisions if d.use and d.role != "irrelevant"]
        if used:
            best = max(used, key=lambda d: _PRIORITY[d.priority])
            out[iid] = best.model_copy(update={"alias": f"F{pos + 1}"})
        elif decisions:
            out[iid] = decisions[0].model_copy(update={"alias": f"F{pos + 1}", "use": False})
        else:
            out[iid] = None
    return out


def items_as_evidence(items: Sequence[ExternalItem]) -> list[EvidenceItem]:
    """The items as they are, one evidence item each (alias F<n> by position, every one 'current'): how
    a reader sees a plain RAG's results without any state."""
    from graph.models import Fact, RelationalState

    out = []
    for pos, it in enumerate(items):
        fid = f"{SCRATCH_USER}::item::{pos + 1}"
        fact = Fact(fact_id=fid, user_id=SCRATCH_USER, statement=it.text, kind="event", holder=it.holder,
                    observed_at=it.at)
        out.append(EvidenceItem(alias=f"F{pos + 1}", fact=fact, state=RelationalState(fact_id=fid, validity="current"),
                                seed=True, group=pos))
    return out
