"""User-written Cypher: parsed against an allowlist, re-serialized from the AST, run in a per-user sandbox.

    compile_query(query, params, user_id) -> Compiled   # pure: refusal or canonical Cypher
    run_user_cypher(store, user_id, query, params)      # what the stores' run_readonly_cypher call
"""

from __future__ import annotations

from typing import Any

from graph.cypher.errors import CypherFailed, CypherRefused, CypherTimeout
from graph.cypher.parser import parse
from graph.cypher.serialize import UID_PARAM, Compiled, emit

__all__ = ["CypherFailed", "CypherRefused", "CypherTimeout", "Compiled", "UID_PARAM", "compile_query", "parse"]

_MAX_PARAM_DEPTH = 8


def _check_value(v: Any, depth: int = 0) -> None:
    if depth > _MAX_PARAM_DEPTH:
        raise CypherRefused("a parameter value is nested too deeply")
    if v is None or isinstance(v, (bool, int, float, str)):
        return
    if isinstance(v, list):
        for x in v:
            _check_value(x, depth + 1)
        return
    if isinstance(v, dict):
        for k, x in v.items():
            if not isinstance(k, str):
                raise CypherRefused("parameter map keys must be strings")
            _check_value(x, depth + 1)
        return
    raise CypherRefused(f"unsupported parameter value of type {type(v).__name__}")


def compile_query(query: str, params: dict[str, Any] | None, user_id: str) -> Compiled:
    """Parse ``query``, check it against the allowlist and return canonical Cypher pinned to ``user_id``.

    ``$user_id`` may be used without passing it (it is the caller's user). Raises CypherRefused.

    >>> compile_query("MATCH (c:Concept)-[:CONTAINS]->(f:Fact) RETURN c.name LIMIT 5", None, "").text
    'MATCH (v0:Concept)-[a1:CONTAINS]->(v1:Fact) WHERE (v0.`user_id` = $evomem_uid) AND (v1.`user_id` = $evomem_uid) RETURN v0.`name` AS c0 LIMIT 5'
    """
    q = parse(query)
    given = dict(params or {})
    if "user_id" in q.params and "user_id" not in given:
        given["user_id"] = user_id
    missing = [p for p in q.params if p not in given]
    if missing:
        raise CypherRefused(f"the query uses ${missing[0]} but no value was given for it")
    for p in q.params:
        _check_value(given[p])
    return emit(q, {p: given[p] for p in q.params}, user_id)
