"""What user Cypher may name: labels, relationship types, functions. Everything else is refused."""

from __future__ import annotations

# The inspection schema (graph/cypher/sandbox.py builds exactly these tables).
LABELS = ("Concept", "Fact", "Turn", "Edit", "Session")
REL_TYPES = ("PARENT_OF", "CONTAINS", "SUPERSEDES", "CONFLICTS_WITH", "DERIVED_FROM")

MAX_HOPS = 10  # upper bound of variable-length relationships (*1..3)
MAX_RANGE = 10_000  # range(a, b) takes literals only, at most this many elements
MAX_DEPTH = 40  # expression nesting; deeper input is refused (bounded recursion, bounded engine work)
MAX_TREE = 150  # operator levels in one expression (a + b + c ... counts one per +)
# SKIP/LIMIT: a user has at most tens of thousands of rows of any kind and a result keeps 1,000; larger
# numbers only ever served to stress the engine (ORDER BY ... SKIP 15,420+ crashes LadybugDB 0.22)
MAX_SKIP_LIMIT = 10_000

AGGREGATES = {"count": "count", "collect": "collect", "sum": "sum", "avg": "avg", "min": "min", "max": "max"}

# user spelling (lower case) -> engine (LadybugDB) name, min args, max args. Chosen for inspection:
# pure, value-sized functions. Not here on purpose: id() (internal ids), reduce/list builders and
# padding functions (unbounded output in one step), anything touching files, settings or extensions.
FUNCTIONS: dict[str, tuple[str, int, int]] = {
    "tolower": ("lower", 1, 1), "lower": ("lower", 1, 1), "toupper": ("upper", 1, 1), "upper": ("upper", 1, 1),
    "size": ("size", 1, 1), "trim": ("trim", 1, 1), "ltrim": ("ltrim", 1, 1), "rtrim": ("rtrim", 1, 1),
    "substring": ("substring", 3, 3), "left": ("left", 2, 2), "right": ("right", 2, 2),
    "replace": ("replace", 3, 3), "reverse": ("reverse", 1, 1), "split": ("string_split", 2, 2),
    "tostring": ("to_string", 1, 1), "to_string": ("to_string", 1, 1), "string": ("to_string", 1, 1),
    "tointeger": ("to_int64", 1, 1), "tofloat": ("to_double", 1, 1),
    "contains": ("contains", 2, 2), "starts_with": ("starts_with", 2, 2), "ends_with": ("ends_with", 2, 2),
    "initcap": ("initcap", 1, 1), "concat": ("concat", 2, 2), "levenshtein": ("levenshtein", 2, 2),
    "abs": ("abs", 1, 1), "floor": ("floor", 1, 1), "ceil": ("ceil", 1, 1), "sqrt": ("sqrt", 1, 1),
    "sign": ("sign", 1, 1), "coalesce": ("coalesce", 1, 8),
    "labels": ("labels", 1, 1), "label": ("label", 1, 1), "type": ("label", 1, 1),
    "nodes": ("nodes", 1, 1), "relationships": ("rels", 1, 1), "rels": ("rels", 1, 1), "length": ("length", 1, 1),
    "keys": ("keys", 1, 1), "date": ("date", 1, 1), "timestamp": ("timestamp", 1, 1), "datetime": ("timestamp", 1, 1),
    "date_part": ("date_part", 2, 2), "list_contains": ("list_contains", 2, 2), "list_sort": ("list_sort", 1, 1),
    "list_distinct": ("list_distinct", 1, 1), "range": ("range", 2, 3),
}
QUANTIFIERS = ("all", "any", "none", "single")

# Words that may not be used as unquoted names: clause and operator keywords of Cypher and of the
# engine's dialect (so `MATCH limit = (x) ...` is refused instead of being read two ways).
KEYWORDS = frozenset("""
ALL AND ANY AS ASC ASCENDING BY CASE CONTAINS COUNT DESC DESCENDING DISTINCT ELSE END ENDS EXISTS FALSE IN
IS LIMIT MATCH NONE NOT NULL OPTIONAL OR ORDER RETURN SINGLE SKIP STARTS THEN TRUE UNWIND WHEN WHERE WITH XOR
CALL YIELD UNION CREATE MERGE SET DELETE DETACH REMOVE DROP FOREACH LOAD COPY EXPORT IMPORT INSTALL ATTACH USE
SHOW PROFILE EXPLAIN BEGIN COMMIT ROLLBACK TRANSACTION ALTER GRANT DENY REVOKE START STOP TERMINATE FROM TO
ON CSV HEADERS FINISH SHORTEST ALLSHORTESTPATHS SHORTESTPATH COLLECT DATABASE GRAPH MACRO PROJECT CHECKPOINT
""".split())

WRITE_WORDS = frozenset("CREATE MERGE SET DELETE DETACH REMOVE DROP FOREACH ALTER GRANT DENY REVOKE".split())
# Clauses refused at the start of a clause, with the reason given back to the user.
REFUSED_CLAUSES = {
    "CALL": "procedures and CALL subqueries are not allowed",
    "UNION": "UNION is not allowed",
    "LOAD": "file and extension loading (LOAD) is not allowed",
    "COPY": "file access (COPY) is not allowed",
    "EXPORT": "EXPORT is not allowed", "IMPORT": "IMPORT is not allowed",
    "INSTALL": "extensions (INSTALL) are not allowed", "ATTACH": "ATTACH is not allowed",
    "USE": "USE is not allowed", "SHOW": "SHOW is not allowed",
    "PROFILE": "PROFILE is not allowed", "EXPLAIN": "EXPLAIN is not allowed",
    "BEGIN": "transactions are managed by the server", "COMMIT": "transactions are managed by the server",
    "ROLLBACK": "transactions are managed by the server", "CHECKPOINT": "CHECKPOINT is not allowed",
    "START": "START is not allowed", "STOP": "STOP is not allowed", "TERMINATE": "TERMINATE is not allowed",
    "FINISH": "FINISH is not allowed",
}
