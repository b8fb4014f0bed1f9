"""What a Reasoning State must do for a request whose answer we know: a check by fact text.

The shipped example history (evomem/examples/history.json) gives each request its ``needs``: the facts
the state must use (matched by a piece of their statement) and the facts it may name but must never put
first — an outdated preference or a belief the evidence contradicts, used as a current preference or at
a priority as high as a needed fact's. ``make demo`` prints the verdict per request, and ``evomem ship-policy`` refuses an adapter
whose states miss any, so a policy that learned a layout ("ignore F1") rather than reading cannot ship.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from policy.state import ReasoningState

RANK = {"low": 0, "medium": 1, "high": 2}


class StateNeeds(BaseModel):
    model_config = ConfigDict(extra="forbid")
    use: list[str] = Field(default_factory=list, description="Statement fragments of facts the state must use.")
    not_first: list[str] = Field(default_factory=list, description="Statement fragments of facts that may be used "
                                 "only below every needed fact: never as a current preference, never at a priority "
                                 "as high as a needed fact's (so 'use everything at medium' does not pass).")

    def misses(self, items: Sequence[tuple[str, str]], state: ReasoningState | None) -> list[str]:
        """What ``state`` gets wrong over ``items`` ((alias, statement) pairs); [] when it does all it must.

        >>> from policy.state import parse_state
        >>> n = StateNeeds(use=["beach"], not_first=["hiking"])
        >>> items = [("F1", "Enjoys hiking"), ("F2", "Prefers beach trips")]
        >>> n.misses(items, parse_state("F1: ignore | historical | low\\nF2: use | current-preference | high"))
        []
        >>> n.misses(items, parse_state("F1: use | current-preference | high\\nF2: ignore | irrelevant | low"))
        ['not used: beach', 'put first: hiking (current-preference, high)']
        >>> n.misses(items, parse_state("F1: use | evidence | medium\\nF2: use | evidence | medium"))
        ['put first: hiking (evidence, medium)']
        """
        if state is None:
            return ["no state"]
        used = {f.alias: f for f in state.facts if f.use}

        def alias(fragment: str) -> str | None:
            return next((a for a, text in items if fragment.lower() in text.lower()), None)

        out = [f"not used: {t}" for t in self.use if alias(t) not in used]
        needed = [RANK[used[a].priority] for a in (alias(t) for t in self.use) if a in used]
        floor = min(needed, default=RANK["high"])  # the weakest needed fact's standing
        for t in self.not_first:
            f = used.get(alias(t) or "")
            if f is not None and (f.role == "current-preference" or RANK[f.priority] >= floor):
                out.append(f"put first: {t} ({f.role}, {f.priority})")
        return out
