"""Compatibility names for the user-Cypher guard, which now lives in graph/cypher/.

The old regex rewriter is gone: user Cypher is parsed (graph/cypher/parser.py), checked against an
allowlist, re-serialized from the AST (graph/cypher/serialize.py) and run in a per-user sandbox
(graph/cypher/sandbox.py).
"""

from __future__ import annotations

from graph.cypher import compile_query
from graph.cypher.errors import CypherFailed, CypherRefused, CypherTimeout
from graph.cypher.serialize import UID_PARAM

__all__ = ["CypherFailed", "CypherRefused", "CypherTimeout", "UID_PARAM", "scope_to_user"]


def scope_to_user(query: str) -> str:
    """The canonical, user-pinned Cypher for ``query`` (string literals become ``$sN`` parameters).

    >>> scope_to_user("MATCH (c:Concept)-[:CONTAINS]->(f:Fact) RETURN c.name LIMIT 5")
    'MATCH (v0:Concept)-[a1:CONTAINS]->(v1:Fact) WHERE (v0.`user_id` = $evomem_uid) AND (v1.`user_id` = $evomem_uid) RETURN v0.`name` AS c0 LIMIT 5'
    """
    return compile_query(query, None, "").text
