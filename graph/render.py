"""Render an evidence bundle as answer-model context under a token budget.

Two styles. ``compact`` (serving and evaluation): one short line per fact, and a bracketed marker only
where the state changes how the fact may be used — superseded (by which fact), in conflict (with
which), expired, retracted, scoped; a current fact carries nothing, so a relation group costs its
facts plus one marker. ``full`` (the policy prompt the learned policies were trained on): every
line spells validity, relations, scope and kind.

Adaptive depth: with ``min_score_ratio`` the renderer also stops at the first group whose best fused
seed score falls below that share of the top seed's score, so an easy request gets a short context.

Facts joined by SUPERSEDES/CONFLICTS_WITH form a group that is kept or dropped whole: an update
shown without what it replaced (or a conflict without its other side) misleads more than it helps.
In the compact style a group costs its seeds' lines, the lines of the partners the reader must see
(a partner still in force: the update that replaced a seed, the other side of a conflict), and one
marker line naming the rest — partners traversal reached that are themselves superseded, expired
or retracted (``↳ F2, F3 superseded by F5``). Those are history the seed's own state already
accounts for; spelling each out cost BEAM 0.1 complete retrieval at 600 tokens, where one
replaced turn of five long sentences pushed five seeds out. The full style keeps every line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from graph.evidence import EvidenceBundle, EvidenceItem


def whitespace_tokens(text: str) -> int:
    return len(text.split())


class RenderedContext(BaseModel):
    text: str
    tokens: int
    included: list[str] = Field(description="fact ids whose statement is in the context")
    referenced: list[str] = Field(default_factory=list, description=(
        "fact ids named only by a group's marker line (superseded, expired or retracted partners)"))
    dropped_groups: int = 0


def fact_line(item: EvidenceItem, alias_of: dict[str, str], with_state: bool = True) -> str:
    f, s = item.fact, item.state
    when = (f.observed_at or f.valid_from or f.recorded_at)
    head = f"[{item.alias}]" + (f" ({when.date().isoformat()})" if when else "") + f" {f.statement}"
    if f.holder and f.holder != "user" and not f.statement.startswith(f"{f.holder}:"):
        head += f" (about {f.holder})"  # unless the statement already opens with the speaker's name
    if not with_state:
        return head
    parts: list[str] = [s.validity]
    if s.validity == "retracted":
        parts = ["retracted by the user: never rely on this"]
    if s.supersedes:
        parts.append("replaces " + ", ".join(alias_of.get(i, i) for i in s.supersedes))
    if s.superseded_by:
        parts.append("replaced by " + ", ".join(alias_of.get(i, i) for i in s.superseded_by))
    if s.conflicts_with:
        parts.append("conflicts with " + ", ".join(alias_of.get(i, i) for i in s.conflicts_with))
    if s.scope:
        parts.append(f"scope: {s.scope}")
    parts.append(f"kind: {f.kind}")
    return f"{head} — " + "; ".join(parts)


# A scope that opens with its own condition reads as it is ("when I travel", "unless it rains"); a
# setting gets "only" ("only at work", "only if I control the schedule").
_SELF_CONDITIONED = ("only", "when", "whenever", "while", "unless", "as long as", "so long as", "provided", "even")


def scope_mark(scope: str) -> str:
    """The marker for a scoped fact.

    >>> scope_mark("at work"), scope_mark("When I travel"), scope_mark("unless it rains; on weekdays")
    ('only at work', 'When I travel', 'unless it rains; on weekdays')
    """
    return scope if scope.lower().startswith(_SELF_CONDITIONED) else f"only {scope}"


def compact_line(item: EvidenceItem, alias_of: dict[str, str], with_state: bool = True) -> str:
    """``[F1] (2023-05-08) statement`` plus a marker only where the state changes the fact's use."""
    head = fact_line(item, alias_of, with_state=False)
    if not with_state:
        return head
    s = item.state
    marks: list[str] = []
    if s.validity == "retracted":
        marks.append("retracted by the user: never rely on this")
    elif s.superseded_by:
        marks.append("superseded by " + ", ".join(alias_of.get(i, i) for i in s.superseded_by))
    elif s.validity == "expired":
        marks.append("expired")
    if s.conflicts_with:
        marks.append("conflicts with " + ", ".join(alias_of.get(i, i) for i in s.conflicts_with))
    if s.scope:
        marks.append(scope_mark(s.scope))
    return head + "".join(f" [{m}]" for m in marks)


_HISTORY = ("superseded", "expired", "retracted")


def is_history(item: EvidenceItem) -> bool:
    """A partner traversal reached that no longer holds: named by the group's marker, not spelled out."""
    return not item.seed and item.state.validity in _HISTORY


def history_marker(items: list[EvidenceItem], alias_of: dict[str, str]) -> str:
    """One line for a group's history partners, by reason, in the group's (chronological) order.

    Partners replaced by the same facts share one clause: ``↳ F2, F3 superseded by F5; F4 expired``.
    """
    clauses: dict[str, list[str]] = {}
    for it in items:
        s = it.state
        if s.validity == "retracted":
            why = "retracted"
        elif s.superseded_by:
            why = "superseded by " + ", ".join(alias_of.get(i, i) for i in s.superseded_by)
        else:
            why = s.validity
        clauses.setdefault(why, []).append(it.alias)
    return "↳ " + "; ".join(f"{', '.join(a)} {why}" for why, a in clauses.items())


def group_block(items: list[EvidenceItem], alias_of: dict[str, str], with_state: bool,
                style: Literal["compact", "full"]) -> tuple[list[str], list[str], list[str]]:
    """Lines of one relation group, the ids spelled out and the ids only named by its marker."""
    if style == "full" or not with_state:
        line = compact_line if style == "compact" else fact_line
        return [line(it, alias_of, with_state) for it in items], [it.fact.fact_id for it in items], []
    shown = [it for it in items if not is_history(it)]
    named = [it for it in items if is_history(it)]
    block = [compact_line(it, alias_of) for it in shown] + ([history_marker(named, alias_of)] if named else [])
    return block, [it.fact.fact_id for it in shown], [it.fact.fact_id for it in named]


def render_context(bundle: EvidenceBundle, budget: int | None = None, with_state: bool = True,
                   count_tokens: Callable[[str], int] = whitespace_tokens,
                   style: Literal["compact", "full"] = "compact",
                   min_score_ratio: float | None = None) -> RenderedContext:
    """Whole groups, in the bundle's order (best seed first), while they fit the budget (and, with
    ``min_score_ratio``, while the group's best seed keeps that share of the top seed's score)."""
    alias_of = bundle.alias_of()
    groups: dict[int, list[EvidenceItem]] = {}
    for it in bundle.items:
        groups.setdefault(it.group, []).append(it)
    scores = [it.score for it in bundle.items if it.score is not None]
    floor = max(scores) * min_score_ratio if scores and min_score_ratio else None
    lines: list[str] = []
    included: list[str] = []
    referenced: list[str] = []
    used, dropped = 0, 0
    for items in groups.values():
        best = max((it.score for it in items if it.score is not None), default=None)
        if floor is not None and included and best is not None and best < floor:
            break  # groups come best seed first: everything after scores lower still
        block, shown, named = group_block(items, alias_of, with_state, style)
        cost = sum(count_tokens(b) for b in block)
        if budget is not None and used + cost > budget:
            dropped += 1
            continue
        lines.extend(block)
        included.extend(shown)
        referenced.extend(named)
        used += cost
    return RenderedContext(text="\n".join(lines), tokens=used, included=included, referenced=referenced,
                           dropped_groups=dropped)
