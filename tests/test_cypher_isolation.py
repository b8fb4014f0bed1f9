"""User Cypher against a store holding two users: known attacks and a grammar fuzz, on both backends.

Every reply (rows as JSON) must be free of the other user's canary, and no file may be read,
written or created. The fuzz's slow tier runs >= 5,000 generated queries per backend.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cypher_attack import USERS, canary, files_state, fuzz, run_as, seed_two_users

# Every attack of issue 10 (and variants): each must be refused or return only maya's rows.
KNOWN_BAD = [
    "MATCH limit = (x:Fact) RETURN x.user_id, x.statement",
    "MATCH `limit` = (x:Fact) RETURN x.user_id, x.statement",
    "MATCH order = (x:Turn) RETURN x.text",
    "MATCH (x:Fact) WITH x MATCH limit = (y) RETURN y",
    "CA/**/LL db.labels() YIELD label RETURN label",
    "CALL/**/db.labels() YIELD label RETURN label",
    "LO/**/AD FROM '{file}' (header=false) RETURN *",
    "LOAD FROM '{file}' (header=false) RETURN *",
    "COPY Fact TO '{file}.out'",
    "MATCH (f:Fact) RETURN f COPY (MATCH (n) RETURN n) TO '{file}.out'",
    "CO/**/PY Fact FROM '{file}'",
    "MATCH (a:Fact) RETURN [ (a) - [r] - (b) | b.statement ] AS xs",
    "MATCH (a:Fact) RETURN [(a)--(b) | b.statement] AS xs",
    "MATCH (a:Fact) RETURN [(b:Fact) | b.statement] AS xs",
    "MATCH (a:Fact) WHERE (a) - [] - (:Fact {user_id: 'leo'}) RETURN a",
    "MATCH (a:Fact) RETURN COUNT { MATCH (b:Fact) RETURN b } AS n",
    "MATCH (a:Fact) WHERE EXISTS { MATCH (b:Fact) WHERE b.user_id = 'leo' } RETURN a.statement",
    "MATCH (n) RETURN n.statement, n.text, n.name",
    "MATCH (a)-[r]-(b) RETURN a, r, b",
    "MATCH (n) WHERE n.user_id = 'leo' RETURN n",
    "MATCH (n {user_id: 'leo'}) RETURN n",
    "MATCH (n) WHERE n.user_id <> $user_id RETURN n",
    "MATCH (a:Fact) RETURN a UNION MATCH (b:Fact) RETURN b",
    "MATCH (a:Fact) RETURN a.statement; MATCH (b:Fact) RETURN b.statement",
    "MATCH (x:UserMeta) RETURN x",
    "MATCH (a:Fact)-[:SUPERSEDES*1..10]-(b) RETURN b.statement",
    "UNWIND range(1, 400000000) AS x RETURN sum(x)",
    "MATCH (a)-[*]-(b) RETURN b",
    "MATCH (f:Fact) RETURN f.statement AS `s` ORDER BY `s`",
    "MATCH (\u0066:Fact) RETURN \u0066.statement",
    "MATCH (f:Fact) RETURN f.statement /* ' */ , '*/ MATCH (n) RETURN n //'",
    "MATCH (f:Fact) WHERE f.statement = '\\' OR 1=1 //' RETURN f.statement",
    "MATCH (f:Fact) RETURN f.statement AS s\u2028UNION MATCH (n) RETURN n.statement AS s",
]


@pytest.fixture
def two_users(store: Any, tmp_path: Path) -> tuple[Any, Path]:
    seed_two_users(store)
    root = tmp_path / "files"
    root.mkdir()
    (root / "secret.txt").write_text("zqfilecanary\n")
    return store, root


@pytest.mark.parametrize("query", KNOWN_BAD)
def test_known_attacks_leak_nothing(two_users: tuple[Any, Path], query: str) -> None:
    store, root = two_users
    before = files_state(root)
    reply = run_as(store, "maya", query.replace("{file}", str(root / "secret.txt")))
    assert reply is None or (canary("leo") not in reply and "zqfilecanary" not in reply)
    assert files_state(root) == before


def test_each_user_sees_all_and_only_their_own_data(two_users: tuple[Any, Path]) -> None:
    """The copy is complete: every label and relation type holds the user's canary (so the fuzz is honest)."""
    store, _ = two_users
    queries = {
        "Fact": "MATCH (x:Fact) RETURN x.statement AS v, x.evidence AS e, x.scope AS s, x.qualifiers AS q",
        "Concept": "MATCH (x:Concept) RETURN x.name AS v", "Turn": "MATCH (x:Turn) RETURN x.text AS v",
        "Edit": "MATCH (x:Edit) RETURN x.payload AS v", "Session": "MATCH (x:Session) RETURN x.content_hash AS v",
        "SUPERSEDES": "MATCH (:Fact)-[r:SUPERSEDES]->(:Fact) RETURN r.reason AS v",
        "PARENT_OF": "MATCH (a)-[:PARENT_OF]->(b) RETURN a.name AS v, b.name AS w",
        "CONTAINS": "MATCH (a)-[:CONTAINS]->(b) RETURN b.statement AS v",
        "DERIVED_FROM": "MATCH (a)-[:DERIVED_FROM]->(t) RETURN t.text AS v",
        "nodes": "MATCH (n) RETURN n", "paths": "MATCH p = (a)-[*1..3]-(b) RETURN p",
    }
    for u in USERS:
        other = canary(USERS[1 - USERS.index(u)])
        for what, q in queries.items():
            rows = store.run_readonly_cypher(u, q)
            text = json.dumps(rows, default=str)
            assert rows and canary(u) in text, (u, what)
            assert other not in text, (u, what)


@pytest.mark.stand_in("test_fuzz_5000")  # the same checks on 5,000 queries
def test_fuzz_small(two_users: tuple[Any, Path]) -> None:
    store, root = two_users
    stats = fuzz(store, root, 300)
    assert stats["cross_user_rows"] == 0 and stats["file_access"] == 0
    assert stats["answered"] > 30 and stats["rows_with_own_canary"] > 10  # the engine really ran queries


@pytest.mark.slow
def test_fuzz_5000(two_users: tuple[Any, Path]) -> None:
    store, root = two_users
    stats = fuzz(store, root, 5000)
    print(f"\ncypher fuzz [{store.name}]: {stats}")
    assert stats["queries"] >= 5000 and stats["cross_user_rows"] == 0 and stats["file_access"] == 0
    assert stats["answered"] > 250 and stats["rows_with_own_canary"] > 10  # test_fuzz_small's bars too
