"""The moments of an arc: what the gist route reads for a request that wants a topic's arc.

A summary ("Summarize how my budgeting app developed") or an order of events ("In what order did I bring
up the database, the API and the tests?") is answered from many moments across the whole timeline, not
from the few facts nearest the request. Its unit is an *exchange*: a user turn and the replies that
follow it in its session, because what the user raised and what was answered make the moment together
(the user's turn names the subject, the reply holds the substance, often in words the request does not
share). Exchanges are ranked by their best turn (reciprocal-rank fusion of the turn's own cosine to the
request, its best fact's cosine and the turn's BM25 against the request), and each contributes one line per turn: its fact nearest the
request and to its turn, so the context spends its words on more moments, not on more words from one. A request about
what the user raised ("the order in which I brought up ...", ``breadth.SELF_RAISED``) takes the user's
turn alone: the replies are not what was asked for.

Facts that cite no stored turn are not moments; the route then reads the live concepts instead (rank.py).
"""

from __future__ import annotations

import numpy as np

from retrieval.seeds.model import Order, RouteIndex

Hit = tuple[str, float, int]
# Reciprocal-rank constant for the two views of a turn (the usual fusion constant).
RRF_K = 60


def exchanges(idx: RouteIndex) -> list[list[int]]:
    """The index's turns grouped into exchanges, in time order: each user turn with the turns after it in
    its session up to the next user turn (an exchange may start with a reply when a session does).

    Turns without a place in a session are their own exchange."""
    order = sorted(range(len(idx.turn_ids)), key=lambda k: idx.turn_key[k])
    out: list[list[int]] = []
    session: object = None
    for k in order:
        place = idx.turn_place[k] if k < len(idx.turn_place) else None
        here = place[0] if place is not None else None
        if not out or place is None or here != session or idx.turn_role[k] == "user":
            out.append([k])
        else:
            out[-1].append(k)
        session = here
    return out


def turn_scores(idx: RouteIndex, qv: np.ndarray, fsims: np.ndarray, allowed: np.ndarray | None,
                query: str = "") -> np.ndarray:
    """Per turn: 1/(RRF_K + rank by the turn's cosine) + 1/(RRF_K + rank by its best allowed fact's cosine)
    (+ 1/(RRF_K + rank by the turn's BM25 against ``query``) where it shares a word); -inf for a turn with
    no allowed fact."""
    n = len(idx.turn_ids)
    best = np.full(n, -np.inf)
    for k, rows in enumerate(idx.turn_rows):
        ok = [r for r in rows if allowed is None or allowed[r]]
        if ok:
            best[k] = float(fsims[ok].max())
    tsims = idx.tmat @ qv if idx.tmat is not None else best
    have = np.isfinite(best)
    out = np.full(n, -np.inf)
    if not have.any():
        return out
    rank_t = np.argsort(np.argsort(-np.where(have, tsims, -np.inf), kind="stable"), kind="stable")
    rank_f = np.argsort(np.argsort(-best, kind="stable"), kind="stable")
    out[have] = 1.0 / (RRF_K + 1 + rank_t[have]) + 1.0 / (RRF_K + 1 + rank_f[have])
    if query:  # the turn's words shared with the request (BM25), a third view
        said, sc = idx.tbm25.scores(query)
        words = np.zeros(n)
        words[said] = sc
        rank_w = np.argsort(np.argsort(-words, kind="stable"), kind="stable")
        out[have] += np.where(words[have] > 0, 1.0 / (RRF_K + 1 + rank_w[have]), 0.0)
    return out


def arc_hits(idx: RouteIndex, qv: np.ndarray, fsims: np.ndarray, allowed: np.ndarray | None,
             user_only: bool, limit: int, query: str = "") -> list[Hit]:
    """Up to ``limit`` lines, best exchange first: each exchange's user turn, then (unless ``user_only``)
    its replies, one fact per turn (the turn's fact nearest the request plus nearest the turn itself: on
topic and what the turn is about, not its "Here's my code:"; ties by fact id). Rank r is the
    r-th line; the score is the line's fact cosine."""
    if not idx.turn_ids or idx.fmat is None:
        return []
    score = turn_scores(idx, qv, fsims, allowed, query)
    units: list[tuple[float, int, list[int]]] = []
    for n, ex in enumerate(exchanges(idx)):
        turns = [k for k in ex if np.isfinite(score[k]) and (not user_only or idx.turn_role[k] == "user")]
        if turns:
            units.append((max(float(score[k]) for k in ex if np.isfinite(score[k])), n, turns))
    units.sort(key=lambda u: (-u[0], u[1]))
    order: Order | None = idx.forder
    fmat, tmat = idx.fmat, idx.tmat
    out: list[Hit] = []
    seen: set[int] = set()
    for _, _, turns in units:
        for k in turns:
            rows = [r for r in idx.turn_rows[k] if r not in seen and (allowed is None or allowed[r])]
            if not rows:
                continue
            r = max(rows, key=lambda x: (float(fsims[x] + (fmat[x] @ tmat[k] if tmat is not None else 0.0)),
                                         -(order.values[x] if order is not None else x)))
            seen.add(r)
            out.append((idx.ids[r], float(fsims[r]), len(out) + 1))
            if len(out) >= limit:
                return out
    return out
