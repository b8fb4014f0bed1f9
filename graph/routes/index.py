"""The per-user route index: what every seed route reads, built once per stored version.

Built from the user's snapshot and turns (any backend: only protocol reads), so the routes are the
same code for every store. Vectors come from the caller's embedder and are memoised by text, so a
new version embeds only its new facts and turns.

The *retrieval vector* of a fact encodes its holder with the statement ("Caroline: ...",
"assistant: ..."): a request naming a person lands near that person's facts. The vector stored with
the fact (its *identity* vector, used for duplicate detection and adjudication) stays bare, because
the name pulls one speaker's facts together (docs/design-notes.md §14).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, TypeVar

import numpy as np

from graph.bm25 import BM25, tokenize
from graph.models import Fact, Relation, as_utc
from graph.routes.clusters import centroids, leader_kmeans
from graph.rules import EVIDENCE_HOLDERS, standing_instruction
from graph.snapshot import Snapshot
from graph.store import GraphStore

Embed = Callable[[Sequence[str]], np.ndarray]
T = TypeVar("T")
_CAP = re.compile(r"\b[A-Z][a-zA-Z'\-]{2,}\b")
# Capitalised words that name nobody: sentence openers, pronouns, days, months.
_NOT_ENTITY = frozenset(
    "the this that these those there then when what where which who why how yes yeah wow hey thanks thank "
    "my our your his her their its and but for with from into about after before also just really very "
    "i'm i've i'd i'll it's that's she's he's they're we're you're can't don't didn't won't isn't wasn't "
    "user assistant monday tuesday wednesday thursday friday saturday sunday january february march april "
    "may june july august september october november december today tomorrow yesterday last next "
    "shared image photo picture".split())


def retrieval_text(f: Fact) -> str:
    """The statement as the retrieval vector reads it: with its holder unless it already opens with it."""
    if f.holder in ("", "user") or f.statement.startswith(f"{f.holder}:"):
        return f.statement
    return f"{f.holder}: {f.statement}"


def entities_of(text: str) -> set[str]:
    """Lower-cased capitalised words that plausibly name a person, place or thing.

    >>> sorted(entities_of("Caroline: I went to Sweden with Melanie. The trip was fun"))
    ['caroline', 'melanie', 'sweden']
    """
    return {w.lower() for w in _CAP.findall(text) if w.lower() not in _NOT_ENTITY}


# "sum": summed IDF of the distinct content words (how much a line says; starves terse, specific
# lines: "Is vegetarian" sums less than "Works night shifts at the hospital"); "max": the IDF of the
# rarest content word (how specific its most specific word is: "vegetarian" beats "fun").
InformationMeasure = Literal["sum", "max"]


def information_of(f: Fact, idf: dict[str, float], measure: InformationMeasure = "sum") -> float:
    """IDF of the statement's distinct content words, summed or the largest (``measure``), without
    its holder's name (a word unseen by ``idf`` counts as the rarest seen)."""
    top = max(idf.values(), default=1.0)
    holder = set(tokenize(f.holder)) if f.holder not in ("", "user") else set()
    vals = [idf.get(w, top) for w in set(tokenize(f.statement)) - holder]
    return float(sum(vals) if measure == "sum" else max(vals, default=0.0))


def fact_time(f: Fact) -> datetime | None:
    t = f.valid_from or f.observed_at or f.recorded_at
    return as_utc(t).replace(tzinfo=None) if t else None


@dataclass
class RouteIndex:
    user_id: str
    token: str
    facts: dict[str, Fact]
    ids: list[str]  # row order of every per-fact array below
    fmat: np.ndarray | None  # normalised retrieval vectors, one row per id
    fbm25: BM25
    holder: list[str]
    turn_ids: list[str]
    tmat: np.ndarray | None
    tbm25: BM25
    turn_facts: dict[str, list[int]]  # turn id -> rows of the facts that cite it
    turn_rows: list[list[int]]  # per turn_ids entry: rows of the facts that cite it
    entity_rows: dict[str, list[int]]  # entity -> rows of facts mentioning it
    times: np.ndarray  # seconds since epoch per row (nan when unknown)
    concept_rows: dict[str, list[int]]  # concept id -> rows
    concept_ids: list[str]
    cmat: np.ndarray | None  # normalised concept centroids, one row per concept_ids entry
    latest: datetime | None  # latest session date: "last week" is resolved against it
    row: dict[str, int] = field(default_factory=dict)
    # The snapshot's relations and concept placement, so traversal and state derivation read the same
    # version the seeds came from, without a store round trip (graph/retrieval.py: index_subgraph).
    relations_of: dict[str, list[Relation]] = field(default_factory=dict)
    concept_of: dict[str, str] = field(default_factory=dict)
    concept_paths: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Per turn_ids entry: the speaker role and a recency key (later turns sort higher), so a request
    # that refers back ("the situation we discussed") can be resolved to the latest turn (context.py).
    turn_role: list[str] = field(default_factory=list)
    turn_recency: list[tuple[float, int]] = field(default_factory=list)
    # rows of a person's standing instructions ("Always … when I ask about …"): the instruction route
    instruction_rows: list[int] = field(default_factory=list)
    # Per turn_ids entry: (session id, position in it), None when unknown; and its inverse. The
    # neighbour route reads a seed turn's surroundings from them.
    turn_place: list[tuple[str, int] | None] = field(default_factory=list)
    turn_at: dict[tuple[str, int], int] = field(default_factory=dict)
    turn_index: dict[str, int] = field(default_factory=dict)  # turn id -> index into turn_ids
    # Per row, computed on first use (only a config with ``min_information`` reads it): see information.
    _information: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def information(self, measure: InformationMeasure = "sum") -> np.ndarray:
        """Per row: how much the statement says (``information_of``), its holder's name left out, over
        the user's median ("It was so fun!" says little however close its vector lands). Computed once
        per index and measure; a concurrent first use computes it twice, harmlessly."""
        got = self._information.get(measure)
        if got is None:
            got = np.asarray([information_of(self.facts[i], self.fbm25.idf, measure) for i in self.ids],
                             dtype=np.float64)
            if len(got):  # as a share of this user's median fact: IDF scales with how many facts there are
                got /= max(float(np.median(got)), 1e-9)
            self._information[measure] = got
        return got


def _norm(m: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.asarray(m, dtype=np.float32)
    out = out / (np.linalg.norm(out, axis=1, keepdims=True) + 1e-12)
    return out


class _Memo:
    """Text -> vector, bounded (least recently used goes first)."""

    def __init__(self, cap: int = 50_000):
        self.cap, self.d = cap, OrderedDict[str, np.ndarray]()

    def embed(self, embed: Embed, texts: Sequence[str]) -> np.ndarray | None:
        if not texts:
            return None
        todo = list(dict.fromkeys(t for t in texts if t not in self.d))
        for i in range(0, len(todo), 256):
            chunk = todo[i:i + 256]
            for t, v in zip(chunk, embed(chunk)):
                self.d[t] = np.asarray(v, dtype=np.float32)
        while len(self.d) > self.cap:
            self.d.popitem(last=False)
        return _norm(np.stack([self.d[t] for t in texts]))

    def keep(self, texts: set[str]) -> None:
        for t in [t for t in self.d if t not in texts]:
            del self.d[t]


def build_index(snap: Snapshot, turns: Sequence[tuple[str, str, str]], token: str, embed: Embed | None,
                memo: _Memo | None = None, turn_when: Mapping[str, tuple[datetime | None, int]] | None = None,
                turn_session: Mapping[str, str] | None = None) -> RouteIndex:
    """``turns`` = (turn_id, role, text) of the user's stored turns; ``turn_when`` = turn_id -> (said at,
    position in its session), for the recency order of turns; ``turn_session`` = turn_id -> session id
    (with ``turn_when``, where each turn sits: the neighbour route)."""
    memo = memo or _Memo()
    ids = sorted(snap.facts)
    facts = dict(snap.facts)
    rtexts = [retrieval_text(facts[i]) for i in ids]
    row = {f: n for n, f in enumerate(ids)}
    turn_facts: dict[str, list[int]] = {}
    entity_rows: dict[str, list[int]] = {}
    for n, i in enumerate(ids):
        for t in facts[i].source_turn_ids:
            turn_facts.setdefault(t, []).append(n)
        for e in entities_of(rtexts[n]) | ({facts[i].holder.lower()} if facts[i].holder not in ("", "user") else set()):
            entity_rows.setdefault(e, []).append(n)
    turns = [t for t in turns if t[0] in turn_facts]  # a turn without facts can map to nothing
    ttexts = [f"{role}: {text}" for _, role, text in turns]
    fmat = memo.embed(embed, rtexts) if embed else None
    tmat = memo.embed(embed, ttexts) if embed else None
    memo.keep(set(rtexts) | set(ttexts))  # a purged fact's or turn's text does not outlive it here
    when = [fact_time(facts[i]) for i in ids]
    times = np.asarray([w.timestamp() if w is not None else np.nan for w in when], dtype=np.float64)
    # Concepts for the concept route: induced from this user's own fact vectors (clusters), so the
    # route lands in groups the data formed, not in a fixed topic list.
    concept_rows: dict[str, list[int]] = {}
    cmat = None
    if fmat is not None and len(ids):
        labels = leader_kmeans(fmat)
        cmat = centroids(fmat, labels)
        for n, lab in enumerate(labels):
            concept_rows.setdefault(f"induced:{lab}", []).append(n)
    else:
        for f, c in snap.fact_concept.items():
            if f in row:
                concept_rows.setdefault(c, []).append(row[f])
    concept_ids = sorted(concept_rows, key=lambda c: int(c.split(":")[1]) if c.startswith("induced:") else 0)
    obs = [as_utc(f.observed_at).replace(tzinfo=None) for f in facts.values() if f.observed_at]
    relations_of: dict[str, list[Relation]] = {}
    for rel in snap.relations.values():
        relations_of.setdefault(rel.src, []).append(rel)
        relations_of.setdefault(rel.dst, []).append(rel)
    paths = {c: snap.concept_path(c) for c in set(snap.fact_concept.values())}
    fbm25 = BM25(rtexts)
    place = [(turn_session[t[0]], turn_when[t[0]][1]) if turn_session and turn_when and t[0] in turn_session
             and t[0] in turn_when else None for t in turns]
    return RouteIndex(user_id=snap.user_id, token=token, facts=facts, ids=ids, fmat=fmat, fbm25=fbm25,
                      holder=[facts[i].holder for i in ids], turn_ids=[t[0] for t in turns], tmat=tmat,
                      tbm25=BM25(ttexts), turn_facts=turn_facts,
                      turn_rows=[turn_facts[t[0]] for t in turns], entity_rows=entity_rows, times=times,
                      concept_rows=concept_rows, concept_ids=concept_ids, cmat=cmat, latest=max(obs) if obs else None,
                      row=row, relations_of=relations_of, concept_of=dict(snap.fact_concept),
                      concept_paths={f: paths[c] for f, c in snap.fact_concept.items()},
                      turn_role=[t[1] for t in turns],
                      turn_recency=[_turn_recency(t[0], turn_facts[t[0]], ids, facts, turn_when) for t in turns],
                      instruction_rows=[n for n, i in enumerate(ids) if facts[i].holder not in EVIDENCE_HOLDERS
                                        and standing_instruction(facts[i].statement)],
                      turn_place=place, turn_at={p: n for n, p in enumerate(place) if p is not None},
                      turn_index={t[0]: n for n, t in enumerate(turns)})


def _turn_recency(turn_id: str, rows: list[int], ids: list[str], facts: dict[str, Fact],
                  turn_when: Mapping[str, tuple[datetime | None, int]] | None) -> tuple[float, int]:
    """(seconds, position): when the turn was said, else when its facts were stored (an undated session
    is ordered by ingest), then its position in the session."""
    at, seq = (turn_when or {}).get(turn_id, (None, 0))
    if at is None:
        said = [facts[ids[r]].observed_at for r in rows]
        stored = [facts[ids[r]].recorded_at for r in rows]
        stamps = [t for t in said if t is not None] or [t for t in stored if t is not None]
        at = min(stamps) if stamps else None
    return (as_utc(at).timestamp() if at is not None else float("-inf"), seq)


class RouteIndexCache:
    """One RouteIndex per user, rebuilt when the store's version token moves (LRU over users)."""

    def __init__(self, embed: Embed | None, max_users: int = 64):
        self.embed, self.max_users = embed, max_users
        self._memos: dict[str, _Memo] = {}  # per user, so each holds exactly that user's current texts
        self._d: OrderedDict[str, RouteIndex] = OrderedDict()
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None  # version reads in flight (see use)
        self._warmer: ThreadPoolExecutor | None = None  # background rebuilds (see warm)
        self._queued: dict[str, Future[None]] = {}  # user -> a rebuild not started yet
        self._building: dict[str, threading.Lock] = {}  # user -> held while that user's index is built

    def get(self, store: GraphStore, user_id: str, token: str | None = None) -> RouteIndex:
        """The user's index at ``token`` (read from the store when None): the cached one if it has
        that token, else rebuilt from a snapshot read after the token. A write landing in between is
        in the index under the older token; the token has moved, so the next request rebuilds (this
        relies on tokens never repeating, GraphStore.version_token)."""
        read_here = token is None
        token = store.version_token(user_id) if token is None else token
        hit = self._cached(user_id, token)
        if hit is not None:
            return hit
        with self._lock:
            building = self._building.setdefault(user_id, threading.Lock())
        # One build per user at a time (its memo is not shared between threads); other users' requests
        # are not held up by it, so a background rebuild of a large user stalls no one else.
        with building:
            if read_here:  # a build that waited here reads the version it builds at now, not an older one
                token = store.version_token(user_id)
            hit = self._cached(user_id, token)  # built meanwhile (by warm, or a concurrent request)
            if hit is not None:
                return hit
            with self._lock:
                memo = self._memos.setdefault(user_id, _Memo())
            snap = store.load_snapshot(user_id)
            stored = store.turns(user_id, sorted(snap.turn_ids)) if snap.turn_ids else []
            turns = [(t.turn_id, t.role, t.text) for t in stored]
            when = {t.turn_id: (t.at, t.seq) for t in stored}
            idx = build_index(snap, turns, token, self.embed, memo, when, {t.turn_id: t.session_id for t in stored})
            with self._lock:
                self._d[user_id] = idx
                while len(self._d) > self.max_users:
                    gone, _ = self._d.popitem(last=False)
                    self._memos.pop(gone, None)
                    lk = self._building.get(gone)
                    if lk is not None and not lk.locked():
                        del self._building[gone]  # a build of it in flight keeps its lock object
        return idx

    def _cached(self, user_id: str, token: str) -> RouteIndex | None:
        with self._lock:
            hit = self._d.get(user_id)
            if hit is not None and hit.token == token:
                self._d.move_to_end(user_id)
                return hit
        return None

    def use(self, store: GraphStore, user_id: str, fn: Callable[[RouteIndex], T]) -> T:
        """``fn`` over the user's current index, as ``fn(self.get(store, user_id))`` returns it.

        Where the version read is a server round trip (a store with ``remote_version_token``, Neo4j),
        ``fn`` runs on the cached index while that read is in flight, and its result is kept only if
        the read — issued after this call began — returns the cached index's own token; otherwise
        the index is rebuilt at the token read and ``fn`` runs again. A write committed by any
        process before the call is therefore always seen, and the round trip costs no extra time
        when ``fn`` takes longer than it (the seed routes do). ``fn`` must only read the index.
        """
        with self._lock:
            hit = self._d.get(user_id)
        if hit is None or not store.remote_version_token:
            return fn(self.get(store, user_id))
        pending = self._version_read(store, user_id)
        try:
            out = fn(hit)
        except Exception:
            if pending.result() == hit.token:
                raise
            return fn(self.get(store, user_id, pending.result()))  # it failed on a stale index
        token = pending.result()
        if token != hit.token:
            return fn(self.get(store, user_id, token))
        with self._lock:
            if user_id in self._d:
                self._d.move_to_end(user_id)
        return out

    def warm(self, store: GraphStore, user_id: str) -> Future[None]:
        """Rebuild the user's index in the background (one worker), so the first request after a commit
        finds it built: building embeds the new facts' retrieval texts and turns and re-clusters every
        fact, which cost the first BEAM request after ingestion about 7 s on 2 cores
        (bench/first_request.py). A request that comes during the build waits for it (``get`` builds
        under a per-user lock and re-checks the cache), never builds twice. Rebuilds queued for one user
        collapse into one, which reads the latest version."""
        with self._lock:
            queued = self._queued.get(user_id)
            if queued is not None:
                return queued
            if self._warmer is None:
                self._warmer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evomem-warm")
            fut = self._warmer.submit(self._warm_one, store, user_id)
            self._queued[user_id] = fut
            return fut

    def _warm_one(self, store: GraphStore, user_id: str) -> None:
        with self._lock:
            self._queued.pop(user_id, None)  # from here on a newer commit queues a rebuild of its own
        self.get(store, user_id)

    def _version_read(self, store: GraphStore, user_id: str) -> Future[str]:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="evomem-version")
            pool = self._pool
        return pool.submit(store.version_token, user_id)

    def close(self) -> None:
        """Stop the version-read and warm threads (a later ``use`` or ``warm`` starts them again); a
        rebuild in progress finishes, queued ones are dropped, so none reads a store closed after this."""
        with self._lock:
            pool, self._pool = self._pool, None
            warmer, self._warmer = self._warmer, None
            self._queued.clear()
        if warmer is not None:
            warmer.shutdown(wait=True, cancel_futures=True)
        if pool is not None:
            pool.shutdown(wait=True)
