"""Fusing the routes' ranked hits into seeds: weighted reciprocal-rank sums (``Rrf``, kept so the
neighbour pass extends the first pass's instead of summing again), the holder factor and content prior
(``fuse_routes``), and the redundancy discount over source turns and sessions (``diversify``).
Split out of retrieval/retrieve.py, which runs the routes and the traversal."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Protocol, TypeVar

import numpy as np

from graph.models import Fact
from retrieval.evidence import SeedHit
from retrieval.seeds.model import RouteIndex
from retrieval.seeds.rank import DEFAULT_ROUTE_WEIGHTS

T = TypeVar("T")


class RetrievalConfig(Protocol):
    """What fusion reads of ``retrieval.retrieve.RetrievalConfig`` (a protocol, so this module does not
    import the one that imports it)."""

    k: int
    rrf_k: int
    route_weights: dict[str, float]
    turn_redundancy: float
    session_redundancy: float

    def holder_weight(self, holder: str | None) -> float: ...


def diversify(order: list[str], score: dict[str, float], k: int, turns_of: Mapping[str, Sequence[str]],
              session_of: Mapping[str, str | None], turn_factor: float, session_factor: float) -> list[str]:
    """The best ``k`` of ``order`` (best first) when each pick's score is multiplied by ``turn_factor``
    per earlier pick sharing a source turn and ``session_factor`` per earlier pick from its session.
    Lazy greedy: scores only fall, so a candidate whose re-scored value still beats the next stored
    score is the best. ``score`` is updated to the discounted values of the picks.

    >>> diversify(["a1", "a2", "b1"], {"a1": 1.0, "a2": 0.9, "b1": 0.8}, 2, {"a1": ["t1"], "a2": ["t1"], "b1": ["t2"]},
    ...           {}, 0.5, 1.0)
    ['a1', 'b1']
    """
    if turn_factor >= 1 and session_factor >= 1:
        return order[:k]
    turn_n: dict[str, int] = {}
    sess_n: dict[str, int] = {}
    heap = [(-score[f], n, f) for n, f in enumerate(order)]
    heapq.heapify(heap)
    out: list[str] = []
    while heap and len(out) < k:
        neg, n, f = heapq.heappop(heap)
        turns, sess = turns_of.get(f, ()), session_of.get(f)
        factor = turn_factor ** max((turn_n.get(t, 0) for t in turns), default=0)
        if sess is not None:
            factor *= session_factor ** sess_n.get(sess, 0)
        now = score[f] * factor
        if heap and now < -heap[0][0] and now < -neg:
            heapq.heappush(heap, (-now, n, f))  # re-queued with its discounted score
            continue
        score[f] = now
        out.append(f)
        for t in turns:
            turn_n[t] = turn_n.get(t, 0) + 1
        if sess is not None:
            sess_n[sess] = sess_n.get(sess, 0) + 1
    return out


class Rrf:
    """The weighted reciprocal-rank sums and per-route ranks of route hits, before the holder factor and
    the prior: the neighbour pass extends the first pass's (``fork`` + ``add``) instead of summing every
    route again; the sums are added in the same order, so the scores are the same to the bit."""

    def __init__(self, hits: Mapping[str, Sequence[tuple[str, float, int]]] | None = None,
                 cfg: RetrievalConfig | None = None) -> None:
        self.score: dict[str, float] = {}
        self.ranks: dict[str, dict[str, int]] = {}
        self._own: set[str] = set()  # facts whose rank dict is this one's (not shared with a fork's parent)
        if hits is not None and cfg is not None:
            for name, lst in hits.items():
                self.add(name, lst, cfg)

    def add(self, name: str, lst: Sequence[tuple[str, float, int]], cfg: RetrievalConfig) -> None:
        w = cfg.route_weights.get(name, DEFAULT_ROUTE_WEIGHTS.get(name, 1.0))
        rrf_k, score, ranks, own = cfg.rrf_k, self.score, self.ranks, self._own
        for fid, _, rank in lst:
            got = ranks.get(fid)
            if got is None:
                ranks[fid] = {name: rank}
                own.add(fid)
                score[fid] = 0.0 + w / (rrf_k + rank)
            elif name not in got:
                if fid not in own:  # copy on write: the parent's dict stays as it was
                    got = ranks[fid] = dict(got)
                    own.add(fid)
                got[name] = rank
                score[fid] += w / (rrf_k + rank)

    def fork(self) -> Rrf:
        new = Rrf()
        new.score, new.ranks = dict(self.score), dict(self.ranks)
        return new


class _Lazy(Mapping[str, T]):
    """``fn(key)`` for the keys ``has`` accepts, computed on lookup (diversify reads only its picks)."""

    def __init__(self, keys: Sequence[str], has: Callable[[str], bool], fn: Callable[[str], T]) -> None:
        self._keys, self._has, self._fn = keys, has, fn

    def __getitem__(self, key: str) -> T:
        if not self._has(key):
            raise KeyError(key)
        return self._fn(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._keys if self._has(k))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def fuse_routes(hits: dict[str, list[tuple[str, float, int]]], cfg: RetrievalConfig,
                holder_of: dict[str, str], facts: Mapping[str, Fact] | None = None,
                prior: Mapping[str, float] | None = None, rrf: Rrf | None = None) -> list[SeedHit]:
    """Weighted RRF over the routes' ranks, times the holder factor and ``prior`` (per fact, default
    1); ties by the fact-dense score. With ``facts``, redundancy across source turns and sessions is
    discounted (``diversify``). ``rrf``: the sums of exactly ``hits`` under ``cfg``, when the caller has them."""
    if rrf is None:
        rrf = Rrf(hits, cfg)
    ranks = rrf.ranks
    by_holder: dict[str | None, float] = {}  # the holder factor, once per holder
    prior = prior or {}
    score: dict[str, float] = {}
    for fid, s in rrf.score.items():
        h = holder_of.get(fid)
        hw = by_holder.get(h)
        if hw is None:
            hw = by_holder[h] = cfg.holder_weight(h)
        score[fid] = s * (hw * prior.get(fid, 1.0))
    dense = {fid: s for fid, s, _ in hits.get("fact_dense", [])}
    ranked = [f for _, _, f in sorted([(-s, -dense.get(f, -1.0), f) for f, s in score.items()])]
    if facts is None:
        best = ranked[: cfg.k]
    else:
        fs = facts
        # The context route hands a refer-back request its referent turns whole: their facts are the
        # situation and the stated dispositions, not one turn's repeats, so they are not discounted.
        best = diversify(ranked, score, cfg.k,
                         _Lazy(ranked, lambda f: f in fs and "context" not in ranks[f], lambda f: fs[f].source_turn_ids),
                         _Lazy(ranked, lambda f: f in fs, lambda f: fs[f].session_id), cfg.turn_redundancy,
                         cfg.session_redundancy)
    d_rank = {f: (r, s) for f, s, r in hits.get("fact_dense", [])}
    t_rank = {f: (r, s) for f, s, r in hits.get("fact_bm25", [])}
    none = (None, None)
    return [SeedHit(fact_id=f, score=score[f], routes=ranks[f], dense_rank=d_rank.get(f, none)[0],
                    dense_score=d_rank.get(f, none)[1], text_rank=t_rank.get(f, none)[0],
                    text_score=t_rank.get(f, none)[1]) for f in best]


class IndexFusion:
    """``fuse_routes`` over one request's routes on a route index, in numpy over the index's rows (issue 45:
    per-fact dicts made fusion a fifth of a request). Equal to ``fuse_routes`` to the bit: each route's
    reciprocal ranks are added in the order the routes were added, starting from 0.0, and products are
    taken in the same order; ties fall to the fact-dense score and then the fact id, whose order the
    index keeps per row (``forder``). Routes are added once (``add``) and fused as often as needed
    (``fuse``: the first pass, then with the feedback or neighbour route added)."""

    def __init__(self, index: RouteIndex) -> None:
        self.index = index
        # route -> fact id -> (rank, score) at its first occurrence (a later one does not count, as in Rrf)
        self.first: dict[str, dict[str, tuple[int, float]]] = {}
        self.rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # route -> (rows, ranks) of ``first``

    def add(self, name: str, hits: Sequence[tuple[str, float, int]]) -> None:
        first: dict[str, tuple[int, float]] = {}
        for fid, sc, rank in hits:
            if fid not in first:
                first[fid] = (rank, sc)
        row = self.index.row
        self.first[name] = first
        self.rows[name] = (np.fromiter((row[f] for f in first), dtype=np.int64, count=len(first)),
                           np.fromiter((r for r, _ in first.values()), dtype=np.int64, count=len(first)))

    def fuse(self, cfg: RetrievalConfig, k: int, prior: Callable[[Iterable[str]], Mapping[str, float]],
             holders: Callable[[np.ndarray], np.ndarray]) -> list[SeedHit]:
        """The best ``k`` seeds as ``fuse_routes(hits, cfg with k, holder_of, index.facts, prior(candidates))``
        gives them; ``holders(rows)`` is the holder factor per row (``RetrievalConfig.holder_weight``)."""
        idx = self.index
        n = len(idx.ids)
        acc, hit = np.zeros(n), np.zeros(n, dtype=bool)
        for name, (rows, ranks) in self.rows.items():
            w = cfg.route_weights.get(name, DEFAULT_ROUTE_WEIGHTS.get(name, 1.0))
            acc[rows] += w / (cfg.rrf_k + ranks)  # rows are distinct within a route
            hit[rows] = True
        cand = np.flatnonzero(hit)
        factor = holders(cand)
        pw = prior(idx.ids[r] for r in cand.tolist())
        if pw:
            factor = factor * np.asarray([pw.get(idx.ids[r], 1.0) for r in cand.tolist()])
        score = acc[cand] * factor
        dense = np.ones(n)  # -score for the fact-dense route's hits, 1 (after every cosine) for the rest
        got = self.first.get("fact_dense")
        if got:
            dense[self.rows["fact_dense"][0]] = [-sc for _, sc in got.values()]
        tie = idx.forder.values[cand] if idx.forder is not None else _id_order(idx.ids, cand)
        at = np.lexsort((tie, dense[cand], -score))
        ranked = [idx.ids[r] for r in cand[at].tolist()]
        scores = dict(zip(ranked, score[at].tolist()))
        facts, ctx = idx.facts, self.first.get("context", {})
        # as fuse_routes: a fact the context route handed on is not discounted for its turn
        best = diversify(ranked, scores, k,
                         _Lazy(ranked, lambda f: f in facts and f not in ctx, lambda f: facts[f].source_turn_ids),
                         _Lazy(ranked, lambda f: f in facts, lambda f: facts[f].session_id), cfg.turn_redundancy,
                         cfg.session_redundancy)
        d_rank, t_rank = self.first.get("fact_dense", {}), self.first.get("fact_bm25", {})
        none = (None, None)
        return [SeedHit(fact_id=f, score=scores[f], routes={r: v[f][0] for r, v in self.first.items() if f in v},
                        dense_rank=d_rank.get(f, none)[0], dense_score=d_rank.get(f, none)[1],
                        text_rank=t_rank.get(f, none)[0], text_score=t_rank.get(f, none)[1]) for f in best]


def _id_order(ids: Sequence[str], rows: np.ndarray) -> np.ndarray:
    """Per row in ``rows``, its fact id's position among them (an index without ``forder``)."""
    out = np.empty(len(rows))
    out[sorted(range(len(rows)), key=lambda i: ids[int(rows[i])])] = np.arange(len(rows))
    return out


def rrf_fuse(lists: Sequence[Sequence[tuple[str, float]]], k: int, rrf_k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: score = sum over lists of 1 / (rrf_k + rank), rank from 1.

    >>> rrf_fuse([[("a", .9), ("b", .5)], [("b", 3.0)]], k=2, rrf_k=60)[0][0]
    'b'
    """
    scores: dict[str, float] = {}
    for lst in lists:
        for rank, (fid, _) in enumerate(lst, start=1):
            scores[fid] = scores.get(fid, 0.0) + 1.0 / (rrf_k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
