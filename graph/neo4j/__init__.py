"""Neo4j 5 backend (real server; see scripts/neo4j-server for a local one)."""

from graph.neo4j.store import Neo4jStore

__all__ = ["Neo4jStore"]
