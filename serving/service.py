"""The operations behind the HTTP routes and the MCP tools, one home each: a route and a tool are thin
adapters that check the caller (serving/deps.py, serving/mcp_server.py) and call these.

Every function takes the deployment's ``ApiDeps`` and an already validated and authorised user id;
failures are ``ApiError`` (status, sentence, code) or the domain errors ``serving.errors.domain_error``
maps. Reads never write; writes go through the same paths as before (induction's ingestor, Memory.apply,
induction/forget.py under the per-user lock).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from graph.edits import EditBatch, EditRejected
from graph.models import utcnow
from retrieval.render import render_context
from graph.snapshot import Snapshot
from graph.timeline import TimeView, parse_include, states_at
from induction.forget import ForgetError, purge, retract
from induction.history import UnknownFact, fact_history
from induction.redact import redact_batch
from llmclients.chat import ChatError
from serving.cypher_route import cypher_body
from serving.deps import ApiDeps, ApiKey
from serving.errors import FOREIGN_ID_RULES, id_conflict, model_error, sentence
from serving.limits import check_session_size
from serving.openai_wire import ApiError

from serving.wire import (ConceptNode, ConceptTree, CypherOut, EditsOut, ExternalItemView, FactHistoryOut, FactList,
                          FactWithState, ForgetOut, IngestOut, PurgeOut, SearchItem, SearchOut, StateOut, TransferOut)

if TYPE_CHECKING:  # the request bodies live with the routes, whose package imports this module
    from serving.routes.bodies import QueryBody, SearchBody, TransferBody

def require_user(deps: ApiDeps, user_id: str) -> str:
    """404 (UnknownUser) unless the user has memories."""
    deps.memory.require_user(user_id)
    return user_id


# -- writes --
def ingest_session(deps: ApiDeps, user_id: str, session: dict[str, Any]) -> IngestOut:
    """One conversation session through induction, atomically; every refusal is an ApiError."""
    if deps.ingest is None:
        raise ApiError(501, "Session ingestion is not configured on this server; POST an edit batch to "
                       f"/v1/users/{user_id}/edits instead.", "ingest_not_configured")
    if session.get("user_id") not in (None, user_id):
        raise ApiError(400, "The session's user_id does not match the user in the path.", "user_mismatch", "user_id")
    check_session_size(deps.settings, session)
    try:
        return IngestOut.model_validate(deps.ingest(user_id, session))
    except ChatError as e:
        raise model_error(e) from e
    except EditRejected as e:
        if e.rule in FOREIGN_ID_RULES:
            raise  # domain_error: 409 without the rule's text
        raise ApiError(422, sentence(f"Session not ingested, nothing was written: {e}"), e.rule) from e
    except ValueError as e:  # malformed session (SessionFormatError)
        raise ApiError(422, sentence(f"Session not ingested, nothing was written: {e}"), getattr(e, "rule", None)
                       or "invalid_session") from e
    except RuntimeError as e:  # induction.IngestError: conflict / extraction / validation
        kind = getattr(e, "kind", None)
        if kind is None:
            raise (id_conflict(e) or e) from e
        if isinstance(e.__cause__, ChatError):
            raise model_error(e.__cause__) from e
        status = 409 if kind in ("session_conflict", "turn_conflict", "concurrency") else 422
        raise ApiError(status, sentence(f"Session not ingested, nothing was written: {e}"), kind) from e


def apply_edits(deps: ApiDeps, user_id: str, batch: EditBatch) -> EditsOut:
    if batch.user_id != user_id:
        raise ApiError(400, "The batch's user_id does not match the user in the path.", "user_mismatch", "user_id")
    batch, redacted = redact_batch(batch, deps.redact)  # secrets never stored (induction/redact.py)
    _, cs = deps.memory.apply(batch)
    return EditsOut(user_id=user_id, version=cs.new_version, facts_created=[f.fact_id for f in cs.facts_create],
                    relations_added=len(cs.relations_add), concepts_upserted=len(cs.concepts_upsert),
                    edit_ids=[e.edit_id for e in cs.edits_upsert], redacted=redacted)


def forget_fact(deps: ApiDeps, user_id: str, fact_id: str, reason: str = "") -> ForgetOut:
    """Retract one fact (kept as a tombstone): 404 unknown, 409 already retracted."""
    # checked here first for the precise status (404 vs 409); retract checks again under the lock
    f = deps.memory.store.load_snapshot(user_id).facts.get(fact_id)
    if f is None:
        raise ApiError(404, f"User {user_id!r} has no such fact.", "fact_not_found")
    if f.retracted_at is not None:
        raise ApiError(409, "This fact is already retracted.", "already_retracted")
    try:
        report = retract(deps.memory, user_id, fact_id=fact_id, reason=reason, redact=deps.redact)
    except ForgetError as e:  # retracted by a concurrent request between the check and the lock
        raise ApiError(409, "This fact was changed by a concurrent request; reload it and retry.",
                       "concurrent_modification") from e
    return ForgetOut(user_id=user_id, fact_id=fact_id, status="retracted", version=report.version)


def purge_user(deps: ApiDeps, user_id: str, confirm: bool, how: str = "repeat with ?confirm=true") -> PurgeOut:
    """Hard-delete everything of the user; refused (400) unless ``confirm``."""
    if not confirm:
        raise ApiError(400, "Purge deletes every fact, turn, embedding and edit of the user irreversibly; "
                       f"{how}.", "confirmation_required", "confirm")
    report = purge(deps.memory, user_id)
    return PurgeOut(user_id=user_id, status="purged", nodes_removed=report.deleted.get("nodes", 0))


# -- reads --
def facts_with_states(store: Any, user_id: str, view: TimeView | None = None) -> list[FactWithState]:
    """Every fact of the user (visible in ``view``, default now) with its derived relational state,
    newest first (graph/timeline.py derives them)."""
    snap = store.load_snapshot(user_id)
    out = [FactWithState(fact=f, state=st) for f, st in states_at(snap, view).values()]
    out.sort(key=lambda x: ((x.fact.observed_at or x.fact.recorded_at or utcnow()).isoformat(), x.fact.fact_id),
             reverse=True)
    return out


def search(deps: ApiDeps, user_id: str, body: SearchBody) -> SearchOut:
    """Evidence (seeds + relation closure) with relational states and the rendered context."""
    pipe = deps.pipeline
    cfg = pipe.with_config(k=body.k, traverse=body.traverse, relational_states=body.relational_states,
                           **body.time_view())
    bundle = pipe.evidence(user_id, body.query, cfg)
    ctx = render_context(bundle, body.budget, with_state=cfg.relational_states)
    return SearchOut(user_id=user_id, query=body.query, context=ctx, explain=bundle.explain,
                     items=[SearchItem(fact=i.fact, state=i.state, alias=i.alias, seed=i.seed, score=i.score,
                                       group=i.group) for i in bundle.items])


def reasoning_state(deps: ApiDeps, user_id: str, body: QueryBody) -> StateOut:
    res = deps.pipeline.answer(user_id, body.query, generate=False, k=body.k, traverse=body.traverse,
                               relational_states=body.relational_states, **body.time_view())
    return StateOut(user_id=user_id, request=body.query, policy=res.policy, reasoning_state=res.reasoning_state,
                    parsed=res.reasoning_state_parsed, fallback=res.policy_fallback,
                    aliases={e.alias: e.fact_id for e in res.evidence},
                    timings_ms={k: v for k, v in res.timings_ms.items() if k != "answer"})


def list_facts(deps: ApiDeps, user_id: str, validity: str | None = None, include: str | Iterable[str] | None = None,
               kind: str | None = None, as_of: datetime | None = None, known_at: datetime | None = None,
               limit: int = 100, offset: int = 0) -> FactList:
    """The user's facts with their states, newest first: current ones only unless ``include`` names other
    validities ('all' for every one) or ``validity`` asks for exactly one; ``as_of``/``known_at`` time-travel."""

    if limit > deps.settings.max_page:
        raise ApiError(422, f"The limit must be at most {deps.settings.max_page}.", "validation_error", "limit")
    try:
        shown = frozenset([validity]) if validity is not None else parse_include(include)
    except ValueError as e:
        raise ApiError(422, sentence(str(e)), "validation_error", "include") from None
    rows = [r for r in facts_with_states(deps.memory.store, user_id, TimeView(as_of=as_of, known_at=known_at))
            if r.state.validity in shown and (kind is None or r.fact.kind == kind)]
    return FactList(user_id=user_id, total=len(rows), facts=rows[offset:offset + limit])


def history(deps: ApiDeps, user_id: str, fact_id: str) -> FactHistoryOut:
    """A fact, its state, related facts, evidence turns and every edit that touched it (404 unknown fact)."""
    try:
        h = fact_history(deps.memory.store, user_id, fact_id)
    except UnknownFact as e:
        raise ApiError(404, f"User {user_id!r} has no such fact.", "fact_not_found") from e
    return FactHistoryOut.model_validate(h.model_dump())


async def cypher(deps: ApiDeps, user_id: str, caller: str, query: str, params: dict[str, Any] | None) -> CypherOut:
    """Read-only Cypher over the user's own subgraph, through the guarded path (graph/cypher via
    Memory.cypher) and the gate's per-caller limits (serving/cypher_route.py)."""
    rows = await deps.cypher_gate.run(caller, lambda: deps.memory.cypher(user_id, query, params or {}))
    return CypherOut.model_validate(cypher_body(user_id, rows, deps.settings.max_cypher_rows))


def concept_tree(deps: ApiDeps, user_id: str) -> ConceptTree:
    """The user's concept hierarchy from the root, each concept with the statements of its live facts."""
    return build_concept_tree(deps.memory.store.load_snapshot(user_id))


def build_concept_tree(snap: Snapshot) -> ConceptTree:
    children: dict[str, list[str]] = defaultdict(list)
    for child, parent in snap.parent.items():
        children[parent].append(child)
    facts: dict[str, list[str]] = defaultdict(list)
    for fid, cid in snap.fact_concept.items():
        f = snap.facts.get(fid)
        if f is not None and f.retracted_at is None:
            facts[cid].append(f.statement)

    def node(cid: str, depth: int) -> ConceptNode:
        c = snap.concepts[cid]
        kids = sorted((k for k in children.get(cid, []) if k in snap.concepts and snap.concepts[k].retired_at is None),
                      key=lambda k: snap.concepts[k].name)
        # bounded depth: a corrupt store cannot make this loop
        return ConceptNode(concept_id=cid, name=c.name, description=c.description, facts=sorted(facts.get(cid, [])),
                           children=[node(k, depth + 1) for k in kids] if depth < 64 else [])

    root = node(snap.root_id, 0) if snap.root_id in snap.concepts else None
    return ConceptTree(user_id=snap.user_id, root=root)


# -- Reasoning States for other memory systems --
def _base_ingestor(deps: ApiDeps) -> Any:
    if deps.ingestor is None:  # ingestion not configured: the offline extractor and the rule adjudicator
        from induction.pipeline import make_ingestor

        deps.ingestor = make_ingestor(deps.memory)
    return deps.ingestor


def external_state(deps: ApiDeps, body: TransferBody, who: ApiKey | None) -> TransferOut:
    """The configured policy's Reasoning State over memory items from another system, relations between
    them inferred by induction on a scratch store (policy/transfer.py); nobody's memory is read or written.
    It costs seconds of CPU, so a key bound to no user may not call it, and each key has a budget of work
    per window (serving/limits.py; 429 past it)."""
    if who is not None and who.users is not None and not who.users:
        raise ApiError(403, "This API key is bound to no user, so it may not use /v1/state/external.",
                       "key_not_bound")
    with deps.budget().spend(who.key if who else ""):
        return _external_state(deps, body)


def _external_state(deps: ApiDeps, body: TransferBody) -> TransferOut:
    from policy.transfer import external_state as transfer

    pipe = deps.pipeline

    def reason(request: str, bundle: Any) -> tuple[Any, str | None]:
        o = pipe.reason(request, bundle, pipe.config)  # the pipeline's own fallback rules (on_policy_error)
        return o.state, o.fallback

    try:
        res = transfer(body.items, body.query, _base_ingestor(deps), pipe.policy, reason=reason)
    except ValueError as e:
        raise ApiError(422, sentence(str(e)), "invalid_items", "items") from e
    bundle = res.scratch.bundle
    alias_of = bundle.alias_of()
    by_id = bundle.by_id()
    views = [ExternalItemView(item_id=iid, text=it.text,
                              alias=[alias_of[f] for f in res.scratch.item_facts[iid] if f in alias_of],
                              fact_ids=res.scratch.item_facts[iid],
                              validity=[by_id[f].state.validity for f in res.scratch.item_facts[iid] if f in by_id])
             for iid, it in zip(res.scratch.item_ids, body.items)]
    relations = sorted({f"{alias_of.get(r.src, r.src)} {r.type} {alias_of.get(r.dst, r.dst)}"
                        for it in bundle.items for r in _relations(it)})
    ctx = render_context(bundle, None, with_state=True)
    return TransferOut(request=body.query, policy=res.policy, reasoning_state=res.state.render() if res.state else None,
                       parsed=res.state, fallback=res.fallback, context=ctx.text, items=views, relations=relations,
                       timings_ms=res.timings_ms)


def _relations(item: Any) -> list[Any]:
    """An evidence item's relations as (src, type, dst) records."""
    from types import SimpleNamespace

    fid = item.fact.fact_id
    return [SimpleNamespace(type=r.type, src=fid if r.direction == "out" else r.other_fact_id,
                            dst=r.other_fact_id if r.direction == "out" else fid) for r in item.state.relations]
