"""Which older facts a new fact is judged against: one selection for the relation model and the LLM.

Resolve's neighbours (embedding neighbours among the user's stored facts — any holder, so outside
evidence and the user's beliefs meet — and earlier facts of the same session, best first) that are
older, from another turn, still current and not dropped as duplicates; the ``limit`` closest.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from induction.resolve import Neighbour, ResolvedFact


def candidates(r: ResolvedFact, by_id: Mapping[str, ResolvedFact], closed: Collection[str], limit: int) -> list[Neighbour]:
    out = [n for n in r.neighbours if n.older and not n.same_turn and n.fact_id not in closed
           and (n.fact_id not in by_id or by_id[n.fact_id].duplicate_of is None)]
    return out[:limit]
