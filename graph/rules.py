"""Pure rules of the ontology: how a fact's Relational State follows from its relations, and which relations
are allowed (by kind, holder and direction in time; SUPERSEDES stays acyclic).

No I/O and no reading of English here: what a statement says (its holder, whether it asks, turns against an
earlier state, instructs or corrects) is read in ``induction.reading``. Every function is table-tested in
tests/test_rules.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from graph.models import Fact, Relation, RelationalState, RelationView, Validity, as_utc

# Which kinds of fact may replace which (an update must stay within compatible information types:
# a preference can be replaced by a newer preference or a constraint, not by an event).
# An experience or event is history, but what it implied can be outgrown: "I went to a fusion festival and
# loved it" is replaced, as a guide to what the user wants, by a later "fusion feels overproduced now".
# A changed view does the same ("now I believe blending genres waters down the traditions" replaces "it was
# enlightening to explore how genres merge"): the offline extractor tells belief from preference by wording only.
# A plan is replaced by a changed preference ("the trips I hope to make" -> "I've done a complete 180 on
# travel; no more trip planning for me").
SUPERSEDE_COMPATIBLE: Mapping[str, frozenset[str]] = {
    "preference": frozenset({"preference", "constraint", "belief", "experience", "event", "plan"}),
    "belief": frozenset({"belief", "preference", "experience"}),
    "circumstance": frozenset({"circumstance", "constraint", "event", "experience"}),
    "constraint": frozenset({"constraint", "circumstance", "preference", "experience"}),
    "plan": frozenset({"plan", "event", "circumstance"}),
    "experience": frozenset({"experience", "preference", "belief"}),
    "event": frozenset({"event", "plan"}),
}


def can_supersede(new_kind: str, old_kind: str) -> bool:
    """True when a fact of ``new_kind`` may SUPERSEDE one of ``old_kind``.

    >>> can_supersede("preference", "preference"), can_supersede("event", "preference")
    (True, False)
    """
    return old_kind in SUPERSEDE_COMPATIBLE.get(new_kind, frozenset())


def can_conflict(a_kind: str, b_kind: str) -> bool:
    """Conflicts may join any two propositional kinds except pure events vs. plans (both can be true)."""
    return frozenset({a_kind, b_kind}) != frozenset({"event", "plan"})


# Holders whose facts are outside evidence (the assistant's statements, retrieved documents), not a person's state.
EVIDENCE_HOLDERS: frozenset[str] = frozenset({"assistant", "document"})


def may_supersede(new_kind: str, old_kind: str, new_holder: str, old_holder: str, new_is_later: bool,
                  new_is_retrospective: bool = False, old_reports_change: bool = False) -> bool:
    """Direction and scope of a replacement: only a *later* statement of the *same holder* replaces an
    earlier one, within compatible kinds. Evidence never replaces a person's state (it may dispute it).
    A retrospective restatement ("I used to love jazz") never replaces a statement that already reports
    the change ("I no longer enjoy jazz; I prefer techno"): it agrees with it, it does not flip it back.

    >>> may_supersede("preference", "preference", "user", "user", True)
    True
    >>> may_supersede("preference", "preference", "user", "user", False)  # an old view restated later
    False
    >>> may_supersede("belief", "preference", "document", "user", True)
    False
    """
    if new_is_retrospective and old_reports_change:
        return False
    return new_is_later and new_holder == old_holder and can_supersede(new_kind, old_kind)


# Whole-turn replacement (a change replaces what the earlier *turn* said): besides the kinds above, a new
# preference or belief also takes the turn's circumstances with it. "I've organized a festival of fusion works"
# beside "this fusion has sparked intriguing conversations" is the old view's setting; once a later
# "I want to strictly feature traditional art" replaces that turn, the sentence saying what the user did
# for it is no longer the user's direction (MemSyco rows outside the held-out block: 4 of 10 leaks).
# Only as a *sibling* of a fact the change already replaces: a preference never replaces a circumstance
# on its own ("I live in Lisbon" is not undone by "I'd rather cook at home").
SIBLING_EXTRA: Mapping[str, frozenset[str]] = {
    "preference": frozenset({"circumstance"}),
    "belief": frozenset({"circumstance"}),
}


def edge_kinds_allowed(new_kind: str, old_kind: str) -> bool:
    """The store's invariant on a SUPERSEDES edge's kinds (graph/edits.py, induction/validate.py): whatever a
    new fact may replace on its own (``can_supersede``) or as a replaced turn's sibling (``SIBLING_EXTRA``).

    >>> edge_kinds_allowed("preference", "circumstance"), edge_kinds_allowed("event", "preference")
    (True, False)
    """
    return can_supersede(new_kind, old_kind) or old_kind in SIBLING_EXTRA.get(new_kind, frozenset())


def may_supersede_sibling(new_kind: str, sibling_kind: str, new_holder: str, sibling_holder: str) -> bool:
    """May a new fact that replaces one fact of an earlier turn also replace that turn's other fact
    (``sibling``)? Same holder, and the kinds of ``may_supersede`` plus ``SIBLING_EXTRA``.

    >>> may_supersede_sibling("preference", "circumstance", "user", "user")
    True
    >>> may_supersede("preference", "circumstance", "user", "user", True)
    False
    """
    return new_holder == sibling_holder and edge_kinds_allowed(new_kind, sibling_kind)


def change_evidenced(old_kind: str, change_cue: bool, shift_cue: bool, polarity_differs: bool,
                     old_reports_change: bool = False) -> bool:
    """A replacement needs the newer statement to *say* that something changed: an explicit change cue
    ("no longer", "switched to", "I used to love…", "anymore"), a shift marker ("now", "lately",
    "instead", "but") or the opposite polarity (the cues are read by the caller, in ``induction``; this
    rule only says which of them a kind of state needs). What an event or experience implied is replaced only on
    an explicit change cue ("fusion doesn't excite me anymore"): a later remark on the same topic
    ("we love painting lately" after "we made pots") is not an update of what happened.

    A statement that itself reported a change (its turn says "lately I've realized…", "I now prefer…") is
    the user's latest word on the matter: only an explicit new change cue replaces it, never a shift
    word or a remark on a neighbouring topic (on MemSyco most wrong-way replacements were a later
    aside superseding the turn that stated the current preference).

    >>> change_evidenced("preference", False, True, False), change_evidenced("experience", False, True, False)
    (True, False)
    >>> change_evidenced("preference", False, True, False, old_reports_change=True)
    False
    """
    if old_reports_change or old_kind in ("event", "experience"):
        return change_cue
    return change_cue or shift_cue or polarity_differs


# What outside evidence can dispute: a person's preference or belief (paper §3.3, user belief vs objective
# evidence). What they do, plan or live with is not an opinion a report contradicts: on BEAM every sampled
# user-vs-assistant "conflict" joined a request or a circumstance ("I'm trying to debug this TypeError…") to
# the assistant's answer about it (docs/results/relations.md, revision 6).
DISPUTABLE_KINDS: frozenset[str] = frozenset({"preference", "belief"})


def may_conflict(a_kind: str, b_kind: str, a_holder: str, b_holder: str) -> bool:
    """A conflict joins two statements of one person, or a person's preference or belief and outside
    evidence (paper §3.3: user belief vs objective evidence). Two different people may simply differ,
    and two pieces of evidence are weighed against the person, not against each other (the assistant
    does not dispute itself: 305 of BEAM's 814 conflicts were assistant vs assistant, none right).

    >>> may_conflict("preference", "belief", "user", "document"), may_conflict("preference", "preference", "Ann", "Bob")
    (True, False)
    >>> may_conflict("belief", "belief", "assistant", "assistant"), may_conflict("circumstance", "belief", "user", "assistant")
    (False, False)
    """
    if not can_conflict(a_kind, b_kind):
        return False
    a_ev, b_ev = a_holder in EVIDENCE_HOLDERS, b_holder in EVIDENCE_HOLDERS
    if a_ev and b_ev:
        return False
    if a_ev or b_ev:
        return (a_kind if b_ev else b_kind) in DISPUTABLE_KINDS
    return a_holder == b_holder


def derive_validity(
    fact: Fact,
    incoming_supersedes_from: Iterable[Fact],
    unresolved_conflicts_with: Iterable[Fact],
    now: datetime,
) -> Validity:
    """Validity precedence: retracted > expired > superseded > disputed > current.

    A replacement or a counterpart that was itself retracted no longer counts: forgetting the
    newer fact brings the older one back rather than leaving the user with nothing current.
    """
    if fact.retracted_at is not None:
        return "retracted"
    if fact.expired_at is not None and as_utc(fact.expired_at) <= as_utc(now):
        return "expired"
    if fact.valid_to is not None and as_utc(fact.valid_to) <= as_utc(now):
        return "expired"
    if any(o.retracted_at is None for o in incoming_supersedes_from):
        return "superseded"
    if any(o.retracted_at is None for o in unresolved_conflicts_with):
        return "disputed"
    return "current"


def derive_state(
    fact: Fact,
    relations: Iterable[Relation],
    facts_by_id: Mapping[str, Fact],
    concept_path: tuple[str, ...],
    now: datetime,
) -> RelationalState:
    """The Relational State of ``fact`` given every relation touching it.

    ``facts_by_id`` must hold the other endpoint of each relation (traversal guarantees it).
    """
    views: list[RelationView] = []
    sup_by: list[str] = []
    sup: list[str] = []
    conf: list[str] = []
    for r in relations:
        if r.src == fact.fact_id:
            other, direction = r.dst, "out"
        elif r.dst == fact.fact_id:
            other, direction = r.src, "in"
        else:
            continue
        views.append(
            RelationView(type=r.type, direction=direction, other_fact_id=other, resolved=r.resolved_at is not None)
        )
        if r.type == "SUPERSEDES":
            (sup if direction == "out" else sup_by).append(other)
        elif r.resolved_at is None:
            conf.append(other)
    validity = derive_validity(
        fact,
        [facts_by_id[i] for i in sup_by if i in facts_by_id],
        [facts_by_id[i] for i in conf if i in facts_by_id],
        now,
    )
    views.sort(key=lambda v: (v.type, v.direction, v.other_fact_id))
    return RelationalState(
        fact_id=fact.fact_id,
        validity=validity,
        scope=fact.scope,
        concept_path=concept_path,
        relations=tuple(views),
        superseded_by=tuple(sorted(sup_by)),
        supersedes=tuple(sorted(sup)),
        conflicts_with=tuple(sorted(conf)),
    )


def has_cycle(edges: Iterable[tuple[str, str]]) -> list[str] | None:
    """Return one cycle (as a node list) in a directed graph, or None. Iterative DFS, no recursion limit.

    >>> has_cycle([("a", "b"), ("b", "c")]) is None
    True
    >>> sorted(has_cycle([("a", "b"), ("b", "a")]))
    ['a', 'b']
    """
    adj: dict[str, list[str]] = {}
    for s, d in edges:
        adj.setdefault(s, []).append(d)
        adj.setdefault(d, [])
    color: dict[str, int] = {n: 0 for n in adj}  # 0 new, 1 on stack, 2 done
    for start in adj:
        if color[start]:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = [start]
        color[start] = 1
        while stack:
            node, i = stack[-1]
            if i < len(adj[node]):
                stack[-1] = (node, i + 1)
                nxt = adj[node][i]
                if color[nxt] == 1:
                    return path[path.index(nxt):]
                if color[nxt] == 0:
                    color[nxt] = 1
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                color[node] = 2
                stack.pop()
                path.pop()
    return None
