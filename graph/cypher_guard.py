"""Scope user-written, read-only Cypher to one user.

A single Neo4j Community database holds every user, so "read-only" is not enough: a bare
``MATCH (f:Fact) RETURN f.statement`` would read other users' facts. We accept a conservative
subset (MATCH / OPTIONAL MATCH / WHERE / WITH / UNWIND / RETURN / ORDER BY / SKIP / LIMIT, no
procedures, subqueries or pattern expressions outside MATCH) and pin every node pattern in a MATCH
to ``{user_id: $evomem_uid}``. The database still runs it in a read-only transaction; this guard
is about isolation, that one is about writes.
"""

from __future__ import annotations

import re

UID_PARAM = "evomem_uid"

WRITE_WORDS = {"CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "FOREACH", "LOAD", "COPY",
               "INSTALL", "ALTER", "GRANT", "DENY", "REVOKE", "START", "STOP", "TERMINATE", "IMPORT", "EXPORT"}
SUBQUERY_WORDS = {"EXISTS", "COUNT", "COLLECT"}  # refused only as subqueries: `COUNT {...}`
REFUSED_WORDS = {"CALL", "USE", "SHOW", "SHORTESTPATH", "ALLSHORTESTPATHS",
                 "UNION", "FINISH", "PROFILE", "EXPLAIN", "ATTACH", "DETACH"}
CLAUSE_WORDS = {"MATCH", "OPTIONAL", "WHERE", "WITH", "UNWIND", "RETURN", "ORDER", "SKIP", "LIMIT"}
_MATCH_END = {"WHERE", "WITH", "RETURN", "UNWIND", "ORDER", "SKIP", "LIMIT", "MATCH", "OPTIONAL"}

_TOKEN = re.compile(
    r"""(?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|(?P<bq>`[^`]*`)|(?P<comment>//[^\n]*|/\*.*?\*/)"""
    r"""|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<ws>\s+)|(?P<other>.)""",
    re.S,
)
_NODE_BODY = re.compile(r"^\s*(?P<head>[A-Za-z_`][^{}]*?)?\s*(?P<map>\{.*\})?\s*$", re.S)


class CypherRefused(ValueError):
    """The query is outside the per-user read-only subset; the message says why."""


def _tokens(query: str) -> list[tuple[str, str]]:
    out = []
    for m in _TOKEN.finditer(query):
        kind = m.lastgroup or "other"
        if kind == "comment":
            continue
        out.append((kind, m.group()))
    return out


def scope_to_user(query: str) -> str:
    """Rewrite ``query`` so every node pattern in a MATCH is pinned to ``$evomem_uid``.

    >>> scope_to_user("MATCH (c:Concept)-[:CONTAINS]->(f:Fact) RETURN c.name LIMIT 5")
    'MATCH (c:Concept {user_id: $evomem_uid})-[:CONTAINS]->(f:Fact {user_id: $evomem_uid}) RETURN c.name LIMIT 5'
    """
    toks = _tokens(query)
    if not any(k == "word" and v.upper() == "RETURN" for k, v in toks):
        raise CypherRefused("query must end in RETURN")
    out: list[str] = []
    in_match = False
    i = 0
    while i < len(toks):
        kind, val = toks[i]
        up = val.upper() if kind == "word" else ""
        if up in WRITE_WORDS:
            raise CypherRefused(f"write clause {up} is not allowed: the query runs read-only")
        if up in REFUSED_WORDS:
            raise CypherRefused(f"{up} is not supported in per-user Cypher (procedures, subqueries and "
                                "pattern predicates could reach other users' data)")
        if up in SUBQUERY_WORDS:
            nxt = next((v for k, v in toks[i + 1:] if k != "ws"), "")
            if nxt == "{":
                raise CypherRefused(f"{up} {{...}} subqueries are not supported in per-user Cypher")
        if up in _MATCH_END:
            in_match = up in ("MATCH", "OPTIONAL")
        if kind == "other" and val == "(" and in_match:
            prev = next((v for v in reversed(out) if not v.isspace()), "")
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prev) and prev.upper() not in ("MATCH",):
                raise CypherRefused(f"function call {prev}(...) inside MATCH is not supported")
            depth, j, body = 1, i + 1, []
            while j < len(toks) and depth:
                k2, v2 = toks[j]
                if k2 == "other" and v2 == "(":
                    raise CypherRefused("nested patterns inside MATCH are not supported")
                if k2 == "other" and v2 == ")":
                    depth -= 1
                    if depth == 0:
                        break
                body.append(v2)
                j += 1
            if depth:
                raise CypherRefused("unbalanced parenthesis in MATCH pattern")
            out.append("(" + _pin(("".join(body))) + ")")
            i = j + 1
            continue
        if not in_match and kind == "other" and val in "-<>[" and _looks_like_pattern(toks, i):
            raise CypherRefused("pattern expressions are only allowed inside MATCH")
        out.append(val)
        i += 1
    return "".join(out)


def _looks_like_pattern(toks: list[tuple[str, str]], i: int) -> bool:
    """A relationship arrow outside MATCH: ``)-``, ``-(``, ``-[``, ``]-``, ``<-``, ``->``."""
    val = toks[i][1]
    nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
    prv = toks[i - 1][1] if i > 0 else ""
    if val == "[" and nxt == "(":
        return True  # pattern comprehension [(a)-->(b) | ...]
    if val == "-":
        return nxt in ("(", "[", ">", "-") or prv in (")", "]", "<")
    if val == "<":
        return nxt == "-"
    return False


def _pin(body: str) -> str:
    if " WHERE " in f" {body.upper()} ":
        raise CypherRefused("inline WHERE inside a node pattern is not supported; use a WHERE clause")
    m = _NODE_BODY.match(body)
    if not m:
        raise CypherRefused(f"cannot read node pattern ({body})")
    head = (m.group("head") or "").strip()
    props = m.group("map")
    pin = f"user_id: ${UID_PARAM}"
    if props:
        inner = props[1:-1].strip()
        if re.search(r"(^|,)\s*user_id\s*:", inner):
            raise CypherRefused("user_id is set by the server, not by the query")
        props = "{" + pin + (", " + inner if inner else "") + "}"
    else:
        props = "{" + pin + "}"
    return f"{head} {props}" if head else props
