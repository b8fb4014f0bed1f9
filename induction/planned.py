"""A plan holds from when it is said; the time it is planned for is kept apart (issue 44, item 4).

"I'm planning to visit Brazil next summer", said in November: the intention is the user's current state from
November, and "next summer" is when the trip is meant to happen (its end, ``valid_to``, comes from the same
expression: induction/timeexpr.py). Before this, the planned date became ``valid_from``, so a read ``as_of``
December (graph/timeline.visible) did not see a plan the user had already stated.

Which statements: a plan (kind ``plan``) whose first time expression lies after the moment it was said, and
any other statement said ahead of a scheduled date that also ends it ("my driving test is this Friday": an
appointment known from the day it was mentioned). A state that only *starts* later keeps its start
("starting next week I'm vegan", "I'm staying with my aunt from March until June": a bounding end) — it is
not true yet, it is not a plan.

The planned time goes into ``qualifiers["planned_for"]`` (ISO), which retrieval's time index reads first
(``retrieval.seeds.model.fact_time``), so a question about when the trip is still finds it by its date.
"""

from __future__ import annotations

from datetime import datetime

from induction.timeexpr import Bound

PLANNED_FOR = "planned_for"


def _aware(t: datetime, like: datetime) -> datetime:
    return t.replace(tzinfo=like.tzinfo) if (t.tzinfo is None) != (like.tzinfo is None) else t


def said_from(kind: str, start: datetime | None, said: datetime | None, end: Bound | None,
              qualifiers: dict[str, str]) -> datetime | None:
    """``valid_from`` for a statement of ``kind`` about ``start`` said at ``said`` with end ``end``: ``said`` for a
    plan (or a scheduled statement) about a later time, which is then written to ``qualifiers[PLANNED_FOR]``;
    ``start`` otherwise.

    >>> from datetime import datetime
    >>> q: dict[str, str] = {}
    >>> said_from("plan", datetime(2027, 6, 1), datetime(2026, 11, 10), None, q), q
    (datetime.datetime(2026, 11, 10, 0, 0), {'planned_for': '2027-06-01T00:00:00'})
    """
    if start is None or said is None or _aware(start, said) <= said:
        return start
    if kind == "plan" or (end is not None and not end.bounding):
        qualifiers[PLANNED_FOR] = start.isoformat()
        return said
    return start


__all__ = ("PLANNED_FOR", "said_from")
