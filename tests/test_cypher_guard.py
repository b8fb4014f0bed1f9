"""The user-Cypher parser and serializer (pure): what is accepted, how it is pinned, what is refused."""

from __future__ import annotations

import gc
import re
import time

import pytest

from graph.cypher import CypherRefused, compile_query, parse
from graph.cypher.lexer import MAX_QUERY_CHARS, tokenize

PIN = re.compile(r"\((\w+)\.`user_id` = \$evomem_uid\)")
NODE = re.compile(r"\((\w+)(?::\w+)?\)")  # node patterns in the canonical text

# Accepted queries: (query, number of node patterns, column names)
ACCEPTED = [
    ("MATCH (f:Fact) RETURN f.statement", 1, ["f.statement"]),
    ("MATCH (n) RETURN count(*) AS n", 1, ["n"]),
    ("MATCH () RETURN 1", 1, ["1"]),
    ("MATCH (f:Fact {kind: 'belief'}) RETURN f", 1, ["f"]),
    ("MATCH (a)-[:SUPERSEDES*1..3]->(b) RETURN a, b", 2, ["a", "b"]),
    ("MATCH (a:Fact) WITH a MATCH (a)-->(b) RETURN b", 3, ["b"]),
    ("MATCH (f:Fact) WHERE f.statement = 'MATCH (x)' RETURN f", 1, ["f"]),
    ("OPTIONAL MATCH (c:Concept)-[:CONTAINS]->(f) RETURN c", 2, ["c"]),
    ("MATCH p = (a)-[]-(b) RETURN length(p)", 2, ["length(p)"]),
    ("MATCH (f:Fact) WHERE (f.confidence - (1)) < 0 RETURN f", 1, ["f"]),
    ("MATCH /* (x) */ (f:Fact) // trailing (y)\nRETURN f", 1, ["f"]),
    ("MATCH (`limit`:Fact) RETURN `limit`.statement", 1, ["limit.statement"]),
    ("MATCH (a) - [r] - (b) RETURN type(r) AS t", 2, ["t"]),
    ("MATCH (f:Fact) RETURN f.limit, f.match", 1, ["f.limit", "f.match"]),
    ("match (f:Fact) return f.kind as k, count(distinct f) as n order by n desc skip 1 limit 2;", 1, ["k", "n"]),
    ("UNWIND [1, 2, 3] AS x WITH x AS y WHERE y > 1 RETURN *", 0, ["y"]),
    ("MATCH (c:Concept), (f:Fact) WHERE c.name = $name RETURN c.name, f.statement", 2, ["c.name", "f.statement"]),
    ("MATCH (f:Fact) RETURN CASE WHEN f.confidence > 0.5 THEN 'hi' ELSE 'lo' END AS level", 1, ["level"]),
    ("MATCH (f:Fact) RETURN any(x IN f.source_turn_ids WHERE x CONTAINS ':') AS a", 1, ["a"]),
    ("RETURN 'it\\'s /* not a comment */' AS s, -1 AS m, 2 ^ 3 AS p", 0, ["s", "m", "p"]),
]


@pytest.mark.parametrize("query,nodes,columns", ACCEPTED)
def test_every_node_is_pinned_and_columns_keep_the_users_names(query: str, nodes: int, columns: list[str]) -> None:
    c = compile_query(query, {"name": "travel"}, "maya")
    assert c.columns == columns
    assert len(NODE.findall(c.text.split(" RETURN ")[0])) >= nodes
    # every node variable of every MATCH has its pin, in the same MATCH
    text = re.sub(r"'[^']*'", "''", c.text)  # inline string literals hold no quotes (serialize._SAFE)
    for clause in re.split(r"(?=OPTIONAL MATCH |(?<!OPTIONAL )MATCH )", text):
        if "MATCH" in clause:
            pattern = clause.split(" WHERE ")[0]
            assert set(NODE.findall(pattern)) <= set(PIN.findall(clause))
    assert c.params["evomem_uid"] == "maya"


def test_the_engine_never_sees_user_text() -> None:
    c = compile_query("MATCH (`weird name`:Fact) /* c */ WHERE `weird name`.statement = 'a\\'b\\\\c' "
                      "RETURN `weird name`.statement AS `x y`", None, "maya")
    assert "weird" not in c.text and "/*" not in c.text and "x y" not in c.text
    assert "a'b\\c" in c.params.values() and c.columns == ["x y"]
    assert re.fullmatch(r"[A-Za-z0-9_ ()\[\]{}.,:`$=<>*+\-/%^|']*", c.text)


def test_compile_query_gives_the_canonical_text() -> None:
    assert compile_query("MATCH (c:Concept)-[:CONTAINS]->(f:Fact) RETURN c.name LIMIT 5", None, "").text == (
        "MATCH (v0:Concept)-[a1:CONTAINS]->(v1:Fact) WHERE (v0.`user_id` = $evomem_uid) AND "
        "(v1.`user_id` = $evomem_uid) RETURN v0.`name` AS c0 LIMIT 5")


# (query, a fragment of the refusal message). Every attack of issue 10 is here.
REFUSED = [
    ("MATCH (f:Fact) SET f.statement = 'x' RETURN f", "read-only"),
    ("CREATE (n:Fact) RETURN n", "read-only"),
    ("MATCH (n) DETACH DELETE n RETURN 1", "read-only"),
    ("MERGE (n:Fact {fact_id: 'x'}) RETURN n", "read-only"),
    ("MATCH (a:Fact) FOREACH (x IN [1] | SET a.k = 1) RETURN a", "read-only"),
    ("CALL db.index.fulltext.queryNodes('fact_statement', 'x') YIELD node RETURN node", "CALL"),
    ("CA/**/LL db.labels() YIELD label RETURN label", "expected a clause"),
    ("CALL/**/db.labels() YIELD label RETURN label", "CALL"),
    ("LO/**/AD FROM '/etc/passwd' RETURN *", "expected a clause"),
    ("LOAD FROM '/etc/passwd' (header=false) RETURN *", "LOAD"),
    ("LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l", "LOAD"),
    ("COPY Fact FROM '/tmp/x.csv' RETURN 1", "COPY"),
    ("MATCH (f:Fact) RETURN f COPY (MATCH (n) RETURN n) TO '/tmp/out.csv'", "last clause"),
    ("EXPORT DATABASE '/tmp/x' RETURN 1", "EXPORT"),
    ("INSTALL httpfs RETURN 1", "INSTALL"),
    ("ATTACH '/tmp/other' AS o (dbtype lbug) RETURN 1", "ATTACH"),
    ("USE other MATCH (n) RETURN n", "USE"),
    ("SHOW FUNCTIONS YIELD name RETURN name", "SHOW"),
    ("MATCH (a:Fact) WHERE EXISTS { MATCH (b:Fact) } RETURN a", "subqueries"),
    ("MATCH (a:Fact) RETURN COUNT { (b:Fact) } AS n", "subqueries"),
    ("MATCH (a:Fact) RETURN COLLECT { MATCH (b) RETURN b } AS n", "subqueries"),
    ("MATCH (a:Fact) WHERE (a)-[:SUPERSEDES]->(:Fact) RETURN a", "patterns are only allowed in MATCH"),
    ("MATCH (a:Fact) WHERE (a) - [:SUPERSEDES] - (b) RETURN a", "patterns are only allowed in MATCH"),
    ("MATCH (a:Fact) RETURN [(a)<-[:SUPERSEDES]-(b) | b.statement] AS xs", "pattern comprehensions"),
    ("MATCH (a:Fact) RETURN [ (a) - [r] - (b) | b.statement ] AS xs", "pattern comprehensions"),
    ("MATCH (a:Fact) RETURN [x IN [1] | x] AS xs", "comprehensions"),
    ("MATCH (a:Fact {user_id: 'bob'}) RETURN a", "user_id"),
    ("MATCH (a WHERE a.kind = 'x') RETURN a", "WHERE inside a node pattern"),
    ("MATCH p = shortestPath((a)-[*]-(b)) RETURN p", "shortest"),
    ("MATCH (a) RETURN a UNION MATCH (b) RETURN b", "last clause"),
    ("MATCH (a:Fact)", "must end in RETURN"),
    ("MATCH limit = (x:Fact) RETURN x.user_id, x.statement", "keyword"),
    ("MATCH match = (x:Fact) RETURN x", "keyword"),
    ("MATCH (return:Fact) RETURN return", "keyword"),
    ("MATCH (x:Fact) RETURN x.statement AS limit", "keyword"),
    ("MATCH (x:Fact) RETURN x; MATCH (y) RETURN y", "one statement"),
    ("MATCH (x:UserMeta) RETURN x", "unknown label"),
    ("MATCH (x:Fact)-[:KNOWS]->(y) RETURN y", "unknown relationship type"),
    ("MATCH (x:Fact:Concept) RETURN x", "one label"),
    ("MATCH (x)-[*]-(y) RETURN y", "upper bound"),
    ("MATCH (x)-[*1..50]-(y) RETURN y", "max <= 10"),
    ("MATCH (x) RETURN id(x)", "not allowed"),
    ("MATCH (x) RETURN apoc.text.join(['a'], ',')", "not defined"),
    ("RETURN lpad('a', 100000000, 'b') AS s", "not allowed"),
    ("UNWIND range(1, 400000000) AS x RETURN sum(x)", "at most 10000"),
    ("UNWIND range(1, $n) AS x RETURN sum(x)", "literals only"),
    ("MATCH (x) RETURN x.statement =~ '(a+)+$'", "regular expressions"),
    ("MATCH (x) WHERE x.kind != 'a' RETURN x", "<>"),
    ("MATCH (x) RETURN x[0]", "subscripts"),
    ("MATCH (x) RETURN x {.statement}", "map projections"),
    ("MATCH (x) RETURN y", "not defined"),
    ("MATCH (x) RETURN x.statement, x.statement", "twice"),
    ("MATCH (x) WITH x.kind RETURN 1", "AS <name>"),
    ("MATCH (x) RETURN $evomem_uid", "reserved"),
    ("MATCH (x) RETURN $missing", "no value"),
    ("MATCH (x:Fact) RETURN x.statement LIMIT -1", "whole number"),
    ("MATCH (x\u2013[r]\u2013(y) RETURN x", "U+2013"),
    ("MATCH (x:Fact) RETURN x\u200b", "U+200B"),
    ("MATCH (x:Fact) RETURN 'unterminated", "unterminated"),
    ("MATCH (x:Fact) /* unterminated RETURN x", "unterminated"),
    ("MATCH (x:Fact) RETURN '\\q'", "escape"),
    ("PROFILE MATCH (x) RETURN x", "PROFILE"),
    ("EXPLAIN MATCH (x) RETURN x", "EXPLAIN"),
    ("BEGIN TRANSACTION MATCH (x) RETURN x", "transactions"),
    ("", "must end in RETURN"),
    ("RETURN " + "(" * 200 + "1" + ")" * 200, "nested"),
    ("RETURN " + "-" * 500 + "1", "nested"),
    ("RETURN " + "NOT " * 500 + "true", "nested"),
    ("RETURN " + "1+" * 1990 + "1", "levels of operators"),
    ("MATCH (a) WHERE " + " OR ".join(["a.x = 1"] * 200) + " RETURN a", "levels of operators"),
    ("MATCH (x) RETURN x" + " " * MAX_QUERY_CHARS, "limit is 4000"),
]


@pytest.mark.parametrize("query,why", REFUSED)
def test_refusals_say_what(query: str, why: str) -> None:
    with pytest.raises(CypherRefused) as e:
        compile_query(query, None, "maya")
    assert why.lower() in str(e.value).lower()


PATHOLOGICAL = [
    "MATCH (a:Fact) WHERE " + " OR ".join(f"a.statement = 'x{i}'" for i in range(150)) + " RETURN a",
    "MATCH " + ", ".join(f"(a{i}:Fact)" for i in range(250)) + " RETURN 1",
    "RETURN " + "[" * 39 + "1" + "]" * 39,
    "MATCH (a:Fact) RETURN '" + "\\'" * 1900 + "'",
    "/*" * 1999,
    "MATCH (a) RETURN " + "a.b + " * 600 + "1",
    "`" + "x" * 3990,
    "MATCH " + "(a)-[]-" * 500 + "(b) RETURN b",
]


@pytest.mark.parametrize("query", PATHOLOGICAL)
def test_pathological_input_is_fast(query: str) -> None:
    """Linear lexer, bounded recursion: refused or compiled in well under 100 ms of CPU. This thread's
    CPU time: not wall time (CI machines are shared; bench/cypher.py reports wall time), and not the
    process's, which also counts other tests' background threads (once 0.44 s in a full suite run)."""
    assert len(query) <= MAX_QUERY_CHARS
    gc.collect()  # a collection owed by earlier tests is not this query's cost
    t = time.thread_time()
    try:
        compile_query(query, None, "maya")
    except CypherRefused:
        pass
    assert time.thread_time() - t < 0.1


def test_ten_thousand_characters_are_refused_at_once() -> None:
    gc.collect()
    t = time.thread_time()
    with pytest.raises(CypherRefused, match="limit is 4000"):
        tokenize("MATCH (a) RETURN " + "(" * 10_000)
    assert time.thread_time() - t < 0.01


def test_comments_are_whitespace_not_glue() -> None:
    assert [t.text for t in tokenize("CA/**/LL x//y\nz")][:-1] == ["CA", "LL", "x", "z"]
    assert parse("MATCH/**/(f:Fact)RETURN/* x */f").clauses[-1].items[0].shown == "f"  # type: ignore[union-attr]
