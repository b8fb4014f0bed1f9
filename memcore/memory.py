"""The Python facade: one object that owns a store and an embedder and exposes the memory operations."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any, Protocol

from graph.edits import AttachFact, EditBatch, apply_batch, undo
from retrieval.retrieve import EvidenceBundle, RetrievalConfig, retrieve
from retrieval.seeds.index import RouteIndex, RouteIndexCache
from graph.snapshot import ChangeSet, Snapshot
from graph.store import GraphStore, UnknownUser
from graph.timeline import TimeView, states_at
from graph.timeline import allowed_ids as allowed_ids_at
from llmclients.embeddings import Embedder, EmbedderConfig, LazyEmbedder
from memcore.retry import commit_with_retry
from memcore.stores import StoreConfig, open_store


class MemorySettings(Protocol):
    """What opening a Memory needs of the settings (``evomem.settings.Settings`` has it; a protocol so
    this floor does not import the CLI's settings)."""

    @property
    def store(self) -> StoreConfig: ...

    @property
    def embedder(self) -> EmbedderConfig: ...

    @property
    def retrieval(self) -> RetrievalConfig: ...


class Memory:
    """Per-user personal memory: apply edit batches, retrieve evidence, undo, inspect."""

    def __init__(self, store: GraphStore, embedder: Embedder, retrieval: RetrievalConfig | None = None,
                 max_commit_retries: int = 5) -> None:
        self.store, self.embedder = store, embedder
        self.retrieval = retrieval or RetrievalConfig()
        self.max_commit_retries = max_commit_retries
        # Per-user route index (retrieval vectors, turn index, entities, concepts), rebuilt when the
        # store's version token moves; texts are embedded once (memoised) across versions.
        self.routes = RouteIndexCache(lambda texts: self.embedder.embed(texts))
        # a store that reports its commits (the embedded one) has the index extended by each ChangeSet
        # rather than rebuilt (retrieval/seeds/delta.py)
        listen = getattr(store, "add_commit_listener", None)
        if listen is not None:
            listen(self.routes.note)

    @classmethod
    def from_settings(cls, settings: MemorySettings, load_embedder: bool = False) -> Memory:
        """The store is opened first (a locked store fails in a fraction of a second); the embedder loads
        on the first embedding, or here with ``load_embedder`` (a server warms it before its first request)."""
        embedder = LazyEmbedder(settings.embedder)
        store = open_store(settings.store, embedder.dim)
        try:
            if load_embedder:
                embedder.load()
        except BaseException:
            store.close()
            raise
        return cls(store, embedder, settings.retrieval)

    def close(self) -> None:
        self.routes.close()
        unlisten = getattr(self.store, "remove_commit_listener", None)
        if unlisten is not None:
            unlisten(self.routes.note)
        self.store.close()

    # -- writes --
    def _with_embeddings(self, batch: EditBatch) -> EditBatch:
        todo = [i for i, e in enumerate(batch.edits) if isinstance(e, AttachFact) and e.embedding is None]
        if not todo:
            return batch
        vecs = self.embedder.embed([batch.edits[i].fact.statement for i in todo])  # type: ignore[union-attr]
        edits = list(batch.edits)
        for i, v in zip(todo, vecs):
            edits[i] = edits[i].model_copy(update={"embedding": tuple(float(x) for x in v)})
        return batch.model_copy(update={"edits": edits})

    def apply(self, batch: EditBatch, now: datetime | None = None) -> tuple[Snapshot, ChangeSet]:
        """Validate and commit ``batch`` atomically; on a concurrent writer, rebuild and retry."""
        batch = self._with_embeddings(batch)

        def attempt(snap: Snapshot, n: int) -> tuple[Snapshot, ChangeSet]:
            new, cs = apply_batch(snap, batch, now)
            self.store.commit(cs)
            return new, cs

        return commit_with_retry(self.store, batch.user_id, attempt, self.max_commit_retries)

    def undo(self, user_id: str, edit_id: str) -> ChangeSet:
        """Revert the user's latest not-undone edit ``edit_id`` (graph/edits.py: undo is a stack)."""
        self.require_user(user_id)  # "unknown user", not "no such edit", when the user id is wrong
        snap, cs = undo(self.store.load_snapshot(user_id), edit_id)
        self.store.commit(cs)
        return cs

    # -- reads --
    def require_user(self, user_id: str) -> None:
        if user_id not in self.store.users():
            raise UnknownUser(f"no memories are stored for user {user_id!r}")

    def retrieve(self, user_id: str, query: str, k: int | None = None, traverse: bool | None = None,
                 as_of: datetime | None = None, known_at: datetime | None = None,
                 allowed_ids: frozenset[str] | None = None, now: datetime | None = None,
                 routes: tuple[str, ...] | None = None) -> EvidenceBundle:
        """Seeds from the configured routes + traversal with relational states. ``as_of`` (valid time)
        and ``known_at`` (recorded time) answer from the memory as it was then (graph/timeline.py);
        ``allowed_ids``/``now`` are the lower-level form of the same restriction (retrieval.retrieve)."""
        cfg = self.retrieval.model_copy(update={k: v for k, v in {"k": k, "traverse": traverse, "routes": routes}.items()
                                                if v is not None})
        view = TimeView(as_of=as_of, known_at=known_at)
        t0 = time.perf_counter()
        qv = self.embedder.embed([query])[0]
        embed_ms = (time.perf_counter() - t0) * 1e3
        t1 = time.perf_counter()
        if view.is_now:
            def now_view(index: RouteIndex | None) -> EvidenceBundle:
                return retrieve(self.store, user_id, query, qv.tolist(), cfg, now=now, allowed_ids=allowed_ids,
                                index=index)

            # use: on Neo4j the routes run on the cached index while its version is checked
            bundle = self.routes.use(self.store, user_id, now_view) if cfg.routes else now_view(None)
            tm = bundle.explain.timings_ms
            index_ms = (time.perf_counter() - t1) * 1e3 - tm["seeds"] - tm["traverse"] - tm["assemble"]
        else:
            index = self.routes.get(self.store, user_id) if cfg.routes else None
            index_ms = (time.perf_counter() - t1) * 1e3
            self.require_user(user_id)
            snap = self.store.load_snapshot(user_id)
            allowed = allowed_ids_at(snap.facts, view)
            if allowed_ids is not None:
                allowed = allowed_ids if allowed is None else allowed & allowed_ids
            bundle = retrieve(self.store, user_id, query, qv.tolist(), cfg, now=view.evaluation_time(),
                              allowed_ids=allowed, index=index)
            # retrieval derives states from the stored relations; the recorded-time view also hides the
            # relations, retractions and resolutions recorded after known_at, so states come from the view
            seen = states_at(snap, view, [i.fact.fact_id for i in bundle.items])
            bundle.items = [i.model_copy(update={"fact": seen[i.fact.fact_id][0],
                                                 "state": seen[i.fact.fact_id][1] if cfg.traverse else i.state})
                            for i in bundle.items if i.fact.fact_id in seen]
        bundle.explain.timings_ms["index"] = index_ms
        if not bundle.items:
            self.require_user(user_id)
        bundle.explain.timings_ms["embed"] = embed_ms
        return bundle

    def cypher(self, user_id: str, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        self.require_user(user_id)
        return self.store.run_readonly_cypher(user_id, query, params)
