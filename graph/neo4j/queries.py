"""Named Cypher for Neo4j 5 (Community). Every query takes the user as ``$u`` and values as parameters."""

from __future__ import annotations

from collections.abc import Callable

# Times travel as ISO strings and become DateTime on the server (datetime()): the driver's Python
# conversion of each datetime cost ~80 us of client CPU, 0.2 s per 1,000-fact commit. Reads return them
# with toString() for the same reason (store.py parses them back).
FACT_TIMES = ("observed_at", "valid_from", "valid_to", "recorded_at", "expired_at", "retracted_at")
CONCEPT_TIMES = ("created_at", "retired_at")
EDIT_TIMES = ("at", "undone_at")
TURN_TIMES = ("at",)
REL_TIMES = ("at", "resolved_at")


def _times(var: str, props: tuple[str, ...]) -> str:
    return "SET " + ", ".join(f"{var}.{p} = datetime(r.{p})" for p in props)


def as_text(var: str, props: tuple[str, ...]) -> str:
    """Map-projection items that return ``var``'s time properties as text."""
    return ", ".join(f"{p}: toString({var}.{p})" for p in props)



def schema(dim: int) -> list[str]:
    return [
        "CREATE CONSTRAINT fact_id IF NOT EXISTS FOR (f:Fact) REQUIRE f.fact_id IS UNIQUE",
        "CREATE CONSTRAINT concept_id IF NOT EXISTS FOR (c:Concept) REQUIRE c.concept_id IS UNIQUE",
        "CREATE CONSTRAINT edit_id IF NOT EXISTS FOR (e:Edit) REQUIRE e.edit_id IS UNIQUE",
        "CREATE CONSTRAINT turn_key IF NOT EXISTS FOR (t:Turn) REQUIRE t.key IS UNIQUE",
        "CREATE CONSTRAINT session_key IF NOT EXISTS FOR (s:Session) REQUIRE s.key IS UNIQUE",
        "CREATE CONSTRAINT user_meta IF NOT EXISTS FOR (u:UserMeta) REQUIRE u.user_id IS UNIQUE",
        "CREATE INDEX fact_user IF NOT EXISTS FOR (f:Fact) ON (f.user_id)",
        "CREATE INDEX concept_user IF NOT EXISTS FOR (c:Concept) ON (c.user_id)",
        "CREATE INDEX edit_user IF NOT EXISTS FOR (e:Edit) ON (e.user_id)",
        "CREATE INDEX turn_user IF NOT EXISTS FOR (t:Turn) ON (t.user_id, t.turn_id)",
        "CREATE INDEX session_user IF NOT EXISTS FOR (s:Session) ON (s.user_id)",
        # user_id is indexed too so Lucene narrows to one user before scoring (see TEXT_SEARCH).
        # Eventually consistent: the server applies a commit's Lucene updates in the background instead of
        # inside the commit (a third of a bulk load's server CPU at 1,000 facts per commit: issue 45);
        # TEXT_SEARCH's caller waits for them first (AWAIT_TEXT), so a search still sees every commit
        # that preceded it, from any process. A store made before keeps its index as it was.
        "CREATE FULLTEXT INDEX fact_statement IF NOT EXISTS FOR (f:Fact) ON EACH [f.statement, f.user_id] "
        "OPTIONS {indexConfig: {`fulltext.eventually_consistent`: true}}",
        # Embeddings are float32 bytes (as in the embedded store): 384 doubles per fact as a Bolt list
        # cost ~2 ms per fact to send and store, bytes ~0.02 ms. Nothing reads a vector index (search
        # is exact, per user, client-side: store.py ``_embeddings``), and updating one tripled a bulk
        # load's commit, so the one earlier versions made is dropped. ``dim`` is kept for callers.
        "DROP INDEX fact_embedding IF EXISTS",
    ]


# -- optimistic concurrency: taking the write lock on the user's meta node serializes commits (LOCK) --
# epoch: a fresh token each time a user's meta node is created, so a purged-and-recreated user (whose
# version restarts at 0) never validates another process's cached vectors.
CACHE_TOKEN = "MATCH (u:UserMeta {user_id: $u}) RETURN u.version AS v, u.epoch AS e"
SET_VERSION = "MATCH (u:UserMeta {user_id: $u}) SET u.version = $v"
# What a cached embedding matrix is checked against on every search: the token and the ids it covers
# (ids only, no vectors: cheap next to EMBEDDINGS).
CACHE_CHECK = ("MATCH (u:UserMeta {user_id: $u}) OPTIONAL MATCH (f:Fact {user_id: $u}) WHERE f.embedding IS NOT NULL "
               "RETURN u.version AS v, u.epoch AS e, collect(f.fact_id) AS ids")

# -- snapshot: LOAD_ALL below; the edit log alone --
LOAD_EDITS = "MATCH (e:Edit {user_id: $u}) RETURN e {.*, " + as_text("e", EDIT_TIMES) + "} AS e ORDER BY e.seq"

# Tenancy: concept, fact and edit ids are globally unique (the constraints above). Creating a fact fails
# on another user's fact id (ConstraintError); the two upserts must not take over another user's node
# (MERGE waits on the constraint, then matches it, also for a racing commit of another user), so they
# return how many rows they wrote: fewer than sent = an id held by another user. No pre-check query:
# these are exact inside the commit transaction and cost no extra round trip.

# -- a commit: LOCK first, then one UNWIND statement per kind of row that has rows, in this order --
# LOCK takes the user's write lock, checks the version the batch was built on (``$check``; no row when the
# user is elsewhere: the caller reads why) and sets the version it leaves (``$new``: invisible to others
# until the transaction commits), in one statement where a lock and a version statement were two.
# Each statement's rows come as ``$batch.<phase>``, a list inside a map: the server caches a plan per
# statement *and* per size bucket (0, 1-9, 10-99, ...) of each top-level list parameter, and planning one
# took 0.4-1.1 s on a freshly started server, so a first bulk load planned every statement again for its
# sizes (warm() had planned the empty lists only); a list inside a map carries no size hint: one plan per
# statement, made by warm() (bench/neo4j_speed.py; /tmp measurements in the issue-45 notes).
# Why not every phase in one statement (tried): the server caches a plan per statement *and* per size
# bucket of each list parameter, and planning the 18-subquery statement cost 1-2 s of server CPU, again
# for each new combination of list sizes; separate statements plan in milliseconds.
def _hint(label: str, prop: str) -> Callable[..., str]:
    def hints(*var: str) -> str:
        return "".join(f"USING INDEX {v}:{label}({prop}) " for v in var)
    return hints


_F_ID, _C_ID = _hint("Fact", "fact_id"), _hint("Concept", "concept_id")
# A cached plan is planned again when the store's statistics have moved enough since it was made (Neo4j:
# ``dbms.cypher.statistics_divergence_threshold``, checked at most every 10 s): on a server that starts
# empty, a bulk load planned every write statement once per growth step (0 -> 1,000 -> 4,000 facts), each
# 0.2-2 s of server CPU on a cold server. The write statements seek every node by its unique id (the index
# hints above make that the plan whatever the statistics: on an empty store the planner otherwise chose
# the user_id index for some), so no statistic can improve their plan, and they keep the first one.
_KEEP_PLAN = "CYPHER replan=skip "
LOCK = (_KEEP_PLAN + "MERGE (m:UserMeta {user_id: $u}) ON CREATE SET m.version = 0, m.epoch = randomUUID() "
        "SET m.locked_at = timestamp() WITH m, m.version AS v WHERE v = $check "
        "SET m.version = $new RETURN v, m.epoch AS e")
_WRITES: tuple[tuple[str, str], ...] = (
    ("turns", "UNWIND $batch.turns AS r CREATE (t:Turn) SET t = r SET t.at = datetime(r.at)"),
    ("sessions", "UNWIND $batch.sessions AS r MERGE (s:Session {key: r.key}) SET s.session_id = r.session_id, "
                 "s.user_id = $u, s.content_hash = r.content_hash"),
    ("concepts", "UNWIND $batch.concepts AS r MERGE (c:Concept {concept_id: r.concept_id}) ON CREATE SET c.user_id = $u "
                 "WITH c, r WHERE c.user_id = $u SET c += r " + _times("c", CONCEPT_TIMES) + " RETURN count(c) AS n_concepts"),
    ("facts_create", "UNWIND $batch.facts_create AS r CREATE (f:Fact) SET f = r " + _times("f", FACT_TIMES)),
    ("facts_update", "UNWIND $batch.facts_update AS r MATCH (f:Fact {fact_id: r.fact_id, user_id: $u}) " + _F_ID("f") + "SET f += r "
                     + _times("f", FACT_TIMES)),
    ("parent_remove", "UNWIND $batch.parent_remove AS r MATCH (p:Concept {concept_id: r.p, user_id: $u})-[e:PARENT_OF]->"
                      "(c:Concept {concept_id: r.c}) " + _C_ID("p") + "DELETE e"),
    ("contains_remove", "UNWIND $batch.contains_remove AS r MATCH (c:Concept {concept_id: r.c, user_id: $u})-[e:CONTAINS]->"
                        "(f:Fact {fact_id: r.f}) " + _C_ID("c") + "DELETE e"),
    ("supersedes_remove", "UNWIND $batch.supersedes_remove AS r MATCH (a:Fact {fact_id: r.src, user_id: $u})-[e:SUPERSEDES]->"
                          "(b:Fact {fact_id: r.dst}) " + _F_ID("a") + "DELETE e"),
    ("conflicts_remove", "UNWIND $batch.conflicts_remove AS r MATCH (a:Fact {fact_id: r.src, user_id: $u})"
                         "-[e:CONFLICTS_WITH]->(b:Fact {fact_id: r.dst}) " + _F_ID("a") + "DELETE e"),
    ("supersedes_add", "UNWIND $batch.supersedes_add AS r MATCH (a:Fact {fact_id: r.src, user_id: $u}), "
                       "(b:Fact {fact_id: r.dst, user_id: $u}) " + _F_ID("a", "b") + "CREATE (a)-[:SUPERSEDES {at: datetime(r.at), reason: r.reason}]->(b)"),
    ("conflicts_add", "UNWIND $batch.conflicts_add AS r MATCH (a:Fact {fact_id: r.src, user_id: $u}), "
                      "(b:Fact {fact_id: r.dst, user_id: $u}) " + _F_ID("a", "b")
                      + "CREATE (a)-[:CONFLICTS_WITH {at: datetime(r.at), reason: r.reason, "
                      "resolved_at: datetime(r.resolved_at)}]->(b)"),
    ("conflicts_update", "UNWIND $batch.conflicts_update AS r MATCH (a:Fact {fact_id: r.src, user_id: $u})"
                         "-[e:CONFLICTS_WITH]->(b:Fact {fact_id: r.dst}) " + _F_ID("a") + "SET e.reason = r.reason, "
                         "e.resolved_at = datetime(r.resolved_at)"),
    ("parent_add", "UNWIND $batch.parent_add AS r MATCH (p:Concept {concept_id: r.p, user_id: $u}), "
                   "(c:Concept {concept_id: r.c, user_id: $u}) " + _C_ID("p", "c") + "CREATE (p)-[:PARENT_OF]->(c)"),
    ("contains_add", "UNWIND $batch.contains_add AS r MATCH (c:Concept {concept_id: r.c, user_id: $u}), "
                     "(f:Fact {fact_id: r.f, user_id: $u}) " + _C_ID("c") + _F_ID("f")
                     + "CREATE (c)-[:CONTAINS]->(f)"),
    ("derived_add", "UNWIND $batch.derived_add AS r MATCH (f:Fact {fact_id: r.f, user_id: $u}), (t:Turn {key: r.t}) " + _F_ID("f")
                    + "USING INDEX t:Turn(key) WHERE t.user_id = $u CREATE (f)-[:DERIVED_FROM]->(t)"),
    # Edit-log rows the user did not have (ChangeSet.edits_new): CREATE, where MERGE took a third more of the
    # commit's server CPU (issue 45, 1,000-fact commits). Another user's id fails on the edit_id constraint
    # (ConstraintError: the commit reports the id as taken), as a created fact's does.
    ("edits_create", "UNWIND $batch.edits_create AS r CREATE (e:Edit) SET e = r SET e.user_id = $u "
                     + _times("e", EDIT_TIMES)),
    ("edits", "UNWIND $batch.edits AS r MERGE (e:Edit {edit_id: r.edit_id}) ON CREATE SET e.user_id = $u "
              "WITH e, r WHERE e.user_id = $u SET e += r " + _times("e", EDIT_TIMES) + " RETURN count(e) AS n_edits"),
    ("facts_delete", "UNWIND $batch.facts_delete AS r MATCH (f:Fact {fact_id: r, user_id: $u}) " + _F_ID("f") + "DETACH DELETE f"),
    ("concepts_delete", "UNWIND $batch.concepts_delete AS r MATCH (c:Concept {concept_id: r, user_id: $u}) " + _C_ID("c") + "DETACH DELETE c"),
)
WRITE_PHASES: tuple[tuple[str, str], ...] = tuple((name, _KEEP_PLAN + q) for name, q in _WRITES)

# -- reads for retrieval --
# The Lucene clause on user_id only narrows (analyzers split ids); the WHERE is what isolates users.
# Run before TEXT_SEARCH: waits until the commits made so far are in the (eventually consistent) index.
AWAIT_TEXT = "CALL db.index.fulltext.awaitEventuallyConsistentIndexRefresh()"
TEXT_SEARCH = ("CALL db.index.fulltext.queryNodes('fact_statement', $q) YIELD node, score "
               "WHERE node.user_id = $u RETURN node.fact_id AS id, score LIMIT $k")
# collect(DISTINCT o) lets the planner use its pruning (BFS-like) var-length expand.
EXPAND = ("MATCH (s:Fact) WHERE s.user_id = $u AND s.fact_id IN $ids "
          "OPTIONAL MATCH (s)-[:SUPERSEDES|CONFLICTS_WITH*1..{hops}]-(o:Fact) "
          "RETURN collect(DISTINCT s.fact_id) AS s, collect(DISTINCT o.fact_id) AS o")
EMBEDDINGS = ("MATCH (u:UserMeta {user_id: $u}) WITH u.version AS v, u.epoch AS e "
              "MATCH (f:Fact {user_id: $u}) WHERE f.embedding IS NOT NULL "
              "RETURN v, e, collect(f.fact_id) AS ids, collect(f.embedding) AS embs")
_FETCH_TAIL = (
    "OPTIONAL MATCH (c:Concept)-[:CONTAINS]->(f) "
    "OPTIONAL MATCH p = (r:Concept)-[:PARENT_OF*0..32]->(c) WHERE NOT EXISTS { ()-[:PARENT_OF]->(r) } "
    "CALL (f) { OPTIONAL MATCH (f)-[x:SUPERSEDES|CONFLICTS_WITH]-(:Fact) "
    "  RETURN collect(CASE WHEN x IS NULL THEN null ELSE {type: type(x), src: startNode(x).fact_id, "
    "  dst: endNode(x).fact_id, at: x.at, reason: x.reason, resolved_at: x.resolved_at} END) AS rels } "
    "RETURN f {.*, embedding: null} AS f, c.concept_id AS c, [n IN nodes(p) | n.name] AS path, rels"
)
# One round trip: the facts, everything within {hops} steps, their concept paths and relations.
FETCH_FACTS = "MATCH (f:Fact) WHERE f.user_id = $u AND f.fact_id IN $ids " + _FETCH_TAIL


def fetch_within(hops: int) -> str:
    return ("MATCH (s:Fact) WHERE s.user_id = $u AND s.fact_id IN $ids "
            f"OPTIONAL MATCH (s)-[:SUPERSEDES|CONFLICTS_WITH*1..{int(hops)}]-(o:Fact) "
            "WITH collect(DISTINCT s) + collect(DISTINCT o) AS ns UNWIND ns AS f WITH DISTINCT f " + _FETCH_TAIL)
FETCH_TURNS = ("MATCH (t:Turn) WHERE t.user_id = $u AND t.turn_id IN $ids RETURN t {.*, at: toString(t.at)} AS t "
               "ORDER BY t.session_id, t.seq")
TURN_FACTS = ("MATCH (f:Fact)-[:DERIVED_FROM]->(t:Turn) WHERE t.user_id = $u AND f.user_id = $u AND t.turn_id IN $ids "
              "RETURN DISTINCT f.fact_id AS f ORDER BY f")
USERS = "MATCH (u:UserMeta) RETURN u.user_id AS u ORDER BY u"

# The whole snapshot in one statement (one round trip instead of one per part): one row of lists. Every
# part seeks the user_id index (hinted: the plan an empty store gets too), so it keeps its first plan.
LOAD_ALL = (
    _KEEP_PLAN + "OPTIONAL MATCH (m:UserMeta {user_id: $u}) WITH m.version AS v, m.epoch AS e "
    "CALL () { MATCH (c:Concept {user_id: $u}) USING INDEX c:Concept(user_id) RETURN collect(c {.*, " + as_text("c", CONCEPT_TIMES) + "}) AS concepts } "
    "CALL () { MATCH (p:Concept {user_id: $u})-[:PARENT_OF]->(c:Concept) USING INDEX p:Concept(user_id) "
    "  RETURN collect([p.concept_id, c.concept_id]) AS parents } "
    "CALL () { MATCH (c:Concept {user_id: $u})-[:CONTAINS]->(f:Fact) USING INDEX c:Concept(user_id) "
    "  RETURN collect([c.concept_id, f.fact_id]) AS contains } "
    "CALL () { MATCH (f:Fact {user_id: $u}) USING INDEX f:Fact(user_id) RETURN collect(f {.*, embedding: null, " + as_text("f", FACT_TIMES)
    + "}) AS facts } "
    "CALL () { MATCH (a:Fact {user_id: $u})-[r:SUPERSEDES|CONFLICTS_WITH]->(b:Fact) USING INDEX a:Fact(user_id) "
    "  RETURN collect({type: type(r), src: a.fact_id, dst: b.fact_id, reason: r.reason, " + as_text("r", REL_TIMES)
    + "}) AS relations } "
    "CALL () { MATCH (x:Edit {user_id: $u}) USING INDEX x:Edit(user_id) WITH x ORDER BY x.seq RETURN collect(x {.*, " + as_text("x", EDIT_TIMES)
    + "}) AS edits } "
    "CALL () { MATCH (t:Turn {user_id: $u}) USING INDEX t:Turn(user_id, turn_id) WHERE t.turn_id IS NOT NULL RETURN collect(t.turn_id) AS turn_ids } "
    "CALL () { MATCH (s:Session {user_id: $u}) USING INDEX s:Session(user_id) RETURN collect([s.session_id, s.content_hash]) AS sessions } "
    "RETURN v, e, concepts, parents, contains, facts, relations, edits, turn_ids, sessions"
)

# -- purge / counts --
NODE_LABELS = ("Fact", "Concept", "Edit", "Turn", "Session", "UserMeta")
REL_TYPES = ("PARENT_OF", "CONTAINS", "SUPERSEDES", "CONFLICTS_WITH", "DERIVED_FROM")
COUNT_NODES_USER = "MATCH (n:{label} {{user_id: $u}}) RETURN count(n) AS n"
COUNT_NODES_ALL = "MATCH (n:{label}) RETURN count(n) AS n"
COUNT_RELS_USER = "MATCH (a {{user_id: $u}})-[r:{label}]->() RETURN count(r) AS n"
COUNT_RELS_ALL = "MATCH ()-[r:{label}]->() RETURN count(r) AS n"

# Every node of the user, label by label, in one statement (UserMeta last); ``n``: how many.
# The count is taken inside its own subquery: an aggregate without a grouping key always gives one row
# (with ``made`` as a key, a user deleted by a racing purge gave none).
_PURGE_NODES = ("CALL () { CALL () { " + " UNION ALL ".join(
    f"MATCH (n:{label} {{user_id: $u}}) DETACH DELETE n RETURN 1 AS one" for label in NODE_LABELS)
    + " } RETURN count(one) AS n } ")
PURGE_NODES = _PURGE_NODES + "RETURN n"

# -- hard delete by id (GraphStore.purge_items) --
PURGE_ID_PROPS = {"Fact": "fact_id", "Edit": "edit_id", "Concept": "concept_id", "Turn": "turn_id",
                  "Session": "session_id"}
# Lock without MERGE: purging an unknown user must not create its UserMeta node.
LOCK_EXISTING_VERSION = "MATCH (u:UserMeta {user_id: $u}) SET u.locked_at = timestamp() RETURN u.version AS v"
# A purge's lock, then PURGE_NODES, in one statement (a purge, a replace's first half). MERGE waits for a
# first commit of the user still in flight; ``made`` says the node is the purge's own (it is deleted with
# the rest and not counted as removed).
LOCK_AND_PURGE = ("MERGE (m:UserMeta {user_id: $u}) ON CREATE SET m.version = 0, m.epoch = randomUUID(), "
                  "m.purge_made = true SET m.locked_at = timestamp() WITH coalesce(m.purge_made, false) AS made "
                  + _PURGE_NODES + "RETURN made, n")
DELETE_BY_IDS = ("MATCH (n:{label}) WHERE n.user_id = $u AND n.{prop} IN $ids "
                 "DETACH DELETE n RETURN count(*) AS n")
