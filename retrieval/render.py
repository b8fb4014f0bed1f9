"""Render an evidence bundle as answer-model context under a token budget.

Two styles. ``compact`` (serving and evaluation): one short line per fact, and a bracketed marker only
where the state changes how the fact may be used — superseded (by which fact), in conflict (with
which), expired, retracted, scoped; a current fact carries nothing, so a relation group costs its
facts plus one marker. ``full`` (the policy prompt the learned policies were trained on): every
line spells validity, relations, scope and kind.

A request that spans the conversation (a summary, an order of topics) needs many turns, not all the
words of each: retrieval then sets each long fact's ``brief`` (its most informative words,
retrieval/seeds/breadth.py) and the compact line writes that instead of the statement.

A request that wants a topic's arc (a summary, an order of events, how something changed:
``retrieval.seeds.breadth.asks_for_gist``) is written in time order: the units are chosen as for any
request, best seed first while they fit, and then listed by the date of their seed, so the context
reads as the story it is asked to tell. Its budget goes to moments: a seed whose turns are all in
already is skipped, each day is written once as a heading over its lines instead of on every line,
and a line carries no scope marker (BEAM dev, docs/results/concept-route.md).

Adaptive depth: with ``min_score_ratio`` the renderer also stops at the first unit whose best fused
seed score falls below that share of the top seed's score, so an easy request gets a short context.

An update is never shown without what it replaced, nor a conflict without its other side. In the
compact style (with states) the unit kept or dropped whole is a seed, best fused score first, with
its counterparts — the latest fact that replaced it and the latest other side of its conflict,
spelled out, as they change how the seed may be used — and one marker line naming the other ends of their
relations (``↳ F2, F3 superseded by F5``: what the seed itself replaced). A fact already spelled
out is not repeated, and partners of partners are left out. Rendering whole relation groups instead
(every fact traversal reached, in the order of the group's best seed) cost BEAM 0.107 complete
retrieval at 600 tokens against no traversal at all: whole-turn replacement links long
multi-sentence turns into large groups, whose history displaced seeds and pulled low-ranked seeds
forward. The full style (the policy prompt), the no-states ablation and a context without a budget
still render whole groups.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from retrieval.evidence import EvidenceBundle, EvidenceItem
from retrieval.seeds.breadth import asks_for_gist


def whitespace_tokens(text: str) -> int:
    """The token count of every budget and every token figure (the paper's): whitespace-separated words."""
    return len(text.split())


class RenderedContext(BaseModel):
    text: str
    tokens: int
    included: list[str] = Field(description="fact ids whose statement is in the context")
    referenced: list[str] = Field(default_factory=list, description=(
        "fact ids named only by a group's marker line (superseded, expired or retracted partners)"))
    dropped_groups: int = 0


# Outside evidence (the assistant's or a document's report) is weighed against the user's belief; any other
# holder is a person the fact is about. "(about assistant)" read like the assistant's preference (note 41).
_REPORTED = {"assistant": "said by the assistant", "document": "from a document"}


def holder_mark(holder: str) -> str:
    """The parenthesis naming a fact's holder other than the user.

    >>> holder_mark("assistant"), holder_mark("document"), holder_mark("Anna")
    ('said by the assistant', 'from a document', 'about Anna')
    """
    return _REPORTED.get(holder, f"about {holder}")


def _partner(fact_id: str, own_holder: str, holder_of: dict[str, str]) -> str:
    other = holder_of.get(fact_id, "user")
    return f" ({holder_mark(other)})" if other not in ("user", own_holder) else ""


def fact_line(item: EvidenceItem, alias_of: dict[str, str], with_state: bool = True,
              holder_of: dict[str, str] | None = None, statement: str | None = None, dated: bool = True) -> str:
    """``[F1] (date) statement (holder) — validity; relations; scope; kind``. ``holder_of`` (fact id ->
    holder) marks a conflict partner held by someone other than the user, so a user's belief reads
    "conflicts with F2 (said by the assistant)" in its own line and the evidence side does not.
    ``statement`` replaces the fact's own (a brief line); ``dated=False`` leaves the date to a day
    heading (an arc's context)."""
    f, s = item.fact, item.state
    when = (f.observed_at or f.valid_from or f.recorded_at) if dated else None
    head = f"[{item.alias}]" + (f" ({when.date().isoformat()})" if when else "") + f" {statement or f.statement}"
    if f.holder and f.holder != "user" and not f.statement.startswith(f"{f.holder}:"):
        head += f" ({holder_mark(f.holder)})"  # unless the statement already opens with the speaker's name
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
        parts.append("conflicts with " + ", ".join(alias_of.get(i, i) + _partner(i, f.holder, holder_of or {})
                                                   for i in s.conflicts_with))
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


def compact_line(item: EvidenceItem, alias_of: dict[str, str], with_state: bool = True, dated: bool = True) -> str:
    """``[F1] (2023-05-08) statement`` plus a marker only where the state changes the fact's use; the
    statement is the item's ``brief`` where retrieval set one. An arc's line (``dated=False``: its day is
    a heading) carries no scope: an arc tells what happened when, not which condition a fact holds under,
    and a scope often costs more words than the line."""
    head = fact_line(item, alias_of, with_state=False, statement=item.brief, dated=dated)
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
    if s.scope and dated:
        marks.append(scope_mark(s.scope))
    return head + "".join(f" [{m}]" for m in marks)


def marker_clause(item: EvidenceItem, alias_of: dict[str, str]) -> str:
    """What a partner named only by its group's marker line is: how it stands, and to which fact."""
    s = item.state
    if s.validity == "retracted":
        return "retracted"
    if s.superseded_by:
        return "superseded by " + ", ".join(alias_of.get(i, i) for i in s.superseded_by)
    if s.conflicts_with:
        return "conflicts with " + ", ".join(alias_of.get(i, i) for i in s.conflicts_with)
    if s.supersedes:
        return "replaces " + ", ".join(alias_of.get(i, i) for i in s.supersedes)
    return s.validity


def group_marker(items: list[EvidenceItem], alias_of: dict[str, str]) -> str:
    """One line naming a group's unspelled partners, by clause, in the group's (chronological) order.

    Partners in the same standing share one clause: ``↳ F2, F3 superseded by F5; F4 expired``.
    """
    clauses: dict[str, list[str]] = {}
    for it in items:
        clauses.setdefault(marker_clause(it, alias_of), []).append(it.alias)
    return "↳ " + "; ".join(f"{', '.join(a)} {why}" for why, a in clauses.items())


def counterparts(item: EvidenceItem) -> set[str]:
    """What changes how ``item`` may be used: the facts that replaced it, the other side of its conflict."""
    return set(item.state.superseded_by) | set(item.state.conflicts_with)


def seed_unit(seed: EvidenceItem, by_id: dict[str, EvidenceItem], shown: set[str],
              order: dict[str, int]) -> tuple[list[EvidenceItem], list[EvidenceItem]]:
    """The facts to spell out with ``seed`` (it, and for each side — what replaced it, what it
    conflicts with — the latest fact of that side unless one is already ``shown``) and those its
    marker names (every other end of their relations, not shown), each in bundle order (a group's
    facts are chronological there)."""
    spell = {seed.fact.fact_id}
    for side in (seed.state.superseded_by, seed.state.conflicts_with):
        have = [f for f in side if f in by_id]
        if have and not shown.intersection(have):  # one of a side is enough: the latest (a later
            spell.add(max(have, key=order.__getitem__))  # turn's sentences each replace the old one)
    ends = {o for f in spell for o in (*by_id[f].state.supersedes, *counterparts(by_id[f]))}
    name = {f for f in ends - spell - shown if f in by_id}
    return ([by_id[f] for f in sorted(spell, key=order.__getitem__)],
            [by_id[f] for f in sorted(name, key=order.__getitem__)])


def group_block(items: list[EvidenceItem], alias_of: dict[str, str], with_state: bool,
                style: Literal["compact", "full"]) -> list[str]:
    """Every line of one relation group (the full style, or no states)."""
    line = compact_line if style == "compact" else fact_line
    return [line(it, alias_of, with_state) for it in items]


def _date(item: EvidenceItem) -> str:
    f = item.fact
    t = f.observed_at or f.valid_from or f.recorded_at
    return t.isoformat() if t else ""


def _heading(day: str) -> str:
    """An arc's day heading: the date once over that day's lines, instead of on each line."""
    return f"({day})"


def render_context(bundle: EvidenceBundle, budget: int | None = None, with_state: bool = True,
                   count_tokens: Callable[[str], int] = whitespace_tokens,
                   style: Literal["compact", "full"] = "compact",
                   min_score_ratio: float | None = None) -> RenderedContext:
    """Units in order of their best seed while they fit the budget (and, with ``min_score_ratio``,
    while that seed keeps that share of the top seed's score). A unit is a seed with its counterparts
    and one marker line (compact style with states), else a whole relation group."""
    alias_of = bundle.alias_of()
    scores = [it.score for it in bundle.items if it.score is not None]
    floor = max(scores) * min_score_ratio if scores and min_score_ratio else None
    lines: list[str] = []
    included: list[str] = []
    named: dict[str, None] = {}
    used, dropped = 0, 0
    chronological = asks_for_gist(bundle.query)
    when: list[tuple[str, int]] = []  # per unit in ``lines``: its seed's date, and (first line, line count)
    spans: list[tuple[int, int]] = []
    days: set[str] = set()  # an arc's day headings written so far

    def add(best: float | None, block: list[str], shown: list[str], names: list[str], at: str = "",
            heading: bool = False) -> bool:
        """Append the unit if it fits; False once the score floor is passed (stop). With ``heading``,
        the unit's day is written once as a heading over its lines (costed with the day's first unit)."""
        nonlocal used, dropped
        if floor is not None and included and best is not None and best < floor:
            return False  # units come best seed first: everything after scores lower still
        day = at[:10] if heading and at and at[:10] not in days else ""
        cost = sum(count_tokens(b) for b in block) + (count_tokens(_heading(day)) if day else 0)
        if budget is not None and used + cost > budget:
            dropped += 1
            return True
        if day:
            days.add(day)
        when.append((at, len(when)))
        spans.append((len(lines), len(block)))
        lines.extend(block)
        included.extend(shown)
        named.update(dict.fromkeys(names))
        used += cost
        return True

    if style == "compact" and with_state and budget is not None:  # no budget: nothing to save, every line
        by_id = bundle.by_id()
        order = {it.fact.fact_id: n for n, it in enumerate(bundle.items)}
        # A bundle built without seeds (an external list of facts) is read in its own order.
        seeds = [it for it in bundle.items if it.seed] or list(bundle.items)
        turns_in: set[str] = set()  # an arc's turns already in the context
        for sd in sorted(seeds, key=lambda it: -(it.score or 0.0)):
            if sd.fact.fact_id in included:
                continue  # spelled out as a better seed's counterpart
            if chronological and sd.fact.source_turn_ids and turns_in.issuperset(sd.fact.source_turn_ids):
                continue  # an arc wants more moments, not more words from one already in
            spell, name = seed_unit(sd, by_id, set(included), order)
            block = ([compact_line(it, alias_of, dated=not chronological) for it in spell]
                     + ([group_marker(name, alias_of)] if name else []))
            if not add(sd.score, block, [it.fact.fact_id for it in spell], [it.fact.fact_id for it in name], _date(sd),
                       heading=chronological):
                break
            if chronological:
                turns_in.update(t for it in spell for t in it.fact.source_turn_ids)
    else:
        groups: dict[int, list[EvidenceItem]] = {}
        for it in bundle.items:
            groups.setdefault(it.group, []).append(it)
        for items in groups.values():
            best = max((it.score for it in items if it.score is not None), default=None)
            if not add(best, group_block(items, alias_of, with_state, style), [it.fact.fact_id for it in items], [],
                       min(_date(it) for it in items)):
                break
    if chronological:  # the same units, by date (stable: undated first, then as chosen), under day headings
        out: list[str] = []
        last = ""
        for at, u in sorted(when):
            if days and at[:10] in days and at[:10] != last:
                out.append(_heading(at[:10]))
                last = at[:10]
            out.extend(lines[spans[u][0]:spans[u][0] + spans[u][1]])
        lines = out
    shown = set(included)
    return RenderedContext(text="\n".join(lines), tokens=used, included=included,
                           referenced=[f for f in named if f not in shown], dropped_groups=dropped)
