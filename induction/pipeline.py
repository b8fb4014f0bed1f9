"""The induction pipeline: segment → extract → resolve → adjudicate → edits → validate → commit.

``Ingestor.ingest(session)`` commits one whole session atomically (turns, facts with embeddings,
concepts, relations, Edit records, DERIVED_FROM links, the session's content hash) through
``graph.edits.apply_batch`` + ``store.commit``, or nothing at all.

- Idempotent: the same session id with the same content hash is a no-op ("unchanged"); the same id
  with different content is an ``IngestError`` (kind ``session_conflict``), never a silent overwrite.
- Concurrency: one in-process lock per (store, user) serializes ingestions of one user, different
  users run in parallel; across processes the store's optimistic version check raises
  ``ConcurrentModification`` and resolve→commit re-runs on a fresh snapshot (bounded retries).
  Extraction is not repeated on a retry: it depends on the session, not on the store.
- Never a partial commit: an extraction failure aborts the session with a clear error; an
  adjudication failure keeps the facts as new; invalid items are dropped and reported.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from graph.edits import AttachFact, CreateConcept, EditBatch, MergeConcepts, SplitConcept
from graph.snapshot import Snapshot
from graph.store import ConcurrentModification, GraphStore
from induction.adjudication.decisions import Adjudicator
from induction.adjudication.edits import to_edits
from induction.adjudication.loop import adjudicate_safely
from induction.adjudication.rules import RuleAdjudicator
from induction.config import IngestConfig
from induction.branch import OntologyBranch, build_branch
from induction.extract import ExtractionError, ExtractionResult, Extractor, RejectedItem
from induction.ontology import ConceptStateCache, living_edits
from induction.redact import redact_session
from induction.resolve import resolve
from induction.session import Session
from induction.validate import apply_checked, check_evidence, check_kinds
from llmclients.chat import ChatModel
from llmclients.config import ModelEndpointConfig
from memcore.memory import Memory
from memcore.retry import commit_with_retry


class IngestError(RuntimeError):
    """This session was not ingested; nothing of it was written."""

    def __init__(self, session_id: str, kind: Literal["session_conflict", "turn_conflict", "extraction", "validation",
                                                      "concurrency"], message: str):
        super().__init__(f"session {session_id!r}: {message}")
        self.session_id, self.kind = session_id, kind


class IngestReport(BaseModel):
    session_id: str
    user_id: str
    status: Literal["committed", "unchanged"]
    content_hash: str
    turns: int = 0
    facts_extracted: int = 0
    facts_added: int = 0
    duplicates: int = 0
    supersessions: int = 0
    conflicts: int = 0
    concepts_created: int = 0
    concepts_merged: int = 0
    concepts_split: int = 0
    rejected: list[RejectedItem] = Field(default_factory=list)
    llm_calls: int = 0
    adjudication_fallback: str | None = None
    commit_attempts: int = 0
    version: int | None = None
    fact_ids: list[str] = Field(default_factory=list)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    redacted: dict[str, int] = Field(default_factory=dict, description="Secrets removed before storage, per kind "
                                     "(counts only, never the values).")


_LOCKS: dict[tuple[int, str], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def user_lock(store: GraphStore, user_id: str) -> threading.Lock:
    """One lock per (store object, user): same-user ingestions queue, other users do not wait."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault((id(store), user_id), threading.Lock())


class Ingestor:
    def __init__(self, memory: Memory, extractor: Extractor, adjudicator: Adjudicator | None = None,
                 config: IngestConfig | None = None):
        self.memory, self.extractor = memory, extractor
        self.config = config or IngestConfig()
        self.rules = RuleAdjudicator(self.config.rules)
        self.adjudicator = adjudicator or self.rules
        # Per user: the concept step's state at this ingestor's last commit (induction/concept_state.py).
        self.concept_state = ConceptStateCache()
        # Test seam: called with the step name just before it runs (fault injection, tracing).
        self.hook: Callable[[str], None] = lambda step: None

    def ingest(self, session: Session, clock: datetime | None = None) -> IngestReport:
        """``clock``: the time of the request that brought a session with no date at all (no ``started_at``,
        no turn ``at``), as HTTP and MCP clients send one: its turns are read as said then ("next week",
        "until the end of the semester" resolve against it; induction/timeexpr.py). The content hash stays
        that of the session as sent, so sending it again is still a no-op."""
        # Secrets are cut out first: the hash, the extractor, the stored turns and the report all see
        # the redacted session only (induction/redact.py).
        raw, (session, redacted) = session, redact_session(session, self.config.redact)
        with user_lock(self.memory.store, session.user_id):
            # a session stored before redaction existed carries the raw hash: still "unchanged"
            report = self._ingest(session, raw.content_hash() if redacted else None, clock)
        return report.model_copy(update={"redacted": redacted}) if redacted else report

    def _ingest(self, session: Session, raw_digest: str | None = None, clock: datetime | None = None) -> IngestReport:
        store, cfg = self.memory.store, self.config
        t: dict[str, float] = {}
        t0 = time.perf_counter()
        digest = session.content_hash()
        if clock is not None and session.started_at is None and all(tt.at is None for tt in session.turns):
            session = session.model_copy(update={"started_at": clock})
        snap = store.load_snapshot(session.user_id)
        if self._seen(snap, session, digest, raw_digest):
            return IngestReport(session_id=session.session_id, user_id=session.user_id, status="unchanged",
                                content_hash=digest, version=snap.version)
        t["load"] = _ms(t0)
        self.hook("extract")
        t1 = time.perf_counter()
        branch = None
        if self.extractor.needs_branch:
            branch = build_branch(snap, store, self.memory.embedder, session, cfg.llm)
        extraction = self._extract(session, branch)
        t["extract"] = _ms(t1)
        turns = session.graph_turns()
        by_turn = {tt.turn_id: tt for tt in turns}
        grounded, ev_rejected = check_evidence(extraction.facts, by_turn, cfg.evidence_min_ratio)
        facts = [f for f in extraction.facts if f.fact_id in set(grounded)]
        calls = extraction.llm_calls

        def attempt(snap: Snapshot, n: int) -> IngestReport:
            nonlocal calls
            # a concurrent writer committed this very session
            if n > 1 and self._seen(snap, session, digest, raw_digest):
                return IngestReport(session_id=session.session_id, user_id=session.user_id, status="unchanged",
                                    content_hash=digest, version=snap.version, llm_calls=calls)
            self.hook("resolve")
            t2 = time.perf_counter()
            res = resolve(snap, store, self.memory.embedder, facts, cfg.resolve)
            t["resolve"] = _ms(t2)
            self.hook("adjudicate")
            t3 = time.perf_counter()
            adj = adjudicate_safely(self.adjudicator, res, snap, cfg.on_adjudication_error, self.rules)
            t["adjudicate"] = _ms(t3)
            if cfg.concepts.enabled:  # the data shapes the tree below the topics (induction/ontology.py)
                adj = adj.model_copy(update={"concept_ops": []})
            edits = to_edits(snap, res, adj, session.session_id)
            edits, kind_rejected = check_kinds(snap, edits)
            if cfg.concepts.enabled:
                t6 = time.perf_counter()
                edits = living_edits(snap, edits, lambda: self._stored_vectors(snap), cfg.concepts,
                                     self.memory.embedder.embed, self.concept_state)
                t["concepts"] = _ms(t6)
            batch = EditBatch(user_id=session.user_id, session_id=session.session_id, session_hash=digest,
                              turns=turns, edits=edits)
            self.hook("validate")
            t4 = time.perf_counter()
            try:
                new_snap, cs, val_rejected, batch = apply_checked(snap, batch)
            except ValueError as e:
                raise IngestError(session.session_id, "validation", str(e)) from e
            t["validate"] = _ms(t4)
            self.hook("commit")
            t5 = time.perf_counter()
            try:
                store.commit(cs)
            except ConcurrentModification:
                calls += adj.llm_calls  # the adjudicator's calls were spent even though this attempt lost
                raise
            t["commit"] = _ms(t5)
            if cfg.concepts.enabled:
                self.concept_state.advance(snap, new_snap, batch)
            t["total"] = _ms(t0)
            return self._report(session, digest, extraction, res, adj, cs, batch, new_snap,
                                ev_rejected + kind_rejected + val_rejected, calls + adj.llm_calls, n, t)

        try:
            return commit_with_retry(store, session.user_id, attempt, cfg.commit_retries, first=snap)
        except ConcurrentModification:
            raise IngestError(session.session_id, "concurrency", f"user {session.user_id!r} kept changing; "
                              f"gave up after {cfg.commit_retries} attempts") from None

    def _stored_vectors(self, snap: Snapshot) -> Mapping[str, Sequence[float]]:
        """The user's fact vectors, read when the concept step's state for ``snap`` is not kept."""
        return self.memory.store.embeddings(snap.user_id) if snap.facts else {}

    def _seen(self, snap: Snapshot, session: Session, digest: str, raw_digest: str | None = None) -> bool:
        prev = snap.sessions.get(session.session_id)
        if prev is None:
            clash = sorted({tt.turn_id for tt in session.graph_turns()} & snap.turn_ids)
            if clash:
                raise IngestError(session.session_id, "turn_conflict",
                                  f"turn ids already stored for user {session.user_id!r} by another session: {clash[:5]}")
            return False
        if prev not in (digest, raw_digest):
            raise IngestError(session.session_id, "session_conflict",
                              f"already ingested for user {session.user_id!r} with different content "
                              f"(stored hash {prev[:12]}…, this one {digest[:12]}…); use a new session id")
        return True

    def _extract(self, session: Session, branch: OntologyBranch | None) -> ExtractionResult:
        try:
            return self.extractor.extract(session, branch)
        except ExtractionError as e:
            raise IngestError(session.session_id, "extraction", f"extraction failed ({e.kind}): {e}") from e

    @staticmethod
    def _report(session: Session, digest: str, extraction: ExtractionResult, res, adj, cs, batch: EditBatch,
                new_snap: Snapshot, rejected: list[RejectedItem], calls: int, attempts: int,
                t: dict[str, float]) -> IngestReport:
        ops = [e.op for e in batch.edits]
        return IngestReport(
            session_id=session.session_id, user_id=session.user_id, status="committed", content_hash=digest,
            turns=len(cs.turns_create), facts_extracted=len(extraction.facts), facts_added=len(cs.facts_create),
            duplicates=sum(1 for d in adj.decisions if d.label == "duplicate"),
            supersessions=ops.count("SUPERSEDE"), conflicts=ops.count("CONFLICT"),
            concepts_created=sum(1 for e in batch.edits if isinstance(e, CreateConcept)),
            concepts_merged=sum(1 for e in batch.edits if isinstance(e, MergeConcepts)),
            concepts_split=sum(1 for e in batch.edits if isinstance(e, SplitConcept)),
            rejected=extraction.rejected + adj.rejected + rejected, llm_calls=calls,
            adjudication_fallback=adj.fallback, commit_attempts=attempts, version=new_snap.version,
            fact_ids=[f.fact_id for f in cs.facts_create], timings_ms=t)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1e3, 2)


def make_ingestor(memory: Memory, config: IngestConfig | None = None, chat: ChatModel | None = None) -> Ingestor:
    """Extractor/adjudicator from the config; ``chat`` is needed for the llm choices."""
    from induction.adjudication.llm import LLMAdjudicator
    from induction.extract import LLMExtractor
    from induction.offline import OfflineExtractor

    cfg = config or IngestConfig()
    if (cfg.extractor == "llm" or cfg.adjudicator == "llm") and chat is None:
        raise ValueError("the llm extractor/adjudicator needs a chat model (an OpenAI-compatible endpoint)")
    extractor: Extractor = (LLMExtractor(chat, cfg.llm, cfg.segment) if cfg.extractor == "llm" and chat is not None
                            else OfflineExtractor(cfg.offline))
    adjudicator: Adjudicator = (LLMAdjudicator(chat, cfg.llm) if cfg.adjudicator == "llm" and chat is not None
                                else RuleAdjudicator(cfg.rules))
    if cfg.adjudicator == "model":
        adjudicator = model_adjudicator(memory, cfg)
    return Ingestor(memory, extractor, adjudicator, cfg)


def model_adjudicator(memory: Memory, cfg: IngestConfig) -> Adjudicator:
    """The trained relation model, or the rules when its artefact is absent or does not fit the embedder
    (the reason is kept on the rules adjudicator as ``fallback_reason``)."""
    from induction.adjudication.model import ModelAdjudicator

    try:
        return ModelAdjudicator.load(memory.embedder, cfg.relations, cfg.rules)
    except (FileNotFoundError, ValueError) as e:
        rules = RuleAdjudicator(cfg.rules)
        rules.fallback_reason = f"relation model unavailable, using the rules: {e}"
        return rules


def build_ingestor(memory: Memory, config: IngestConfig, extraction: ModelEndpointConfig) -> Ingestor:
    """The ingestor the settings describe (``Settings.ingest`` + ``Settings.models.extraction``): the
    extraction model is built (and, for a local engine, loaded) only when an llm choice needs it."""
    from llmclients.factory import make_chat_model

    needs_chat = config.extractor == "llm" or config.adjudicator == "llm"
    return make_ingestor(memory, config, make_chat_model(extraction) if needs_chat else None)
