"""The personal-memory ontology data model: pure pydantic, no I/O.

Nodes: Turn (immutable transcript), Fact (one proposition, never rewritten), Concept (hierarchy),
Edit (audit log). Relations: PARENT_OF, CONTAINS, SUPERSEDES, CONFLICTS_WITH, DERIVED_FROM.
The Relational State of a fact is *derived* from these (see graph/rules.py), never stored by hand.
"""

from __future__ import annotations

from datetime import datetime, timezone
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

FactKind = Literal["preference", "experience", "belief", "circumstance", "constraint", "event", "plan"]
FACT_KINDS: tuple[str, ...] = ("preference", "experience", "belief", "circumstance", "constraint", "event", "plan")


class RelationType(str, Enum):
    PARENT_OF = "PARENT_OF"  # Concept -> Concept
    CONTAINS = "CONTAINS"  # Concept -> Fact
    SUPERSEDES = "SUPERSEDES"  # newer Fact -> older Fact (acyclic)
    CONFLICTS_WITH = "CONFLICTS_WITH"  # Fact -> Fact (unresolved while resolved_at is None)
    DERIVED_FROM = "DERIVED_FROM"  # Fact -> Turn


Validity = Literal["current", "superseded", "disputed", "expired", "retracted"]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC so comparisons never mix naive and aware values."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


# Dates that enter from outside (request bodies, query strings, sessions) lie in these years once in UTC:
# 9999-12-31T23:59:59-14:00 is year 10000 in UTC, and date arithmetic near either end overflows.
MIN_YEAR, MAX_YEAR = 1000, 9000


def bounded_instant(value: datetime) -> datetime:
    """``value`` if it lies within years MIN_YEAR..MAX_YEAR in UTC; a ValueError that says so otherwise.

    >>> bounded_instant(datetime(2026, 12, 6)).year
    2026
    >>> bounded_instant(datetime.fromisoformat("9999-12-31T23:59:59-14:00"))
    Traceback (most recent call last):
    ValueError: dates must lie between the years 1000 and 9000
    """
    try:
        year = as_utc(value).year
    except OverflowError:
        year = 0
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise ValueError(f"dates must lie between the years {MIN_YEAR} and {MAX_YEAR}")
    return value


Instant = Annotated[datetime, AfterValidator(bounded_instant)]


# One pattern for user ids everywhere they enter (HTTP path, chat 'user' field, CLI): they become
# Cypher parameters, file-free but logged and shown, so control characters, path-like '..' and
# unbounded lengths are refused at the door rather than stored.
class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Turn(_Model):
    turn_id: str = Field(description="Stable id, unique per user (e.g. '<session>:<seq>' or the dataset's dia_id).")
    user_id: str
    session_id: str
    seq: int = Field(ge=0, description="Position of the turn inside its session.")
    role: str = Field(description="Speaker role or name, e.g. 'user', 'assistant', 'Caroline'.")
    text: str
    at: datetime | None = Field(default=None, description="When the turn was said, if known.")


class Fact(_Model):
    fact_id: str
    user_id: str
    statement: str = Field(min_length=1, description="One proposition, in plain words.")
    kind: FactKind = "preference"
    holder: str = Field(default="user", description="Whose fact it is: the user, or a named other person.")
    evidence: str = Field(default="", description="Verbatim quote from the source turn(s).")
    source_turn_ids: tuple[str, ...] = ()
    session_id: str | None = None
    observed_at: datetime | None = Field(default=None, description="When it was said (session time).")
    valid_from: datetime | None = None
    valid_to: datetime | None = Field(default=None, description="Past this time the fact is expired.")
    recorded_at: datetime | None = Field(default=None, description="When the system stored it.")
    expired_at: datetime | None = Field(default=None, description="When the system stopped treating it as true.")
    retracted_at: datetime | None = Field(default=None, description="Set by a forget request; the fact stays.")
    scope: str | None = Field(default=None, description="Where it applies, e.g. 'at work', 'for my son'.")
    qualifiers: dict[str, str] = Field(default_factory=dict)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)

    @field_validator("statement")
    @classmethod
    def _strip(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("statement is empty")
        return v


class Concept(_Model):
    concept_id: str
    user_id: str
    name: str = Field(min_length=1)
    description: str = ""
    created_at: datetime | None = None
    retired_at: datetime | None = Field(default=None, description="Set when MERGE folds it into another concept.")


class Relation(_Model):
    """A directed fact-to-fact relation (SUPERSEDES or CONFLICTS_WITH)."""

    type: Literal["SUPERSEDES", "CONFLICTS_WITH"]
    src: str
    dst: str
    at: datetime | None = None
    reason: str = ""
    resolved_at: datetime | None = None  # CONFLICTS_WITH only

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.type, self.src, self.dst)


EditOp = Literal["CREATE", "MERGE", "SPLIT", "RENAME", "ATTACH", "SUPERSEDE", "CONFLICT", "RESOLVE", "RETRACT", "UNDO"]


class Edit(_Model):
    """One applied ontology edit: the audit log entry, with enough payload to explain and undo it."""

    edit_id: str
    user_id: str
    seq: int = Field(ge=0, description="Monotonic per user: the order edits were applied.")
    session_id: str | None = None
    op: EditOp
    at: datetime
    payload: dict[str, Any] = Field(default_factory=dict)
    undone_at: datetime | None = None


class RelationView(_Model):
    """A relation as seen from one fact: direction says which end this fact is."""

    type: Literal["SUPERSEDES", "CONFLICTS_WITH"]
    direction: Literal["out", "in"]
    other_fact_id: str
    resolved: bool = False


class RelationalState(_Model):
    fact_id: str
    validity: Validity
    scope: str | None = None
    concept_path: tuple[str, ...] = ()
    relations: tuple[RelationView, ...] = ()
    superseded_by: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    conflicts_with: tuple[str, ...] = ()
