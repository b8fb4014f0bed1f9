"""Fusing the routes' ranked hits into seeds: weighted reciprocal-rank sums (``Rrf``, kept so the
neighbour pass extends the first pass's instead of summing again), the holder factor and content prior
(``fuse_routes``), and the redundancy discount over source turns and sessions (``diversify``).
Split out of retrieval/retrieve.py, which runs the routes and the traversal."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Protocol, TypeVar

from graph.models import Fact
from retrieval.evidence import SeedHit
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
