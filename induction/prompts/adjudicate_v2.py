"""Adjudication prompt, version 2: the relation model's label set and candidate selection for the LLM.

Changes from v1: labels are the relation model's (``unrelated`` / ``duplicate`` / ``supersedes`` /
``conflicts_with``), each new fact's candidates come from ``induction.relations.candidates`` (the same
selection the offline model scores), and the holder is shown, so a user's belief can be set against
outside evidence (assistant, document) as a conflict but never be replaced by it. An offline model and
a vLLM deployment thus feed one adjudication step (induction/adjudication/llm.py, apply_labels).

Ids are replaced by short aliases (N1 new facts, E1 stored facts, C1 concepts) so the model cannot
invent real ids, and each new fact lists the only targets it may name; induction/adjudication/llm.py maps
the aliases back and rejects anything outside what was offered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graph.snapshot import Snapshot
from induction.relations.candidates import candidates
from induction.resolve import Resolution, ResolvedFact
from llmclients.chat import ChatMessage

VERSION = "adjudicate-v2"


class FactLabel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fact: str = Field(description="Alias of a new fact, e.g. N3.")
    label: Literal["unrelated", "duplicate", "supersedes", "conflicts_with"]
    targets: list[str] = Field(default_factory=list, description="Aliases from that fact's candidates (E.. or N..).")
    concept: str | None = Field(default=None, description="Alias of an existing concept (C..) to file it under.")
    new_concept: str | None = Field(default=None, description="Path of a new concept, e.g. 'health/injuries'.")
    reason: str = Field(default="", max_length=200)


class SplitSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=60)
    facts: list[str] = Field(min_length=1, description="Aliases of stored facts (E..) of the split concept.")


class ConceptOp(BaseModel):
    model_config = ConfigDict(extra="forbid")
    op: Literal["MERGE", "SPLIT"]
    concept: str = Field(description="MERGE: the duplicate concept folded away; SPLIT: the too-broad concept.")
    into: str | None = Field(default=None, description="MERGE only: the concept that absorbs it.")
    children: list[SplitSpec] = Field(default_factory=list, description="SPLIT only.")


class AdjudicateResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    labels: list[FactLabel]
    concept_ops: list[ConceptOp] = Field(default_factory=list)


@dataclass
class View:
    alias_to_id: dict[str, str] = field(default_factory=dict)
    offered: dict[str, set[str]] = field(default_factory=dict)  # new fact id -> ids it may target
    new: list[dict[str, Any]] = field(default_factory=list)
    existing: list[dict[str, Any]] = field(default_factory=list)
    concepts: list[dict[str, Any]] = field(default_factory=list)


SYSTEM = """You maintain a personal memory. For each new fact N, decide against ITS candidates only:
- "supersedes": N is a LATER statement by the SAME holder that replaces an older candidate (the person changed
  their mind, switched, outgrew an experience, a new circumstance rules the old one out);
- "conflicts_with": N and a candidate cannot both hold and neither replaces the other, e.g. the user's belief or
  preference against outside evidence (holder "assistant" or "document");
- "duplicate": N says the same as a candidate of the same holder; otherwise "unrelated".
An old preference restated later ("I used to love X") does not replace the newer one. Evidence never
supersedes a person's statement. A preference for a scope ("for work trips") is not replaced by another scope.
- Optionally file it under an existing concept C (concept) or propose new_concept "parent/child".
- concept_ops: MERGE two concepts that mean the same; SPLIT a concept that mixes unrelated facts.
Return ONLY JSON: {"labels": [...], "concept_ops": [...]}."""


def build_view(res: Resolution, snap: Snapshot, todo: list[ResolvedFact], max_existing: int,
               max_candidates: int = 12) -> View:
    v = View()
    by_id = res.by_id()
    closed = {f for f, x in res.validity.items() if x in ("superseded", "retracted", "expired")}
    id_to_alias: dict[str, str] = {}

    def alias(prefix: str, fid: str) -> str:
        if fid not in id_to_alias:
            a = f"{prefix}{sum(1 for x in id_to_alias.values() if x.startswith(prefix)) + 1}"
            id_to_alias[fid] = a
            v.alias_to_id[a] = fid
        return id_to_alias[fid]

    for r in res.facts:
        if r.duplicate_of is None:
            alias("N", r.candidate.fact_id)
    budget = max_existing
    for r in todo:
        offered: set[str] = set()
        cands: list[str] = []
        for n in candidates(r, by_id, closed, max_candidates):
            if n.in_session:
                cands.append(alias("N", n.fact_id))
            elif n.fact_id in id_to_alias or budget > 0:
                if n.fact_id not in id_to_alias:
                    budget -= 1
                    f = res.existing[n.fact_id]
                    v.existing.append({"id": alias("E", n.fact_id), "statement": f.statement, "kind": f.kind,
                                       "holder": f.holder, "validity": res.validity.get(n.fact_id, "current")})
                cands.append(id_to_alias[n.fact_id])
            else:
                continue
            offered.add(n.fact_id)
        v.offered[r.candidate.fact_id] = offered
        c = r.candidate
        v.new.append({"id": id_to_alias[c.fact_id], "statement": c.statement, "kind": c.kind, "holder": c.holder,
                      "concept": "/".join(c.concept), "candidates": cands})
    for cid, con in sorted(snap.concepts.items()):
        if con.retired_at is None and cid != snap.root_id:
            v.concepts.append({"id": alias("C", cid), "path": "/".join(snap.concept_path(cid)[1:]),
                               "facts": sum(1 for x in snap.fact_concept.values() if x == cid)})
    return v


def build_messages(view: View) -> list[ChatMessage]:
    body = {"concepts": view.concepts[:60], "stored_facts": view.existing, "new_facts": view.new}
    return [ChatMessage(role="system", content=SYSTEM),
            ChatMessage(role="user", content=json.dumps(body, ensure_ascii=False) + "\n\nJSON:")]


def json_schema() -> dict[str, Any]:
    return AdjudicateResponse.model_json_schema()
