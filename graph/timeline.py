"""Time travel: what was true at a date (valid time) and what the memory knew at a date (recorded time).

Two timelines, both pure functions over stored values (no I/O):

- **valid time** (``as_of``): a fact holds from its valid start — ``valid_from``, else ``observed_at``
  (when it was said), else ``recorded_at`` — until ``valid_to`` or until a newer fact that is itself
  visible supersedes it. A fact said after ``as_of`` is not visible, so neither are its relations:
  the preference that replaced it later does not mark it superseded yet. Retractions and expiries
  are what the memory knows *now* (a fact the user asked to forget stays forgotten).
- **recorded time** (``known_at``): only what the memory had stored by then — facts with
  ``recorded_at`` ≤ ``known_at``, relations with ``at`` ≤ ``known_at``; a retraction, expiry or
  conflict resolution recorded later is undone in the view. Values stored before these fields
  existed (None) count as always known.

Both may be combined (what the memory knew at ``known_at`` about ``as_of``). States are derived with
``graph.rules.derive_state`` at the view's evaluation time, so expiry by ``valid_to`` follows too.
Concept placement is the current one (merges and splits are not replayed), and an undone edit is
gone from the view at every date (undo removes what it reverts; the Edit log still shows both).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graph.models import Fact, Relation, RelationalState, as_utc, utcnow
from graph.rules import derive_state
from graph.snapshot import Snapshot

INCLUDABLE: tuple[str, ...] = ("superseded", "disputed", "expired", "retracted")


class TimeView(BaseModel):
    """A point on each timeline; both None = now (the default everywhere)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    as_of: datetime | None = Field(default=None, description="Valid time: what was true at this date.")
    known_at: datetime | None = Field(default=None, description="Recorded time: what the memory knew at this date.")

    @field_validator("as_of", "known_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return None if v is None else as_utc(v)

    @property
    def is_now(self) -> bool:
        return self.as_of is None and self.known_at is None

    def evaluation_time(self, now: datetime | None = None) -> datetime:
        """The instant states are derived at: the valid date, else the recorded date, else now."""
        return self.as_of or self.known_at or as_utc(now or utcnow())


def _le(t: datetime | None, bound: datetime) -> bool:
    """``t`` ≤ ``bound``; an unknown time counts as before every bound (stored before the field existed)."""
    return t is None or as_utc(t) <= bound


def valid_start(f: Fact) -> datetime | None:
    return f.valid_from or f.observed_at or f.recorded_at


def visible(f: Fact, view: TimeView) -> bool:
    """Whether ``f`` is part of the view at all (a fact not yet said or not yet stored is not)."""
    if view.as_of is not None and not _le(valid_start(f), view.as_of):
        return False
    return view.known_at is None or _le(f.recorded_at, view.known_at)


def allowed_ids(facts: Mapping[str, Fact], view: TimeView) -> frozenset[str] | None:
    """The fact ids retrieval may use for ``view`` (None = no restriction: the view is now)."""
    if view.is_now:
        return None
    return frozenset(fid for fid, f in facts.items() if visible(f, view))


def fact_as_known(f: Fact, view: TimeView) -> Fact:
    """``f`` as the memory held it at ``view.known_at``: later retractions and expiries undone."""
    k = view.known_at
    if k is None:
        return f
    upd = {name: None for name in ("retracted_at", "expired_at") if not _le(getattr(f, name), k)}
    return f.model_copy(update=upd) if upd else f


def relation_as_known(r: Relation, view: TimeView) -> Relation | None:
    """``r`` as known at ``view.known_at`` (None: not recorded yet); a later resolution is undone."""
    k = view.known_at
    if k is None:
        return r
    if not _le(r.at, k):
        return None
    if r.resolved_at is not None and not _le(r.resolved_at, k):
        return r.model_copy(update={"resolved_at": None})
    return r


def states_at(snap: Snapshot, view: TimeView | None = None, ids: Iterable[str] | None = None,
              now: datetime | None = None) -> dict[str, tuple[Fact, RelationalState]]:
    """Fact (as known in the view) and its Relational State for every visible fact (or those of
    ``ids`` that are visible), derived from the visible facts and relations only."""
    view = view or TimeView()
    at = view.evaluation_time(now)
    facts = {fid: fact_as_known(f, view) for fid, f in snap.facts.items() if visible(f, view)}
    rels: dict[str, list[Relation]] = defaultdict(list)
    for r in snap.relations.values():
        if r.src in facts and r.dst in facts:
            rk = relation_as_known(r, view)
            if rk is not None:
                rels[r.src].append(rk)
                rels[r.dst].append(rk)
    wanted = facts.keys() if ids is None else [i for i in ids if i in facts]
    out: dict[str, tuple[Fact, RelationalState]] = {}
    for fid in wanted:
        path = snap.concept_path(snap.fact_concept[fid]) if fid in snap.fact_concept else ()
        out[fid] = (facts[fid], derive_state(facts[fid], rels[fid], facts, path, at))
    return out


def parse_include(include: str | Iterable[str] | None) -> frozenset[str]:
    """The validities a listing shows: always 'current', plus the named ones ('all' = every one).

    >>> sorted(parse_include("superseded, retracted"))
    ['current', 'retracted', 'superseded']
    """
    if include is None:
        names: list[str] = []
    elif isinstance(include, str):
        names = [p.strip() for p in include.split(",") if p.strip()]
    else:
        names = [p.strip() for p in include if p.strip()]
    if "all" in names:
        return frozenset(("current", *INCLUDABLE))
    bad = sorted(set(names) - set(INCLUDABLE) - {"current"})
    if bad:
        raise ValueError(f"unknown include value(s) {', '.join(bad)} (choose from {', '.join(INCLUDABLE)}, all)")
    return frozenset(("current", *names))
