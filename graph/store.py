"""The one contract every backend implements (graph/embedded/, graph/neo4j/).

Backends do storage only: load a user's snapshot, write a ChangeSet in one transaction, and answer
the few read queries retrieval needs. Rules live in graph/edits.py and graph/rules.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from graph.models import Edit, Fact, Relation, Turn
from graph.snapshot import ChangeSet, Snapshot


class StoreError(RuntimeError):
    """Base class for storage errors surfaced to callers."""


class ConcurrentModification(StoreError):
    """The user's ontology changed between snapshot and commit; reload and retry."""


class ReadOnlyViolation(StoreError):
    """A read-only Cypher query tried to write."""


class UnknownUser(StoreError, KeyError):
    """No data is stored for this user."""


class StoreLocked(StoreError):
    """Another process has the (single-owner) embedded store open; ``pid`` when the lock names it."""

    def __init__(self, path: str, pid: int | None = None):
        super().__init__(f"store {path} is locked by another process" + (f" (PID {pid})" if pid else ""))
        self.path, self.pid = path, pid


@dataclass(frozen=True)
class Subgraph:
    """Facts and the SUPERSEDES/CONFLICTS_WITH relations among/around them."""

    facts: dict[str, Fact]
    relations: list[Relation]
    concept_of: dict[str, str]  # fact_id -> concept_id
    concept_paths: dict[str, tuple[str, ...]]  # fact_id -> concept names from the root down


@runtime_checkable
class GraphStore(Protocol):
    """Storage seam. Every method is scoped to one user and takes values as parameters."""

    name: str
    # True where ``version_token`` is a server round trip (Neo4j): the route index cache then runs the
    # seed routes on its cached index while that read is in flight (retrieval/seeds/index.py: use).
    remote_version_token: bool

    def setup(self) -> None:
        """Create constraints and indexes (idempotent)."""

    def close(self) -> None: ...

    def load_snapshot(self, user_id: str) -> Snapshot:
        """The user's whole ontology without embeddings (an empty snapshot for a new user)."""

    def commit(self, changes: ChangeSet) -> None:
        """Write ``changes`` in one transaction; raise ConcurrentModification if the user's version moved."""

    def version_token(self, user_id: str) -> str:
        """A cheap token that changes whenever the user's data changes (per-user caches key on it;
        a purged and recreated user must not repeat an old token, nor may a user without data: a
        cache built while such a user was being written would come back after a purge)."""

    def vector_search(self, user_id: str, embedding: Sequence[float], k: int) -> list[tuple[str, float]]:
        """Top-k (fact_id, cosine) among this user's facts."""

    def text_search(self, user_id: str, query: str, k: int) -> list[tuple[str, float]]:
        """Top-k (fact_id, score) by full-text/BM25 among this user's facts."""

    def expand(self, user_id: str, fact_ids: Sequence[str], max_hops: int) -> set[str]:
        """Fact ids within ≤ max_hops SUPERSEDES/CONFLICTS_WITH steps of ``fact_ids`` (either direction),
        the start ids included. Shared code loops on this until closure (retrieval/retrieve.py)."""

    def fetch(self, user_id: str, fact_ids: Sequence[str], hops: int = 0) -> Subgraph:
        """Facts by id plus everything within ``hops`` SUPERSEDES/CONFLICTS_WITH steps (unknown ids are
        ignored), every relation touching them, and their concept paths. One round trip where the
        backend can; retrieval/retrieve.py loops on it until closure."""

    def turns(self, user_id: str, turn_ids: Sequence[str]) -> list[Turn]: ...

    def turn_facts(self, user_id: str, turn_ids: Sequence[str]) -> list[str]:
        """Ids of this user's facts derived from any of ``turn_ids`` (DERIVED_FROM), sorted."""

    def embeddings(self, user_id: str) -> dict[str, list[float]]:
        """fact_id -> the stored embedding, for this user's facts that have one (export, graph/portable.py)."""

    def edits(self, user_id: str) -> list[Edit]: ...

    def users(self) -> list[str]: ...

    def run_readonly_cypher(self, user_id: str, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run user-written Cypher read-only; ``$user_id`` is bound to ``user_id`` and only that user's
        data can be reached: every backend hands it to graph/cypher/sandbox.py (parse + allowlist,
        then a per-user in-memory copy). Raises graph.cypher.CypherRefused (a ValueError) on refusal,
        engine rejection (CypherFailed) or timeout (CypherTimeout)."""

    def purge_user(self, user_id: str) -> int:
        """Hard-delete everything of this user, including any per-user cache the backend keeps (a purged
        user restarts at version 0, so a cache keyed by version could serve stale rows); returns the
        number of nodes removed."""

    def replace_user(self, changes: ChangeSet) -> int:
        """Delete everything of ``changes.user_id`` and write ``changes`` (built on an empty user) in ONE
        transaction: after a crash at any moment the user holds the old memory or the new one, never
        none. Per-user caches are invalidated as by ``purge_user``; returns the number of nodes removed."""

    def counts(self, user_id: str | None = None) -> dict[str, int]:
        """Node and relationship counts (for one user, or the whole store)."""

    def purge_items(self, purge: PurgeSet) -> dict[str, int]:
        """Hard-delete exactly these nodes of one user (with their relationships) in one transaction,
        after checking the user's version like ``commit`` does, and bump the version. Returns the
        number of nodes removed per label. What to delete is decided in shared code (induction/forget.py)."""


@dataclass(frozen=True)
class PurgeSet:
    """A user-requested hard delete by id: no Edit record is written and nothing can be undone.

    Ids that do not exist (or belong to another user) are ignored. Turns and sessions are named by
    their per-user ids (``turn_id``, ``session_id``), as everywhere else in the protocol."""

    user_id: str
    expected_version: int
    fact_ids: tuple[str, ...] = ()
    turn_ids: tuple[str, ...] = ()
    edit_ids: tuple[str, ...] = ()
    concept_ids: tuple[str, ...] = ()
    session_ids: tuple[str, ...] = ()
