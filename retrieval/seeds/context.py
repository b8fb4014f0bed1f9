"""Requests that refer back to the conversation, resolved against its latest turn.

"For the situation we discussed, what would a sensible plan look like?" names nothing it is about:
every content route ranks on "situation" and "plan" and lands on chatter about plans. A person
resolves the reference against what the user described last. So when, and only when, the request
refers back (``refers_back``: a small pattern set, table-tested in tests/test_context_route.py), the
request is resolved: the referent is the user's latest turn (the index's turn recency order; what the
assistant or a document said is not the user's situation). The routes then read the request with the
referent's facts appended to its text and the referent's turn vector added to its vector, and the
``context`` route ranks the referent's facts first, then the turns where the user states standing
dispositions ("I prefer…", "I usually…"): the situation and the preferences it touches. A request
that does not refer back is left exactly as it was and the route stays silent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from retrieval.seeds.index import RouteIndex
from graph.rules import EVIDENCE_HOLDERS

# What a request calls the thing it refers back to. "This project" or "my code" usually means the
# whole conversation's subject, not its latest turn, so only situation-like nouns count.
_NOUN = (r"(?:situation|case|scenario|circumstances?|context|decision|choice|dilemma|plan|problem|issue|question|"
         r"idea|options?|proposal|request|task|setup|set-?up|details|constraints|trip|event)")
_SAID = (r"(?:discussed|described|mentioned|talked about|went over|covered|laid out|outlined|explained|shared|"
         r"brought up|raised|was describing|were discussing|just described|told you about|gave|walked through)")
# Each alternative is a phrase that points at something said earlier in this conversation. A request
# that goes on to name its topic ("everything we covered about triangles") needs no resolving.
REFERS_BACK = re.compile(
    rf"\b(?:(?:the|this|that|my|our) {_NOUN} (?:that )?(?:we|I|you)(?: just| have| had|'ve|'d)? {_SAID}"
    rf"|(?:what|everything|all) (?:that )?(?:we|I)(?: just| have|'ve)? {_SAID}(?! (?:about|on|regarding|of|in|for)\b)"
    r"|as (?:I|we)(?: just| have|'ve)? (?:mentioned|said|described|explained|noted)"
    rf"|(?:mentioned|discussed|described|said) (?:earlier|above|before|previously)"
    rf"|(?:for|in|with|given|about|on|regarding|handle|approach|tackle|deal with|do about) (?:this|that|my|our) "
    rf"(?:current |particular |specific )?{_NOUN}(?= *[,.?!]|$)"
    r"|(?:given|considering) (?:what|everything) (?:I|we)(?:'ve| have)? (?:said|told you|described)"
    r"|(?:the|my|our) (?:current|present) (?:situation|case|circumstances)"
    r"|(?:in|for) (?:that|this) case\b(?! (?:of|study|law))"
    r"|the above)\b", re.I)
# A standing disposition: a stative preference verb or a habitual adverb; "would like" and "want" are
# wishes for the task at hand.
_DISPOSITION = re.compile(
    r"\b(?:prefer(?:s|red)?|love[sd]?|enjoy(?:s|ed)?|(?<!would )(?<!'d )(?<!should )like[sd]?|dislike[sd]?|hate[sd]?|"
    r"can't stand|favou?r(?:s|ed)?|(?:would|'d) rather|tend to|usually|generally|normally|typically|always|"
    r"(?:more|most) comfortable|happiest|wary of|value)\b", re.I)
_STANDING = frozenset({"preference", "constraint", "belief", "circumstance"})
_NOT_USER = EVIDENCE_HOLDERS | {"system", "tool"}


def refers_back(query: str) -> bool:
    """True when ``query`` points at something said earlier instead of naming it.

    >>> refers_back("For the situation we discussed, what would a sensible plan look like?")
    True
    >>> refers_back("What did Caroline do in May 2023?")
    False
    """
    return REFERS_BACK.search(query) is not None


@dataclass(frozen=True)
class Referent:
    """The latest user turn a request refers back to: its position in ``turn_ids``, its fact rows,
    their statements (the text the request is read with) and the turn's vector."""

    turn: int
    rows: tuple[int, ...]
    text: str
    vec: np.ndarray | None


def latest_turn(idx: RouteIndex, allowed: np.ndarray | None = None) -> Referent | None:
    """The user's most recent turn that still has a (visible) fact, or None."""
    best: int | None = None
    for t, role in enumerate(idx.turn_role):
        if role.lower() in _NOT_USER:
            continue
        if allowed is not None and not any(allowed[r] for r in idx.turn_rows[t]):
            continue
        if best is None or idx.turn_recency[t] > idx.turn_recency[best] or (
                idx.turn_recency[t] == idx.turn_recency[best] and idx.turn_key[t] < idx.turn_key[best]):
            best = t  # at equal recency the earlier turn in session order, wherever its row is
    if best is None:
        return None
    seen = tuple(r for r in idx.turn_rows[best] if allowed is None or allowed[r])
    text = " ".join(idx.facts[idx.ids[r]].statement for r in seen)
    vec = None if idx.tmat is None else np.asarray(idx.tmat[best], dtype=np.float32)
    return Referent(turn=best, rows=seen, text=text, vec=vec)


def resolve(idx: RouteIndex, query: str, qv: np.ndarray | None, allowed: np.ndarray | None = None
            ) -> tuple[str, np.ndarray | None, Referent | None]:
    """The request as the routes should read it: unchanged unless it refers back and a referent exists;
    then its text carries the referent's statements and its vector the referent's turn vector."""
    if not refers_back(query) or len(idx.turn_role) != len(idx.turn_ids):
        return query, qv, None
    ref = latest_turn(idx, allowed)
    if ref is None:
        return query, qv, None
    if qv is not None and ref.vec is not None:
        q = np.asarray(qv, dtype=np.float32)
        q = q / (np.linalg.norm(q) + 1e-12) + ref.vec
        qv = q / (np.linalg.norm(q) + 1e-12)
    return f"{query} {ref.text}", qv, ref


def disposition(statement: str) -> bool:
    """A standing disposition ("I prefer…", "I usually…", "I'd rather…"), not a wish for the task at
    hand ("I would like a short process", "I want…").

    >>> disposition("I prefer starting early."), disposition("I would like one concrete starting point.")
    (True, False)
    """
    return _DISPOSITION.search(statement) is not None


def context_hits(idx: RouteIndex, ref: Referent | None, allowed: np.ndarray | None, n: int) -> list[tuple[str, float, int]]:
    """The referent's facts at rank 1; then the user's other turns, those stating the most standing
    dispositions first (the nearer the referent, the earlier at equal count), each turn's facts
    sharing its rank as in the turn routes: a preference is usually stated over several sentences and
    the one that names it plainly ("I prefer starting early.") is rarely the one nearest the situation."""
    if ref is None:
        return []
    out = [(idx.ids[r], 1.0, 1) for r in ref.rows]
    scored: list[tuple[int, float, int, list[int]]] = []
    for t, role in enumerate(idx.turn_role):
        if t == ref.turn or role.lower() in _NOT_USER:
            continue
        rows = [r for r in idx.turn_rows[t] if (allowed is None or allowed[r]) and idx.holder[r].lower() not in _NOT_USER]
        said = sum(disposition(idx.facts[idx.ids[r]].statement) for r in rows
                   if idx.facts[idx.ids[r]].kind in _STANDING)
        if not said:  # a turn that states no standing disposition is left to the content routes
            continue
        near = float(idx.tmat[t] @ ref.vec) if idx.tmat is not None and ref.vec is not None else 0.0
        scored.append((said, near, t, rows))
    # Only the turns that state more than half as many as the best one: fusion barely tells rank 2 from rank 3, so a passing "I tend
    # to..." in a turn about something else would otherwise weigh as much as the user's profile turn.
    top = max((x[0] for x in scored), default=0)
    scored = sorted((x for x in scored if 2 * x[0] > top), key=lambda x: (-x[0], -x[1], idx.turn_key[x[2]]))
    for k, (said, near, _, rows) in enumerate(scored, start=2):
        out.extend((idx.ids[r], said + near, k) for r in rows)
        if len(out) >= n:
            break
    return out[:n]
