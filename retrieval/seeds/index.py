"""The per-user route index: what every seed route reads, one per stored version.

Built from the user's snapshot and turns (any backend: only protocol reads), so the routes are the
same code for every store. Vectors come from the caller's embedder and are memoised by text, so a
new version embeds only its new facts and turns.

After a commit the index is not rebuilt: a store that reports its commits (``add_commit_listener``,
the embedded store) hands each ChangeSet to ``RouteIndexCache.note``, and the next version is the
cached one extended by those ChangeSets (retrieval/seeds/delta.py: new facts and turns appended to the
vector matrices and BM25 postings, changed states, relations and concepts updated), at a cost that
follows the session, not the user's history. A cold cache, a store that does not report (Neo4j,
another process's write), a purge or an undo that deletes facts is a full rebuild, as before.

The *retrieval vector* of a fact encodes its holder with the statement ("Caroline: ...",
"assistant: ..."): a request naming a person lands near that person's facts. The vector stored with
the fact (its *identity* vector, used for duplicate detection and adjudication) stays bare, because
the name pulls one speaker's facts together (docs/design-notes.md §14).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import TypeVar

import numpy as np

from graph.models import Relation, as_utc
from retrieval.seeds.concepts import live_concepts
from retrieval.seeds.delta import extend_index, extensible
from retrieval.seeds.model import Embed, Memo, Order, RouteIndex, TurnKey, turn_recency
from retrieval.seeds.model import ConceptPaths, fact_time, retrieval_text
from retrieval.seeds.model import InformationMeasure as InformationMeasure
from retrieval.seeds.model import entities_of as entities_of
from retrieval.seeds.model import information_of as information_of
from retrieval.seeds.textindex import Grow, TextIndex
from graph.rules import EVIDENCE_HOLDERS
from retrieval.seeds.instruction import standing_instruction
from graph.snapshot import ChangeSet, Snapshot
from graph.store import GraphStore

T = TypeVar("T")
__all__ = ["InformationMeasure", "RouteIndex", "RouteIndexCache", "build_index", "entities_of", "information_of",
           "retrieval_text"]
# A pending ChangeSet list longer than this is dropped: that many commits unread means a rebuild is cheaper.
MAX_PENDING = 256


def build_index(snap: Snapshot | None, turns: Sequence[tuple[str, str, str]], token: str, embed: Embed | None,
                memo: Memo | None = None, turn_when: Mapping[str, tuple[datetime | None, int]] | None = None,
                turn_session: Mapping[str, str] | None = None, *, base: RouteIndex | None = None,
                changes: Sequence[ChangeSet] = (),
                fetch_turns: Callable[[Sequence[str]], Sequence[tuple[str, str, str, str, datetime | None, int]]]
                | None = None) -> RouteIndex:
    """``turns`` = (turn_id, role, text) of the user's stored turns; ``turn_when`` = turn_id -> (said at,
    position in its session), for the recency order of turns; ``turn_session`` = turn_id -> session id
    (with ``turn_when``, where each turn sits: the neighbour route).

    With ``base`` (an index ``extensible`` by ``changes``), the index at the last ChangeSet's version is
    ``base`` extended by them (retrieval/seeds/delta.py) and ``snap``/``turns`` are not read;
    ``fetch_turns`` reads stored turns that a new fact cites but no ChangeSet carries."""
    memo = memo or Memo()
    if base is not None:
        return extend_index(base, changes, token, embed, memo, fetch_turns)
    assert snap is not None
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
    keys = {t[0]: _turn_key(t[0], turn_when, turn_session) for t in turns}
    turns = sorted((t for t in turns if t[0] in turn_facts), key=lambda t: keys[t[0]])  # a turn without facts maps to nothing
    ttexts = [f"{role}: {text}" for _, role, text in turns]
    fmat = memo.embed(embed, rtexts) if embed else None
    tmat = memo.embed(embed, ttexts) if embed else None
    memo.keep(set(rtexts) | set(ttexts))  # a purged fact's or turn's text does not outlive it here
    when = [fact_time(facts[i]) for i in ids]
    times = np.asarray([w.timestamp() if w is not None else np.nan for w in when], dtype=np.float64)
    # Concepts for the concept route: the live tree ingestion keeps (retrieval/seeds/concepts.py), each
    # concept's direct members and their centroid; nothing is induced at read time.
    concept_rows, concept_ids, cmat, centres = live_concepts(fmat, snap.fact_concept, row, ids)
    obs = [as_utc(f.observed_at).replace(tzinfo=None) for f in facts.values() if f.observed_at]
    relations_of: dict[str, list[Relation]] = {}
    for rel in snap.relations.values():
        relations_of.setdefault(rel.src, []).append(rel)
        relations_of.setdefault(rel.dst, []).append(rel)
    concept_of, concepts, parent = dict(snap.fact_concept), dict(snap.concepts), dict(snap.parent)
    place = [(turn_session[t[0]], turn_when[t[0]][1]) if turn_session and turn_when and t[0] in turn_session
             and t[0] in turn_when else None for t in turns]
    grow = {"times": Grow(times)} | ({"f": Grow(fmat)} if fmat is not None else {}) | (
        {"t": Grow(tmat)} if tmat is not None else {})
    return RouteIndex(user_id=snap.user_id, token=token, facts=facts, ids=ids,
                      fmat=grow["f"].view() if fmat is not None else None, fbm25=TextIndex(rtexts),
                      holder=[facts[i].holder for i in ids], turn_ids=[t[0] for t in turns],
                      tmat=grow["t"].view() if tmat is not None else None,
                      tbm25=TextIndex(ttexts), turn_facts=turn_facts,
                      turn_rows=[turn_facts[t[0]] for t in turns], entity_rows=entity_rows,
                      times=grow["times"].view(), concept_rows=concept_rows, concept_ids=concept_ids, cmat=cmat,
                      latest=max(obs) if obs else None, row=row, relations_of=relations_of, concept_of=concept_of,
                      concept_paths=ConceptPaths(concept_of, concepts, parent),
                      turn_role=[t[1] for t in turns],
                      turn_recency=[turn_recency(t[0], turn_facts[t[0]], ids, facts, turn_when) for t in turns],
                      instruction_rows=[n for n, i in enumerate(ids) if facts[i].holder not in EVIDENCE_HOLDERS
                                        and standing_instruction(facts[i].statement)],
                      turn_place=place, turn_at={p: n for n, p in enumerate(place) if p is not None},
                      turn_index={t[0]: n for n, t in enumerate(turns)}, turn_key=[keys[t[0]] for t in turns],
                      turn_said=[(turn_when or {}).get(t[0], (None, 0))[0] for t in turns],
                      forder=Order(ids), torder=Order([keys[t[0]] for t in turns]),
                      version=snap.version, concepts=concepts, parent=parent, grow=grow, concept_centroids=centres)


def _turn_key(turn_id: str, turn_when: Mapping[str, tuple[datetime | None, int]] | None,
              turn_session: Mapping[str, str] | None) -> TurnKey:
    """Where a turn sits: (session id, position, turn id); the stores list turns in this order."""
    return ((turn_session or {}).get(turn_id, ""), (turn_when or {}).get(turn_id, (None, 0))[1], turn_id)


class RouteIndexCache:
    """One RouteIndex per user, brought to the store's version when its token moves (LRU over users):
    extended by the ChangeSets ``note`` was handed since (retrieval/seeds/delta.py), else rebuilt."""

    def __init__(self, embed: Embed | None, max_users: int = 64):
        self.embed, self.max_users = embed, max_users
        self._memos: dict[str, Memo] = {}  # per user, so each holds exactly that user's current texts
        self._d: OrderedDict[str, RouteIndex] = OrderedDict()
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None  # version reads in flight (see use)
        self._warmer: ThreadPoolExecutor | None = None  # background rebuilds (see warm)
        self._queued: dict[str, Future[None]] = {}  # user -> a rebuild not started yet
        self._building: dict[str, threading.Lock] = {}  # user -> held while that user's index is built
        # user -> (ChangeSet, the token it left) for each commit since the cached index, oldest first
        self._pending: dict[str, list[tuple[ChangeSet, str]]] = {}

    def note(self, user_id: str, changes: ChangeSet | None, token: str) -> None:
        """A store's commit listener (``add_commit_listener``): ``changes`` left the user at ``token``.
        None (a purge, a replace) drops what is cached for the user, so the next request rebuilds."""
        with self._lock:
            if changes is None:
                self._pending.pop(user_id, None)
                self._d.pop(user_id, None)
                return
            if user_id not in self._d and user_id not in self._building:
                return  # nothing cached to extend: the next request builds whole anyway
            got = self._pending.setdefault(user_id, [])
            got.append((changes, token))
            if len(got) > MAX_PENDING:
                del self._pending[user_id]

    def _chain(self, user_id: str, base: RouteIndex | None, token: str) -> list[ChangeSet] | None:
        """The ChangeSets that take ``base`` to ``token``, oldest first; None if they are not all known."""
        got = self._pending.get(user_id, [])
        ends = [n for n, (_, t) in enumerate(got) if t == token]
        if base is None or not ends:
            return None
        chain = [cs for cs, _ in got[: ends[-1] + 1] if cs.new_version > base.version]
        versions = [base.version] + [cs.new_version for cs in chain]
        if not chain or any(cs.expected_version != v for cs, v in zip(chain, versions)):
            return None
        return chain if extensible(base, chain) else None

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
                memo = self._memos.setdefault(user_id, Memo())
                base = self._d.get(user_id)
                chain = self._chain(user_id, base, token)
            if chain is not None:
                def fetch(ids: Sequence[str]) -> list[tuple[str, str, str, str, datetime | None, int]]:
                    return [(t.turn_id, t.role, t.text, t.session_id, t.at, t.seq) for t in store.turns(user_id, ids)]

                idx = build_index(None, [], token, self.embed, memo, base=base, changes=chain, fetch_turns=fetch)
            else:
                # without the edit log where the store can (the index reads none of it)
                snap = getattr(store, "index_snapshot", store.load_snapshot)(user_id)
                stored = store.turns(user_id, sorted(snap.turn_ids)) if snap.turn_ids else []
                turns = [(t.turn_id, t.role, t.text) for t in stored]
                when = {t.turn_id: (t.at, t.seq) for t in stored}
                idx = build_index(snap, turns, token, self.embed, memo, when, {t.turn_id: t.session_id for t in stored})
            with self._lock:
                self._d[user_id] = idx
                left = [p for p in self._pending.get(user_id, []) if p[0].new_version > idx.version]
                if left:
                    self._pending[user_id] = left
                else:
                    self._pending.pop(user_id, None)
                while len(self._d) > self.max_users:
                    gone, _ = self._d.popitem(last=False)
                    self._memos.pop(gone, None)
                    self._pending.pop(gone, None)
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
        """Bring the user's index to the latest version in the background (one worker), so the first
        request after a commit finds it ready: extended by the commit's ChangeSet where the store reported
        it (retrieval/seeds/delta.py), else rebuilt, which embeds the new texts (about 7 s for the first BEAM request after ingestion on 2 cores, bench/first_request.py). A
        request that comes during the build waits for it (``get`` builds under a per-user lock and
        re-checks the cache), never builds twice. Builds queued for one user collapse into one, which
        reads the latest version."""
        with self._lock:
            queued = self._queued.get(user_id)
            if queued is not None:
                return queued
            if self._warmer is None:
                self._warmer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evomem-warm")
            fut = self._warmer.submit(self._warm_one, store, user_id)
            self._queued[user_id] = fut
            return fut

    def warm_users(self, store: GraphStore, users: Sequence[str] | None = None) -> list[Future[None]]:
        """``warm`` each of ``users`` (default: the store's users), at most ``max_users`` of them (the LRU
        holds no more): a server calls it at start, so a user's first request finds the index built
        instead of building it (bench/retrieval_speed.py, "first query")."""
        todo = list(store.users() if users is None else users)[: self.max_users]
        return [self.warm(store, u) for u in todo]

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
