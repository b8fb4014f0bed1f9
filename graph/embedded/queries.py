"""Named Cypher for LadybugDB (Kuzu dialect): typed tables, explicit labels, bounded paths."""

from __future__ import annotations

SCHEMA = [
    "CREATE NODE TABLE IF NOT EXISTS UserMeta(user_id STRING PRIMARY KEY, version INT64)",
    "CREATE NODE TABLE IF NOT EXISTS Turn(key STRING PRIMARY KEY, turn_id STRING, user_id STRING, session_id STRING,"
    " seq INT64, role STRING, text STRING, at TIMESTAMP)",
    "CREATE NODE TABLE IF NOT EXISTS Session(key STRING PRIMARY KEY, session_id STRING, user_id STRING,"
    " content_hash STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Fact(fact_id STRING PRIMARY KEY, user_id STRING, statement STRING, kind STRING,"
    " holder STRING, evidence STRING, source_turn_ids STRING[], session_id STRING, observed_at TIMESTAMP,"
    " valid_from TIMESTAMP, valid_to TIMESTAMP, recorded_at TIMESTAMP, expired_at TIMESTAMP,"
    " retracted_at TIMESTAMP, scope STRING, qualifiers STRING, confidence DOUBLE, embedding BLOB)",
    "CREATE NODE TABLE IF NOT EXISTS Concept(concept_id STRING PRIMARY KEY, user_id STRING, name STRING,"
    " description STRING, created_at TIMESTAMP, retired_at TIMESTAMP)",
    "CREATE NODE TABLE IF NOT EXISTS Edit(edit_id STRING PRIMARY KEY, user_id STRING, seq INT64, session_id STRING,"
    " op STRING, at TIMESTAMP, payload STRING, undone_at TIMESTAMP)",
    "CREATE REL TABLE IF NOT EXISTS PARENT_OF(FROM Concept TO Concept)",
    "CREATE REL TABLE IF NOT EXISTS CONTAINS(FROM Concept TO Fact)",
    "CREATE REL TABLE IF NOT EXISTS SUPERSEDES(FROM Fact TO Fact, at TIMESTAMP, reason STRING)",
    "CREATE REL TABLE IF NOT EXISTS CONFLICTS_WITH(FROM Fact TO Fact, at TIMESTAMP, reason STRING,"
    " resolved_at TIMESTAMP)",
    "CREATE REL TABLE IF NOT EXISTS DERIVED_FROM(FROM Fact TO Turn)",
]

TIME_FIELDS = ("at", "created_at", "retired_at", "observed_at", "valid_from", "valid_to", "recorded_at", "expired_at",
               "retracted_at", "resolved_at", "undone_at")


def _rhs(p: str) -> str:
    # Parameters arrive as ISO strings (an all-null column would otherwise bind as STRING).
    return f"CAST(r.{p} AS TIMESTAMP)" if p in TIME_FIELDS else f"r.{p}"


FACT_SET = ", ".join(
    f"f.{p} = {_rhs(p)}"
    for p in ("user_id", "statement", "kind", "holder", "evidence", "source_turn_ids", "session_id", "observed_at",
              "valid_from", "valid_to", "recorded_at", "expired_at", "retracted_at", "scope", "qualifiers",
              "confidence")
)

# -- version check (optimistic concurrency) --
GET_VERSION = "MATCH (u:UserMeta {user_id: $u}) RETURN u.version"
SET_VERSION = "MERGE (u:UserMeta {user_id: $u}) SET u.version = $v"

# -- tenancy: concept/fact/edit ids are global primary keys; ids of this commit that another user holds --
# (run inside the commit transaction, under the store's lock: nothing can claim an id in between)
FOREIGN_IDS = {
    label: f"UNWIND $ids AS i MATCH (n:{label} {{{prop}: i}}) WHERE n.user_id <> $u RETURN count(n)"
    for label, prop in (("Concept", "concept_id"), ("Fact", "fact_id"), ("Edit", "edit_id"))
}

# -- snapshot --
LOAD_CONCEPTS = "MATCH (c:Concept {user_id: $u}) RETURN c.concept_id, c.user_id, c.name, c.description, c.created_at, c.retired_at"
LOAD_PARENTS = "MATCH (p:Concept {user_id: $u})-[:PARENT_OF]->(c:Concept) RETURN p.concept_id, c.concept_id"
LOAD_CONTAINS = "MATCH (c:Concept {user_id: $u})-[:CONTAINS]->(f:Fact) RETURN c.concept_id, f.fact_id"
FACT_COLS = ("f.fact_id, f.user_id, f.statement, f.kind, f.holder, f.evidence, f.source_turn_ids, f.session_id, "
             "f.observed_at, f.valid_from, f.valid_to, f.recorded_at, f.expired_at, f.retracted_at, f.scope, "
             "f.qualifiers, f.confidence")
LOAD_FACTS = f"MATCH (f:Fact {{user_id: $u}}) RETURN {FACT_COLS}"
LOAD_SUPERSEDES = "MATCH (a:Fact {user_id: $u})-[x:SUPERSEDES]->(b:Fact) RETURN a.fact_id, b.fact_id, x.at, x.reason"
LOAD_CONFLICTS = ("MATCH (a:Fact {user_id: $u})-[x:CONFLICTS_WITH]->(b:Fact) "
                  "RETURN a.fact_id, b.fact_id, x.at, x.reason, x.resolved_at")
EDIT_COLS = "e.edit_id, e.user_id, e.seq, e.session_id, e.op, e.at, e.payload, e.undone_at"
LOAD_EDITS = f"MATCH (e:Edit {{user_id: $u}}) RETURN {EDIT_COLS} ORDER BY e.seq"
LOAD_TURN_IDS = "MATCH (t:Turn {user_id: $u}) RETURN t.turn_id"
LOAD_SESSIONS = "MATCH (s:Session {user_id: $u}) RETURN s.session_id, s.content_hash"

# -- writes (each takes $rows) --
UPSERT_CONCEPTS = ("UNWIND $rows AS r MERGE (c:Concept {concept_id: r.concept_id}) SET c.user_id = r.user_id, "
                   "c.name = r.name, c.description = r.description, c.created_at = CAST(r.created_at AS TIMESTAMP), "
                   "c.retired_at = CAST(r.retired_at AS TIMESTAMP)")
DELETE_CONCEPTS = "UNWIND $rows AS r MATCH (c:Concept {concept_id: r, user_id: $u}) DETACH DELETE c"
ADD_PARENT = ("UNWIND $rows AS r MATCH (p:Concept {concept_id: r.p, user_id: $u}), (c:Concept {concept_id: r.c, user_id: $u}) "
              "CREATE (p)-[:PARENT_OF]->(c)")
REMOVE_PARENT = ("UNWIND $rows AS r MATCH (p:Concept {concept_id: r.p, user_id: $u})-[e:PARENT_OF]->"
                 "(c:Concept {concept_id: r.c}) DELETE e")
ADD_CONTAINS = ("UNWIND $rows AS r MATCH (c:Concept {concept_id: r.c, user_id: $u}), (f:Fact {fact_id: r.f, user_id: $u}) "
                "CREATE (c)-[:CONTAINS]->(f)")
REMOVE_CONTAINS = ("UNWIND $rows AS r MATCH (c:Concept {concept_id: r.c, user_id: $u})-[e:CONTAINS]->"
                   "(f:Fact {fact_id: r.f}) DELETE e")
CREATE_FACTS = f"UNWIND $rows AS r CREATE (f:Fact {{fact_id: r.fact_id}}) SET {FACT_SET}, f.embedding = r.embedding"
# Facts without a vector: a parameter list whose embeddings are all null binds as STRING, not BLOB.
CREATE_FACTS_BARE = f"UNWIND $rows AS r CREATE (f:Fact {{fact_id: r.fact_id}}) SET {FACT_SET}"
UPDATE_FACTS = f"UNWIND $rows AS r MATCH (f:Fact {{fact_id: r.fact_id, user_id: $u}}) SET {FACT_SET}"
DELETE_FACTS = "UNWIND $rows AS r MATCH (f:Fact {fact_id: r, user_id: $u}) DETACH DELETE f"
ADD_SUPERSEDES = ("UNWIND $rows AS r MATCH (a:Fact {fact_id: r.src, user_id: $u}), (b:Fact {fact_id: r.dst, user_id: $u}) "
                  "CREATE (a)-[:SUPERSEDES {at: CAST(r.at AS TIMESTAMP), reason: r.reason}]->(b)")
ADD_CONFLICTS = ("UNWIND $rows AS r MATCH (a:Fact {fact_id: r.src, user_id: $u}), (b:Fact {fact_id: r.dst, user_id: $u}) "
                 "CREATE (a)-[:CONFLICTS_WITH {at: CAST(r.at AS TIMESTAMP), reason: r.reason, resolved_at: CAST(r.resolved_at AS TIMESTAMP)}]->(b)")
UPDATE_CONFLICTS = ("UNWIND $rows AS r MATCH (a:Fact {fact_id: r.src, user_id: $u})-[e:CONFLICTS_WITH]->"
                    "(b:Fact {fact_id: r.dst}) SET e.reason = r.reason, e.resolved_at = CAST(r.resolved_at AS TIMESTAMP)")
REMOVE_SUPERSEDES = ("UNWIND $rows AS r MATCH (a:Fact {fact_id: r.src, user_id: $u})-[e:SUPERSEDES]->"
                     "(b:Fact {fact_id: r.dst}) DELETE e")
REMOVE_CONFLICTS = ("UNWIND $rows AS r MATCH (a:Fact {fact_id: r.src, user_id: $u})-[e:CONFLICTS_WITH]->"
                    "(b:Fact {fact_id: r.dst}) DELETE e")
UPSERT_EDITS = ("UNWIND $rows AS r MERGE (e:Edit {edit_id: r.edit_id}) SET e.user_id = r.user_id, e.seq = r.seq, "
                "e.session_id = r.session_id, e.op = r.op, e.at = CAST(r.at AS TIMESTAMP), e.payload = r.payload, e.undone_at = CAST(r.undone_at AS TIMESTAMP)")
CREATE_TURNS = ("UNWIND $rows AS r CREATE (t:Turn {key: r.key}) SET t.turn_id = r.turn_id, t.user_id = r.user_id, "
                "t.session_id = r.session_id, t.seq = r.seq, t.role = r.role, t.text = r.text, t.at = CAST(r.at AS TIMESTAMP)")
ADD_DERIVED = ("UNWIND $rows AS r MATCH (f:Fact {fact_id: r.f, user_id: $u}), (t:Turn {key: r.t, user_id: $u}) "
               "CREATE (f)-[:DERIVED_FROM]->(t)")
UPSERT_SESSIONS = ("UNWIND $rows AS r MERGE (s:Session {key: r.key}) SET s.session_id = r.session_id, "
                   "s.user_id = $u, s.content_hash = r.content_hash")

# -- reads for retrieval --
SEARCH_ROWS = "MATCH (f:Fact {user_id: $u}) RETURN f.fact_id, f.statement, f.embedding"
# SHORTEST = BFS per destination: walk semantics blow up on dense conflict cliques.
# Lookups go through the primary-key index (UNWIND + {fact_id: i}); `fact_id IN $ids` would scan.
EXPAND = ("UNWIND $ids AS i MATCH (s:Fact {{fact_id: i}}) WHERE s.user_id = $u "
          "OPTIONAL MATCH (s)-[:SUPERSEDES|CONFLICTS_WITH* SHORTEST 1..{hops}]-(o:Fact) RETURN s.fact_id, o.fact_id")
FETCH_FACTS = f"UNWIND $ids AS i MATCH (f:Fact {{fact_id: i}}) WHERE f.user_id = $u RETURN {FACT_COLS}"
FETCH_TURNS = ("MATCH (t:Turn) WHERE t.user_id = $u AND t.turn_id IN $ids "
               "RETURN t.turn_id, t.user_id, t.session_id, t.seq, t.role, t.text, t.at ORDER BY t.session_id, t.seq")
TURN_FACTS = ("MATCH (f:Fact)-[:DERIVED_FROM]->(t:Turn) WHERE t.user_id = $u AND f.user_id = $u AND t.turn_id IN $ids "
              "RETURN DISTINCT f.fact_id ORDER BY f.fact_id")
USERS = "MATCH (u:UserMeta) RETURN u.user_id ORDER BY u.user_id"

# -- purge / counts --
PURGE_LABELS = ("Fact", "Concept", "Edit", "Turn", "Session", "UserMeta")
COUNT_NODES_USER = "MATCH (n:{label}) WHERE n.user_id = $u RETURN count(n)"
DELETE_NODES_USER = "MATCH (n:{label}) WHERE n.user_id = $u DETACH DELETE n"
COUNT_NODES_ALL = "MATCH (n:{label}) RETURN count(n)"
COUNT_RELS_USER = "MATCH (a)-[r:{label}]->(b) WHERE a.user_id = $u RETURN count(r)"
COUNT_RELS_ALL = "MATCH (a)-[r:{label}]->(b) RETURN count(r)"
REL_LABELS = ("PARENT_OF", "CONTAINS", "SUPERSEDES", "CONFLICTS_WITH", "DERIVED_FROM")

# -- hard delete by id (GraphStore.purge_items) --
PURGE_ID_PROPS = {"Fact": "fact_id", "Edit": "edit_id", "Concept": "concept_id", "Turn": "turn_id",
                  "Session": "session_id"}
COUNT_BY_IDS = "MATCH (n:{label}) WHERE n.user_id = $u AND n.{prop} IN $ids RETURN count(n)"
DELETE_BY_IDS = "MATCH (n:{label}) WHERE n.user_id = $u AND n.{prop} IN $ids DETACH DELETE n"

# -- durability (graph/embedded/recovery.py, graph/embedded/compact.py) --
CHECKPOINT = "CHECKPOINT"
SHOW_TABLES = "CALL show_tables() RETURN name, type"
# Columns: property id, name, type, default expression, primary key (a backticked name does not bind).
TABLE_INFO = "CALL table_info('{table}') RETURN *"
# Columns: source table name, destination table name, source primary key, destination primary key.
SHOW_CONNECTION = "CALL show_connection('{table}') RETURN *"
# Compaction copies every row into a fresh file; the ordinary write queries above cannot be reused
# because they are per user and derive columns, while the copy must carry every stored value as is.
COPY_READ_NODES = "MATCH (n:{label}) RETURN {cols}"
COPY_WRITE_NODES = "UNWIND $rows AS r CREATE (n:{label} {props})"
COPY_READ_RELS = "MATCH (a:{src})-[e:{rel}]->(b:{dst}) RETURN a.{spk}, b.{dpk}{cols}"
COPY_WRITE_RELS = ("UNWIND $rows AS r MATCH (a:{src} {{{spk}: r.a}}), (b:{dst} {{{dpk}: r.b}}) "
                   "CREATE (a)-[:{rel} {props}]->(b)")
