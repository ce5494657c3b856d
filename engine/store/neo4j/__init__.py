"""The Neo4j store: the official driver, Cypher from ``cypher/``, a schema set up by
an explicit :meth:`Neo4jStore.setup`."""

from hippocampus.store.neo4j.store import Neo4jStore

__all__ = ["Neo4jStore"]
