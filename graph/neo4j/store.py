"""Neo4j backend (driver 6.x) for a real Neo4j 5 server or cluster.

Commits run in one write transaction that first locks the user's ``UserMeta`` node, so two
writers for one user serialize and the loser sees a moved version. User Cypher runs in a READ
session after graph/cypher_guard.py has pinned it to one user.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from graph.bm25 import tokenize
from graph.cypher_guard import UID_PARAM, scope_to_user
from graph.models import Edit, Turn
from graph.neo4j import queries as Q
from graph.serialize import (concept_row, edit_row, fact_row, row_concept, row_edit, row_fact, row_relation,
                             row_turn, session_key, turn_key, turn_row)
from graph.snapshot import ChangeSet, Snapshot
from graph.store import ConcurrentModification, ReadOnlyViolation, StoreError, Subgraph


def lucene_query(text: str) -> str:
    """OR of the query's content words, each escaped: user text never reaches Lucene syntax.

    >>> lucene_query('hiking AND "knee"*')
    'hiking OR knee'
    """
    return " OR ".join(re.sub(r'([+\-&|!(){}\[\]^"~*?:\\/])', r"\\\1", w) for w in dict.fromkeys(tokenize(text)))


class Neo4jStore:
    name = "neo4j"

    def __init__(self, uri: str, user: str | None = None, password: str | None = None, database: str | None = None,
                 embedding_dim: int = 384):
        import neo4j

        self._neo4j = neo4j
        auth = (user, password) if user else None
        # Schema-less reads of not-yet-used labels/properties make the server chatty; those are expected.
        self._driver = neo4j.GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF")
        self._db = database
        self.embedding_dim = embedding_dim

    # -- plumbing --
    def _read(self, query: str, **params: Any) -> list[dict[str, Any]]:
        records, _, _ = self._driver.execute_query(query, params, database_=self._db,
                                                   routing_=self._neo4j.RoutingControl.READ)
        return [r.data() for r in records]

    def setup(self) -> None:
        for stmt in Q.schema(self.embedding_dim):
            self._driver.execute_query(stmt, database_=self._db)
        self._driver.execute_query("CALL db.awaitIndexes(300)", database_=self._db)

    def close(self) -> None:
        self._driver.close()

    # -- snapshot / commit --
    def load_snapshot(self, user_id: str) -> Snapshot:
        # Neo4j reads are read-committed: a commit landing between our queries would give a torn
        # snapshot. Every commit bumps the user's version, so equal versions before and after the
        # reads mean none landed; otherwise read again.
        with self._driver.session(database=self._db, default_access_mode=self._neo4j.READ_ACCESS) as s:
            for _ in range(50):
                snap = s.execute_read(self._load, user_id)
                after = s.execute_read(lambda tx: [r.data() for r in tx.run(Q.GET_VERSION, u=user_id)])
                if (after[0]["u.version"] if after else 0) == snap.version:
                    return snap
        raise ConcurrentModification(f"user {user_id!r} keeps changing; could not read a stable snapshot")

    @staticmethod
    def _load(tx: Any, u: str) -> Snapshot:
        def rows(q: str) -> list[dict[str, Any]]:
            return [r.data() for r in tx.run(q, u=u)]

        s = Snapshot(user_id=u)
        v = rows(Q.GET_VERSION)
        s.version = v[0]["u.version"] if v else 0
        s.concepts = {c.concept_id: c for c in (row_concept(r["c"]) for r in rows(Q.LOAD_CONCEPTS))}
        s.parent = {r["c"]: r["p"] for r in rows(Q.LOAD_PARENTS)}
        s.fact_concept = {r["f"]: r["c"] for r in rows(Q.LOAD_CONTAINS)}
        s.facts = {f.fact_id: f for f in (row_fact(r["f"]) for r in rows(Q.LOAD_FACTS))}
        s.relations = {rel.key: rel for rel in (row_relation(r) for r in rows(Q.LOAD_RELATIONS))}
        s.edits = {e.edit_id: e for e in (row_edit(r["e"]) for r in rows(Q.LOAD_EDITS))}
        s.turn_ids = {r["t"] for r in rows(Q.LOAD_TURN_IDS)}
        s.sessions = {r["s"]: r["h"] for r in rows(Q.LOAD_SESSIONS)}
        return s

    def commit(self, changes: ChangeSet) -> None:
        with self._driver.session(database=self._db) as s:
            tx = s.begin_transaction()
            try:
                current = tx.run(Q.LOCK_VERSION, u=changes.user_id).single()["v"]
                if current != changes.expected_version:
                    raise ConcurrentModification(
                        f"user {changes.user_id!r} is at version {current}, batch was built on {changes.expected_version}")
                self._write(tx, changes)
                tx.run(Q.SET_VERSION, u=changes.user_id, v=changes.new_version).consume()
                tx.commit()
            except self._neo4j.exceptions.ConstraintError as e:
                raise StoreError(f"uniqueness violated (an id is already used, possibly by another user): {e.message}") from e
            finally:
                if not tx.closed():
                    tx.rollback()

    @staticmethod
    def _write(tx: Any, cs: ChangeSet) -> None:
        u = cs.user_id

        def run(q: str, rows: list[Any]) -> None:
            if rows:
                tx.run(q, rows=rows, u=u).consume()

        run(Q.CREATE_TURNS, [turn_row(t) for t in cs.turns_create])
        run(Q.UPSERT_SESSIONS, [{"key": session_key(u, s), "session_id": s, "content_hash": h}
                                for s, h in cs.sessions_upsert.items()])
        run(Q.UPSERT_CONCEPTS, [concept_row(c) for c in cs.concepts_upsert])
        run(Q.CREATE_FACTS, [{**fact_row(f), "embedding": cs.embeddings.get(f.fact_id)} for f in cs.facts_create])
        run(Q.UPDATE_FACTS, [fact_row(f) for f in cs.facts_update])
        run(Q.REMOVE_PARENT, [{"p": p, "c": c} for p, c in cs.parent_remove])
        run(Q.REMOVE_CONTAINS, [{"c": c, "f": f} for c, f in cs.contains_remove])
        run(Q.REMOVE_SUPERSEDES, [{"src": r.src, "dst": r.dst} for r in cs.relations_remove if r.type == "SUPERSEDES"])
        run(Q.REMOVE_CONFLICTS, [{"src": r.src, "dst": r.dst} for r in cs.relations_remove if r.type == "CONFLICTS_WITH"])
        run(Q.ADD_SUPERSEDES, [{"src": r.src, "dst": r.dst, "at": r.at, "reason": r.reason}
                               for r in cs.relations_add if r.type == "SUPERSEDES"])
        run(Q.ADD_CONFLICTS, [{"src": r.src, "dst": r.dst, "at": r.at, "reason": r.reason, "resolved_at": r.resolved_at}
                              for r in cs.relations_add if r.type == "CONFLICTS_WITH"])
        run(Q.UPDATE_CONFLICTS, [{"src": r.src, "dst": r.dst, "reason": r.reason, "resolved_at": r.resolved_at}
                                 for r in cs.relations_update if r.type == "CONFLICTS_WITH"])
        run(Q.ADD_PARENT, [{"p": p, "c": c} for p, c in cs.parent_add])
        run(Q.ADD_CONTAINS, [{"c": c, "f": f} for c, f in cs.contains_add])
        run(Q.ADD_DERIVED, [{"f": f, "t": turn_key(u, t)} for f, t in cs.derived_from_add])
        run(Q.UPSERT_EDITS, [edit_row(e) for e in cs.edits_upsert])
        run(Q.DELETE_FACTS, list(cs.facts_delete))
        run(Q.DELETE_CONCEPTS, list(cs.concepts_delete))

    # -- retrieval reads --
    def vector_search(self, user_id: str, embedding: Sequence[float], k: int) -> list[tuple[str, float]]:
        rows = self._read(Q.VECTOR_SEARCH, u=user_id, q=[float(x) for x in embedding], k=int(k))
        return [(r["id"], float(r["score"])) for r in rows]

    def text_search(self, user_id: str, query: str, k: int) -> list[tuple[str, float]]:
        q = lucene_query(query)
        if not q:
            return []
        rows = self._read(Q.TEXT_SEARCH, u=user_id, q=q, k=int(k))
        return [(r["id"], float(r["score"])) for r in rows]

    def expand(self, user_id: str, fact_ids: Sequence[str], max_hops: int) -> set[str]:
        ids = list(fact_ids)
        if not ids:
            return set()
        start = {r["id"] for r in self._read(Q.START_IDS, u=user_id, ids=ids)}
        reached = {r["id"] for r in self._read(Q.EXPAND.format(hops=int(max_hops)), u=user_id, ids=ids)}
        return start | reached

    def fetch(self, user_id: str, fact_ids: Sequence[str]) -> Subgraph:
        ids = list(fact_ids)
        with self._driver.session(database=self._db, default_access_mode=self._neo4j.READ_ACCESS) as s:
            def work(tx: Any) -> Subgraph:
                facts, concept_of = {}, {}
                for r in tx.run(Q.FETCH_FACTS, u=user_id, ids=ids):
                    f = row_fact(r["f"])
                    facts[f.fact_id] = f
                    if r["c"]:
                        concept_of[f.fact_id] = r["c"]
                rels = [row_relation(r.data()) for r in tx.run(Q.FETCH_RELATIONS, u=user_id, ids=ids)]
                concepts = {c.concept_id: c for c in (row_concept(r["c"]) for r in tx.run(Q.LOAD_CONCEPTS, u=user_id))}
                parent = {r["c"]: r["p"] for r in tx.run(Q.LOAD_PARENTS, u=user_id)}
                return Subgraph(facts=facts, relations=rels, concept_of=concept_of, concepts=concepts, parent=parent)

            return s.execute_read(work)

    def turns(self, user_id: str, turn_ids: Sequence[str]) -> list[Turn]:
        return [row_turn(r["t"]) for r in self._read(Q.FETCH_TURNS, u=user_id, ids=list(turn_ids))]

    def edits(self, user_id: str) -> list[Edit]:
        return [row_edit(r["e"]) for r in self._read(Q.LOAD_EDITS, u=user_id)]

    def users(self) -> list[str]:
        return [r["u"] for r in self._read(Q.USERS)]

    def run_readonly_cypher(self, user_id: str, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        scoped = scope_to_user(query)
        neo4j = self._neo4j
        try:
            with self._driver.session(database=self._db, default_access_mode=neo4j.READ_ACCESS) as s:
                res = s.run(scoped, {**(params or {}), UID_PARAM: user_id})
                return [{k: _plain(v) for k, v in rec.items()} for rec in res]
        except neo4j.exceptions.ClientError as e:
            if "read" in (e.message or "").lower() and "access mode" in (e.message or "").lower():
                raise ReadOnlyViolation(f"query tried to write: {e.message}") from e
            raise StoreError(f"Cypher failed: {e.message}") from e

    def purge_user(self, user_id: str) -> int:
        def work(tx: Any) -> int:
            return sum(tx.run(Q.PURGE_LABEL.format(label=label), u=user_id).single()["n"] for label in Q.NODE_LABELS)

        with self._driver.session(database=self._db) as s:
            return s.execute_write(work)

    def counts(self, user_id: str | None = None) -> dict[str, int]:
        out: dict[str, int] = {}
        for label in Q.NODE_LABELS:
            q = Q.COUNT_NODES_USER if user_id else Q.COUNT_NODES_ALL
            out[label] = self._read(q.format(label=label), u=user_id)[0]["n"]
        for label in Q.REL_TYPES:
            q = Q.COUNT_RELS_USER if user_id else Q.COUNT_RELS_ALL
            out[label] = self._read(q.format(label=label), u=user_id)[0]["n"]
        return out

    def wipe(self) -> None:
        """Delete every node (tests only)."""
        with self._driver.session(database=self._db) as s:  # CALL IN TRANSACTIONS needs an auto-commit tx
            s.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()


def _plain(v: Any) -> Any:
    """Driver values as JSON-friendly Python (nodes as property maps without embeddings)."""
    if hasattr(v, "labels") and hasattr(v, "items"):  # Node
        return {"labels": sorted(v.labels), **{k: _plain(x) for k, x in v.items() if k != "embedding"}}
    if hasattr(v, "type") and hasattr(v, "items") and hasattr(v, "start_node"):  # Relationship
        return {"type": v.type, **{k: _plain(x) for k, x in v.items()}}
    if hasattr(v, "iso_format"):
        return v.iso_format()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v
