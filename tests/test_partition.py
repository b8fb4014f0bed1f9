"""Users partitioned over two real Neo4j servers (graph/partition.py) and moving a user between them.

The bars (issue 45): two servers, users split between them, the same search results as one server;
``evomem migrate --user U --to SERVER`` moves a user byte-identically, and a failure or a kill between
any two steps loses nothing (the source is deleted only after the target verified and the map moved).

The second server is started here (scripts/neo4j-server, its own pidfile, logfile and random port)
unless EVOMEM_NEO4J_URI_2 names one; like every Neo4j test, a missing server is a skip on a developer's
machine and a failure under CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evomem.cli import main
from evomem.examples import load_fixture
from graph.partition import (STEPS, PartitionConfig, PartitionError, PartitionMap, PartitionedStore, hash_server,
                             migrate_user)
from graph.portable import export_user
from llmclients.embeddings import HashEmbedder

ROOT = Path(__file__).resolve().parents[1]
USERS = ("maya", "leo", "sara")
QUESTIONS = ("Suggest a vacation for me", "what do I drink in the morning", "hiking beach", "allergies food",
             "where do I work", "what should I cook tonight")


# -- the config and the map (no server needed) --

def _cfg(**kw: Any) -> PartitionConfig:
    base: dict[str, Any] = {"servers": [{"name": "a", "uri": "bolt://127.0.0.1:1"},
                                        {"name": "b", "uri": "neo4j://cluster.example:7687"}]}
    return PartitionConfig.model_validate(base | kw)


@pytest.mark.parametrize("kw, message", [
    ({"users": {"maya": "c"}}, "unknown servers"),
    ({"default": "nowhere"}, "neither 'hash' nor a server name"),
    ({"servers": [{"name": "a", "uri": "bolt://x:1"}, {"name": "a", "uri": "bolt://y:1"}]}, "unique"),
    ({"servers": [{"name": "a", "uri": "http://x:7474"}]}, "use one of"),
    ({"servers": []}, "at least 1"),
])
def test_bad_partition_configs_are_refused(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _cfg(**kw)


def test_every_partition_field_has_help() -> None:
    from graph.partition import Neo4jServer

    for model in (PartitionConfig, Neo4jServer):
        for name, field in model.model_fields.items():
            assert field.description and len(field.description) > 20, (model.__name__, name)


def test_routing_map_then_default_rule(tmp_path: Path) -> None:
    users = [f"user{i}" for i in range(40)]
    hashed = PartitionMap(_cfg())
    where = {u: hashed.server_for(u) for u in users}
    assert set(where.values()) == {"a", "b"}  # the hash spreads users over both servers
    assert where == {u: hash_server(u, ["a", "b"]) for u in users}  # stable (not Python's salted hash)
    pinned = PartitionMap(_cfg(users={"user0": "b", "user1": "a"}, default="a"))
    assert [pinned.server_for(u) for u in ("user0", "user1", "user2")] == ["b", "a", "a"]
    # a move written by one process (the map file) reaches another process's map, and wins over `users`
    cfg = _cfg(users={"user0": "b"}, map_path=str(tmp_path / "map.json"))
    writer, reader = PartitionMap(cfg), PartitionMap(cfg)
    assert reader.server_for("user0") == "b"
    writer.assign("user0", "a")
    writer.assign("user5", "b")
    assert reader.server_for("user0") == "a" and reader.server_for("user5") == "b"
    assert json.loads((tmp_path / "map.json").read_text()) == {"user0": "a", "user5": "b"}
    with pytest.raises(PartitionError, match="unknown server"):
        writer.assign("user0", "c")


def test_settings_read_the_partition_file(tmp_path: Path) -> None:
    from evomem.settings import Settings

    f = tmp_path / "partitions.yaml"
    f.write_text("servers:\n  - {name: a, uri: 'bolt://127.0.0.1:1'}\n  - {name: b, uri: 'bolt://127.0.0.1:2'}\n"
                 "default: a\nmap_path: moves.json\n")
    s = Settings.from_env({"EVOMEM_STORE": "partitioned", "EVOMEM_PARTITIONS": str(f)})
    assert s.store.backend == "partitioned" and s.store.partitions is not None
    assert [x.name for x in s.store.partitions.servers] == ["a", "b"]
    assert s.store.partitions.map_path == str(tmp_path / "moves.json")  # relative to the file
    with pytest.raises(ValidationError, match="needs partitions"):
        Settings.from_env({"EVOMEM_STORE": "partitioned"})


# -- two real servers --

@pytest.fixture(scope="module")
def second_uri() -> Iterator[str]:
    from neo4j_server import serve_for_tests

    yield from serve_for_tests(os.environ.get("EVOMEM_NEO4J_URI_2"), "the partition tests (or set EVOMEM_NEO4J_URI_2)")


@pytest.fixture
def servers(neo4j_uri: str, second_uri: str) -> Iterator[dict[str, Any]]:
    """Both servers, wiped, as raw Neo4jStores (a, b) with their URIs."""
    from graph.neo4j import Neo4jStore

    stores = {"a": Neo4jStore(neo4j_uri, embedding_dim=16), "b": Neo4jStore(second_uri, embedding_dim=16)}
    for s in stores.values():
        s.setup()
        s.wipe()
    opened: list[PartitionedStore] = []
    yield {"uris": {"a": neo4j_uri, "b": second_uri}, "opened": opened, **stores}
    for p in opened:
        p.close()
    for s in stores.values():
        s.wipe()
        s.close()


def _partitioned(servers: dict[str, Any], tmp_path: Path, **kw: Any) -> tuple[PartitionedStore, Path]:
    """A partition file for the two servers (map file beside it) and the store it opens."""
    f = tmp_path / "partitions.json"
    f.write_text(json.dumps({"servers": [{"name": n, "uri": u} for n, u in servers["uris"].items()],
                             "map_path": "moves.json", **kw}))
    store = PartitionedStore.open(PartitionConfig.from_file(f), embedding_dim=16)
    store.setup()
    servers["opened"].append(store)
    return store, f


def _load_history(store: Any) -> Any:
    from memcore.memory import Memory

    mem = Memory(store, HashEmbedder(16))
    load_fixture(mem)
    return mem


def _results(mem: Any) -> dict[tuple[str, str], list[Any]]:
    return {(u, q): [(i.fact.fact_id, i.state.model_dump(mode="json")) for i in mem.retrieve(u, q, k=6).items]
            for u in USERS for q in QUESTIONS}


@pytest.mark.neo4j
def test_two_servers_split_users_and_search_as_one(servers: dict[str, Any], tmp_path: Path) -> None:
    one = _load_history(servers["a"])  # the reference: every user on one server
    want = _results(one)
    assert sum(len(v) for v in want.values()) >= 3 * len(QUESTIONS)  # the comparison has rows to compare
    servers["a"].wipe()
    store, _ = _partitioned(servers, tmp_path, users={"maya": "a", "leo": "b"}, default="hash")
    mem = _load_history(store)  # writes go to each user's server
    try:
        on = {n: set(servers[n].users()) for n in ("a", "b")}
        assert on["a"] and on["b"] and not on["a"] & on["b"], on  # split, no user on both
        assert "maya" in on["a"] and "leo" in on["b"] and store.users() == sorted(USERS)
        assert _results(mem) == want  # the same search results, item for item, states included
        assert store.counts()["Fact"] == sum(servers[n].counts()["Fact"] for n in ("a", "b")) > 0
        rows = store.run_readonly_cypher("leo", "MATCH (f:Fact) RETURN count(f) AS n")
        assert rows == [{"n": servers["b"].counts("leo")["Fact"]}]
    finally:
        mem.routes.close()


@pytest.mark.neo4j
def test_migrate_is_byte_identical_and_moves_the_map(servers: dict[str, Any], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    store, f = _partitioned(servers, tmp_path, default="a")
    mem = _load_history(store)
    before = {u: export_user(store, u) for u in USERS}
    want = _results(mem)
    rep = migrate_user(store, "leo", "b")
    assert rep["moved"] and rep["verified"] and rep["source_nodes_deleted"] > 0
    assert export_user(servers["b"], "leo") == before["leo"]  # byte-identical on the target
    assert "leo" not in servers["a"].users() and servers["b"].users() == ["leo"]
    assert json.loads((tmp_path / "moves.json").read_text()) == {"leo": "b"}
    assert _results(mem) == want  # searches see the same memory after the move
    # the CLI: another process reads the same partition file (and the move above from its map file)
    common = ["--store", "partitioned", "--partitions", str(f), "--embedder", "hash"]
    assert main(["migrate", "--user", "sara", "--to", "b", *common, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["user_id"], r["from"], r["to"], r["verified"]) for r in out["users"]] == [("sara", "a", "b", True)]
    assert export_user(servers["b"], "sara") == before["sara"]
    assert main(["users", *common, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["users"] == sorted(USERS)
    assert main(["migrate", "--user", "sara", "--to", "c", *common]) == 2  # not a server, not a URI
    assert "--to 'c'" in capsys.readouterr().err


@pytest.mark.neo4j
@pytest.mark.parametrize("fail_at", STEPS[:-1])
def test_a_failed_move_loses_nothing_and_can_be_rerun(servers: dict[str, Any], tmp_path: Path, fail_at: str) -> None:
    store, _ = _partitioned(servers, tmp_path, default="a")
    _load_history(store)
    before = export_user(store, "maya")

    def boom(step: str) -> None:
        if step == fail_at:
            raise RuntimeError(f"injected failure after {step}")

    with pytest.raises(RuntimeError, match="injected"):
        migrate_user(store, "maya", "b", on_step=boom)
    mapped = STEPS.index(fail_at) >= STEPS.index("mapped")
    assert store.server_for("maya") == ("b" if mapped else "a")
    assert export_user(store, "maya") == before  # the user's view: the same memory, wherever it is read
    assert "maya" in servers["a"].users()  # the source is never deleted before the move completes
    assert store.orphans() == ([("a", "maya")] if mapped else [("b", "maya")] if fail_at in ("imported", "verified")
                               else [])
    rep = migrate_user(store, "maya", "b")  # rerun: finishes the move (or cleans the stale copy)
    assert rep["verified"] and store.orphans() == [] and store.users() == sorted(USERS)
    assert servers["a"].users() == ["leo", "sara"] and export_user(servers["b"], "maya") == before


KILLER = """
import os, signal, sys
sys.path.insert(0, {root!r})
from graph.partition import PartitionConfig, PartitionedStore, migrate_user
store = PartitionedStore.open(PartitionConfig.from_file(sys.argv[1]), embedding_dim=16)
def step(name):
    print(name, flush=True)
    if name == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)
migrate_user(store, "maya", "b", on_step=step)
"""


@pytest.mark.neo4j
@pytest.mark.parametrize("kill_at", ["imported", "mapped"])
def test_a_killed_move_loses_nothing(servers: dict[str, Any], tmp_path: Path, kill_at: str) -> None:
    store, f = _partitioned(servers, tmp_path, default="a")
    _load_history(store)
    before = export_user(store, "maya")
    p = subprocess.run([sys.executable, "-c", KILLER.format(root=str(ROOT)), str(f), kill_at], capture_output=True,
                       text=True, timeout=300, cwd=ROOT)
    assert p.returncode == -9, p.stderr[-2000:]
    assert p.stdout.split()[-1] == kill_at  # it died right after that step
    assert export_user(store, "maya") == before  # another process sees the same memory
    assert store.server_for("maya") == ("b" if kill_at == "mapped" else "a")
    assert export_user(servers["a"], "maya") == before  # the held transaction was rolled back, not committed
    # the lock died with the process: the user can be written again (a held lock would block this), then moved
    writer = threading.Thread(target=_write_one, args=(store, "maya::f::after-kill"))
    writer.start()
    writer.join(timeout=120)
    assert not writer.is_alive(), "a write after the kill still waits on the dead move's lock"
    after = export_user(store, "maya")
    assert after != before and "maya::f::after-kill" in store.load_snapshot("maya").facts
    rep = migrate_user(store, "maya", "b")
    assert rep["verified"] and store.orphans() == [] and export_user(servers["b"], "maya") == after


def _write_one(store: Any, fact_id: str) -> None:
    from graph.edits import AttachFact, EditBatch
    from graph.models import Fact
    from memcore.memory import Memory

    concept = next(iter(store.load_snapshot("maya").concepts))
    fact = Fact(fact_id=fact_id, user_id="maya", statement="I started learning the cello", kind="experience")
    Memory(store, HashEmbedder(16)).apply(EditBatch(user_id="maya", edits=[AttachFact(fact=fact, concept_id=concept)]))


@pytest.mark.neo4j
def test_a_write_during_the_move_lands_on_the_target(servers: dict[str, Any], tmp_path: Path) -> None:
    """A commit of the moving user waits on the source's lock, then retries on the target: not lost."""
    from graph.edits import AttachFact, EditBatch
    from graph.models import Fact

    store, _ = _partitioned(servers, tmp_path, default="a")
    mem = _load_history(store)
    concept = next(iter(store.load_snapshot("maya").concepts))
    fact = Fact(fact_id="maya::f::late", user_id="maya", statement="I started learning the cello",
                kind="experience", holder="user")
    done: list[Any] = []

    def write() -> None:
        done.append(mem.apply(EditBatch(user_id="maya", session_id="late",
                                        edits=[AttachFact(fact=fact, concept_id=concept)])))

    writer = threading.Thread(target=write)

    def step(name: str) -> None:
        if name == "verified":  # the lock is held and the copy is made: a write now must not be lost
            writer.start()
            writer.join(timeout=3)
            assert writer.is_alive()  # it waits on the lock

    migrate_user(store, "maya", "b", on_step=step)
    writer.join(timeout=60)
    assert done, "the write did not finish"
    assert "maya::f::late" in servers["b"].load_snapshot("maya").facts
    assert "maya" not in servers["a"].users()
