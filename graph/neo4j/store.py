"""Neo4j backend (driver 6.x) for a real Neo4j 5 server or cluster.

Commits run in one write transaction that first locks the user's ``UserMeta`` node, so two
writers for one user serialize and the loser sees a moved version. The lock, the version check and the
new version are one statement; each kind of row follows as one UNWIND statement (graph/neo4j/rows.py);
a snapshot is one statement and the token read after it; ``setup`` warms the driver pool and the server's plans in the background. User Cypher never reaches the server: graph/cypher/sandbox.py runs it on a per-user in-memory copy.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from pydantic import ValidationError

from graph.cypher.sandbox import run_user_cypher
from graph.edits import EditRejected, check_invariants, id_taken
from graph.ids import validate_user_id
from graph.models import Edit, Turn
from graph.neo4j import queries as Q
from graph.neo4j.rows import CHUNK_ROWS, chunks, lucene_query, parse_times, unpack_embedding, write_rows
from graph.serialize import row_concept, row_edit, row_fact, row_relation, row_turn
from graph.snapshot import ChangeSet, Snapshot
from graph.store import ConcurrentModification, PurgeSet, StoreError, Subgraph, UnknownUser
from graph.vectors import top_k

if TYPE_CHECKING:
    import neo4j


@dataclass(frozen=True)
class UserHold:
    """A user's write lock held by ``Neo4jStore.hold_user``; ``purge()`` deletes the user under it."""

    version: int
    purge: Callable[[], int]


# The made-up user ``warm`` reads and writes (rolled back) to get the statements planned.
WARM_USER = "evomem.warm-up"
# How long a commit waits for warm() to finish planning the write statements (then it plans them itself).
WRITE_PLAN_WAIT_S = 60.0


class Neo4jStore:
    name = "neo4j"

    def __init__(self, uri: str, user: str | None = None, password: str | None = None, database: str | None = None,
                 embedding_dim: int = 384, cache_users: int = 256, chunk_rows: int = CHUNK_ROWS):
        import neo4j

        self._neo4j = neo4j
        # the driver accepts a None password (a server without auth ignores it); typed as its pair
        auth = cast("tuple[str, str] | None", (user, password) if user else None)
        # Schema-less reads of not-yet-used labels/properties make the server chatty; those are expected.
        self._driver = neo4j.GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF")
        self._db = database
        self.embedding_dim = embedding_dim
        self.cache_users = cache_users
        self._emb_cache: OrderedDict[str, tuple[tuple[int, str], list[str], np.ndarray]] = OrderedDict()
        self._cache_lock = threading.Lock()  # API requests run in a thread pool; OrderedDict moves are not atomic
        self.chunk_rows = chunk_rows
        # Set once warm() has planned the write statements (or none runs): a commit waits for it, so a
        # bulk load started right after setup() does not plan them a second time beside warm().
        self._writes_planned = threading.Event()
        self._writes_planned.set()

    # -- plumbing --
    def _read(self, query: str, **params: Any) -> list[dict[str, Any]]:
        records, _, _ = self._driver.execute_query(query, params, database_=self._db,
                                                   routing_=self._neo4j.RoutingControl.READ)
        return [r.data() for r in records]

    def _read_plain(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """Rows of a query that returns no nodes, values as the driver decoded them. ``Record.data()``
        walks every value and rebuilds a bytes value byte by byte: reading 500 float32 embeddings took
        21 s of CPU that way on a loaded box (an export, the first search of a user)."""
        records, _, _ = self._driver.execute_query(query, params, database_=self._db,
                                                   routing_=self._neo4j.RoutingControl.READ)
        return [dict(zip(r.keys(), r.values())) for r in records]

    def setup(self) -> None:
        # Fail fast on a server that is down: execute_query would retry for 30 s, logging each try.
        self._driver.verify_connectivity()
        for stmt in Q.schema(self.embedding_dim):
            self._driver.execute_query(stmt, database_=self._db)
        self._driver.execute_query("CALL db.awaitIndexes(300)", database_=self._db)
        self._writes_planned.clear()
        self._warming = threading.Thread(target=self.warm, name="evomem-neo4j-warm", daemon=True)
        self._warming.start()

    def warm(self) -> None:
        """Bring the server and the driver to speed, so the first request does not pay for it: two pooled
        connections opened, and every statement of the request and commit paths planned (the server
        caches plans per statement text, for every client). A made-up user's reads and a write rolled
        back; setup() runs it in the background, and a failure only leaves the first request slower."""
        u = WARM_USER
        try:
            with self._driver.session(database=self._db) as s1, self._driver.session(database=self._db) as s2:
                s2.run("RETURN 1").consume()  # a second connection while s1 is not yet back in the pool
                tx = s1.begin_transaction()
                try:  # the lock statement (its check fails: nothing written) and each write statement
                    tx.run(Q.LOCK, u=u, check=-1, new=0).consume()
                    for name, query in Q.WRITE_PHASES:
                        tx.run(query, batch={name: []}, u=u).consume()
                finally:
                    tx.rollback()
                    self._writes_planned.set()
            self.version_token(u)
            self.load_snapshot(u)
            self.turns(u, [u])
            self._embeddings(u)
        except Exception:  # closed meanwhile, server gone: the request path reports such things itself
            pass
        finally:
            self._writes_planned.set()

    def close(self) -> None:
        warming = getattr(self, "_warming", None)
        if warming is not None:
            warming.join(timeout=2.0)  # then close under it: its error is swallowed
        self._driver.close()

    # -- snapshot / commit --
    def load_snapshot(self, user_id: str) -> Snapshot:
        # Neo4j reads are read-committed: a commit landing between our queries would give a torn
        # snapshot. Every commit bumps the user's version and a purge deletes the meta node (a
        # re-created user gets a new epoch), so an equal (version, epoch) token before and after the
        # reads means none landed; otherwise read again. A concurrent reader can also see another
        # process's commit or purge half-applied with the token unchanged (read-committed), so a
        # snapshot that breaks the graph invariants every commit keeps is read again too; one that
        # stays broken with a stable token is stored data, returned for validation to report.
        torn: Snapshot | None = None
        broken = 0  # stable reads that broke the invariants: a half-applied commit clears in milliseconds
        with self._driver.session(database=self._db, default_access_mode=self._neo4j.READ_ACCESS) as s:
            for attempt in range(50):
                try:
                    # one transaction, two statements: the whole snapshot, then the token again
                    snap, token, after = s.execute_read(self._load, user_id)
                except (ValidationError, KeyError, TypeError):  # a node seen mid-delete: its properties gone
                    broken += 1
                    if broken >= 3:  # unreadable on every read: stored data, not a race
                        raise
                    torn = None
                    time.sleep(0.005)
                    continue
                if after != token:
                    torn = None
                    continue
                try:
                    check_invariants(snap)
                except EditRejected:
                    broken += 1
                    if broken >= 3:  # the same on every read: stored data, for validation to report
                        return snap
                    torn = snap
                    time.sleep(0.005)  # let the other transaction finish applying
                    continue
                return snap
        if torn is not None:
            return torn
        raise ConcurrentModification(f"user {user_id!r} keeps changing; could not read a stable snapshot")

    @staticmethod
    def _token(tx: Any, u: str) -> tuple[int, str] | None:
        """The user's (version, epoch), None for a user without a meta node (new or purged)."""
        row = tx.run(Q.CACHE_TOKEN, u=u).single()
        return None if row is None else (row["v"], row["e"])

    @classmethod
    def _load(cls, tx: Any, u: str) -> tuple[Snapshot, tuple[int, str] | None, tuple[int, str] | None]:
        rec = tx.run(Q.LOAD_ALL, u=u).single()
        r = dict(zip(rec.keys(), rec.values()))  # not Record.data(): see _read_plain
        token = None if r["v"] is None else (r["v"], r["e"])
        s = Snapshot(user_id=u)
        s.version = token[0] if token else 0
        s.concepts = {c.concept_id: c for c in (row_concept(parse_times(x, Q.CONCEPT_TIMES)) for x in r["concepts"])}
        s.parent = {c: p for p, c in r["parents"]}
        s.fact_concept = {f: c for c, f in r["contains"]}
        s.facts = {f.fact_id: f for f in (row_fact(parse_times(x, Q.FACT_TIMES)) for x in r["facts"])}
        s.relations = {rel.key: rel for rel in (row_relation(parse_times(x, Q.REL_TIMES)) for x in r["relations"])}
        s.edits = {e.edit_id: e for e in (row_edit(parse_times(x, Q.EDIT_TIMES)) for x in r["edits"])}
        s.turn_ids = set(r["turn_ids"])
        s.sessions = {k: h for k, h in r["sessions"]}
        return s, token, cls._token(tx, u)

    def commit(self, changes: ChangeSet) -> None:
        self._writes_planned.wait(WRITE_PLAN_WAIT_S)
        with self._driver.session(database=self._db) as s:
            tx = s.begin_transaction()
            try:
                self._write(tx, changes, changes.expected_version)
                tx.commit()
            except self._neo4j.exceptions.ConstraintError as e:
                # One of our new fact ids is another user's (or a racing user's commit took it first);
                # the server's message names the id and node, so it is not passed on.
                raise id_taken() from e
            except self._neo4j.exceptions.TransientError as e:  # deadlock, lock timeout: retryable
                raise ConcurrentModification(f"user {changes.user_id!r}: transient conflict, retry ({e.code})") from e
            finally:
                if not tx.closed():
                    tx.rollback()

    def _write(self, tx: Any, cs: ChangeSet, check: int) -> str:
        """Lock the user, check its version is ``check`` and set the new one (queries.LOCK), then write
        ``cs``: one UNWIND statement per kind of row that has rows, in chunks of ``chunk_rows``. Returns
        the user's epoch."""
        u = cs.user_id
        validate_user_id(u)  # the writes below refuse other users' ids themselves (see queries.py)
        row = tx.run(Q.LOCK, u=u, check=check, new=cs.new_version).single()
        if row is None:  # the user is not at ``check``: nothing was written
            current = tx.run(Q.CACHE_TOKEN, u=u).single()
            raise ConcurrentModification(f"user {u!r} is at version {current['v'] if current else 0}, "
                                         f"batch was built on {check}")
        counted = {"concepts": ("n_concepts", "Concept"), "edits": ("n_edits", "Edit")}
        phases = write_rows(cs)
        for name, query in Q.WRITE_PHASES:
            for chunk in chunks(phases[name], self.chunk_rows):
                result = tx.run(query, batch={name: chunk}, u=u)
                if name in counted:
                    key, label = counted[name]
                    if _single(result)[key] != len(chunk):
                        raise id_taken(label)
                else:
                    result.consume()
        return str(row["e"])

    # -- retrieval reads --
    # The route index cache (retrieval/seeds/index.py) reads this on every request and runs the seed
    # routes on its cached index while the read is in flight: the round trip overlaps the work.
    remote_version_token = True

    def version_token(self, user_id: str) -> str:
        # The one server round trip of a warmed retrieve, so an auto-commit run (RUN and PULL
        # pipelined: one round trip) instead of execute_query's managed transaction (BEGIN/RUN/PULL,
        # then COMMIT). Same bookmarks as execute_query, so reads stay causally after our writes.
        row: Any
        try:
            with self._driver.session(database=self._db, default_access_mode=self._neo4j.READ_ACCESS,
                                      bookmark_manager=self._driver.execute_query_bookmark_manager) as s:
                row = s.run(Q.CACHE_TOKEN, u=user_id).single()
        except (self._neo4j.exceptions.TransientError, self._neo4j.exceptions.SessionExpired,
                self._neo4j.exceptions.ServiceUnavailable):
            # auto-commit runs are not retried by the driver; execute_query is
            rows = self._read(Q.CACHE_TOKEN, u=user_id)
            row = rows[0] if rows else None
        # No meta node (a new or purged user): a token never seen before, so nothing cached matches
        # it. A fixed "none" would recur after a purge and validate an index built while the user
        # was being (re)created: the purged facts came back (tests/test_multiprocess_neo4j.py).
        return f"{row['v']}:{row['e']}" if row else f"none:{uuid.uuid4().hex}"

    def _embeddings(self, user_id: str) -> tuple[list[str], np.ndarray | None]:
        """This user's normalized embedding matrix, cached per user and checked on every search.

        Neo4j 5 Community's vector index cannot filter by user, and an exact cosine in Cypher reads
        every vector property per query, so each process keeps a client-side copy. Every search first
        reads the user's (version, epoch) and the ids of their embedded facts (one query, no vectors)
        and uses the copy only if both match. The ids matter, not only the token: reads are
        read-committed and a concurrent reader can see another process's commit half-applied (the
        version bumped, its new fact not yet visible); a copy built then carries the new token but
        lacks the fact, and only the id check catches that on the next search (two processes on one
        Neo4j: tests/test_multiprocess_neo4j.py).
        """
        rows = self._read(Q.CACHE_CHECK, u=user_id)
        if not rows:  # no meta node: a new or purged user
            with self._cache_lock:
                self._emb_cache.pop(user_id, None)
            return [], None
        token, current = (rows[0]["v"], rows[0]["e"]), set(rows[0]["ids"])
        with self._cache_lock:
            hit = self._emb_cache.get(user_id)
            if hit is not None and hit[0] == token and set(hit[1]) == current:
                self._emb_cache.move_to_end(user_id)
                return hit[1], hit[2]
            self._emb_cache.pop(user_id, None)
        rows = self._read_plain(Q.EMBEDDINGS, u=user_id)
        if not rows or not rows[0]["ids"]:
            return [], None
        m = np.stack([unpack_embedding(e) for e in rows[0]["embs"]])
        m /= np.linalg.norm(m, axis=1, keepdims=True) + 1e-12
        ids: list[str] = rows[0]["ids"]
        # Cache only what matches the check just made; anything read mid-commit is served for this
        # search and re-checked on the next one.
        if (rows[0]["v"], rows[0]["e"]) == token and set(ids) == current:
            with self._cache_lock:
                self._emb_cache[user_id] = (token, ids, m)
                while len(self._emb_cache) > self.cache_users:
                    self._emb_cache.popitem(last=False)
        return ids, m

    def vector_search(self, user_id: str, embedding: Sequence[float], k: int) -> list[tuple[str, float]]:
        ids, m = self._embeddings(user_id)
        if m is None or k <= 0:
            return []
        q = np.asarray(embedding, dtype=np.float32)
        return top_k(m @ (q / (np.linalg.norm(q) + 1e-12)), ids, k)

    def text_search(self, user_id: str, query: str, k: int) -> list[tuple[str, float]]:
        q = lucene_query(query, user_id)
        if not q:
            return []
        self._driver.execute_query(Q.AWAIT_TEXT, database_=self._db)  # every earlier commit in the index
        rows = self._read(Q.TEXT_SEARCH, u=user_id, q=q, k=int(k))
        return [(r["id"], float(r["score"])) for r in rows]

    def expand(self, user_id: str, fact_ids: Sequence[str], max_hops: int) -> set[str]:
        ids = list(fact_ids)
        if not ids:
            return set()
        row = self._read(Q.EXPAND.format(hops=int(max_hops)), u=user_id, ids=ids)[0]
        return set(row["s"]) | set(row["o"])

    def fetch(self, user_id: str, fact_ids: Sequence[str], hops: int = 0) -> Subgraph:
        q = Q.fetch_within(hops) if hops > 0 else Q.FETCH_FACTS
        facts, concept_of, paths, rels = {}, {}, {}, {}
        for r in self._read(q, u=user_id, ids=list(fact_ids)):
            if r["f"].get("fact_id") is None:  # deleted by a concurrent purge while we read it
                continue
            f = row_fact(r["f"])
            facts[f.fact_id] = f
            if r["c"]:
                concept_of[f.fact_id] = r["c"]
                paths[f.fact_id] = tuple(r["path"] or ())
            for x in r["rels"]:
                rel = row_relation(x)
                rels[rel.key] = rel
        return Subgraph(facts=facts, relations=list(rels.values()), concept_of=concept_of, concept_paths=paths)

    def turns(self, user_id: str, turn_ids: Sequence[str]) -> list[Turn]:
        return [row_turn(parse_times(r["t"], Q.TURN_TIMES))
                for r in self._read_plain(Q.FETCH_TURNS, u=user_id, ids=list(turn_ids))]

    def turn_facts(self, user_id: str, turn_ids: Sequence[str]) -> list[str]:
        return [r["f"] for r in self._read(Q.TURN_FACTS, u=user_id, ids=list(turn_ids))] if turn_ids else []

    def embeddings(self, user_id: str) -> dict[str, list[float]]:
        rows = self._read_plain(Q.EMBEDDINGS, u=user_id)
        return {i: unpack_embedding(e).tolist() for i, e in zip(rows[0]["ids"], rows[0]["embs"])} if rows else {}

    def edits(self, user_id: str) -> list[Edit]:
        return [row_edit(parse_times(r["e"], Q.EDIT_TIMES)) for r in self._read_plain(Q.LOAD_EDITS, u=user_id)]

    def users(self) -> list[str]:
        return [r["u"] for r in self._read(Q.USERS)]

    def run_readonly_cypher(self, user_id: str, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        # Parsed against an allowlist and run in a per-user in-memory copy (graph/cypher/sandbox.py):
        # user-written Cypher never runs on this store.
        return run_user_cypher(self, user_id, query, params)

    def purge_user(self, user_id: str) -> int:
        def work(tx: Any) -> int:
            # Take the user's write lock first, like commit: a commit in flight (another process
            # included) finishes before the deletes read what to delete, and a commit that queues
            # behind the purge finds its version gone and retries on the empty user.
            # MERGE, not MATCH: a first commit of this user still in flight (its UserMeta not yet
            # committed) must finish before the deletes read what to delete, or it lands after them.
            row = _single(tx.run(Q.LOCK_AND_PURGE, u=user_id))  # the lock and every label: one statement
            return int(row["n"]) - bool(row["made"])

        self._emb_cache.pop(user_id, None)
        with self._driver.session(database=self._db) as s:
            n: int = s.execute_write(work)
        return n

    @contextmanager
    def hold_user(self, user_id: str) -> Iterator[UserHold]:
        """Hold ``user_id``'s write lock until the block ends (graph/partition.py moves a user this way):
        every commit, purge or replace of this user, from any process, waits meanwhile; reads do not.
        ``purge()`` deletes the user inside the held transaction, which commits only when the block ends
        normally: an error, or a killed process (the server rolls back on the lost connection), leaves
        the user as it was."""
        with self._driver.session(database=self._db) as s:
            tx = s.begin_transaction()
            try:
                row = tx.run(Q.LOCK_EXISTING_VERSION, u=user_id).single()
                if row is None:
                    raise UnknownUser(f"no memories are stored for user {user_id!r}")

                def purge() -> int:
                    return int(_single(tx.run(Q.PURGE_NODES, u=user_id))["n"])

                yield UserHold(int(row["v"]), purge)
                tx.commit()
            finally:
                if not tx.closed():
                    tx.rollback()
                self._emb_cache.pop(user_id, None)

    def replace_user(self, changes: ChangeSet) -> int:
        u = changes.user_id

        def work(tx: Any) -> int:
            row = _single(tx.run(Q.LOCK_AND_PURGE, u=u))  # queue behind a commit in flight, then delete
            # the write's MERGE makes a new UserMeta (version 0): a new epoch, so caches keyed on it drop
            self._write(tx, changes, 0)
            return int(row["n"]) - bool(row["made"])

        self._emb_cache.pop(u, None)
        self._writes_planned.wait(WRITE_PLAN_WAIT_S)
        with self._driver.session(database=self._db) as s:
            try:
                n: int = s.execute_write(work)
            except self._neo4j.exceptions.ConstraintError as e:
                raise id_taken() from e
        self._emb_cache.pop(u, None)
        return n

    def counts(self, user_id: str | None = None) -> dict[str, int]:
        out: dict[str, int] = {}
        for label in Q.NODE_LABELS:
            q = Q.COUNT_NODES_USER if user_id else Q.COUNT_NODES_ALL
            out[label] = self._read(q.format(label=label), u=user_id)[0]["n"]
        for label in Q.REL_TYPES:
            q = Q.COUNT_RELS_USER if user_id else Q.COUNT_RELS_ALL
            out[label] = self._read(q.format(label=label), u=user_id)[0]["n"]
        return out

    def purge_items(self, purge: PurgeSet) -> dict[str, int]:
        u = purge.user_id
        groups = {"Fact": purge.fact_ids, "Edit": purge.edit_ids, "Concept": purge.concept_ids,
                  "Turn": purge.turn_ids, "Session": purge.session_ids}
        with self._driver.session(database=self._db) as s:
            tx = s.begin_transaction()
            try:
                row = tx.run(Q.LOCK_EXISTING_VERSION, u=u).single()
                current = row["v"] if row else 0
                if current != purge.expected_version:
                    raise ConcurrentModification(
                        f"user {u!r} is at version {current}, purge was planned on {purge.expected_version}")
                out: dict[str, int] = {}
                for label, ids in groups.items():
                    ids_ = list(dict.fromkeys(ids))
                    out[label] = 0
                    if ids_:
                        q = Q.DELETE_BY_IDS.format(label=label, prop=Q.PURGE_ID_PROPS[label])
                        out[label] = _single(tx.run(q, u=u, ids=ids_))["n"]
                if row is not None:
                    tx.run(Q.SET_VERSION, u=u, v=current + 1).consume()
                tx.commit()
            finally:
                if not tx.closed():
                    tx.rollback()
        self._emb_cache.pop(u, None)
        return out

    def wipe(self) -> None:
        """Delete every node (tests only)."""
        self._emb_cache.clear()
        with self._driver.session(database=self._db) as s:  # CALL IN TRANSACTIONS needs an auto-commit tx
            s.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()


def _single(result: neo4j.Result) -> neo4j.Record:
    """The one row a write query returns (its RETURN always yields one)."""
    rec = result.single()
    if rec is None:
        raise StoreError("Neo4j returned no row where one was expected")
    return rec
