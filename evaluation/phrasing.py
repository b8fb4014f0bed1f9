"""The hand-written phrasing set (issue 44): typed cases, a line-numbered loader and the fixed tune/test split.

The set lives in ``evaluation/phrasing/cases.jsonl`` (one case per line) with its guideline
``evaluation/phrasing/README.md``. A case is a short dated dialogue (1-3 sessions) and labels that
point at turns by ``(session index, turn index)``:

- ``pair``: the later and the earlier labelled turn and the expected relation between the facts
  derived from them (``SUPERSEDES`` later -> earlier, ``CONFLICTS_WITH`` either way, or ``none``);
- ``expiry``: a turn, a reading date and whether its state is expired at that date (optionally the
  window the derived ``valid_to`` should fall in);
- ``scope``: a turn and the keywords its scope text should contain (empty: no scope expected).

``split(case)`` is fixed once: blake2b of the case id (64-byte digest, read big-endian), even -> ``tune``,
odd -> ``test``. Nothing may
be tuned on the test half.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from induction.session import Session

CASES_FILE = Path(__file__).resolve().parent / "phrasing" / "cases.jsonl"

Category = Literal["update", "self_contradiction", "belief_evidence", "expiry", "scope", "lookalike"]
CATEGORIES: tuple[Category, ...] = ("update", "self_contradiction", "belief_evidence", "expiry", "scope", "lookalike")
# What the issue asks for (the minimum per category the tests hold the file to).
MINIMUM: dict[str, int] = {"update": 60, "self_contradiction": 50, "belief_evidence": 45, "expiry": 45, "scope": 40,
                           "lookalike": 80}
Style = Literal["terse", "long", "non_native", "typos", "plain"]
Half = Literal["tune", "test"]
TurnRef = tuple[int, int]


class PhrasingFormatError(ValueError):
    """A line of the cases file that does not load: names the file, the line and the field."""

    def __init__(self, source: str, line: int, message: str):
        self.source, self.line = source, line
        super().__init__(f"{source} line {line}: {message}")


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CaseTurn(_M):
    role: Literal["user", "assistant"]
    text: str = Field(min_length=1)


class CaseSession(_M):
    at: datetime
    turns: tuple[CaseTurn, ...] = Field(min_length=1)


class PairLabel(_M):
    later: TurnRef
    earlier: TurnRef
    relation: Literal["SUPERSEDES", "CONFLICTS_WITH", "none"]


class ExpiryLabel(_M):
    turn: TurnRef
    read_at: datetime
    expired: bool
    valid_to_after: datetime | None = None
    valid_to_before: datetime | None = None


class ScopeLabel(_M):
    turn: TurnRef
    keywords: tuple[str, ...] = Field(description="Any of them in the scope text (case-insensitive); empty: no scope.")


class PhrasingCase(_M):
    id: str = Field(pattern=r"^[a-z]+-\d{3}$")
    category: Category
    style: Style = Field(default="plain", description="The register it is written in.")
    sessions: tuple[CaseSession, ...] = Field(min_length=1, max_length=3)
    pair: PairLabel | None = None
    expiry: ExpiryLabel | None = None
    scope: ScopeLabel | None = None
    note: str = ""

    @model_validator(mode="after")
    def _labels(self) -> PhrasingCase:
        refs: list[TurnRef] = []
        if self.pair is not None:
            refs += [self.pair.later, self.pair.earlier]
            if tuple(self.pair.later) <= tuple(self.pair.earlier):
                raise ValueError("pair.later must come after pair.earlier (session, turn)")
        if self.expiry is not None:
            refs.append(self.expiry.turn)
        if self.scope is not None:
            refs.append(self.scope.turn)
        for s, t in refs:
            if not (0 <= s < len(self.sessions) and 0 <= t < len(self.sessions[s].turns)):
                raise ValueError(f"turn ({s}, {t}) does not exist")
        for i in range(1, len(self.sessions)):
            if self.sessions[i].at <= self.sessions[i - 1].at:
                raise ValueError(f"sessions[{i}].at is not after sessions[{i - 1}].at")
        need = {"update": ("pair", "SUPERSEDES"), "self_contradiction": ("pair", "CONFLICTS_WITH"),
                "belief_evidence": ("pair", "CONFLICTS_WITH"), "lookalike": ("pair", "none")}
        if self.category in need:
            if self.pair is None or self.pair.relation != need[self.category][1]:
                raise ValueError(f"a {self.category} case needs pair.relation {need[self.category][1]}")
        if self.category == "expiry" and self.expiry is None:
            raise ValueError("an expiry case needs an expiry label")
        if self.category == "scope" and self.scope is None:
            raise ValueError("a scope case needs a scope label")
        return self

    def turn_time(self, ref: TurnRef) -> datetime:
        return self.sessions[ref[0]].at

    def session_id(self, index: int) -> str:
        return f"{self.id}-s{index}"

    def turn_id(self, ref: TurnRef) -> str:
        """The id ingestion gives the turn (``<session_id>:<seq>``, induction.session.Session.turn_id)."""
        return f"{self.session_id(ref[0])}:{ref[1]}"

    def texts(self) -> list[str]:
        return [t.text for s in self.sessions for t in s.turns]

    def to_sessions(self, user_id: str) -> list[Session]:
        """The case as ingestion input: one session per dated block, for ``user_id``."""
        return [Session(session_id=self.session_id(i), user_id=user_id, started_at=s.at,
                        turns=tuple({"role": t.role, "text": t.text} for t in s.turns))  # type: ignore[arg-type]
                for i, s in enumerate(self.sessions)]


def split(case: PhrasingCase) -> Half:
    """The fixed half of a case: blake2b of its id, even -> tune, odd -> test."""
    digest = hashlib.blake2b(case.id.encode("utf-8")).digest()  # the default 64-byte digest
    return "tune" if int.from_bytes(digest, "big") % 2 == 0 else "test"


def load_cases(path: str | Path = CASES_FILE, half: Half | Literal["all"] = "all") -> list[PhrasingCase]:
    """Every case of the file (or of one half); the first bad line raises ``PhrasingFormatError``."""
    p = Path(path)
    out: list[PhrasingCase] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            raise PhrasingFormatError(str(p), n, f"not JSON: {e.msg}") from None
        try:
            case = PhrasingCase.model_validate(data)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise PhrasingFormatError(str(p), n, f"{where}: {err['msg']}" if where else err["msg"]) from None
        if case.id in seen:
            raise PhrasingFormatError(str(p), n, f"id {case.id!r} repeats line {seen[case.id]}")
        seen[case.id] = n
        out.append(case)
    return out if half == "all" else [c for c in out if split(c) == half]


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("\u2019", "'").split())


def _strings(obj: object) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


def dev_text(data_dir: str | Path) -> str:
    """Every string of the development data (JSON / JSONL values, other text files as they are), normalized
    (lowercase, one space, straight apostrophes) and joined by newlines: what a case must not copy."""
    parts: list[str] = []
    for f in sorted(Path(data_dir).rglob("*")):
        if not f.is_file():
            continue
        raw = f.read_text(encoding="utf-8", errors="replace")
        if f.suffix == ".json":
            parts += _strings(json.loads(raw))
        elif f.suffix == ".jsonl":
            parts += [s for line in raw.splitlines() if line.strip() for s in _strings(json.loads(line))]
        else:
            parts.append(raw)
    return "\n".join(_norm(p) for p in parts)


def verbatim_in_dev(cases: list[PhrasingCase], data_dir: str | Path) -> list[tuple[str, str]]:
    """(case id, turn text) for every case turn found verbatim (after normalization) in the development data."""
    blob = dev_text(data_dir)
    return [(c.id, t) for c in cases for t in c.texts() if _norm(t) in blob]
