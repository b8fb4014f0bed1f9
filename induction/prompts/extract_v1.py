"""Fact extraction prompt, version 1: session + local ontology branch -> atomic Persistent Facts (JSON).

The response model is the JSON schema sent to the server (vLLM guided decoding); the reply is
validated against it again in code (induction/extract.py), and turn ids, evidence and times are
re-checked there: the model proposes, code disposes.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from graph.models import FactKind
from induction.branch import OntologyBranch
from induction.session import Session
from llmclients.chat import ChatMessage

VERSION = "extract-v1"


class LLMFact(BaseModel):
    model_config = ConfigDict(extra="forbid")
    statement: str = Field(min_length=1, max_length=600, description="One proposition in plain words.")
    kind: FactKind
    holder: str = Field(default="user", description="'user' or the named person the fact is about.")
    evidence: str = Field(min_length=1, description="Verbatim quote from the cited turn.")
    turn_ids: list[str] = Field(min_length=1, description="Ids of the turns the evidence comes from.")
    time: str | None = Field(default=None, description="When it holds/happened: YYYY-MM-DD, YYYY-MM or YYYY, "
                             "resolved against the session date; null if not said.")
    scope: str | None = Field(default=None, description="Where it applies, e.g. 'at work'; null if general.")
    qualifiers: dict[str, str] = Field(default_factory=dict)
    concept: str = Field(default="general", description="Concept path, e.g. 'travel/activities' (reuse a listed one).")
    change: bool = Field(default=False, description="True if the turn says this replaces an earlier state.")


class ExtractResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    facts: list[LLMFact]


SYSTEM = """You extract long-term memory facts from a dialogue session for a personal assistant.
Return ONLY a JSON object {"facts": [...]} following the schema. Rules:
- One atomic proposition per fact, about the user (holder "user") or a named person (holder = their name).
- kind: preference | experience | belief | circumstance | constraint | event | plan.
- evidence: copy the exact words from the turn; turn_ids: the ids shown in [brackets].
- time: resolve relative times ("yesterday", "last year") against the session date; ISO format.
- change: true when the speaker says something no longer holds, switched, or now prefers something else.
- concept: reuse a concept path from the existing memory when it fits; otherwise propose a short new one.
- Skip greetings, small talk, and what the assistant says unless the user confirms it."""


def _branch_view(branch: OntologyBranch) -> dict[str, Any]:
    return {
        "concepts": ["/".join(c.path) for c in branch.concepts],
        "facts": [{"statement": f.statement, "kind": f.kind, "holder": f.holder, "validity": f.validity}
                  for f in branch.facts],
        "relations": [f"{r.type}: {r.src.split('::')[-1]} -> {r.dst.split('::')[-1]}" for r in branch.relations],
    }


def build_messages(session: Session, turn_indices: list[int], branch: OntologyBranch) -> list[ChatMessage]:
    date = session.started_at.date().isoformat() if session.started_at else "unknown"
    lines = [f"[{session.turn_id(i)}] {session.turns[i].role}: {session.turns[i].text}" for i in turn_indices]
    user = (f"Existing memory (relevant branch):\n{json.dumps(_branch_view(branch), ensure_ascii=False)}\n\n"
            f"Session date: {date}\nSession:\n" + "\n".join(lines) + "\n\nJSON:")
    return [ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=user)]


def json_schema() -> dict[str, Any]:
    """The bare JSON schema; the client wraps it in its server's dialect (response_format, ...)."""
    return ExtractResponse.model_json_schema()
