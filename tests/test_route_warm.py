"""A server builds its users' route indexes at start (RouteIndexCache.warm_users), so a user's first
request finds the index ready and builds nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graph.edits import AttachFact, CreateConcept, EditBatch, apply_batch
from graph.embedded.store import EmbeddedStore
from graph.models import Fact, Turn
from llmclients.embeddings import HashEmbedder
from retrieval.retrieve import RetrievalConfig, retrieve
from retrieval.seeds.index import RouteIndexCache

EMB = HashEmbedder(24)


def _store(tmp: Path, users: list[str]) -> EmbeddedStore:
    s = EmbeddedStore(tmp / "store")
    s.setup()
    for u in users:
        turns = [Turn(turn_id=f"{u}-t{i}", user_id=u, session_id="s1", seq=i, role="user", text=f"I like {w}")
                 for i, w in enumerate(("tea", "hiking", "the cello"))]
        edits: list[object] = [CreateConcept(concept_id=f"{u}:c", name="likes")]
        edits += [AttachFact(fact=Fact(fact_id=f"{u}-f{i}", user_id=u, statement=t.text, source_turn_ids=(t.turn_id,)),
                             concept_id=f"{u}:c", embedding=tuple(float(x) for x in EMB.embed([t.text])[0]))
                  for i, t in enumerate(turns)]
        _, cs = apply_batch(s.load_snapshot(u), EditBatch(user_id=u, session_id="s1", session_hash=f"h{u}",
                                                         turns=turns, edits=edits))  # type: ignore[arg-type]
        s.commit(cs)
    return s


def test_warm_users_builds_every_index_before_the_first_request(tmp_path: Path) -> None:
    users = ["ann", "bob", "cy"]
    store = _store(tmp_path, users)
    embedded: list[int] = []

    def embed(texts: list[str]) -> np.ndarray:
        embedded.append(len(texts))
        return EMB.embed(texts)

    cold, warm = RouteIndexCache(EMB.embed), RouteIndexCache(embed, max_users=2)
    try:
        futures = warm.warm_users(store)
        assert len(futures) == 2  # no more than the cache holds
        for f in futures:
            f.result()
        built = len(embedded)
        assert built > 0
        warmed = [u for u in users if warm._cached(u, store.version_token(u)) is not None]
        assert warmed == store.users()[:2]
        cfg = RetrievalConfig(k=2)
        qv = EMB.embed(["what do I like to drink"])[0].tolist()
        for u in warmed:  # the first request builds nothing and ranks as a cold build does
            got = warm.use(store, u, lambda idx: retrieve(store, u, "what do I like to drink", qv, cfg, index=idx))
            assert len(embedded) == built
            want = cold.use(store, u, lambda idx: retrieve(store, u, "what do I like to drink", qv, cfg, index=idx))
            assert [i.fact.fact_id for i in got.items] == [i.fact.fact_id for i in want.items]
            assert got.items
    finally:
        cold.close()
        warm.close()
        store.close()


def test_build_deps_warms_the_route_indexes_only_when_warm_at_start(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The wiring of ``evomem serve``: ``serving.server.build_deps`` calls ``warm_users`` on the memory's route
    cache when ``ApiSettings.warm_at_start`` is on, and not when it is off. Model loading is stubbed out
    (this tests the wiring only; the warm-up itself is tested above)."""
    from memcore.memory import Memory
    from serving import server
    from serving.api import ApiSettings

    store = _store(tmp_path, ["ann"])
    calls: list[str] = []

    class Routes:
        def warm_users(self, s: object) -> list[object]:
            calls.append("warm")
            return []

    class FakeMemory:
        def __init__(self) -> None:
            self.store, self.routes = store, Routes()

        def close(self) -> None:
            pass

    monkeypatch.setattr(Memory, "from_settings", classmethod(lambda cls, *a, **k: FakeMemory()))
    monkeypatch.setattr(server, "build_models", lambda models, pipeline: (None, None))
    monkeypatch.setattr(server, "AnswerPipeline", lambda *a, **k: None)
    for on, want in ((True, ["warm"]), (False, [])):
        calls.clear()
        server.build_deps(None, None, None, ApiSettings(warm_at_start=on), ingest=None)  # type: ignore[arg-type]
        assert calls == want


def test_remote_version_read_path_returns_the_routes_result_and_raises_their_error(tmp_path: Path) -> None:
    """``use`` on a store whose version read is a round trip (Neo4j) runs the routes while the read is in
    flight: it returns their result on a current index and lets their error through. (The switch-interval
    handoff that once wrapped this path was taken out: two idle A/Bs showed no gain, issue 45.)"""
    import sys

    class Remote:  # the embedded store, reporting its version read as remote
        remote_version_token = True

        def __init__(self, s: EmbeddedStore) -> None:
            self._s = s

        def __getattr__(self, name: str) -> object:
            return getattr(self._s, name)

    store = _store(tmp_path, ["ann"])
    remote, cache = Remote(store), RouteIndexCache(EMB.embed)
    before = sys.getswitchinterval()
    try:
        cache.get(remote, "ann")  # type: ignore[arg-type]
        assert cache.use(remote, "ann", lambda idx: len(idx.ids)) == 3  # type: ignore[arg-type]

        def boom(idx: object) -> None:
            raise ValueError("routes failed")

        try:
            cache.use(remote, "ann", boom)  # type: ignore[arg-type]
            raise AssertionError("the routes' error was swallowed")
        except ValueError:
            pass
        assert sys.getswitchinterval() == before  # nothing on this path touches the interpreter's settings
    finally:
        cache.close()
        store.close()
