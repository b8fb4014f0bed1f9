"""Defence in depth: user Cypher runs in a per-user, in-memory LadybugDB copy of that user's data.

Even if the parser let something through, the engine it reaches holds one user's Concepts, Facts,
Turns, Edits and Sessions and nothing else: no other user, no embeddings, no UserMeta. Both backends
use it, so a Neo4j server never sees user-written Cypher. The copy is rebuilt when the user's data
changes: it is cached by (user, digest of the user's snapshot), so a purge-and-reingest that lands
on the same version number cannot serve purged text. The snapshot itself is read only when the
user's ``version_token`` (graph/store.py: it changes on every commit, undo, purge and replace, and a
purged user never repeats one) differs from the one the cached copy was built under, so a query's
cost does not grow with the user's history: one token read, then the worker's copy. The copies live in sandbox worker processes
(graph/cypher/pool.py, graph/cypher/worker.py), never in the server: a query that crashes the
native engine, stalls it at bind time or allocates gigabytes ends one worker under its OS limits,
and its caller gets a 4xx; the server and every other user carry on. Queries run in a READ ONLY
transaction with a timeout, a watchdog interrupt and a small buffer pool, and at most
``max_rows + 1`` rows are kept (the extra row tells callers the result was truncated).

LadybugDB has no switch that disables its file clauses (LOAD FROM, COPY, EXPORT, ATTACH,
INSTALL); they cannot reach it because the text it runs is re-serialized from an AST whose
grammar has no such clauses (graph/cypher/serialize.py).
"""

from __future__ import annotations

import hashlib
import re
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from graph.cypher import compile_query
from graph.cypher.errors import CypherFailed, CypherTimeout
from graph.cypher.pool import SandboxPool, SandboxSettings, WorkerError
from graph.models import as_utc
from graph.serialize import concept_row, edit_row, fact_row, session_key, turn_key, turn_row
from graph.snapshot import Snapshot
from graph.store import ReadOnlyViolation


SCHEMA = [
    "CREATE NODE TABLE Turn(key STRING PRIMARY KEY, turn_id STRING, user_id STRING, session_id STRING,"
    " seq INT64, role STRING, text STRING, at TIMESTAMP)",
    "CREATE NODE TABLE Session(key STRING PRIMARY KEY, session_id STRING, user_id STRING, content_hash STRING)",
    "CREATE NODE TABLE Fact(fact_id STRING PRIMARY KEY, user_id STRING, statement STRING, kind STRING,"
    " holder STRING, evidence STRING, source_turn_ids STRING[], session_id STRING, observed_at TIMESTAMP,"
    " valid_from TIMESTAMP, valid_to TIMESTAMP, recorded_at TIMESTAMP, expired_at TIMESTAMP,"
    " retracted_at TIMESTAMP, scope STRING, qualifiers STRING, confidence DOUBLE)",
    "CREATE NODE TABLE Concept(concept_id STRING PRIMARY KEY, user_id STRING, name STRING, description STRING,"
    " created_at TIMESTAMP, retired_at TIMESTAMP)",
    "CREATE NODE TABLE Edit(edit_id STRING PRIMARY KEY, user_id STRING, seq INT64, session_id STRING, op STRING,"
    " at TIMESTAMP, payload STRING, undone_at TIMESTAMP)",
    "CREATE REL TABLE PARENT_OF(FROM Concept TO Concept)",
    "CREATE REL TABLE CONTAINS(FROM Concept TO Fact)",
    "CREATE REL TABLE SUPERSEDES(FROM Fact TO Fact, at TIMESTAMP, reason STRING)",
    "CREATE REL TABLE CONFLICTS_WITH(FROM Fact TO Fact, at TIMESTAMP, reason STRING, resolved_at TIMESTAMP)",
    "CREATE REL TABLE DERIVED_FROM(FROM Fact TO Turn)",
]
_TS = ("at", "created_at", "retired_at", "observed_at", "valid_from", "valid_to", "recorded_at", "expired_at",
       "retracted_at", "resolved_at", "undone_at")


def _create(label: str, cols: tuple[str, ...]) -> str:
    sets = ", ".join(f"{c}: CAST(r.{c} AS TIMESTAMP)" if c in _TS else f"{c}: r.{c}" for c in cols)
    return f"UNWIND $rows AS r CREATE (:{label} {{{sets}}})"


_FACT_COLS = ("fact_id", "user_id", "statement", "kind", "holder", "evidence", "source_turn_ids", "session_id",
              "observed_at", "valid_from", "valid_to", "recorded_at", "expired_at", "retracted_at", "scope",
              "qualifiers", "confidence")
_LOAD = {
    "Turn": _create("Turn", ("key", "turn_id", "user_id", "session_id", "seq", "role", "text", "at")),
    "Session": _create("Session", ("key", "session_id", "user_id", "content_hash")),
    "Fact": _create("Fact", _FACT_COLS),
    "Concept": _create("Concept", ("concept_id", "user_id", "name", "description", "created_at", "retired_at")),
    "Edit": _create("Edit", ("edit_id", "user_id", "seq", "session_id", "op", "at", "payload", "undone_at")),
}
_LINK = {
    "PARENT_OF": "UNWIND $rows AS r MATCH (a:Concept {concept_id: r.a}), (b:Concept {concept_id: r.b}) "
                 "CREATE (a)-[:PARENT_OF]->(b)",
    "CONTAINS": "UNWIND $rows AS r MATCH (a:Concept {concept_id: r.a}), (b:Fact {fact_id: r.b}) CREATE (a)-[:CONTAINS]->(b)",
    "SUPERSEDES": "UNWIND $rows AS r MATCH (a:Fact {fact_id: r.a}), (b:Fact {fact_id: r.b}) "
                  "CREATE (a)-[:SUPERSEDES {at: CAST(r.at AS TIMESTAMP), reason: r.reason}]->(b)",
    "CONFLICTS_WITH": "UNWIND $rows AS r MATCH (a:Fact {fact_id: r.a}), (b:Fact {fact_id: r.b}) "
                      "CREATE (a)-[:CONFLICTS_WITH {at: CAST(r.at AS TIMESTAMP), reason: r.reason, "
                      "resolved_at: CAST(r.resolved_at AS TIMESTAMP)}]->(b)",
    "DERIVED_FROM": "UNWIND $rows AS r MATCH (a:Fact {fact_id: r.a}), (b:Turn {key: r.b}) CREATE (a)-[:DERIVED_FROM]->(b)",
}


def _iso(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (as_utc(v).replace(tzinfo=None).isoformat() if isinstance(v, datetime) else v) for k, v in row.items()}


def snapshot_digest(snap: Snapshot) -> str:
    """A digest of everything the copy is built from (the snapshot; turns are fixed by their ids)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((snap.user_id, snap.version, sorted(snap.facts.items()), sorted(snap.concepts.items()),
                   sorted(snap.parent.items()), sorted(snap.fact_concept.items()), sorted(snap.relations.items()),
                   sorted(snap.edits.items()), sorted(snap.turn_ids), sorted(snap.sessions.items()))).encode())
    return h.hexdigest()


def _rows(store: Any, snap: Snapshot) -> dict[str, list[dict[str, Any]]]:
    u = snap.user_id
    turns = store.turns(u, sorted(snap.turn_ids)) if snap.turn_ids else []
    turn_keys = {t.turn_id: turn_key(u, t.turn_id) for t in turns}
    facts = []
    for f in snap.facts.values():
        r = fact_row(f)
        facts.append(_iso({c: r.get(c) for c in _FACT_COLS}))
    return {
        "Turn": [_iso(turn_row(t)) for t in turns],
        "Session": [{"key": session_key(u, s), "session_id": s, "user_id": u, "content_hash": h}
                    for s, h in snap.sessions.items()],
        "Fact": facts,
        "Concept": [_iso(concept_row(c)) for c in snap.concepts.values()],
        "Edit": [_iso(edit_row(e)) for e in snap.edits.values()],
        "PARENT_OF": [{"a": p, "b": c} for c, p in snap.parent.items() if c in snap.concepts and p in snap.concepts],
        "CONTAINS": [{"a": c, "b": f} for f, c in snap.fact_concept.items() if c in snap.concepts and f in snap.facts],
        "SUPERSEDES": [_iso({"a": r.src, "b": r.dst, "at": r.at, "reason": r.reason})
                       for r in snap.relations.values() if r.type == "SUPERSEDES"
                       and r.src in snap.facts and r.dst in snap.facts],
        "CONFLICTS_WITH": [_iso({"a": r.src, "b": r.dst, "at": r.at, "reason": r.reason, "resolved_at": r.resolved_at})
                           for r in snap.relations.values() if r.type == "CONFLICTS_WITH"
                           and r.src in snap.facts and r.dst in snap.facts],
        "DERIVED_FROM": [{"a": f.fact_id, "b": turn_keys[t]} for f in snap.facts.values()
                         for t in dict.fromkeys(f.source_turn_ids) if t in turn_keys],
    }


_INTERNAL = re.compile(r"\b([vac])(\d+)\b")
_EMPTY = "\x00"  # every empty user shares one empty copy; no user id is stored in it


@dataclass(frozen=True)
class _Copy:
    """What one user's queries run on while their version token stays ``token``."""

    token: str
    user: str  # the pool's routing key (_EMPTY for an empty user)
    key: str  # the worker's copy key: user and snapshot digest
    snap: Snapshot | None  # None for an empty user


class CypherSandbox:
    """Compiles in process (refusals cost nothing), runs in a worker process (graph/cypher/pool.py).

    Per user it remembers the snapshot the worker's copy was built from, under the version token read
    before that snapshot (so the snapshot is at least as new as its token): while the token is unchanged
    a query reads no snapshot and computes no digest. Entries are per user id, never shared."""

    def __init__(self, settings: SandboxSettings | None = None):
        self.settings = settings or SandboxSettings()
        self.pool = SandboxPool(self.settings, SCHEMA, {**_LOAD, **_LINK})
        self._copies: OrderedDict[str, _Copy] = OrderedDict()
        self._copies_lock = threading.Lock()
        self.snapshot_loads = 0  # snapshots read for user queries (tests and bench/cypher_cache.py read it)

    def _copy(self, store: Any, user_id: str) -> _Copy:
        token = store.version_token(user_id)  # before the snapshot: a write in between changes the token
        with self._copies_lock:
            hit = self._copies.get(user_id)
            if hit is not None and hit.token == token:
                self._copies.move_to_end(user_id)
                return hit
        snap = store.load_snapshot(user_id)
        self.snapshot_loads += 1
        if snap.user_id != user_id:
            raise CypherFailed("the store returned another user's snapshot")  # never cache across users
        empty = not (snap.facts or snap.concepts or snap.edits or snap.turn_ids or snap.sessions)
        copy = (_Copy(token, _EMPTY, _EMPTY, None) if empty
                else _Copy(token, user_id, f"{user_id}\x00{snapshot_digest(snap)}", snap))
        with self._copies_lock:
            self._copies[user_id] = copy
            self._copies.move_to_end(user_id)
            while len(self._copies) > self.settings.workers * self.settings.max_users:
                self._copies.popitem(last=False)
        return copy

    def run(self, store: Any, user_id: str, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        compiled = compile_query(query, params, user_id)  # refusals cost no store access
        c = self._copy(store, user_id)
        snap = c.snap
        try:
            out = self.pool.run(c.user, c.key, lambda: {} if snap is None else _rows(store, snap), compiled.text,
                                compiled.params)
        except WorkerError as e:
            raise _translate(e, compiled.names, self.settings) from None
        return [dict(zip(compiled.columns, row)) for row in out]

    def close(self) -> None:
        self.pool.close()


def _translate(e: WorkerError, names: dict[str, str], s: SandboxSettings) -> Exception:
    msg = str(e)
    low = msg.lower()
    if e.kind == "size":
        return CypherFailed(f"{msg}; narrow it (fewer rows or columns, shorter strings)")
    if "interrupted" in low or "timeout" in low:
        return CypherTimeout(f"the query ran longer than {s.timeout_s:g} s and was stopped; narrow it "
                             "(a LIMIT, fewer hops, fewer MATCH parts)")
    if "read-only" in low or "read only" in low:
        return ReadOnlyViolation(f"query tried to write: {msg}")
    if e.kind == "memory" or "buffer pool is full" in low or "unable to allocate" in low:
        return CypherFailed(f"the query needs more memory than a user query may use ({s.memory_mb} MB); narrow it")
    msg = _INTERNAL.sub(lambda m: names.get(m.group(0), "?" if m.group(1) != "c" else "a column"), msg)
    return CypherFailed(f"the query cannot run: {msg}")


_SANDBOXES: weakref.WeakKeyDictionary[Any, CypherSandbox] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


def configure_sandbox(store: Any, settings: SandboxSettings) -> CypherSandbox:
    """Give ``store`` a sandbox with ``settings`` (the entry points do, from StoreConfig.cypher)."""
    with _REGISTRY_LOCK:
        old = _SANDBOXES.get(store)
        if old is not None:
            old.close()
        sb = _SANDBOXES[store] = CypherSandbox(settings)
        return sb


def sandbox_for(store: Any) -> CypherSandbox:
    """The sandbox cache of one store instance (created on first use, dropped with the store)."""
    with _REGISTRY_LOCK:
        sb = _SANDBOXES.get(store)
        if sb is None:
            sb = _SANDBOXES[store] = CypherSandbox()
        return sb


def run_user_cypher(store: Any, user_id: str, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """What ``GraphStore.run_readonly_cypher`` does on every backend: parse, refuse or run in the copy."""
    return sandbox_for(store).run(store, user_id, query, params)
