"""Extraction: a session (plus the relevant local ontology branch) -> candidate Persistent Facts.

Two extractors share one protocol: ``OfflineExtractor`` (induction/offline.py, deterministic, the
default) and ``LLMExtractor`` (a chat model with a JSON schema; prompt + response model in
induction/prompts/extract_v1.py). Both return ``CandidateFact``s whose ids are deterministic, so
re-running extraction on the same session yields the same ids.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from graph.models import Fact, FactKind
from induction.branch import OntologyBranch
from induction.config import LLMCallConfig, SegmentConfig
from induction.planned import said_from
from induction.session import Session
from induction.timeexpr import valid_to_for
from induction.timex import find_times, parse_iso_time
from llmclients.chat import ChatError, ChatMessage, ChatModel
from llmclients.structured import ReplyError, parse_reply

Cue = Literal["change", "negation"]
T = TypeVar("T", bound=BaseModel)


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
    valid_to: datetime | None = Field(default=None, description="When the state stops holding: a dated plan's or a "
                                      "time-bounded state's end (induction/timeexpr.py).")
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
                    observed_at=self.observed_at, valid_from=self.valid_from, valid_to=self.valid_to, scope=self.scope,
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


def _ends(kind: str, text: str, ref: datetime | None) -> datetime | None:
    """``valid_to`` of a statement of ``kind`` said at ``ref`` (induction/timeexpr.py), if its words bound it."""
    b = valid_to_for(kind, text, ref)
    return b.end if b is not None else None


def make_fact_id(user_id: str, session_id: str, turn_ids: Sequence[str], statement: str, n: int = 0) -> str:
    """Deterministic: the same session content always yields the same ids (idempotent re-runs)."""
    h = hashlib.sha256("\x1f".join([session_id, *turn_ids, statement, str(n)]).encode()).hexdigest()[:16]
    return f"{user_id}::f::{h}"


_SLUG = re.compile(r"[^a-z0-9]+")


def concept_slug(name: str) -> str:
    return _SLUG.sub("-", name.lower()).strip("-") or "x"


def concept_id_for(user_id: str, path: Sequence[str]) -> str:
    return f"{user_id}::c::" + "/".join(concept_slug(p) for p in path)


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


def call_model(chat: ChatModel, messages: list[ChatMessage], schema: dict[str, Any], cfg: LLMCallConfig,
               model: type[T]) -> T:
    """One structured call: the reply must be wholly JSON matching ``model`` (llmclients/structured.py)."""
    try:
        res = chat.complete(messages, max_tokens=cfg.max_tokens, temperature=cfg.temperature, json_schema=schema)
    except ChatError as e:
        raise ExtractionError(f"model call failed ({e.kind}): {e}", e.kind) from e
    try:
        return parse_reply(res.text, model, res.finish_reason, strict=True)
    except ReplyError as e:
        raise ExtractionError(str(e), e.kind) from None


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
                valid_from=said_from(f.kind, when[0] if when else None, ref, None, quals),
                valid_to=_ends(f.kind, f.evidence, ref),
                scope=f.scope or None, qualifiers=quals,
                concept=path[:4], cues=cues))
        return out, rejected
