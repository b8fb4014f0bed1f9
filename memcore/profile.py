"""The profile view of one user: current facts grouped by concept, counts per validity, latest changes.

Read-only and derived from one snapshot (so the counts, groups and changes agree with each other);
states come from graph/timeline.py, the same derivation as the facts listing and time travel.
Served by ``evomem profile``, ``GET /v1/users/{user_id}/profile`` and the MCP profile resource.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from graph.models import Edit, Fact, FactKind, Validity
from graph.snapshot import Snapshot
from graph.timeline import TimeView, states_at
from memcore.memory import Memory

VALIDITIES: tuple[Validity, ...] = ("current", "superseded", "disputed", "expired", "retracted")


class ProfileFact(BaseModel):
    fact_id: str
    statement: str
    kind: FactKind
    holder: str
    scope: str | None = None
    observed_at: datetime | None = None


class ConceptGroup(BaseModel):
    concept_id: str
    path: list[str] = Field(description="Concept names from the root down.")
    facts: list[ProfileFact] = Field(description="Current facts in this concept, newest first.")


class ProfileChange(BaseModel):
    edit_id: str
    seq: int
    op: str
    at: datetime
    session_id: str | None = None
    summary: str = Field(description="One line in words, e.g. 'Prefers tea' replaces 'Prefers coffee'.")
    fact_ids: list[str] = Field(default_factory=list)
    undone: bool = False


class Profile(BaseModel):
    user_id: str
    version: int = Field(description="The store version this profile was read at.")
    total_facts: int
    counts: dict[str, int] = Field(description="Facts per validity: current, superseded, disputed, expired, retracted.")
    concepts: list[ConceptGroup]
    latest_changes: list[ProfileChange] = Field(description="The most recent edits, newest first.")

    def text(self) -> str:
        """A human-readable rendering (the CLI's default output)."""
        lines = [f"profile of {self.user_id} (version {self.version}, {self.total_facts} facts: "
                 + ", ".join(f"{n} {k}" for k, n in self.counts.items()) + ")", ""]
        for g in self.concepts:
            lines.append(" > ".join(g.path[1:]) or "(root)")
            lines.extend(f"  - {f.statement}" + (f" [{f.scope}]" if f.scope else "")
                         + (f" ({f.holder})" if f.holder != "user" else "") for f in g.facts)
        lines += ["", "latest changes:"]
        lines.extend(f"  #{c.seq} {c.at:%Y-%m-%d %H:%M} {c.op:<9} {c.summary}" + (" (undone)" if c.undone else "")
                     for c in self.latest_changes)
        return "\n".join(lines)


def _q(facts: dict[str, Fact], fid: Any) -> str:
    f = facts.get(str(fid))
    return repr(f.statement) if f else str(fid)


def describe_edit(e: Edit, snap: Snapshot) -> tuple[str, list[str]]:
    """One line and the fact ids an edit touched, from its payload (graph/edits.py writes them)."""
    p, facts = e.payload, snap.facts

    def name(cid: Any) -> str:
        return snap.concepts[cid].name if cid in snap.concepts else str(cid)

    if e.op == "ATTACH":
        return f"added {_q(facts, p.get('fact_id'))} under {name(p.get('concept_id'))}", [str(p.get("fact_id"))]
    if e.op == "SUPERSEDE":
        return f"{_q(facts, p.get('src'))} replaces {_q(facts, p.get('dst'))}", [str(p.get("src")), str(p.get("dst"))]
    if e.op == "CONFLICT":
        return f"{_q(facts, p.get('src'))} conflicts with {_q(facts, p.get('dst'))}", [str(p.get("src")), str(p.get("dst"))]
    if e.op == "RESOLVE":
        return f"resolved {_q(facts, p.get('src'))} vs {_q(facts, p.get('dst'))}", [str(p.get("src")), str(p.get("dst"))]
    if e.op == "RETRACT":
        return f"forgot {_q(facts, p.get('fact_id'))}", [str(p.get("fact_id"))]
    if e.op == "CREATE":
        return f"new concept {p.get('name')!r} under {name(p.get('parent_id'))}", []
    if e.op == "MERGE":
        return f"merged concept {name(p.get('source_id'))} into {name(p.get('target_id'))}", list(p.get("moved_facts", []))
    if e.op == "SPLIT":
        return f"split concept {name(p.get('concept_id'))} into {len(p.get('children', []))}", list(p.get("moves", {}))
    if e.op == "RENAME":
        return f"renamed concept {p.get('previous_name')!r} to {p.get('name')!r}", []
    if e.op == "UNDO":
        return f"undid a {p.get('op')} edit", []
    return e.op.lower(), []


def profile_of(snap: Snapshot, latest: int = 10, view: TimeView | None = None) -> Profile:
    """The profile of the user whose snapshot this is (pure; ``build_profile`` loads the snapshot)."""
    states = states_at(snap, view)
    counts = {v: 0 for v in VALIDITIES}
    groups: dict[str, list[Fact]] = {}
    for fid, (fact, st) in states.items():
        counts[st.validity] += 1
        if st.validity == "current":
            groups.setdefault(snap.fact_concept.get(fid, snap.root_id), []).append(fact)
    concepts = []
    for cid in sorted(groups, key=lambda c: (snap.concept_path(c), c)):
        facts = sorted(groups[cid], key=lambda f: ((f.observed_at or f.recorded_at or datetime.min).isoformat(),
                                                   f.fact_id), reverse=True)
        concepts.append(ConceptGroup(concept_id=cid, path=list(snap.concept_path(cid)), facts=[
            ProfileFact(fact_id=f.fact_id, statement=f.statement, kind=f.kind, holder=f.holder, scope=f.scope,
                        observed_at=f.observed_at) for f in facts]))
    edits = sorted(snap.edits.values(), key=lambda e: e.seq, reverse=True)
    if view is not None and view.known_at is not None:
        edits = [e for e in edits if e.at <= view.known_at]
    changes = []
    for e in edits[:max(latest, 0)]:
        summary, fids = describe_edit(e, snap)
        changes.append(ProfileChange(edit_id=e.edit_id, seq=e.seq, op=e.op, at=e.at, session_id=e.session_id,
                                     summary=summary, fact_ids=fids, undone=e.undone_at is not None))
    return Profile(user_id=snap.user_id, version=snap.version, total_facts=len(states), counts=counts,
                   concepts=concepts, latest_changes=changes)


def build_profile(memory: Memory, user_id: str, latest: int = 10, view: TimeView | None = None) -> Profile:
    """The profile of ``user_id``; raises graph.store.UnknownUser for a user with no memories."""
    memory.require_user(user_id)
    return profile_of(memory.store.load_snapshot(user_id), latest, view)
