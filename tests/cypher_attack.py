"""Shared by the Cypher isolation tests: two users full of canaries, and a grammar of hostile Cypher."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from graph.cypher import CypherRefused
from graph.models import Concept, Edit, Fact, Relation, Turn, utcnow
from graph.snapshot import ChangeSet

USERS = ("maya", "leo")


def canary(user: str) -> str:
    return f"zq{user}canary"


def seed_two_users(store: Any) -> None:
    """Each user gets a canary in every text property of every label and relation (a valid ontology:
    root, one child concept, two facts, so the stores read it in one pass)."""
    now = utcnow()
    for u in USERS:
        c = canary(u)
        turns = [Turn(turn_id=f"s1:{i}", user_id=u, session_id="s1", seq=i, role="user", text=f"{c} turn {i}", at=now)
                 for i in range(2)]
        facts = [Fact(fact_id=f"{u}::f::{i}", user_id=u, statement=f"{c} statement {i}", evidence=f"{c} evidence",
                      source_turn_ids=(f"s1:{i}",), session_id="s1", recorded_at=now, scope=c, qualifiers={"q": c})
                 for i in range(2)]
        store.commit(ChangeSet(
            user_id=u, expected_version=0, new_version=1,
            concepts_upsert=[Concept(concept_id=f"{u}::root", user_id=u, name=c, description=c),
                             Concept(concept_id=f"{u}::c::kid", user_id=u, name=f"{c} kid")],
            parent_add=[(f"{u}::root", f"{u}::c::kid")],
            contains_add=[(f"{u}::c::kid", f.fact_id) for f in facts],
            facts_create=facts, embeddings={f.fact_id: [0.25] * 16 for f in facts},
            relations_add=[Relation(type="SUPERSEDES", src=facts[1].fact_id, dst=facts[0].fact_id,
                                                        at=now, reason=c)],
            edits_upsert=[Edit(edit_id=f"{u}::e::0", user_id=u, seq=0, session_id="s1", op="CREATE", at=now,
                               payload={"why": c})],
            turns_create=turns, derived_from_add=[(f.fact_id, f.source_turn_ids[0]) for f in facts],
            sessions_upsert={"s1": c}))


def run_as(store: Any, user: str, query: str) -> str | None:
    """The reply as JSON text, or None if refused (any CypherRefused: parse, engine, timeout)."""
    try:
        return json.dumps(store.run_readonly_cypher(user, query), default=str)
    except CypherRefused:
        return None


def files_state(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# -- a grammar of Cypher, friendly and hostile parts mixed --
_ws = st.sampled_from([" ", "  ", "\n", "\t", "/**/", "/* x */", " /*(n)*/ ", "//c\n", "\u00a0", "\u2028", "\r\n"])
_names = st.sampled_from(["f", "x", "n", "limit", "match", "return", "`limit`", "`a b`", "count", "Fact", "user_id",
                          "_x", "`return`", "é", "CALL", "`x`", "order", "skip", "all", "ı"])
_labels = st.sampled_from(["Fact", "Concept", "Turn", "Edit", "Session", "UserMeta", "`Fact`", "fact", ""])
_types = st.sampled_from(["", ":SUPERSEDES", ":CONTAINS", ":PARENT_OF|CONTAINS", ":DERIVED_FROM", ":KNOWS", "*1..3",
                          "*", ":SUPERSEDES*..2", "*0..1"])
_dash = st.sampled_from(["-", " - ", "\u2013", "--", "->", "<-", "- >", "<", ">"])
_props = st.sampled_from(["statement", "text", "name", "user_id", "payload", "evidence", "scope", "fact_id",
                          "limit", "`statement`", "embedding", "kind", "key"])
_strings = st.sampled_from(["'a'", "\"x\"", "'it\\'s'", "'\\u0041'", "'\u00e9\u00e8'", "'/* */'",
                            "'\\\\'", "'\\'", "''", "'MATCH (n) RETURN n'", "'\\\"'", "'\u202e'"])


@st.composite
def node(draw: Any) -> str:
    var = draw(st.sampled_from(["", draw(_names)]))
    lab = draw(_labels)
    props = draw(st.sampled_from(["", " {kind: 'preference'}", " {user_id: 'leo'}", " {statement: $q}", "{}"]))
    return "(" + var + (":" + lab if lab else "") + props + ")"


@st.composite
def pattern(draw: Any) -> str:
    out = draw(node())
    for _ in range(draw(st.integers(0, 2))):
        body = draw(st.sampled_from(["", "[" + draw(st.sampled_from(["", "r", "limit"])) + draw(_types) + "]"]))
        out += draw(_dash) + body + draw(_dash) + draw(node())
    if draw(st.booleans()):
        out = draw(st.sampled_from(["p = ", "limit = ", "match = ", "`p` = "])) + out
    return out


def expr(depth: int = 2) -> st.SearchStrategy[str]:
    base = st.one_of(
        st.builds(lambda n, p: f"{n}.{p}", _names, _props),
        _names, _strings, st.integers(-5, 10).map(str), st.sampled_from(["null", "true", "$q", "$user_id", "$other"]),
        st.builds(lambda f, n: f"{f}({n})", st.sampled_from(
            ["count", "collect", "toLower", "size", "labels", "type", "id", "keys", "exists", "apoc.x",
             "current_setting", "read_csv", "lpad", "range"]), _names),
        st.builds(lambda p: f"[ {p} | x.statement ]", pattern()),
        st.builds(lambda p: f"EXISTS {{ MATCH {p} }}", pattern()),
        st.builds(lambda p: f"COUNT {{ {p} }}", pattern()),
        pattern(),
    )
    if depth == 0:
        return base
    sub = expr(depth - 1)
    return st.one_of(base, st.builds(lambda a, op, b: f"{a}{op}{b}", sub, st.sampled_from(
        [" = ", " <> ", " AND ", " OR ", " + ", " CONTAINS ", " STARTS WITH ", " IN ", "-", " < ", " =~ "]), sub),
        st.builds(lambda a: f"({a})", sub), st.builds(lambda a: f"NOT {a}", sub),
        st.builds(lambda a: f"[{a}, 1]", sub), st.builds(lambda a: f"any(x IN [{a}] WHERE x IS NULL)", sub))


def clause(file_path: str) -> st.SearchStrategy[str]:
    hostile = st.sampled_from([
        "CALL db.labels() YIELD label", "CA/**/LL db.labels()", f"LOAD FROM '{file_path}' (header=false)",
        f"LO/**/AD FROM '{file_path}'", f"COPY Fact TO '{file_path}'", f"COPY Fact FROM '{file_path}'",
        f"COPY (MATCH (n) RETURN n) TO '{file_path}.out'", "UNION", ";", "DETACH DELETE n", "SET f.statement = 'x'",
        f"LOAD CSV FROM 'file://{file_path}' AS line", "INSTALL json", f"ATTACH '{file_path}' AS o", "USE o",
        "FOREACH (x IN [1] | CREATE (:Fact))", "WITH *", "WITH f", "CALL { MATCH (n) RETURN n }"])
    return st.one_of(
        st.builds(lambda p, w: f"MATCH {p}" + w, pattern(), st.sampled_from(["", " WHERE true"]) | expr(1).map(
            lambda e: f" WHERE {e}")),
        st.builds(lambda p: f"OPTIONAL MATCH {p}", pattern()),
        st.builds(lambda e, n: f"UNWIND {e} AS {n}", expr(1), _names),
        st.builds(lambda e, n: f"WITH {e} AS {n}", expr(1), _names),
        hostile)


def query(file_path: str) -> st.SearchStrategy[str]:
    ret = st.builds(lambda items, tail: "RETURN " + ", ".join(items) + tail,
                    st.lists(expr(2).map(lambda e: e) | st.sampled_from(["*", "f.statement AS s", "n", "x"]),
                             min_size=1, max_size=3),
                    st.sampled_from(["", " LIMIT 5", " ORDER BY 1", " SKIP 1", ";", "; MATCH (n) RETURN n"]))
    return st.builds(lambda cs, seps, r: "".join(c + s for c, s in zip(cs, seps)) + r,
                     st.lists(clause(file_path), min_size=0, max_size=3), st.lists(_ws, min_size=3, max_size=3), ret)


def simple_query() -> st.SearchStrategy[str]:
    """Mostly-valid queries, so the fuzz also exercises the engine, not only the parser."""
    lab_prop = st.sampled_from([("", "user_id"), (":Fact", "statement"), (":Concept", "name"), (":Turn", "text"),
                                (":Edit", "payload"), (":Session", "content_hash"), (":Fact", "evidence"), ("", "statement")])
    return st.builds(lambda lp, w, ws, tail: f"MATCH (x{lp[0]}){ws}{w}RETURN x.{lp[1]} AS v{tail}",
                     lab_prop,
                     st.sampled_from(["", "WHERE x.user_id = 'leo' ", "WHERE x.user_id CONTAINS 'a' ",
                                      "WHERE x.user_id <> $user_id ", "OPTIONAL MATCH (x)-[r]-(y) ",
                                      "OPTIONAL MATCH (x)-[*1..2]-(y) WITH x, count(y) AS k ",
                                      "WHERE NOT x.user_id STARTS WITH 'm' ", "WITH DISTINCT x "]),
                     _ws, st.sampled_from(["", " LIMIT 3", " ORDER BY v DESC", ", x", ";"]))


def fuzz(store: Any, root: Path, n: int, seed: int | None = None, verbose: bool = False) -> dict[str, int]:
    """Run ``n`` generated queries as maya against a store seeded by ``seed_two_users``; a canary file
    in ``root`` is the target of the file clauses. Returns counts; raises AssertionError on any leak."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hyp_seed

    secret = root / "secret.txt"
    secret.write_text("zqfilecanary\n")
    before = files_state(root)
    stats = {"queries": 0, "answered": 0, "refused": 0, "rows_with_own_canary": 0, "cross_user_rows": 0,
             "file_access": 0}
    other, own = canary("leo"), canary("maya")

    @settings(max_examples=n, deadline=None, database=None, derandomize=seed is None,
              suppress_health_check=list(HealthCheck))
    @given(st.one_of(query(str(secret)), simple_query(), simple_query()))
    def one(q: str) -> None:
        stats["queries"] += 1
        reply = run_as(store, "maya", q)
        if reply is None:
            stats["refused"] += 1
            return
        if verbose:
            print(f"{q!r} -> {reply[:120]}")
        stats["answered"] += 1
        stats["rows_with_own_canary"] += own in reply
        stats["cross_user_rows"] += other in reply
        stats["file_access"] += "zqfilecanary" in reply
        assert other not in reply, f"leo's data reached maya: {q!r} -> {reply[:300]}"
        assert "zqfilecanary" not in reply, f"a file was read: {q!r}"

    (hyp_seed(seed)(one) if seed is not None else one)()
    if files_state(root) != before:
        stats["file_access"] += 1
    assert files_state(root) == before, "a file was written, changed or created"
    return stats
