"""Embedded default backend: LadybugDB (the maintained Kuzu fork), in-process, durable, Cypher.

LadybugDB's vector and full-text extensions are downloaded at run time, which an offline machine
cannot do, so search runs in Python over one user's facts: exact cosine on a cached matrix plus
BM25. The cache is per user and dropped on every commit for that user. One process owns a store
directory (LadybugDB takes a file lock); inside it, a lock serializes transactions.

Durability: an acknowledged commit survives a kill -9 at any instant and the store always reopens
(graph/embedded/recovery.py: the WAL is fsynced at COMMIT, and a WAL torn by a crash is replayed up
to its last whole record). Purges rewrite the store file so purged text is gone from disk
(graph/embedded/compact.py).
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from graph.bm25 import BM25
from graph.cypher.sandbox import run_user_cypher
from graph.edits import claimed_ids, id_taken
from graph.embedded import queries as Q
from graph.embedded.compact import build_copy, clear_purge_pending, mark_purge_pending, purge_pending, swap_in
from graph.embedded.recovery import open_database
from graph.models import Edit, Relation, Turn, as_utc
from graph.serialize import (FACT_PROPS, concept_row, edit_row, fact_row, row_concept, row_edit, row_fact,
                             row_relation, row_turn, session_key, turn_key, turn_row)
from graph.snapshot import ChangeSet, Snapshot, concept_path
from graph.store import ConcurrentModification, PurgeSet, StoreError, StoreLocked, Subgraph
from graph.vectors import top_k

if TYPE_CHECKING:
    import ladybug


def _blob(vec: list[float] | None) -> bytes | None:
    # float32 bytes: passing 384-float lists as query parameters costs ~4 ms per fact in LadybugDB.
    return None if vec is None else np.asarray(vec, dtype="<f4").tobytes()


_CONCEPT_COLS = ("concept_id", "user_id", "name", "description", "created_at", "retired_at")


def _iso(row: Any) -> Any:
    """Datetimes as naive-UTC ISO strings; the queries CAST them to TIMESTAMP."""
    if isinstance(row, dict):
        return {k: (as_utc(v).replace(tzinfo=None).isoformat() if isinstance(v, datetime) else v) for k, v in row.items()}
    return row


@dataclass
class _UserCache:
    """What retrieval reads for one user, rebuilt after each commit of that user."""

    ids: list[str]
    matrix: np.ndarray | None  # normalized rows for the facts that have embeddings
    emb_ids: list[str]
    bm25: BM25
    concepts: dict[str, Any]
    parent: dict[str, str]
    fact_concept: dict[str, str]
    relations: dict[str, list[Relation]]  # fact_id -> relations touching it


class EmbeddedStore:
    name = "embedded"

    def __init__(self, path: str | Path, checkpoint_threshold: int | None = None):
        """``checkpoint_threshold``: WAL bytes that trigger an automatic checkpoint (engine default
        if None; the crash tests set it low so kills land inside checkpoints too)."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db_options = {} if checkpoint_threshold is None else {"checkpoint_threshold": checkpoint_threshold}
        self._lock = threading.RLock()
        self._index: dict[str, _UserCache] = {}
        # version_token: this process is the store's only writer, so a per-user count of the writes it
        # made (with a per-open nonce) changes exactly when the user's data does, without a query.
        self._nonce = uuid.uuid4().hex[:12]
        self._writes: dict[str, int] = {}
        # told (user, ChangeSet, token) after each commit, (user, None, token) after a purge or replace:
        # the route index cache extends its index by the ChangeSet instead of rebuilding it
        self._listeners: list[Callable[[str, ChangeSet | None, str], None]] = []
        self.recovered_wal = False  # True once an open replayed a WAL torn by a crash (logged too)
        self._unscrubbed = False  # a recovered open not yet followed by a compaction (see _open)
        self._open()
        if purge_pending(self.path):  # a purge committed before a crash, its rewrite did not finish
            with self._lock:
                self._compact()

    def _open(self) -> None:
        import ladybug  # imported here so the Neo4j-only deployments never load it

        try:
            self._db, recovered = open_database(self.path, **self._db_options)
        except RuntimeError as e:  # LadybugDB's file lock: one process owns a store directory
            m = re.search(r"Could not set lock.*?held by PID (\d+)|(Could not set lock)", str(e))
            if not m:
                raise
            raise StoreLocked(str(self.path), int(m.group(1)) if m.group(1) else None) from e
        self.recovered_wal |= recovered
        # a recovered open may leave the bytes of a write that never committed in the files: the
        # next purge rewrites the store even if it deletes nothing
        self._unscrubbed |= recovered
        self._conn = ladybug.Connection(self._db)

    def _begin_purge(self) -> bool:
        """Mark a purge as pending before it deletes anything: a crash after the delete commits
        still gets the rewrite on the next open. Returns whether one was already pending."""
        was_pending = purge_pending(self.path)
        mark_purge_pending(self.path)
        return was_pending

    def _finish_purge(self, removed: int, was_pending: bool) -> None:
        if removed or was_pending or self._unscrubbed:
            self._compact()
            self._unscrubbed = False
        else:  # nothing was deleted: no bytes to scrub, skip the O(store) rewrite
            clear_purge_pending(self.path)

    def _compact(self) -> None:
        """Rewrite the store so no deleted row's bytes remain on disk (caller holds the lock)."""
        build_copy(self._conn, self.path, Q.SCHEMA)
        self._q(Q.CHECKPOINT)  # the old file's WAL must be empty before the swap
        self._conn.close()
        self._db.close()
        try:
            swap_in(self.path)
            clear_purge_pending(self.path)
        finally:
            self._open()

    # -- plumbing --
    def _q(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        res = self._conn.execute(query, params or {})
        return cast(list[list[Any]], _one(res).get_all()) if res is not None else []

    def _rows(self, query: str, rows: list[Any], user_id: str) -> None:
        if rows:
            self._q(query, {"rows": [_iso(r) for r in rows], "u": user_id})

    def _rollback(self) -> None:
        # LadybugDB already aborts the transaction when a statement fails inside it.
        try:
            self._q("ROLLBACK")
        except RuntimeError:
            pass

    def setup(self) -> None:
        with self._lock:
            for stmt in Q.SCHEMA:
                self._q(stmt)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            self._db.close()

    # -- snapshot / commit --
    def load_snapshot(self, user_id: str) -> Snapshot:
        return self._snapshot(user_id, edits=True)

    def index_snapshot(self, user_id: str) -> Snapshot:
        """``load_snapshot`` without the edit log (empty ``edits``): what the route index is built from
        (retrieval/seeds/index.py), where reading and parsing the log was a quarter of the snapshot."""
        return self._snapshot(user_id, edits=False)

    def _snapshot(self, user_id: str, edits: bool) -> Snapshot:
        with self._lock:
            p = {"u": user_id}
            s = Snapshot(user_id=user_id)
            v = self._q(Q.GET_VERSION, p)
            s.version = v[0][0] if v else 0
            for r in self._q(Q.LOAD_CONCEPTS, p):
                c = row_concept(dict(zip(_CONCEPT_COLS, r)))
                s.concepts[c.concept_id] = c
            s.parent = {c: par for par, c in self._q(Q.LOAD_PARENTS, p)}
            s.fact_concept = {f: c for c, f in self._q(Q.LOAD_CONTAINS, p)}
            for r in self._q(Q.LOAD_FACTS, p):
                f = row_fact(dict(zip(FACT_PROPS, r)))
                s.facts[f.fact_id] = f
            for rel in self._relations(Q.LOAD_SUPERSEDES, Q.LOAD_CONFLICTS, p):
                s.relations[rel.key] = rel
            for r in self._q(Q.LOAD_EDITS, p) if edits else ():
                e = self._edit(r)
                s.edits[e.edit_id] = e
            s.turn_ids = {r[0] for r in self._q(Q.LOAD_TURN_IDS, p)}
            s.sessions = {sid: h for sid, h in self._q(Q.LOAD_SESSIONS, p)}
            return s

    @staticmethod
    def _edit(r: list[Any]) -> Edit:
        return row_edit(dict(zip(("edit_id", "user_id", "seq", "session_id", "op", "at", "payload", "undone_at"), r)))

    def _relations(self, sup_q: str, conf_q: str, params: dict[str, Any]) -> list[Relation]:
        out = [row_relation({"type": "SUPERSEDES", "src": a, "dst": b, "at": at, "reason": why})
               for a, b, at, why in self._q(sup_q, params)]
        out += [row_relation({"type": "CONFLICTS_WITH", "src": a, "dst": b, "at": at, "reason": why, "resolved_at": res})
                for a, b, at, why, res in self._q(conf_q, params)]
        return out

    @contextmanager
    def _versioned_tx(self, u: str, expected_version: int, what: str) -> Iterator[int | None]:
        """One write transaction for user ``u`` that first checks the user's version; yields the stored
        version (None if the user has no meta node yet), commits on success, rolls back on any error."""
        with self._lock:
            self._q("BEGIN TRANSACTION")
            try:
                v = self._q(Q.GET_VERSION, {"u": u})
                current = v[0][0] if v else 0
                if current != expected_version:
                    raise ConcurrentModification(
                        f"user {u!r} is at version {current}, {what} was built on {expected_version}")
                yield v[0][0] if v else None
                self._q("COMMIT")
            except BaseException:
                self._rollback()
                raise
            finally:
                self._index.pop(u, None)
                self._writes[u] = self._writes.get(u, 0) + 1

    def commit(self, changes: ChangeSet) -> None:
        with self._lock:  # held until the listeners are told, so the token they get is this commit's
            with self._versioned_tx(changes.user_id, changes.expected_version, "batch"):
                self._write(changes)
                self._q(Q.SET_VERSION, {"u": changes.user_id, "v": changes.new_version})
            self._tell(changes.user_id, changes)

    def add_commit_listener(self, fn: Callable[[str, ChangeSet | None, str], None]) -> None:
        """``fn(user_id, changes, token)`` after each commit, in the committing thread with the store's
        lock held (it must be quick); ``changes`` is None after a purge or replace of the user's data."""
        with self._lock:
            self._listeners.append(fn)

    def remove_commit_listener(self, fn: Callable[[str, ChangeSet | None, str], None]) -> None:
        with self._lock:
            if fn in self._listeners:
                self._listeners.remove(fn)

    def _tell(self, user_id: str, changes: ChangeSet | None) -> None:
        token = self.version_token(user_id)
        for fn in list(self._listeners):
            fn(user_id, changes, token)

    def _write(self, cs: ChangeSet) -> None:
        u = cs.user_id
        for label, ids in claimed_ids(cs).items():  # MERGE/CREATE below would take or clash with them
            if ids and self._q(Q.FOREIGN_IDS[label], {"ids": ids, "u": u})[0][0]:
                raise id_taken(label)
        self._rows(Q.CREATE_TURNS, [turn_row(t) for t in cs.turns_create], u)
        self._rows(Q.UPSERT_SESSIONS, [{"key": session_key(u, s), "session_id": s, "content_hash": h}
                                       for s, h in cs.sessions_upsert.items()], u)
        self._rows(Q.UPSERT_CONCEPTS, [concept_row(c) for c in cs.concepts_upsert], u)
        vectors = {f.fact_id: _blob(cs.embeddings.get(f.fact_id)) for f in cs.facts_create}
        self._rows(Q.CREATE_FACTS, [{**fact_row(f), "embedding": vectors[f.fact_id]}
                                    for f in cs.facts_create if vectors[f.fact_id] is not None], u)
        self._rows(Q.CREATE_FACTS_BARE, [fact_row(f) for f in cs.facts_create if vectors[f.fact_id] is None], u)
        self._rows(Q.UPDATE_FACTS, [fact_row(f) for f in cs.facts_update], u)
        self._rows(Q.REMOVE_PARENT, [{"p": p, "c": c} for p, c in cs.parent_remove], u)
        self._rows(Q.REMOVE_CONTAINS, [{"c": c, "f": f} for c, f in cs.contains_remove], u)
        rm = [{"src": r.src, "dst": r.dst} for r in cs.relations_remove if r.type == "SUPERSEDES"]
        self._rows(Q.REMOVE_SUPERSEDES, rm, u)
        rm = [{"src": r.src, "dst": r.dst} for r in cs.relations_remove if r.type == "CONFLICTS_WITH"]
        self._rows(Q.REMOVE_CONFLICTS, rm, u)
        self._rows(Q.ADD_SUPERSEDES, [{"src": r.src, "dst": r.dst, "at": r.at, "reason": r.reason}
                                      for r in cs.relations_add if r.type == "SUPERSEDES"], u)
        self._rows(Q.ADD_CONFLICTS, [{"src": r.src, "dst": r.dst, "at": r.at, "reason": r.reason,
                                      "resolved_at": r.resolved_at} for r in cs.relations_add if r.type == "CONFLICTS_WITH"], u)
        self._rows(Q.UPDATE_CONFLICTS, [{"src": r.src, "dst": r.dst, "reason": r.reason, "resolved_at": r.resolved_at}
                                        for r in cs.relations_update if r.type == "CONFLICTS_WITH"], u)
        self._rows(Q.ADD_PARENT, [{"p": p, "c": c} for p, c in cs.parent_add], u)
        self._rows(Q.ADD_CONTAINS, [{"c": c, "f": f} for c, f in cs.contains_add], u)
        self._rows(Q.ADD_DERIVED, [{"f": f, "t": turn_key(u, t)} for f, t in cs.derived_from_add], u)
        self._rows(Q.UPSERT_EDITS, [edit_row(e) for e in cs.edits_upsert], u)
        self._rows(Q.DELETE_FACTS, list(cs.facts_delete), u)
        self._rows(Q.DELETE_CONCEPTS, list(cs.concepts_delete), u)

    # -- retrieval reads --
    remote_version_token = False  # an in-process counter: nothing to overlap

    def version_token(self, user_id: str) -> str:
        return f"{self._nonce}:{self._writes.get(user_id, 0)}"

    def _search_index(self, user_id: str) -> _UserCache:
        idx = self._index.get(user_id)
        if idx is None:
            with self._lock:
                rows = self._q(Q.SEARCH_ROWS, {"u": user_id})
                concepts = {c.concept_id: c for c in (row_concept(dict(zip(_CONCEPT_COLS, r)))
                                                      for r in self._q(Q.LOAD_CONCEPTS, {"u": user_id}))}
                parent = {c: par for par, c in self._q(Q.LOAD_PARENTS, {"u": user_id})}
                fact_concept = {f: c for c, f in self._q(Q.LOAD_CONTAINS, {"u": user_id})}
                relations: dict[str, list[Relation]] = {}
                for rel in self._relations(Q.LOAD_SUPERSEDES, Q.LOAD_CONFLICTS, {"u": user_id}):
                    relations.setdefault(rel.src, []).append(rel)
                    relations.setdefault(rel.dst, []).append(rel)
            ids = [r[0] for r in rows]
            emb = [(r[0], np.frombuffer(r[2], dtype="<f4")) for r in rows if r[2]]
            matrix = None
            if emb:
                matrix = np.stack([e for _, e in emb]).astype(np.float32)
                matrix /= np.linalg.norm(matrix, axis=1, keepdims=True) + 1e-12
            idx = _UserCache(ids=ids, matrix=matrix, emb_ids=[i for i, _ in emb], bm25=BM25([r[1] for r in rows]),
                             concepts=concepts, parent=parent, fact_concept=fact_concept, relations=relations)
            self._index[user_id] = idx
        return idx

    def vector_search(self, user_id: str, embedding: Sequence[float], k: int) -> list[tuple[str, float]]:
        idx = self._search_index(user_id)
        if idx.matrix is None or k <= 0:
            return []
        q = np.asarray(embedding, dtype=np.float32)
        q /= np.linalg.norm(q) + 1e-12
        return top_k(idx.matrix @ q, idx.emb_ids, k)

    def text_search(self, user_id: str, query: str, k: int) -> list[tuple[str, float]]:
        idx = self._search_index(user_id)
        return [(idx.ids[i], s) for i, s in idx.bm25.top(query, k)]

    def expand(self, user_id: str, fact_ids: Sequence[str], max_hops: int) -> set[str]:
        # Breadth-first over the per-user relation cache: a variable-length Cypher match costs
        # milliseconds per call in LadybugDB, and this process is the store's only writer, so the
        # cache (rebuilt after every commit) is exact.
        if not fact_ids:
            return set()
        cache = self._search_index(user_id)
        known = set(cache.ids)
        seen = {i for i in fact_ids if i in known}
        frontier = set(seen)
        for _ in range(int(max_hops)):
            nxt = {r.dst if r.src == f else r.src for f in frontier for r in cache.relations.get(f, ())} - seen
            if not nxt:
                break
            seen |= nxt
            frontier = nxt
        return seen

    def fetch(self, user_id: str, fact_ids: Sequence[str], hops: int = 0) -> Subgraph:
        # Relations and concept placement come from the per-user cache: LadybugDB relationship
        # scans cost milliseconds each, and this process is the store's only writer.
        ids = sorted(self.expand(user_id, fact_ids, hops)) if hops > 0 else list(fact_ids)
        cache = self._search_index(user_id)
        with self._lock:
            facts = {f.fact_id: f for f in (row_fact(dict(zip(FACT_PROPS, r)))
                                            for r in self._q(Q.FETCH_FACTS, {"u": user_id, "ids": ids}))}
        rels = {r.key: r for f in facts for r in cache.relations.get(f, ())}
        concept_of = {f: cache.fact_concept[f] for f in facts if f in cache.fact_concept}
        paths = {f: concept_path(cache.concepts, cache.parent, c) for f, c in concept_of.items()}
        return Subgraph(facts=facts, relations=list(rels.values()), concept_of=concept_of, concept_paths=paths)

    def turns(self, user_id: str, turn_ids: Sequence[str]) -> list[Turn]:
        with self._lock:
            rows = self._q(Q.FETCH_TURNS, {"u": user_id, "ids": list(turn_ids)})
        return [row_turn(dict(zip(("turn_id", "user_id", "session_id", "seq", "role", "text", "at"), r))) for r in rows]

    def turn_facts(self, user_id: str, turn_ids: Sequence[str]) -> list[str]:
        if not turn_ids:
            return []
        with self._lock:
            return [r[0] for r in self._q(Q.TURN_FACTS, {"u": user_id, "ids": list(turn_ids)})]

    def embeddings(self, user_id: str) -> dict[str, list[float]]:
        with self._lock:
            rows = self._q(Q.SEARCH_ROWS, {"u": user_id})
        return {r[0]: np.frombuffer(r[2], dtype="<f4").tolist() for r in rows if r[2]}

    def edits(self, user_id: str) -> list[Edit]:
        with self._lock:
            return [self._edit(r) for r in self._q(Q.LOAD_EDITS, {"u": user_id})]

    def users(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._q(Q.USERS)]

    def run_readonly_cypher(self, user_id: str, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        # Parsed against an allowlist and run in a per-user in-memory copy (graph/cypher/sandbox.py):
        # user-written Cypher never runs on this store.
        return run_user_cypher(self, user_id, query, params)

    def purge_user(self, user_id: str) -> int:
        return self._purge_then(user_id, None)

    def replace_user(self, changes: ChangeSet) -> int:
        return self._purge_then(changes.user_id, changes)

    def _purge_then(self, u: str, changes: ChangeSet | None) -> int:
        """Delete every node of ``u`` and, with ``changes``, write them, in one transaction; the old
        rows' bytes are then scrubbed (a purge marker first, so a crash still gets the rewrite)."""
        n = 0
        with self._lock:
            was_pending = self._begin_purge()
            self._q("BEGIN TRANSACTION")
            try:
                for label in Q.PURGE_LABELS:
                    n += self._q(Q.COUNT_NODES_USER.format(label=label), {"u": u})[0][0]
                    self._q(Q.DELETE_NODES_USER.format(label=label), {"u": u})
                if changes is not None:
                    self._write(changes)
                    self._q(Q.SET_VERSION, {"u": u, "v": changes.new_version})
                self._q("COMMIT")
            except BaseException:
                self._rollback()
                raise
            finally:
                self._index.pop(u, None)
                self._writes[u] = self._writes.get(u, 0) + 1
                self._tell(u, None)
            self._finish_purge(n, was_pending)
        return n

    def counts(self, user_id: str | None = None) -> dict[str, int]:
        out: dict[str, int] = {}
        with self._lock:
            for label in Q.PURGE_LABELS:
                q = Q.COUNT_NODES_USER if user_id else Q.COUNT_NODES_ALL
                out[label] = self._q(q.format(label=label), {"u": user_id} if user_id else {})[0][0]
            for label in Q.REL_LABELS:
                q = Q.COUNT_RELS_USER if user_id else Q.COUNT_RELS_ALL
                out[label] = self._q(q.format(label=label), {"u": user_id} if user_id else {})[0][0]
        return out

    def purge_items(self, purge: PurgeSet) -> dict[str, int]:
        u = purge.user_id
        groups = {"Fact": purge.fact_ids, "Edit": purge.edit_ids, "Concept": purge.concept_ids,
                  "Turn": purge.turn_ids, "Session": purge.session_ids}
        out: dict[str, int] = {}
        with self._lock:  # held from the marker to the end of the rewrite
            was_pending = self._begin_purge()
            try:
                self._purge_items_tx(purge, groups, out)
            finally:
                self._tell(u, None)
            self._finish_purge(sum(out.values()), was_pending)
        return out

    def _purge_items_tx(self, purge: PurgeSet, groups: dict[str, tuple[str, ...]], out: dict[str, int]) -> None:
        u = purge.user_id
        with self._versioned_tx(u, purge.expected_version, "purge") as current:
            for label, ids in groups.items():
                p = {"u": u, "ids": list(dict.fromkeys(ids))}
                out[label] = 0
                if p["ids"]:
                    prop = Q.PURGE_ID_PROPS[label]
                    out[label] = self._q(Q.COUNT_BY_IDS.format(label=label, prop=prop), p)[0][0]
                    self._q(Q.DELETE_BY_IDS.format(label=label, prop=prop), p)
            if current is not None:  # purging an unknown user must not create its meta node
                self._q(Q.SET_VERSION, {"u": u, "v": current + 1})


def _one(res: ladybug.QueryResult | list[ladybug.QueryResult]) -> ladybug.QueryResult:
    """The result of one statement (``execute`` returns a list only for several statements)."""
    if isinstance(res, list):
        raise StoreError(f"expected one statement's result, got {len(res)}")
    return res
