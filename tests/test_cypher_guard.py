"""The per-user Cypher guard: pins node patterns, refuses what could escape the user."""

from __future__ import annotations

import pytest

from graph.cypher_guard import CypherRefused, scope_to_user

PIN = "{user_id: $evomem_uid}"

REWRITES = [
    ("MATCH (f:Fact) RETURN f.statement", f"MATCH (f:Fact {PIN}) RETURN f.statement"),
    ("MATCH (n) RETURN count(*) AS n", f"MATCH (n {PIN}) RETURN count(*) AS n"),
    ("MATCH () RETURN 1", f"MATCH ({PIN}) RETURN 1"),
    ("MATCH (f:Fact {kind: 'belief'}) RETURN f", "MATCH (f:Fact {user_id: $evomem_uid, kind: 'belief'}) RETURN f"),
    ("MATCH (a)-[:SUPERSEDES*1..3]->(b) RETURN a, b", f"MATCH (a {PIN})-[:SUPERSEDES*1..3]->(b {PIN}) RETURN a, b"),
    ("MATCH (a:Fact) WITH a MATCH (a)-->(b) RETURN b", f"MATCH (a:Fact {PIN}) WITH a MATCH (a {PIN})-->(b {PIN}) RETURN b"),
    ("MATCH (f:Fact) WHERE f.statement = 'MATCH (x)' RETURN f", f"MATCH (f:Fact {PIN}) WHERE f.statement = 'MATCH (x)' RETURN f"),
    ("OPTIONAL MATCH (c:Concept)-[:CONTAINS]->(f) RETURN c", f"OPTIONAL MATCH (c:Concept {PIN})-[:CONTAINS]->(f {PIN}) RETURN c"),
    ("MATCH p = (a)-[]-(b) RETURN length(p)", f"MATCH p = (a {PIN})-[]-(b {PIN}) RETURN length(p)"),
    ("MATCH (f:Fact) WHERE (f.confidence - (1)) < 0 RETURN f", f"MATCH (f:Fact {PIN}) WHERE (f.confidence - (1)) < 0 RETURN f"),
]


@pytest.mark.parametrize("query,expected", REWRITES)
def test_rewrites(query: str, expected: str) -> None:
    assert scope_to_user(query) == expected


REFUSED = [
    "MATCH (f:Fact) SET f.statement = 'x' RETURN f",
    "CREATE (n:Fact) RETURN n",
    "MATCH (n) DETACH DELETE n RETURN 1",
    "MERGE (n:Fact {fact_id: 'x'}) RETURN n",
    "CALL db.index.fulltext.queryNodes('fact_statement', 'x') YIELD node RETURN node",
    "MATCH (a:Fact) WHERE EXISTS { MATCH (b:Fact) } RETURN a",
    "MATCH (a:Fact) RETURN COUNT { (b:Fact) } AS n",
    "MATCH (a:Fact) WHERE (a)-[:SUPERSEDES]->(:Fact) RETURN a",
    "MATCH (a:Fact) RETURN [(a)<-[:SUPERSEDES]-(b) | b.statement] AS xs",
    "MATCH (a:Fact {user_id: 'bob'}) RETURN a",
    "MATCH (a WHERE a.kind = 'x') RETURN a",
    "MATCH p = shortestPath((a)-[*]-(b)) RETURN p",
    "MATCH (a) RETURN a UNION MATCH (b) RETURN b",
    "MATCH (a:Fact)",
    "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l",
    "MATCH (a:Fact) FOREACH (x IN [1] | SET a.k = 1) RETURN a",
]


@pytest.mark.parametrize("query", REFUSED)
def test_refusals(query: str) -> None:
    with pytest.raises(CypherRefused):
        scope_to_user(query)


def test_comments_cannot_hide_clauses() -> None:
    out = scope_to_user("MATCH /* (x) */ (f:Fact) // trailing (y)\nRETURN f")
    assert out.count("$evomem_uid") == 1
