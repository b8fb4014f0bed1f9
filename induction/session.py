"""The input of induction: a typed dialogue ``Session``, loaded from JSON / JSONL.

A malformed file is rejected as a whole with a ``SessionFormatError`` that names the file, the
record index and the field path (e.g. ``sessions.json record 2: turns[3].text: field required``);
nothing is ingested from a file that does not load.

JSON: one session object, a list of them, or ``{"sessions": [...]}``. JSONL: one session per line.
A session: ``{"session_id", "user_id", "started_at"?, "turns": [{"role", "text", "at"?, "turn_id"?}]}``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from graph.models import Instant, Turn


class SessionFormatError(ValueError):
    """Input that is not a valid session: names the file, the record and the field path."""

    def __init__(self, source: str, record: int | None, field: str, message: str):
        self.source, self.record, self.field = source, record, field
        where = source + (f" record {record}" if record is not None else "")
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")


class SessionTurn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    role: str = Field(min_length=1, description="'user', 'assistant', or a speaker's name (LoCoMo).")
    text: str = Field(min_length=1, description="What was said.")
    at: Instant | None = Field(default=None, description="When it was said, if known.")
    turn_id: str | None = Field(default=None, min_length=1,
                                description="The source's own id (LoCoMo dia_id, BEAM message id); default '<session>:<seq>'.")

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("text is blank")
        return v


class Session(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    session_id: str = Field(min_length=1, description="Unique per user; re-ingesting the same id+content is a no-op.")
    user_id: str = Field(min_length=1, description="Whose memory this session feeds.")
    started_at: Instant | None = Field(default=None, description="Session date; relative time expressions resolve against it.")
    turns: tuple[SessionTurn, ...] = Field(min_length=1)
    source: str | None = Field(default=None, description="Where it came from (file, dataset), for reports only; not hashed.")

    @model_validator(mode="after")
    def _unique_turn_ids(self) -> Session:
        seen: set[str] = set()
        for i, t in enumerate(self.turns):
            tid = self.turn_id(i)
            if tid in seen:
                raise ValueError(f"turns[{i}].turn_id {tid!r} repeats an earlier turn id")
            seen.add(tid)
        return self

    def turn_id(self, seq: int) -> str:
        t = self.turns[seq]
        return t.turn_id if t.turn_id is not None else f"{self.session_id}:{seq}"

    def turn_time(self, seq: int) -> datetime | None:
        """The turn's own time, else the session start (plus seq seconds so turns stay ordered)."""
        t = self.turns[seq]
        if t.at is not None:
            return t.at
        return self.started_at + timedelta(seconds=seq) if self.started_at is not None else None

    def content_hash(self) -> str:
        """sha256 over what the memory is built from (ids, times, roles, texts); ``source`` is not hashed."""
        body = {
            "session_id": self.session_id, "user_id": self.user_id,
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "turns": [[self.turn_id(i), t.role, t.text, t.at.isoformat() if t.at else None]
                      for i, t in enumerate(self.turns)],
        }
        return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def graph_turns(self) -> list[Turn]:
        return [Turn(turn_id=self.turn_id(i), user_id=self.user_id, session_id=self.session_id, seq=i, role=t.role,
                     text=t.text, at=self.turn_time(i)) for i, t in enumerate(self.turns)]


def _field_path(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_session(data: Any, source: str = "<input>", record: int | None = None,
                  user_id: str | None = None) -> Session:
    """Validate one session record; ``user_id`` (if given) overrides/supplies the record's user."""
    if not isinstance(data, dict):
        raise SessionFormatError(source, record, "", f"expected a JSON object, got {type(data).__name__}")
    if user_id is not None:
        data = {**data, "user_id": user_id}
    try:
        return Session.model_validate({**data, "source": data.get("source") or source})
    except ValidationError as e:
        err = e.errors()[0]
        extra = f" (+{len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
        raise SessionFormatError(source, record, _field_path(err["loc"]), err["msg"] + extra) from None


def load_sessions(path: str | Path, fmt: Literal["json", "jsonl"] | None = None,
                  user_id: str | None = None) -> list[Session]:
    """Every session in the file, or a ``SessionFormatError`` for the first bad record (none are returned)."""
    p = Path(path)
    src = str(p)
    fmt = fmt or ("jsonl" if p.suffix.lower() == ".jsonl" else "json")
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise SessionFormatError(src, None, "", f"cannot read: {e.strerror or e}") from None
    records: list[tuple[int, Any]] = []
    if fmt == "jsonl":
        for n, line in enumerate(text.splitlines()):
            if not line.strip():
                continue
            try:
                records.append((len(records), json.loads(line)))
            except json.JSONDecodeError as e:
                raise SessionFormatError(src, len(records), "", f"line {n + 1} is not JSON: {e.msg} (column {e.colno})") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise SessionFormatError(src, None, "", f"not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
        if isinstance(data, dict) and "sessions" in data:
            data = data["sessions"]
            if not isinstance(data, list):
                raise SessionFormatError(src, None, "sessions", "expected a list of sessions")
        records = list(enumerate(data if isinstance(data, list) else [data]))
    if not records:
        raise SessionFormatError(src, None, "", "no sessions in file")
    sessions = [parse_session(rec, src, i, user_id) for i, rec in records]
    seen: dict[tuple[str, str], int] = {}
    for i, s in enumerate(sessions):
        key = (s.user_id, s.session_id)
        if key in seen:
            raise SessionFormatError(src, i, "session_id", f"{s.session_id!r} already used by record {seen[key]}")
        seen[key] = i
    return sessions
