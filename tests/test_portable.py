"""Export / import / migrate (graph/portable.py, `evomem export|import|migrate`) on both backends.

The bar: export → import → export is byte-identical; bad files are refused with the line that is
wrong and write nothing; a failed import (the store refuses its commit) leaves nothing behind;
an embedded → Neo4j migration of a LoCoMo conversation retrieves the same facts with the same states.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from evomem.cli import main
from graph.edits import AttachFact, CreateConcept, EditBatch
from graph.models import Fact
from retrieval.retrieve import RetrievalConfig
from graph.portable import FORMAT_VERSION, ImportRefused, PortableError, export_user, import_user, loads
from induction.forget import retract
from llmclients.embeddings import HashEmbedder

T0 = datetime(2025, 3, 1, tzinfo=timezone.utc)


def everything(store: Any) -> dict[str, Any]:
    return {"users": store.users(), "counts": store.counts()}


def test_export_import_export_is_byte_identical(memory: Any) -> None:
    store = memory.store
    retract(memory, "maya", fact_id="maya::f::veg", reason="user asked")  # a tombstone and a RETRACT edit
    memory.undo("maya", memory.store.load_snapshot("maya").edits and max(
        memory.store.load_snapshot("maya").edits.values(), key=lambda e: e.seq).edit_id)  # an UNDO and undone_at
    for user in ("maya", "leo", "sara"):
        first = export_user(store, user)
        header = json.loads(first.splitlines()[0])
        assert header["format"] == "evomem-export" and header["version"] == FORMAT_VERSION
        before = store.load_snapshot(user)
        store.purge_user(user)
        assert user not in store.users()
        import_user(store, loads(first))
        assert export_user(store, user) == first
        after = store.load_snapshot(user)
        assert after.version == before.version and after.edits == before.edits  # ids and audit log kept
    # the imported memory works: retrieval finds the facts and their relations
    items = {i.fact.fact_id: i.state.validity for i in memory.retrieve("maya", "vacation hiking beach", k=5).items}
    assert items.get("maya::f::hiking") == "superseded" and items.get("maya::f::beach") == "current"


def test_existing_user_is_refused_unless_replace(memory: Any) -> None:
    text = export_user(memory.store, "leo")
    with pytest.raises(ImportRefused, match="--replace"):
        import_user(memory.store, loads(text))
    retract(memory, "leo", fact_id="leo::f::tea", reason="x")
    changed = export_user(memory.store, "leo")
    import_user(memory.store, loads(text), mode="replace")
    assert export_user(memory.store, "leo") == text != changed


def _bob_file(fact_id: str = "bob::f::1") -> str:
    from graph.edits import apply_batch
    from graph.portable import UserExport, dumps
    from graph.snapshot import Snapshot

    snap, _ = apply_batch(Snapshot(user_id="bob"), EditBatch(user_id="bob", edits=[
        CreateConcept(concept_id="bob::c::x", name="x"),
        AttachFact(fact=Fact(fact_id=fact_id, user_id="bob", statement="Likes tea", observed_at=T0),
                   concept_id="bob::c::x")]), T0)
    snap.version = 1
    return dumps(UserExport(snapshot=snap, turns=[], embeddings={fact_id: [0.5] * 16}))


def _edit_line(text: str, n: int, fn: Any) -> str:
    lines = text.splitlines()
    lines[n] = json.dumps(fn(json.loads(lines[n])))
    return "\n".join(lines) + "\n"


BAD = [  # (what is wrong, how to make it from a good file, message)
    ("not an export", lambda t: '{"hello": 1}\n' + t, "line 1: not an evomem-export file"),
    ("newer format", lambda t: _edit_line(t, 0, lambda h: h | {"version": 99}), "newer evomem"),
    ("truncated", lambda t: "\n".join(t.splitlines()[:-1]) + "\n", "truncated"),
    ("broken json", lambda t: t.replace('"statement":"Likes tea"', '"statement":"Likes tea'), "not valid JSON"),
    ("unknown field", lambda t: t.replace('"statement":', '"stat":'), "invalid fact record"),
    ("another user's record", lambda t: t.replace('"user_id":"bob","valid_from"', '"user_id":"amy","valid_from"'),
     "belongs to user 'amy'"),
    ("other namespace", lambda t: t.replace("bob::c::x", "amy::c::x"), "another user's namespace"),
    ("dangling concept", lambda t: t.replace('"concept_id":"bob::c::x","confidence"', '"concept_id":"bob::c::zz",'
                                             '"confidence"'), "inconsistent"),
    ("bad embedding", lambda t: t.replace('"embedding":"', '"embedding":"!!'), "invalid fact record"),
    ("out of order", lambda t: "\n".join([t.splitlines()[0], *reversed(t.splitlines()[1:])]) + "\n", "must come before"),
]


@pytest.mark.parametrize("what,make,message", BAD, ids=[b[0] for b in BAD])
def test_bad_files_are_refused_and_write_nothing(store: Any, what: str, make: Any, message: str) -> None:
    good = _bob_file()
    loads(good)  # the base file is fine
    before = everything(store)
    with pytest.raises(PortableError, match=message):
        import_user(store, loads(make(good)))
    assert everything(store) == before


def test_a_failed_commit_leaves_nothing(store: Any) -> None:
    """The store refuses the import's commit (a fact id another user holds): nothing of it stays."""
    from graph.edits import apply_batch

    _, cs = apply_batch(store.load_snapshot("amy"), EditBatch(user_id="amy", edits=[
        CreateConcept(concept_id="amy::c::x", name="x"),
        AttachFact(fact=Fact(fact_id="shared-1", user_id="amy", statement="Likes coffee"), concept_id="amy::c::x",
                   embedding=(0.1,) * 16)]), T0)
    store.commit(cs)
    before = everything(store)
    with pytest.raises(ValueError, match="already in use"):
        import_user(store, loads(_bob_file("shared-1")))
    assert everything(store) == before and "bob" not in store.users()


def test_replace_that_fails_puts_the_old_memory_back(store: Any) -> None:
    from graph.edits import apply_batch

    import_user(store, loads(_bob_file()))
    original = export_user(store, "bob")
    _, cs = apply_batch(store.load_snapshot("amy"), EditBatch(user_id="amy", edits=[
        CreateConcept(concept_id="amy::c::x", name="x"),
        AttachFact(fact=Fact(fact_id="shared-1", user_id="amy", statement="Likes coffee"), concept_id="amy::c::x",
                   embedding=(0.1,) * 16)]), T0)
    store.commit(cs)
    with pytest.raises(ValueError, match="already in use"):
        import_user(store, loads(_bob_file("shared-1")), mode="replace")
    assert export_user(store, "bob") == original


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_export_import(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a = ["--store-path", str(tmp_path / "a"), "--embedder", "hash"]
    b = ["--store-path", str(tmp_path / "b"), "--embedder", "hash"]
    assert run(capsys, "load-example", *a)[0] == 0
    rc, out, _ = run(capsys, "export", "--user", "maya", "--out", str(tmp_path / "m.jsonl"), *a, "--json")
    assert rc == 0 and json.loads(out)["counts"]["facts"] == 5
    rc, out, err = run(capsys, "import", str(tmp_path / "m.jsonl"), *b)
    assert rc == 0 and "imported maya: 5 facts" in out, err
    rc, _, err = run(capsys, "import", str(tmp_path / "m.jsonl"), *b)
    assert rc == 2 and "already has memories" in err and "--replace" in err
    assert run(capsys, "export", "--user", "maya", "--out", str(tmp_path / "m2.jsonl"), *b)[0] == 0
    assert (tmp_path / "m.jsonl").read_bytes() == (tmp_path / "m2.jsonl").read_bytes()
    (tmp_path / "bad.jsonl").write_text((tmp_path / "m.jsonl").read_text()[:500])
    rc, _, err = run(capsys, "import", str(tmp_path / "bad.jsonl"), "--store-path", str(tmp_path / "c"), "--embedder", "hash")
    assert rc == 2 and "line " in err
    rc, _, err = run(capsys, "export", "--user", "ghost", "--out", str(tmp_path / "g.jsonl"), *a)
    assert rc == 2 and "ghost" in err and not (tmp_path / "g.jsonl").exists()


QUESTIONS = ["When did Caroline go to the LGBTQ support group?", "When did Melanie paint a sunrise?",
             "What did Caroline research?", "What is Caroline's identity?", "When did Melanie run a charity race?",
             "When is Melanie planning on going camping?", "What is Caroline's relationship status?",
             "What does Melanie like to do with her kids?"]


@pytest.mark.neo4j
@pytest.mark.slow
def test_locomo_migration_embedded_to_neo4j_and_back(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     bench_data: Path, neo4j_uri: str, _neo4j_store: Any) -> None:
    from graph.embedded import EmbeddedStore
    from graph.neo4j import Neo4jStore
    from memcore.memory import Memory

    _neo4j_store.wipe()
    uri = neo4j_uri
    src = ["--store-path", str(tmp_path / "emb"), "--embedder", "hash"]
    rc, out, err = run(capsys, "ingest", str(bench_data / "locomo" / "locomo10.json"), "--format", "locomo",
                       "--conversation", "conv-26", *src, "--json", "--no-progress")
    assert rc == 0, err
    rc, out, err = run(capsys, "migrate", "--to", uri, *src, "--json")
    assert rc == 0, err
    report = json.loads(out)["users"]
    assert report and all(r["verified"] for r in report) and sum(r["facts"] for r in report) > 50
    users = [r["user_id"] for r in report]
    # The default retrieval reads a per-user RouteIndex built from the snapshot (retrieval/seeds/: dense,
    # BM25, turn, concept, entity and time routes in Python), so seeds, traversal and states are the same
    # item for item on both backends; dense-only through each store's own vector search is checked too
    # (ties broken by id, graph/vectors.py).
    dense = RetrievalConfig(routes=(), text_candidates=0)
    emb = Memory(EmbeddedStore(tmp_path / "emb"), HashEmbedder(384))
    neo = Memory(Neo4jStore(uri, embedding_dim=384), HashEmbedder(384))
    try:
        compared = 0
        for u in users:
            for q in QUESTIONS:
                for cfg in (RetrievalConfig(), dense):
                    emb.retrieval, neo.retrieval = cfg, cfg
                    got = [[(i.fact.fact_id, i.state.model_dump()) for i in m.retrieve(u, q, k=10).items]
                           for m in (emb, neo)]
                    assert got[0] == got[1], (u, q, cfg.routes)
                    compared += len(got[0])
        assert compared >= 20 * len(QUESTIONS), compared
    finally:
        emb.close()
        neo.close()
    # and back: Neo4j -> a fresh embedded store, verified byte for byte by the command itself
    rc, out, err = run(capsys, "migrate", "--to", f"embedded:{tmp_path / 'back'}", "--store", "neo4j", "--neo4j-uri",
                       uri, "--embedder", "hash", "--json")
    assert rc == 0 and all(r["verified"] for r in json.loads(out)["users"]), err
    for u in users:
        rc, _, _ = run(capsys, "export", "--user", u, "--out", str(tmp_path / f"{u}-a.jsonl"), *src)
        rc2, _, _ = run(capsys, "export", "--user", u, "--out", str(tmp_path / f"{u}-b.jsonl"), "--store-path",
                        str(tmp_path / "back"), "--embedder", "hash")
        assert rc == rc2 == 0
        assert (tmp_path / f"{u}-a.jsonl").read_bytes() == (tmp_path / f"{u}-b.jsonl").read_bytes()
    _neo4j_store.wipe()


def test_merge_adds_a_disjoint_file_and_refuses_a_clash(store: Any) -> None:
    import_user(store, loads(_bob_file("bob::f::1")))
    before = store.load_snapshot("bob")
    other = _bob_file("bob::f::2").replace("bob::c::x", "bob::c::y")
    with pytest.raises(ImportRefused, match="--merge"):
        import_user(store, loads(other))
    import_user(store, loads(other), mode="merge")
    after = store.load_snapshot("bob")
    assert set(after.facts) == {"bob::f::1", "bob::f::2"} and after.version == before.version + 1
    assert sorted(e.seq for e in after.edits.values()) == list(range(len(after.edits)))  # the log stays a sequence
    with pytest.raises(ImportRefused, match="already exist"):
        import_user(store, loads(other), mode="merge")
    assert store.load_snapshot("bob").version == after.version
    # the merged memory exports and re-imports like any other
    text = export_user(store, "bob")
    store.purge_user("bob")
    import_user(store, loads(text))
    assert export_user(store, "bob") == text
