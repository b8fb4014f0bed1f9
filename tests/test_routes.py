"""Seed routes, their fusion, and the induced concept edits (logic only: fakes where no store is needed)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from graph.edits import CreateConcept, MergeConcepts, SplitConcept
from graph.embedded.store import EmbeddedStore
from graph.models import Concept, Fact
from retrieval.retrieve import RetrievalConfig, diversify, fuse_routes
from retrieval.seeds.index import entities_of, information_of, retrieval_text
from retrieval.seeds.timeq import time_window
from graph.snapshot import Snapshot
from induction.concepts import ConceptInductionConfig, characteristic_terms, induce_tree, plan_concept_edits
from memcore.memory import Memory
from tests.test_contract import EMB, vacation_user

REF = datetime(2023, 8, 20, 15, 0)


@pytest.mark.parametrize("query, window", [
    ("What did Caroline do in May 2023?", (datetime(2023, 5, 1), datetime(2023, 6, 1))),
    ("what happened in 2022", (datetime(2022, 1, 1), datetime(2023, 1, 1))),
    ("where did I go last week?", (datetime(2023, 8, 13), datetime(2023, 8, 21))),
    ("what did I eat yesterday", (datetime(2023, 8, 19), datetime(2023, 8, 20))),
    ("what did we do in December", (datetime(2022, 12, 1), datetime(2023, 1, 1))),  # the last December before REF
    ("what do I like to eat", None),
])
def test_time_window(query: str, window: tuple[datetime, datetime] | None) -> None:
    assert time_window(query, REF) == window


def test_entities_and_retrieval_text() -> None:
    assert entities_of("Caroline: I went to Sweden. The trip was great") == {"caroline", "sweden"}
    f = Fact(fact_id="f", user_id="u", statement="went to Sweden", holder="Caroline")
    assert retrieval_text(f) == "Caroline: went to Sweden"
    assert retrieval_text(f.model_copy(update={"statement": "Caroline: went to Sweden"})) == "Caroline: went to Sweden"
    assert retrieval_text(f.model_copy(update={"holder": "user"})) == "went to Sweden"


def test_fusion_rewards_agreement_and_weighs_holders() -> None:
    cfg = RetrievalConfig(k=3)
    hits = {"fact_dense": [("a", 0.9, 1), ("b", 0.8, 2)], "fact_bm25": [("b", 5.0, 1)], "turn_dense": [("c", 0.7, 1)]}
    seeds = fuse_routes(hits, cfg, {})
    assert [s.fact_id for s in seeds] == ["b", "a", "c"]  # two routes beat one
    assert seeds[0].routes == {"fact_dense": 2, "fact_bm25": 1}
    # The same support, said by the assistant: it ranks below the user's fact.
    seeds = fuse_routes({"fact_dense": [("x", 0.9, 1), ("y", 0.8, 2)]}, cfg, {"x": "assistant", "y": "user"})
    assert [s.fact_id for s in seeds] == ["y", "x"]


@pytest.mark.parametrize("turn_f, sess_f, want", [
    (1.0, 1.0, ["a1", "a2", "a3"]),  # off: fused order
    (0.5, 1.0, ["a1", "a3", "b1"]),  # a2 repeats a1's turn: 0.9 * 0.5 falls below a3 and b1
    (1.0, 0.8, ["a1", "b1", "a2"]),  # a2, a3 share a1's session: 0.72 and 0.68 fall below b1's 0.8
    (0.5, 0.5, ["a1", "b1", "a3"]),  # a2 pays for its turn and its session (0.225), a3 only its session
])
def test_diversify_discounts_repeated_turns_and_sessions(turn_f: float, sess_f: float, want: list[str]) -> None:
    score = {"a1": 1.0, "a2": 0.9, "a3": 0.85, "b1": 0.8, "c1": 0.3}
    turns = {"a1": ["t1"], "a2": ["t1"], "a3": ["t2"], "b1": ["t3"], "c1": ["t4"]}
    sess = {"a1": "s1", "a2": "s1", "a3": "s1", "b1": "s2", "c1": "s3"}
    assert diversify(list(score), dict(score), 3, turns, sess, turn_f, sess_f) == want


def test_information_leaves_out_the_holder_and_discounts_empty_lines() -> None:
    idf = {"melanie": 1.0, "fun": 2.0, "pottery": 5.0, "class": 3.0}
    empty = Fact(fact_id="e", user_id="u", statement="Melanie: It was so fun!", holder="Melanie")
    full = Fact(fact_id="p", user_id="u", statement="Melanie: signed up for a pottery class", holder="Melanie")
    assert information_of(empty, idf) == 2.0  # 'fun' only: the name and function words say nothing
    assert information_of(full, idf) == 5.0 + 3.0 + max(idf.values()) * 2  # 'signed', 'up' unseen: rarest
    terse = Fact(fact_id="v", user_id="u", statement="Is vegetarian")
    idf |= {"vegetarian": 4.0, "works": 1.5, "night": 1.5, "shifts": 1.5, "hospital": 1.5}
    busy = Fact(fact_id="n", user_id="u", statement="Works night shifts at the hospital")
    assert information_of(terse, idf) < information_of(busy, idf)  # a sum starves the terse, specific line
    assert information_of(terse, idf, "max") == 4.0 > information_of(busy, idf, "max") == 1.5
    assert information_of(empty, idf, "max") == 2.0
    hits = {"fact_dense": [("e", 0.9, 1), ("p", 0.8, 2)]}
    assert [h.fact_id for h in fuse_routes(hits, RetrievalConfig(k=2), {})] == ["e", "p"]
    assert [h.fact_id for h in fuse_routes(hits, RetrievalConfig(k=2), {}, prior={"e": 0.2})] == ["p", "e"]


def test_memory_retrieve_explains_routes_and_respects_allowed_ids(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    vacation_user(store)
    mem = Memory(store, EMB)
    b = mem.retrieve("maya", "beach trips for holidays")
    top = b.explain.seeds[0]
    assert top.fact_id == "maya:beach" and {"fact_dense", "fact_bm25", "turn_bm25"} <= set(top.routes)
    assert all(k.startswith("route_") for k in b.explain.timings_ms if "route" in k)
    token = store.version_token("maya")
    only = frozenset({"maya:knee", "maya:sushi"})
    b2 = mem.retrieve("maya", "beach trips for holidays", allowed_ids=only)
    assert {i.fact.fact_id for i in b2.items} <= only
    b3 = mem.retrieve("maya", "beach trips", routes=("fact_bm25",))
    assert all(set(s.routes) == {"fact_bm25"} for s in b3.explain.seeds)
    assert store.version_token("maya") == token  # reads do not move the token
    assert mem.routes._d["maya"]._information == {}  # only a config with min_information reads it
    mem.retrieval = mem.retrieval.model_copy(update={"min_information": 0.5, "information_measure": "max"})
    mem.retrieve("maya", "beach trips")
    assert set(mem.routes._d["maya"]._information) == {"max"}
    store.close()


def _blobs(rng: np.random.Generator, centre: np.ndarray, n: int) -> np.ndarray:
    return centre + 0.05 * rng.standard_normal((n, len(centre)))


def test_induced_tree_and_names() -> None:
    rng = np.random.default_rng(0)
    a, b = np.eye(8)[0], np.eye(8)[1]
    vec = np.vstack([_blobs(rng, a, 6), _blobs(rng, b, 6)])
    texts = [f"my dog {w} walks" for w in "abcdef"] + [f"the piano lesson {w} music" for w in "abcdef"]
    tree = induce_tree([f"f{i}" for i in range(12)], vec, texts, ConceptInductionConfig(min_cluster=3))
    assert sorted(len(c.fact_ids) for c in tree) == [6, 6]
    assert {tree[0].name.split(" / ")[0], tree[1].name.split(" / ")[0]} & {"dog", "walks", "piano", "lesson", "music"}
    assert characteristic_terms(texts[:6], texts, 1)[0] in {"dog", "walks"}


def test_plan_creates_merges_and_splits() -> None:
    rng = np.random.default_rng(1)
    e = np.eye(8)
    u = "u"
    snap = Snapshot(user_id=u)
    snap.concepts = {c: Concept(concept_id=c, user_id=u, name=c) for c in (f"{u}::root", "pets", "dogs", "mixed")}
    snap.parent = {"pets": f"{u}::root", "dogs": f"{u}::root", "mixed": f"{u}::root"}
    vectors: dict[str, np.ndarray] = {}
    texts: dict[str, str] = {}

    def put(concept: str | None, prefix: str, centre: np.ndarray, n: int, words: str) -> list[str]:
        ids = [f"{prefix}{i}" for i in range(n)]
        for i, v in zip(ids, _blobs(rng, centre, n)):
            vectors[i], texts[i] = v, f"{words} {i}"
            if concept:
                snap.fact_concept[i] = concept
        return ids

    put("pets", "p", e[0], 5, "my dog")
    put("dogs", "d", e[0], 4, "the puppy")          # converges with pets: MERGE into the larger
    put("mixed", "m", e[1], 15, "piano music")       # mixed grew two unrelated halves: SPLIT
    put("mixed", "n", e[2], 15, "tax money")
    new = put(None, "x", e[3], 5, "hiking trail")    # near nothing: a cluster of its own, CREATE
    near = put(None, "y", e[0], 1, "dog food")       # joins the dog concept
    edits, place = plan_concept_edits(snap, vectors, texts, new + near, ConceptInductionConfig(min_cluster=4, split_min=20))
    merge = next(x for x in edits if isinstance(x, MergeConcepts))
    split = next(x for x in edits if isinstance(x, SplitConcept))
    created = next(x for x in edits if isinstance(x, CreateConcept))
    assert merge.source_id == "dogs" and merge.target_id == "pets"
    assert split.concept_id == "mixed" and sorted(len(c.fact_ids) for c in split.children) == [15, 15]
    assert {c.fact_ids[0][0] for c in split.children} == {"m", "n"}
    assert all(place[f] == created.concept_id for f in new)
    assert {"hiking", "trail"} & set(created.name.split(" / "))
    assert place[near[0]] == "pets"


def test_purged_fact_leaves_the_route_index_and_its_memo(tmp_path: Path) -> None:
    from graph.store import PurgeSet

    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    vacation_user(store)
    mem = Memory(store, EMB)
    assert "maya:sushi" in {s.fact_id for s in mem.retrieve("maya", "sushi restaurants").explain.seeds}
    store.purge_items(PurgeSet(user_id="maya", expected_version=store.load_snapshot("maya").version, fact_ids=("maya:sushi",)))
    b = mem.retrieve("maya", "sushi restaurants")
    assert "maya:sushi" not in {i.fact.fact_id for i in b.items}
    assert not any("sushi" in t for t in mem.routes._memos["maya"].d)
    store.close()


def test_warm_builds_the_index_once_in_the_background(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a commit, ``warm`` rebuilds in the background; the next request finds that index (no second
    build), a later commit queues a rebuild at its own version, and ``close`` leaves no thread running."""
    import threading

    import retrieval.seeds.index as ix
    from graph.edits import EditBatch
    from tests.test_contract import attach, commit, fact

    builds: list[str] = []
    real = ix.build_index

    def counted(*a: object, **k: object) -> ix.RouteIndex:
        builds.append(threading.current_thread().name)
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(ix, "build_index", counted)
    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    vacation_user(store)
    mem = Memory(store, EMB)
    assert mem.routes.warm(store, "maya").result(timeout=60) is None
    assert len(builds) == 1 and builds[0].startswith("evomem-warm")
    warmed = mem.routes._d["maya"]
    assert mem.retrieve("maya", "sushi restaurants").explain.seeds and mem.routes._d["maya"] is warmed
    assert len(builds) == 1  # the request used the warmed index
    commit(store, EditBatch(user_id="maya", session_id="s2", session_hash="h2", edits=[
        attach(fact("maya", "scuba", "Takes scuba diving lessons"), "maya:travel")]))
    mem.routes.warm(store, "maya").result(timeout=60)
    assert len(builds) == 2 and mem.routes._d["maya"].token == store.version_token("maya")
    assert mem.retrieve("maya", "scuba diving lessons").explain.seeds[0].fact_id == "maya:scuba" and len(builds) == 2
    mem.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("evomem-warm")]


def test_a_background_build_holds_up_no_other_user_and_is_not_repeated(tmp_path: Path) -> None:
    """While one user's index is being built in the background, another user's request builds and
    returns; a request of the same user waits for that build and takes its index (one build)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from retrieval.seeds.index import RouteIndexCache

    gate, entered, calls = threading.Event(), threading.Event(), []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(threading.current_thread().name)
        if threading.current_thread().name.startswith("evomem-warm"):
            entered.set()
            assert gate.wait(timeout=60)
        return EMB.embed(texts)

    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    vacation_user(store, "maya")
    vacation_user(store, "leo")
    cache = RouteIndexCache(embed)  # type: ignore[arg-type]
    warming = cache.warm(store, "maya")
    assert entered.wait(timeout=60)
    assert cache.get(store, "leo").token == store.version_token("leo")  # not held up by maya's build
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(cache.get, store, "maya")
        assert not waiting.done()
        gate.set()
        warming.result(timeout=60)
        assert waiting.result(timeout=60) is cache._d["maya"]
    assert sum(n.startswith("evomem-warm") for n in calls) == 2 and len(calls) == 4  # facts + turns, per user
    cache.close()
    store.close()


@pytest.mark.parametrize("warm", [True, False])
def test_served_ingestion_warms_the_users_index(tmp_path: Path, warm: bool) -> None:
    """``evomem serve`` ingestion (serving.server.ingest_with, ``ApiSettings.warm_after_ingest``): a committed
    session leaves the user's index being built at the new version; an unchanged one queues nothing."""
    from induction.config import IngestConfig
    from induction.pipeline import make_ingestor
    from serving.server import ingest_with

    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    mem = Memory(store, EMB)
    fn = ingest_with(make_ingestor(mem, IngestConfig(adjudicator="rules")), warm=warm)
    body = {"session_id": "s1", "turns": [{"role": "user", "text": "I started learning the cello last month."}]}
    assert fn("sara", body)["status"] == "committed"
    queued = mem.routes._queued.get("sara")
    if queued is not None:
        queued.result(timeout=60)
    mem.routes.close()  # joins a build in progress
    built = mem.routes._d.get("sara")
    assert (built is not None and built.token == store.version_token("sara")) is warm
    assert fn("sara", body)["status"] == "unchanged" and not mem.routes._queued
    mem.close()


def test_traversal_from_the_route_index_pairs_updates(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    vacation_user(store)
    mem = Memory(store, EMB)
    b = mem.retrieve("maya", "beach trips for holidays", k=1)
    window = {s.fact_id for s in b.explain.seeds if s.window}
    states = {i.fact.fact_id: i.state.validity for i in b.items if i.fact.fact_id not in window}
    assert states == {"maya:beach": "current", "maya:hiking": "superseded"}
    # the next turn joins as a window seed; the turn before is beach's replaced partner: traversal's
    assert window == {"maya:knee"} and [s.fact_id for s in b.explain.seeds if not s.window] == ["maya:beach"]
    assert b.explain.added_by_traversal == ["maya:hiking"] and b.items[0].state.concept_path == ("memory", "travel")
    assert {i.fact.fact_id for i in mem.retrieve("maya", "beach trips for holidays", k=1, traverse=False).items} == {"maya:beach", "maya:knee"}
    old = mem.retrieve("maya", "hiking trips", k=1, allowed_ids=frozenset({"maya:hiking", "maya:knee"}))
    # before beach existed, hiking was current; its window reaches knee (two turns on) but not the hidden beach
    assert {i.fact.fact_id: i.state.validity for i in old.items} == {"maya:hiking": "current", "maya:knee": "current"}
    store.close()


@pytest.mark.neo4j
def test_neo4j_reader_sees_another_writers_commit_and_purge(neo4j_uri: str) -> None:
    """Two Neo4j stores (two drivers: two processes' view). The reader's route index is warm, so its
    routes run on the cached index while the version read is in flight (RouteIndexCache.use); the
    writer's commit, and then its purge, must still show on the reader's very next retrieve."""
    from graph.edits import EditBatch
    from graph.neo4j import Neo4jStore
    from graph.store import UnknownUser
    from tests.test_contract import attach, commit, fact

    writer, reader = Neo4jStore(neo4j_uri, embedding_dim=16), Neo4jStore(neo4j_uri, embedding_dim=16)
    writer.setup()
    writer.purge_user("maya")
    try:
        vacation_user(writer)
        mem = Memory(reader, EMB)
        assert "maya:scuba" not in {i.fact.fact_id for i in mem.retrieve("maya", "scuba diving lessons").items}
        cached = mem.routes._d["maya"]
        commit(writer, EditBatch(user_id="maya", session_id="s2", session_hash="h2", edits=[
            attach(fact("maya", "scuba", "Takes scuba diving lessons"), "maya:travel")]))
        b = mem.retrieve("maya", "scuba diving lessons")
        assert b.explain.seeds[0].fact_id == "maya:scuba"
        assert mem.routes._d["maya"] is not cached and mem.routes._d["maya"].token == reader.version_token("maya")
        again = mem.routes._d["maya"]
        assert mem.retrieve("maya", "scuba diving lessons").explain.seeds[0].fact_id == "maya:scuba"
        assert mem.routes._d["maya"] is again  # unchanged version: the cached index is reused
        writer.purge_user("maya")
        with pytest.raises(UnknownUser):
            mem.retrieve("maya", "scuba diving lessons")
        mem.close()
    finally:
        writer.purge_user("maya")
        writer.close()


@pytest.mark.neo4j
def test_neo4j_index_built_while_a_user_was_created_does_not_survive_its_purge(neo4j_uri: str) -> None:
    """The race the two-process test caught (stale_purged): a reader reads the token of a user who does
    not exist yet, another process creates the user, the reader's snapshot sees that write and caches
    the index under the token it read. After a purge the user is absent again; if absent users shared
    one token ("none"), the next read would match it and serve the purged facts."""
    from graph.neo4j import Neo4jStore
    from graph.store import UnknownUser

    writer, reader = Neo4jStore(neo4j_uri, embedding_dim=16), Neo4jStore(neo4j_uri, embedding_dim=16)
    writer.setup()
    writer.purge_user("maya")
    try:
        mem = Memory(reader, EMB)
        absent = reader.version_token("maya")
        assert reader.version_token("maya") != absent  # an absent user's token never repeats
        vacation_user(writer)  # lands between the reader's token read and its snapshot read
        idx = mem.routes.get(reader, "maya", absent)
        assert "maya:beach" in idx.facts and mem.routes._d["maya"].token == absent
        writer.purge_user("maya")
        with pytest.raises(UnknownUser):  # not the cached index: the purged facts stay gone
            mem.retrieve("maya", "beach trips for holidays")
        mem.close()
    finally:
        writer.purge_user("maya")
        writer.close()


def test_the_store_seed_path_weighs_holders_too(tmp_path: Path) -> None:
    from graph.edits import CreateConcept as CC, EditBatch
    from retrieval.retrieve import retrieve
    from tests.test_contract import attach, commit

    store = EmbeddedStore(tmp_path / "db")
    store.setup()
    commit(store, EditBatch(user_id="ada", edits=[CC(concept_id="ada:c", name="c"),
        attach(Fact(fact_id="ada:a", user_id="ada", statement="assistant: jazz piano lessons help", holder="assistant"), "ada:c"),
        attach(Fact(fact_id="ada:u", user_id="ada", statement="Takes jazz piano lessons", holder="user"), "ada:c")]))
    q = "jazz piano lessons"
    qv = [float(x) for x in EMB.embed([q])[0]]
    even = {s.fact_id: s.score for s in retrieve(store, "ada", q, qv, RetrievalConfig(holder_weights={})).explain.seeds}
    half = {s.fact_id: s.score for s in retrieve(store, "ada", q, qv, RetrievalConfig()).explain.seeds}  # assistant 0.5
    assert half["ada:a"] == pytest.approx(even["ada:a"] * 0.5) and half["ada:u"] == pytest.approx(even["ada:u"])
    # a broad request weighs the assistant fully (retrieval/seeds/breadth.py), on this path too
    q = "summarize my jazz piano lessons so far"
    qv = [float(x) for x in EMB.embed([q])[0]]
    even = {s.fact_id: s.score for s in retrieve(store, "ada", q, qv, RetrievalConfig(holder_weights={})).explain.seeds}
    full = {s.fact_id: s.score for s in retrieve(store, "ada", q, qv, RetrievalConfig()).explain.seeds}
    assert full == pytest.approx(even)
    store.close()


def _index(facts: list[Fact], turns: list[tuple[str, str, str]]):  # type: ignore[no-untyped-def]
    from retrieval.seeds.index import build_index

    return build_index(Snapshot(user_id="u", facts={f.fact_id: f for f in facts}), turns, "v1", None)


def test_a_turn_that_repeats_an_earlier_one_takes_no_turn_rank() -> None:
    from retrieval.seeds.rank import RouteContext

    said = "my sprint two deadline is April nineteen"
    facts = [Fact(fact_id="a", user_id="u", statement=said, source_turn_ids=("t1", "t2")),
             Fact(fact_id="b", user_id="u", statement="sprint planning", source_turn_ids=("t3",))]
    turns = [("t1", "user", said), ("t2", "user", said), ("t3", "user", "sprint planning for April")]
    hits = RouteContext(_index(facts, turns), "sprint deadline April", None, None, 10).run("turn_bm25")
    # t2 hands "a" nothing new, so "b" keeps the second rank (it had the third when t2 consumed one)
    assert [(f, r) for f, _, r in hits] == [("a", 1), ("b", 2)]


@pytest.mark.parametrize("statement, standing", [
    ("Always include version numbers when I ask about software dependencies.", True),
    ("Never use jargon in your answers.", True),
    ("Please always reply in French.", True),
    ("From now on, keep answers under 100 words.", True),
    ("Keep it short whenever I ask about recipes.", True),
    ("I always run in the morning.", False),
    ("I've never used Zotero.", False),
    ("I asked about the deadline when we met.", False),
    ("Never been to Japan, but I'd love to go.", False),
    ("Always loved jazz since I was a kid.", False),
])
def test_standing_instruction(statement: str, standing: bool) -> None:
    from retrieval.seeds.instruction import standing_instruction

    assert standing_instruction(statement) is standing


def test_the_instruction_route_ranks_only_a_persons_standing_instructions() -> None:
    from retrieval.seeds.rank import RouteContext

    facts = [Fact(fact_id="i1", user_id="u", statement="Always use bullet points when I ask about my resume."),
             Fact(fact_id="i2", user_id="u", statement="Always give dates as Month Day, Year when I ask about deadlines."),
             Fact(fact_id="x", user_id="u", statement="I updated my resume last week."),
             Fact(fact_id="a", user_id="u", holder="assistant", statement="Always use bullet points for resumes.")]
    idx = _index(facts, [])
    v = {"i1": [1.0, 0.0], "i2": [0.0, 1.0], "x": [1.0, 0.0], "a": [1.0, 0.0]}
    idx.fmat = np.asarray([v[i] for i in idx.ids], dtype=np.float32)
    hits = RouteContext(idx, "How should I format my resume?", np.asarray([0.9, 0.1]), None, 10).run("instruction")
    assert [f for f, _, _ in hits] == ["i1", "i2"]  # the nearest first; not the plain fact, not the assistant's advice


def _placed_index(facts: list[Fact], turns: list[tuple[str, str, str, str, int]]):  # type: ignore[no-untyped-def]
    """An index whose turns carry (session, position): (turn_id, role, text, session, seq)."""
    from retrieval.seeds.index import build_index

    return build_index(Snapshot(user_id="u", facts={f.fact_id: f for f in facts}), [t[:3] for t in turns], "v1", None,
                       turn_when={t[0]: (None, t[4]) for t in turns}, turn_session={t[0]: t[3] for t in turns})


def _chat() -> tuple[list[Fact], list[tuple[str, str, str, str, int]]]:
    said = [("s1", 0, "Audrey", "At the park one of my pups pulled so hard the leash busted."),
            ("s1", 1, "Andrew", "Oh no, is she okay?"),
            ("s1", 2, "Audrey", "I petted and hugged the pup, then we slowly walked home."),
            ("s1", 3, "Andrew", "Glad she is fine."),
            ("s2", 1, "Audrey", "New collars arrived today.")]
    facts, turns = [], []
    for sess, seq, who, text in said:
        tid = f"{sess}:{seq}"
        facts.append(Fact(fact_id=f"f{tid}", user_id="u", statement=text, holder=who, session_id=sess,
                          source_turn_ids=(tid,)))
        turns.append((tid, who, text, sess, seq))
    return facts, turns


def test_the_neighbour_route_reads_the_turns_around_a_seed_speaker_first_within_its_session() -> None:
    from retrieval.seeds.rank import RouteContext

    facts, turns = _chat()
    idx = _placed_index(facts, turns)
    seed = idx.row["fs1:1"]
    hits = RouteContext(idx, "leash", None, None, 10).neighbour([seed], span=2)
    # the seed's speaker's own next turn first, then the other speaker's, nearest and later first;
    # s2:1 shares a position, not the session
    assert [(f, r) for f, _, r in hits] == [("fs1:3", 1), ("fs1:2", 2), ("fs1:0", 3)]
    hidden = np.array([i != "fs1:2" for i in idx.ids])  # a time-travel view without that fact
    assert "fs1:2" not in {f for f, _, _ in RouteContext(idx, "leash", None, hidden, 10).neighbour([seed], span=2)}
    assert [f for f, _, _ in RouteContext(idx, "leash", None, None, 10).neighbour([seed], span=1)] == ["fs1:2", "fs1:0"]
    assert _index(facts, [t[:3] for t in turns]).turn_at == {}  # turns without a place: the route stays silent


def test_the_neighbour_route_brings_the_answer_that_follows_the_setup() -> None:
    from retrieval.retrieve import route_seeds

    facts, turns = _chat()
    idx = _placed_index(facts, turns)
    q = "What happened after the leash busted at the park?"
    with_nb = RetrievalConfig(k=3, routes=("fact_bm25", "neighbour"))
    got = route_seeds(idx, q, None, with_nb)[0]
    # the setup is the only text match; the speaker's next turn (the answer) follows it, then the reply
    assert [s.fact_id for s in got] == ["fs1:0", "fs1:2", "fs1:1"] and got[1].routes == {"neighbour": 1}
    assert [s.window for s in got] == [False, True, True]
    assert [s.fact_id for s in route_seeds(idx, q, None, RetrievalConfig(k=3, routes=("fact_bm25",)))[0]] == ["fs1:0"]


def test_the_neighbour_route_widens_k_instead_of_displacing_a_seed() -> None:
    from retrieval.retrieve import route_seeds

    facts, turns = _chat()
    idx = _placed_index(facts, turns)
    cfg = RetrievalConfig(k=2, routes=("fact_bm25", "neighbour"))
    first = [s.fact_id for s in route_seeds(idx, "leash collars", None, cfg.model_copy(update={"routes": ("fact_bm25",)}))[0]]
    got = [s.fact_id for s in route_seeds(idx, "leash collars", None, cfg)[0]]
    assert sorted(first) == ["fs1:0", "fs2:1"]
    # fs1:0's speaker's next turn outranks the second seed, yet both first-pass seeds stay: K grew by two
    assert set(first) <= set(got) and len(got) == 4 and got.index("fs1:2") < got.index("fs2:1")
