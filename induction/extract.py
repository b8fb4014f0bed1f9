"""Extraction: a session (plus the relevant local ontology branch) -> candidate Persistent Facts.

Two extractors share one protocol: ``OfflineExtractor`` (induction/offline.py, deterministic, the
default) and ``LLMExtractor`` (a chat model with a JSON schema; prompt + response model in
induction/prompts/extract_v1.py). Both return ``CandidateFact``s whose ids are deterministic, so
re-running extraction on the same session yields the same ids.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graph.models import Fact, FactKind, utcnow
from graph.rules import derive_validity
from graph.snapshot import Snapshot
from graph.store import GraphStore
from induction.config import LLMCallConfig, SegmentConfig
from induction.session import Session
from induction.timex import find_times, parse_iso_time
from llmclients.chat import ChatError, ChatModel
from llmclients.embeddings import Embedder

Cue = Literal["change", "negation"]


class CandidateFact(BaseModel):
    """One proposed fact, before resolution. ``order`` is its position in the session's time order."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    fact_id: str
    statement: str = Field(min_length=1)
    kind: FactKind
    holder: str = "user"
    evidence: str = Field(description="Verbatim quote from the source turn.")
    source_turn_ids: tuple[str, ...] = Field(min_length=1)
    order: tuple[int, int] = Field(description="(turn seq, position in turn): the session-internal time order.")
    observed_at: datetime | None = None
    valid_from: datetime | None = None
    scope: str | None = None
    qualifiers: dict[str, str] = Field(default_factory=dict)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    concept: tuple[str, ...] = Field(default=("general",), min_length=1, description="Proposed concept path (names).")
    cues: tuple[Cue, ...] = Field(default=(), description="Hints for adjudication: a change statement, a negation.")
    kind_certain: bool = Field(default=True, description="False when no cue decided the kind (offline default); "
                               "adjudication may then align it with the state it replaces.")

    def to_fact(self, user_id: str, session_id: str) -> Fact:
        return Fact(fact_id=self.fact_id, user_id=user_id, statement=self.statement, kind=self.kind, holder=self.holder,
                    evidence=self.evidence, source_turn_ids=self.source_turn_ids, session_id=session_id,
                    observed_at=self.observed_at, valid_from=self.valid_from, scope=self.scope,
                    qualifiers=dict(self.qualifiers), confidence=self.confidence)


class RejectedItem(BaseModel):
    """Something a step refused, and why (surfaced in the ingest report, never silently dropped)."""

    step: Literal["extract", "resolve", "adjudicate", "validate"]
    item: str = Field(description="A fact id, a statement, or a label, whichever identifies it best.")
    reason: str


class ExtractionResult(BaseModel):
    facts: list[CandidateFact]
    rejected: list[RejectedItem] = Field(default_factory=list)
    llm_calls: int = 0


class ExtractionError(RuntimeError):
    """Extraction failed for the whole session (model down, garbage, refusal); nothing is committed."""

    def __init__(self, message: str, kind: Literal["timeout", "connection", "malformed_json", "schema", "refusal",
                                                      "http", "invalid_response"]):
        super().__init__(message)
        self.kind = kind


def make_fact_id(user_id: str, session_id: str, turn_ids: Sequence[str], statement: str, n: int = 0) -> str:
    """Deterministic: the same session content always yields the same ids (idempotent re-runs)."""
    h = hashlib.sha256("\x1f".join([session_id, *turn_ids, statement, str(n)]).encode()).hexdigest()[:16]
    return f"{user_id}::f::{h}"


_SLUG = re.compile(r"[^a-z0-9]+")


def concept_slug(name: str) -> str:
    return _SLUG.sub("-", name.lower()).strip("-") or "x"


def concept_id_for(user_id: str, path: Sequence[str]) -> str:
    return f"{user_id}::c::" + "/".join(concept_slug(p) for p in path)


# ---------------------------------------------------------------- the local ontology branch
class BranchConcept(BaseModel):
    concept_id: str
    path: tuple[str, ...]
    n_facts: int


class BranchFact(BaseModel):
    fact_id: str
    statement: str
    kind: str
    holder: str
    validity: str
    concept_id: str | None
    observed_at: datetime | None = None


class BranchRelation(BaseModel):
    type: Literal["SUPERSEDES", "CONFLICTS_WITH"]
    src: str
    dst: str


class OntologyBranch(BaseModel):
    """What the extractor sees of the existing memory: nearby concepts, representative facts, relations."""

    concepts: list[BranchConcept] = Field(default_factory=list)
    facts: list[BranchFact] = Field(default_factory=list)
    relations: list[BranchRelation] = Field(default_factory=list)


def validity_map(snap: Snapshot, fact_ids: Sequence[str], now: datetime | None = None) -> dict[str, str]:
    now = now or utcnow()
    inc: dict[str, list[str]] = {}
    conf: dict[str, list[str]] = {}
    for r in snap.relations.values():
        if r.type == "SUPERSEDES":
            inc.setdefault(r.dst, []).append(r.src)
        elif r.resolved_at is None:
            conf.setdefault(r.dst, []).append(r.src)
            conf.setdefault(r.src, []).append(r.dst)
    out = {}
    for fid in fact_ids:
        f = snap.facts.get(fid)
        if f is not None:
            out[fid] = derive_validity(f, [snap.facts[i] for i in inc.get(fid, []) if i in snap.facts],
                                       [snap.facts[i] for i in conf.get(fid, []) if i in snap.facts], now)
    return out


def build_branch(snap: Snapshot, store: GraphStore, embedder: Embedder, session: Session,
                 cfg: LLMCallConfig, skip_roles: Sequence[str] = ("assistant", "system")) -> OntologyBranch:
    """Facts nearest to what the session talks about (one vector query per user turn, best score
    wins), their concepts with parents and siblings, and the relations among them."""
    if not snap.facts or cfg.max_branch_facts == 0:
        return OntologyBranch(concepts=_concepts(snap, set())[: cfg.max_branch_concepts])
    texts = [t.text[:1000] for t in session.turns if t.role.lower() not in skip_roles][:32] or [session.turns[0].text[:1000]]
    vecs = embedder.embed(texts)
    best: dict[str, float] = {}
    for v in np.asarray(vecs):
        for fid, s in store.vector_search(snap.user_id, v.tolist(), cfg.max_branch_facts):
            best[fid] = max(best.get(fid, -1.0), s)
    ids = [f for f, _ in sorted(best.items(), key=lambda kv: -kv[1]) if f in snap.facts][: cfg.max_branch_facts]
    val = validity_map(snap, ids)
    facts = [BranchFact(fact_id=i, statement=snap.facts[i].statement, kind=snap.facts[i].kind, holder=snap.facts[i].holder,
                        validity=val.get(i, "current"), concept_id=snap.fact_concept.get(i),
                        observed_at=snap.facts[i].observed_at) for i in ids]
    near = {f.concept_id for f in facts if f.concept_id}
    rels = [BranchRelation(type=r.type, src=r.src, dst=r.dst) for r in snap.relations.values()
            if r.src in best and r.dst in best]
    return OntologyBranch(concepts=_concepts(snap, near)[: cfg.max_branch_concepts], facts=facts, relations=rels)


def _concepts(snap: Snapshot, near: set[str]) -> list[BranchConcept]:
    """Near concepts, their parents and siblings first; then the rest of the live tree by size."""
    counts: dict[str, int] = {}
    for c in snap.fact_concept.values():
        counts[c] = counts.get(c, 0) + 1
    live = [c for c, v in snap.concepts.items() if v.retired_at is None and c != snap.root_id]
    family = set(near)
    for c in near:
        p = snap.parent.get(c)
        if p:
            family.add(p)
            family.update(k for k, v in snap.parent.items() if v == p)
    ranked = sorted(live, key=lambda c: (c not in near, c not in family, -counts.get(c, 0), c))
    return [BranchConcept(concept_id=c, path=snap.concept_path(c)[1:], n_facts=counts.get(c, 0)) for c in ranked]


# ---------------------------------------------------------------- segmentation
def segment(session: Session, cfg: SegmentConfig) -> list[list[int]]:
    """Turn indices per segment: consecutive turns, cut at ``max_turns`` or ``max_chars``."""
    segs: list[list[int]] = [[]]
    chars = 0
    for i, t in enumerate(session.turns):
        if segs[-1] and (len(segs[-1]) >= cfg.max_turns or chars + len(t.text) > cfg.max_chars):
            segs.append([])
            chars = 0
        segs[-1].append(i)
        chars += len(t.text)
    return segs


# ---------------------------------------------------------------- protocol + LLM extractor
@runtime_checkable
class Extractor(Protocol):
    name: str
    needs_branch: bool

    def extract(self, session: Session, branch: OntologyBranch | None) -> ExtractionResult: ...


_REFUSAL = re.compile(r"^\s*(i'?m sorry|sorry|i can(?:no|')t|i am unable|i won'?t|as an ai)\b", re.I)


def parse_json_reply(text: str, finish_reason: str | None, model: type[BaseModel]) -> BaseModel:
    """Strict: one JSON object matching ``model`` (a ```json fence is tolerated); else ExtractionError."""
    if finish_reason == "content_filter" or (_REFUSAL.search(text) and "{" not in text[:200]):
        raise ExtractionError(f"model refused: {text[:120]!r}", "refusal")
    body = text.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", body, re.S)
    if fence:
        body = fence.group(1)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        hint = " (output cut at max_tokens)" if finish_reason == "length" else ""
        raise ExtractionError(f"reply is not JSON{hint}: {e.msg} at char {e.pos}: {body[:120]!r}", "malformed_json") from None
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise ExtractionError(f"reply breaks the schema at {loc or '<root>'}: {err['msg']}", "schema") from None


def call_model(chat: ChatModel, messages: list, schema: dict, cfg: LLMCallConfig, model: type[BaseModel]) -> BaseModel:
    try:
        res = chat.complete(messages, max_tokens=cfg.max_tokens, temperature=cfg.temperature, json_schema=schema)
    except ChatError as e:
        raise ExtractionError(f"model call failed ({e.kind}): {e}", e.kind) from e
    return parse_json_reply(res.text, res.finish_reason, model)


class LLMExtractor:
    """Session + branch -> facts through one structured-output call per segment (usually one)."""

    name = "llm"
    needs_branch = True

    def __init__(self, chat: ChatModel, cfg: LLMCallConfig | None = None, segment_cfg: SegmentConfig | None = None,
                 skip_roles: Sequence[str] = ("system",)):
        from induction.prompts import extract_v1 as prompt

        self.chat, self.prompt = chat, prompt
        self.cfg = cfg or LLMCallConfig()
        self.segment_cfg = segment_cfg or SegmentConfig()
        self.skip_roles = tuple(skip_roles)

    def extract(self, session: Session, branch: OntologyBranch | None) -> ExtractionResult:
        facts: list[CandidateFact] = []
        rejected: list[RejectedItem] = []
        calls = 0
        for seg in segment(session, self.segment_cfg):
            msgs = self.prompt.build_messages(session, seg, branch or OntologyBranch())
            calls += 1
            reply = call_model(self.chat, msgs, self.prompt.json_schema(), self.cfg, self.prompt.ExtractResponse)
            f, r = self._convert(session, seg, reply)  # type: ignore[arg-type]
            facts += f
            rejected += r
        return ExtractionResult(facts=facts, rejected=rejected, llm_calls=calls)

    def _convert(self, session: Session, seg: list[int], reply: BaseModel) -> tuple[list[CandidateFact], list[RejectedItem]]:
        """The model proposes; this decides: unknown turn ids are rejected, times are re-parsed here."""
        by_id = {session.turn_id(i): i for i in seg}
        out: list[CandidateFact] = []
        rejected: list[RejectedItem] = []
        for n, f in enumerate(reply.facts):  # type: ignore[attr-defined]
            tids = [t for t in dict.fromkeys(f.turn_ids) if t in by_id]
            unknown = [t for t in f.turn_ids if t not in by_id]
            if not tids or unknown:
                rejected.append(RejectedItem(step="extract", item=f.statement[:80],
                                             reason=f"cites turn ids not in this session segment: {unknown or f.turn_ids}"))
                continue
            seq = min(by_id[t] for t in tids)
            ref = session.turn_time(seq)
            when = parse_iso_time(f.time)
            quals = {k: str(v) for k, v in (f.qualifiers or {}).items()}
            if when is None and f.time:
                found = find_times(f.time, ref)
                when = (found[0].start, found[0].granularity) if found else None
                if when is None:
                    quals["time_expression"] = f.time
            if when is not None:
                quals["when"] = when[0].strftime({"day": "%Y-%m-%d", "week": "%Y-%m-%d", "month": "%Y-%m",
                                                  "year": "%Y"}[when[1]])
            path = tuple(p.strip() for p in (f.concept or "general").split("/") if p.strip()) or ("general",)
            cues: tuple[Cue, ...] = ("change",) if f.change else ()
            out.append(CandidateFact(
                fact_id=make_fact_id(session.user_id, session.session_id, tids, f.statement, n),
                statement=f.statement, kind=f.kind, holder=f.holder or "user", evidence=f.evidence,
                source_turn_ids=tuple(tids), order=(seq, n), observed_at=ref,
                valid_from=when[0] if when else None, scope=f.scope or None, qualifiers=quals,
                concept=path[:4], cues=cues))
        return out, rejected
