"""An in-memory copy of one user's ontology (without embeddings), and the diff between two copies.

Edits are validated against a snapshot in pure Python; only the resulting ChangeSet reaches a
backend, which writes it in one transaction. That keeps every rule in one place for both
backends, and makes "a rejected batch changes nothing" true by construction.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field

from graph.models import Concept, Edit, Fact, Relation, Turn

RelKey = tuple[str, str, str]


@dataclass
class Snapshot:
    user_id: str
    version: int = 0  # bumped on every commit; the optimistic-concurrency token
    concepts: dict[str, Concept] = field(default_factory=dict)
    parent: dict[str, str] = field(default_factory=dict)  # child concept -> parent concept
    fact_concept: dict[str, str] = field(default_factory=dict)  # fact -> its one concept
    facts: dict[str, Fact] = field(default_factory=dict)
    relations: dict[RelKey, Relation] = field(default_factory=dict)
    edits: dict[str, Edit] = field(default_factory=dict)
    turn_ids: set[str] = field(default_factory=set)
    sessions: dict[str, str] = field(default_factory=dict)  # session_id -> content hash

    def clone(self) -> Snapshot:
        return copy.deepcopy(self)

    @property
    def root_id(self) -> str:
        return f"{self.user_id}::root"

    @property
    def next_edit_seq(self) -> int:
        return max((e.seq for e in self.edits.values()), default=-1) + 1

    def concept_path(self, concept_id: str) -> tuple[str, ...]:
        return concept_path(self.concepts, self.parent, concept_id)


def concept_path(concepts: Mapping[str, Concept], parent: Mapping[str, str], concept_id: str) -> tuple[str, ...]:
    """Names from the root down to ``concept_id`` (bounded, so a corrupt store cannot loop)."""
    names: list[str] = []
    cur: str | None = concept_id
    for _ in range(len(concepts) + 1):
        if cur is None or cur not in concepts:
            break
        names.append(concepts[cur].name)
        cur = parent.get(cur)
    return tuple(reversed(names))


@dataclass
class ChangeSet:
    """Everything one commit writes; backends apply it in a single transaction."""

    user_id: str
    expected_version: int
    new_version: int
    concepts_upsert: list[Concept] = field(default_factory=list)
    concepts_delete: list[str] = field(default_factory=list)
    parent_add: list[tuple[str, str]] = field(default_factory=list)  # (parent, child)
    parent_remove: list[tuple[str, str]] = field(default_factory=list)
    contains_add: list[tuple[str, str]] = field(default_factory=list)  # (concept, fact)
    contains_remove: list[tuple[str, str]] = field(default_factory=list)
    facts_create: list[Fact] = field(default_factory=list)
    facts_update: list[Fact] = field(default_factory=list)
    facts_delete: list[str] = field(default_factory=list)
    embeddings: dict[str, list[float]] = field(default_factory=dict)
    relations_add: list[Relation] = field(default_factory=list)
    relations_update: list[Relation] = field(default_factory=list)
    relations_remove: list[Relation] = field(default_factory=list)
    edits_upsert: list[Edit] = field(default_factory=list)
    # The ids in edits_upsert that the snapshot before lacked (diff fills it): a backend may create those
    # rows instead of upserting them (Neo4j: CREATE, not MERGE). Empty: every edit is an upsert.
    edits_new: set[str] = field(default_factory=set)
    turns_create: list[Turn] = field(default_factory=list)
    derived_from_add: list[tuple[str, str]] = field(default_factory=list)  # (fact, turn)
    sessions_upsert: dict[str, str] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not any(
            getattr(self, f)
            for f in (
                "concepts_upsert", "concepts_delete", "parent_add", "parent_remove", "contains_add",
                "contains_remove", "facts_create", "facts_update", "facts_delete", "relations_add",
                "relations_update", "relations_remove", "edits_upsert", "turns_create", "sessions_upsert",
            )
        )


def diff(
    before: Snapshot,
    after: Snapshot,
    new_turns: list[Turn],
    embeddings: dict[str, list[float]],
) -> ChangeSet:
    """The ChangeSet that turns ``before`` into ``after`` (turns and embeddings come from the batch)."""
    cs = ChangeSet(user_id=after.user_id, expected_version=before.version, new_version=before.version + 1)
    for cid, c in after.concepts.items():
        if before.concepts.get(cid) != c:
            cs.concepts_upsert.append(c)
    cs.concepts_delete = [cid for cid in before.concepts if cid not in after.concepts]
    old_p = set(before.parent.items())
    new_p = set(after.parent.items())
    cs.parent_add = [(p, c) for c, p in sorted(new_p - old_p)]
    cs.parent_remove = [(p, c) for c, p in sorted(old_p - new_p)]
    old_c = set(before.fact_concept.items())
    new_c = set(after.fact_concept.items())
    cs.contains_add = [(c, f) for f, c in sorted(new_c - old_c)]
    cs.contains_remove = [(c, f) for f, c in sorted(old_c - new_c)]
    for fid, f in after.facts.items():
        if fid not in before.facts:
            cs.facts_create.append(f)
            cs.derived_from_add.extend((fid, t) for t in f.source_turn_ids)
        elif before.facts[fid] != f:
            cs.facts_update.append(f)
    cs.facts_delete = [fid for fid in before.facts if fid not in after.facts]
    cs.embeddings = {fid: v for fid, v in embeddings.items() if fid in after.facts and fid not in before.facts}
    for key, r in after.relations.items():
        if key not in before.relations:
            cs.relations_add.append(r)
        elif before.relations[key] != r:
            cs.relations_update.append(r)
    cs.relations_remove = [r for k, r in before.relations.items() if k not in after.relations]
    cs.edits_upsert = [e for eid, e in after.edits.items() if before.edits.get(eid) != e]
    cs.edits_new = {e.edit_id for e in cs.edits_upsert if e.edit_id not in before.edits}
    cs.turns_create = [t for t in new_turns if t.turn_id not in before.turn_ids]
    cs.sessions_upsert = {s: h for s, h in after.sessions.items() if before.sessions.get(s) != h}
    return cs
