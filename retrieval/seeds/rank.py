"""The seed routes. Each ranks this user's facts for a request from the RouteIndex and returns
``(fact_id, score, rank)`` best first; rank starts at 1 and may repeat (the facts of one turn share
that turn's rank). ``allowed`` (a boolean row mask, or None) hides facts outside a time-travel view.

- fact_dense: cosine of the request to each fact's retrieval vector (statement with its holder).
- fact_bm25: BM25 over the same text.
- turn_dense / turn_bm25: rank the stored turns, then hand each turn's rank to the facts citing it
  (a question phrased like the conversation finds the turn even when the fact reworded it).
- concept: the live concepts (the tree ingestion keeps, retrieval/seeds/concepts.py) whose centroid is
  nearest the request, their best members by cosine.
- gist: only for a request that wants a topic's arc (a summary, an order of events, how something
  changed: ``retrieval.seeds.breadth.asks_for_gist``): its moments (retrieval/seeds/arc.py), one line
  per turn of the exchanges nearest the request, a user turn with its reply (the user's turn alone for
  what the user raised); for facts without stored turns, one line per concept near the request, each
  concept's best member first, round by round, so the seeds span the topics instead of repeating one.
- entity (not in the defaults, see ROUTES): facts naming the people, places and things the request
  names (rarer names weigh more).
- time: facts dated inside the window the request names ("in May 2023", "last week" against the
  latest session date), by cosine.
- instruction: the user's standing instructions ("Always … when I ask about …", ``retrieval.seeds.instruction``),
  nearest first, at most ``instruction_limit``: like custom instructions they ride along with every request.
- neighbour (a second pass, after the others are fused): the turns around the best seeds' turns in
  their session, the seed's speaker's own turns first. A question names the setup ("after the leash incident") and the
  answer follows it a turn or two later ("I petted and hugged her…"), in words the request does not share.
- context: only for a request that refers back ("the situation we discussed"): the latest user turn's
  facts, then the user's standing states nearest it; such a request is also read by every other route
  with that turn resolved into it (context.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np

from retrieval.seeds.arc import arc_hits
from retrieval.seeds.breadth import SELF_RAISED, asks_for_gist
from retrieval.seeds.context import Referent, context_hits, resolve
from retrieval.seeds.index import RouteIndex, entities_of
from retrieval.seeds.model import Order
from retrieval.seeds.timeq import time_window

RouteName = Literal["fact_dense", "fact_bm25", "turn_dense", "turn_bm25", "concept", "gist", "entity", "time",
                    "context", "instruction", "neighbour"]
# The default routes. "entity" stays selectable (RetrievalConfig.routes) but is off: left out in the
# same run it changed LoCoMo complete by 0.001 and BEAM by 0.000 (docs/results/retrieval-routes.md),
# and a route that contributes nothing on any benchmark does not ship. To add a route: its name in
# RouteName and here, and a RouteContext method of that name (it may call into its own module).
# "concept" (a request reads the best members of the live concepts nearest it) runs only for a request
# that asks for several things (RetrievalConfig.routes_off_for's default leaves it out for the other kinds):
# for every request it cost single-hop questions and BEAM; gated, LoCoMo dev complete 702 -> 705 of 883, BEAM
# dev 139 -> 140 of 215, MemSyco equal (docs/results/concept-route.md, 2026-12-07 evening); for a request that
# wants a topic's arc the tree is read by "gist".
ROUTES: tuple[RouteName, ...] = ("fact_dense", "fact_bm25", "turn_dense", "turn_bm25", "concept", "gist", "time",
                                 "context", "instruction", "neighbour")
# Routes that start from the first pass's fused seeds, so they run after it (retrieval/retrieve.py: route_seeds).
SECOND_PASS: frozenset[str] = frozenset({"neighbour"})
# Fusion weight of a route when RetrievalConfig.route_weights does not name it (1.0 otherwise). The
# context route fires only for a request that refers back, and then it is the one route that knows
# what the request is about. A standing instruction ("Always … when I ask about …") rules every later
# answer on its topic but rarely shares the request's words, so its route counts double: at 1.0 BEAM
# instruction-following gained one question, at 2.0 four, at 3.0 four (docs/results/retrieval-routes.md).
# The gist route fires only for a request that wants a topic's arc, and then its moments (retrieval/seeds/
# arc.py) should set the order the budget is spent in, not the fact routes' near duplicates of a few turns:
# at 10 against 1.0, BEAM dev (conversations 1-3) event-ordering coverage 0.806 -> 0.903, summarization
# 0.570 -> 0.552 (docs/results/concept-route.md, 2026-12-07).
DEFAULT_ROUTE_WEIGHTS: dict[str, float] = {"context": 6.0, "instruction": 2.0, "gist": 10.0}
# Concepts the gist route reads one line from per round (a summary names a handful of topics; BEAM's
# summaries cite 10-70 turns).
GIST_CONCEPTS = 12
# Lines the gist route hands on for an arc (retrieval/seeds/arc.py): a 600-token budget holds about 65 short
# lines under day headings (retrieval/render.py), more than the other routes' candidates.
GIST_LINES = 200
# Standing instructions handed on per request (RetrievalConfig.instruction_limit's default).
INSTRUCTION_LIMIT = 5
Hit = tuple[str, float, int]
Mask = np.ndarray | None


def _top(scores: np.ndarray, n: int, order: Order | None = None) -> np.ndarray:
    """Indices of the n largest finite scores, best first; ties by ``order`` (a fact's id, a turn's
    place: the same order whatever row it sits in, retrieval/seeds/delta.py), else by index."""
    ok = np.flatnonzero(np.isfinite(scores))
    return _top_of(ok, scores[ok], n, order)


def _top_of(ok: np.ndarray, sub: np.ndarray, n: int, order: Order | None = None) -> np.ndarray:
    """``_top`` of scores given sparsely: ``sub[i]`` at index ``ok[i]`` (``ok`` ascending, ``sub`` finite),
    -inf elsewhere; the BM25 routes' form, so no dense array of the user's size is filled and scanned."""
    if not len(ok) or n <= 0:
        return ok[:0]
    n = min(n, len(ok))
    pi = np.argpartition(-sub, n - 1)[:n]
    part = ok[pi]
    if order is None:
        return part[np.lexsort((part, -sub[pi]))]
    keep = sub >= sub[pi].min()  # every tie at the cut, so the order decides which stay
    cand, cs = ok[keep], sub[keep]
    out: np.ndarray = cand[np.lexsort((order.values[cand], -cs))][:n]
    return out


def _sparse(rows: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    out = np.full(size, -np.inf)
    out[rows] = values
    return out


def _masked(sims: np.ndarray, allowed: Mask) -> np.ndarray:
    if allowed is None:
        return sims
    out = sims.astype(float, copy=True)
    out[~allowed] = -np.inf
    return out


class RouteContext:
    """One request against one index; the fact cosines are computed once and shared by the routes."""

    def __init__(self, idx: RouteIndex, query: str, qv: np.ndarray | None, allowed: Mask, n: int,
                 resolve_references: bool = True, instruction_limit: int = INSTRUCTION_LIMIT):
        self.instruction_limit = instruction_limit
        # Unchanged unless it refers back ("the situation we discussed"); off with the context route.
        self.referent: Referent | None = None
        if resolve_references:
            query, qv, self.referent = resolve(idx, query, qv, allowed)
        self.idx, self.query, self.allowed, self.n = idx, query, allowed, n
        self.qv = None if qv is None else np.asarray(qv, dtype=np.float32) / (np.linalg.norm(qv) + 1e-12)
        self._fsims: np.ndarray | None = None

    @property
    def fsims(self) -> np.ndarray | None:
        if self._fsims is None and self.qv is not None and self.idx.fmat is not None:
            self._fsims = self.idx.fmat @ self.qv
        return self._fsims

    def _rank_rows(self, rows: np.ndarray, key: np.ndarray) -> list[Hit]:
        order = _top(_sparse(rows, key[rows], len(key)), self.n, self.idx.forder)
        return [(self.idx.ids[r], float(key[r]), k) for k, r in enumerate(order, start=1)]

    def _ok(self, rows: list[int] | np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=int)
        return rows if self.allowed is None else rows[self.allowed[rows]]

    def fact_dense(self) -> list[Hit]:
        s = self.fsims
        if s is None:
            return []
        s = _masked(s, self.allowed)
        at = _top(s, self.n, self.idx.forder)
        ids = self.idx.ids
        return [(ids[r], v, k) for k, (r, v) in enumerate(zip(at.tolist(), s[at].tolist()), start=1)]

    def fact_bm25(self) -> list[Hit]:
        rows, sc = self.idx.fbm25.scores(self.query)
        keep = sc > 0 if self.allowed is None else (sc > 0) & self.allowed[rows]
        rows, sc = rows[keep], sc[keep]
        at = _top_of(rows, sc, self.n, self.idx.forder)
        ids = self.idx.ids
        return [(ids[r], s, k) for k, (r, s) in enumerate(zip(at.tolist(), sc[np.searchsorted(rows, at)].tolist()),
                                                         start=1)]

    def _turns_to_facts(self, ranked: list[tuple[int, float]]) -> list[Hit]:
        out: list[Hit] = []
        fs = self.fsims
        ids, rows_of, allowed = self.idx.ids, self.idx.turn_rows, self.allowed
        seen: set[int] = set()
        k = 0
        for t, score in ranked:
            # a turn whose facts all came with a better turn (a message said twice) takes no rank
            rows = ([r for r in rows_of[t] if r not in seen] if allowed is None
                    else [r for r in rows_of[t] if r not in seen and allowed[r]])
            if not rows:
                continue
            k += 1
            seen.update(rows)
            if len(rows) == 1:  # the common case, without the sort and the generator (issue 45)
                out.append((ids[rows[0]], score, k))
            else:
                if fs is not None:
                    rows = sorted(rows, key=lambda r: -float(fs[r]))
                out.extend([(ids[r], score, k) for r in rows])
            if len(out) >= self.n:
                break
        return out[: self.n]

    def turn_dense(self) -> list[Hit]:
        if self.qv is None or self.idx.tmat is None:
            return []
        s = self.idx.tmat @ self.qv
        at = _top(s, self.n, self.idx.torder)
        return self._turns_to_facts(list(zip(at.tolist(), s[at].tolist())))

    def turn_bm25(self) -> list[Hit]:
        rows, sc = self.idx.tbm25.scores(self.query)
        keep = sc > 0
        rows, sc = rows[keep], sc[keep]
        at = _top_of(rows, sc, self.n, self.idx.torder)
        pos = np.searchsorted(rows, at)  # rows ascending
        return self._turns_to_facts(list(zip(at.tolist(), sc[pos].tolist())))

    def _by_cosine(self, rows: np.ndarray, bonus: np.ndarray | None = None) -> list[Hit]:
        rows = self._ok(rows)
        if not len(rows):
            return []
        key = np.zeros(len(self.idx.ids))
        if self.fsims is not None:
            key[rows] = self.fsims[rows]
        if bonus is not None:
            key[rows] += bonus[rows]
        return self._rank_rows(rows, key)

    def concept(self, top_concepts: int = 2) -> list[Hit]:
        if self.qv is None or self.idx.cmat is None:
            return []
        cs = _top(self.idx.cmat @ self.qv, top_concepts)
        rows = np.unique(np.concatenate([np.asarray(self.idx.concept_rows[self.idx.concept_ids[c]], dtype=int) for c in cs]))
        return self._by_cosine(rows)

    def gist(self, concepts: int = GIST_CONCEPTS) -> list[Hit]:
        """For a request that wants a topic's arc: its moments (retrieval/seeds/arc.py), one line per turn
        of the best exchanges, up to ``GIST_LINES``; facts that cite no stored turn: the ``concepts`` live
        concepts nearest the request, and round by round each one's next best member (nearest the request
        plus nearest its concept's centroid: on topic and typical of the concept), so rank r*c+i is
        concept i's r-th line."""
        if self.qv is None or self.fsims is None or not asks_for_gist(self.query):
            return []
        if self.idx.turn_ids:
            return arc_hits(self.idx, self.qv, self.fsims, self.allowed, SELF_RAISED.search(self.query) is not None,
                            max(self.n, GIST_LINES), self.query)
        if self.idx.cmat is None:
            return []
        idx, fs, cmat = self.idx, self.fsims, self.idx.cmat
        near = _top(cmat @ self.qv, concepts)
        lines: list[list[int]] = []
        for c in near:
            rows = self._ok(idx.concept_rows[idx.concept_ids[c]])
            if not len(rows):
                continue
            key = fs[rows] + idx.fmat[rows] @ cmat[c] if idx.fmat is not None else fs[rows]
            lines.append([int(r) for r in rows[np.lexsort((idx.forder.values[rows] if idx.forder else rows, -key))]])
        out: list[Hit] = []
        for depth in range(max((len(x) for x in lines), default=0)):
            for x in lines:
                if depth < len(x):
                    out.append((idx.ids[x[depth]], float(fs[x[depth]]), len(out) + 1))
            if len(out) >= self.n:
                break
        return out[: self.n]

    def entity(self) -> list[Hit]:
        n = max(len(self.idx.ids), 1)
        named = [e for e in entities_of(self.query) if e in self.idx.entity_rows]
        if not named:
            return []
        bonus = np.zeros(len(self.idx.ids))
        for e in named:  # idf: a rare name says more than the speaker named in every question
            bonus[self.idx.entity_rows[e]] += math.log(1 + n / len(self.idx.entity_rows[e]))
        return self._by_cosine(np.flatnonzero(bonus), bonus)

    def time(self) -> list[Hit]:
        win = time_window(self.query, self.idx.latest)
        if win is None:
            return []
        lo, hi = (w.timestamp() for w in win)
        with np.errstate(invalid="ignore"):
            rows = np.flatnonzero((self.idx.times >= lo) & (self.idx.times < hi))
        return self._by_cosine(rows)

    def instruction(self) -> list[Hit]:
        # a standing instruction is a rule for later answers, not a claim: the request rarely shares its
        # words ("How should I design my resume?" / "Always keep a minimalist style when I ask about resume
        # design"), so among the user's few instructions the nearest gets its own rank
        return self._by_cosine(np.asarray(self.idx.instruction_rows, dtype=int))[: self.instruction_limit]

    def context(self) -> list[Hit]:
        return context_hits(self.idx, self.referent, self.allowed, self.n)

    def feedback(self, rows: list[int]) -> list[Hit]:
        """Second hop (pseudo-relevance feedback): facts nearest the request moved toward the first
        pass's best seeds (``rows``), so a question that needs several facts about one person or topic
        reaches the ones that share the seeds' subject but not the request's words."""
        if self.qv is None or self.idx.fmat is None or not rows:
            return []
        v = self.qv + self.idx.fmat[rows].mean(axis=0)
        s = _masked(self.idx.fmat @ (v / (np.linalg.norm(v) + 1e-12)), self.allowed)
        return [(self.idx.ids[r], float(s[r]), k) for k, r in enumerate(_top(s, self.n, self.idx.forder), start=1)]

    def neighbour(self, rows: list[int] | None = None, span: int = 2) -> list[Hit]:
        """Second pass: for each seed row in ``rows`` (best first), the facts of the turns up to ``span``
        places before and after its first source turn in the same session — the seed's speaker's turns
        first, then the others', each nearest first and the later before the earlier; a turn takes one
        rank for all its facts, the first time it is reached. The seeds and their relation partners
        take none."""
        idx = self.idx
        if not rows or not idx.turn_at:
            return []
        offsets = [d for k in range(1, span + 1) for d in (k, -k)]
        out: list[Hit] = []
        # The seeds keep their own ranks (two adjacent seeds do not lift each other), and what a seed
        # replaced or conflicts with comes by traversal, with its state, not as a window line.
        seen: set[int] = set(rows) | {idx.row[o] for r in rows for rel in idx.relations_of.get(idx.ids[r], ())
                                      for o in (rel.src, rel.dst) if o in idx.row}
        k = 0
        for r in rows:
            src = idx.facts[idx.ids[r]].source_turn_ids
            t = idx.turn_index.get(src[0]) if src else None
            place = idx.turn_place[t] if t is not None else None
            if t is None or place is None:
                continue
            who = idx.turn_role[t]
            around = [u for u in (idx.turn_at.get((place[0], place[1] + d)) for d in offsets) if u is not None]
            # the seed's speaker goes on with their own account first (the answer follows the setup);
            # within a speaker, nearest first, the later turn before the earlier
            around.sort(key=lambda u: idx.turn_role[u] != who)
            for u in around:
                near = [x for x in idx.turn_rows[u] if x not in seen and (self.allowed is None or self.allowed[x])]
                if not near:
                    continue
                k += 1
                seen.update(near)
                out.extend((idx.ids[x], 0.0, k) for x in near)
        return out[: self.n]

    def run(self, name: RouteName) -> list[Hit]:
        fn: Callable[[], list[Hit]] = getattr(self, name)
        return fn()

