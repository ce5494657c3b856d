"""How the contract suite reaches each store (see ``conftest.py``)."""

from __future__ import annotations

import functools
import os

NEO4J_IMAGE = "neo4j:5.26.6-community"
"""The Neo4j the suite starts in a container: the one docker-compose.yml and the
CI workflow run."""


@functools.cache
def neo4j_plan() -> tuple[str | None, str]:
    """How the suite reaches Neo4j: ``("uri", detail)``, ``("container", detail)``,
    or ``(None, why not)``."""
    uri = os.environ.get("NEO4J_URI")
    if uri:
        return "uri", f"neo4j: using NEO4J_URI={uri}"
    try:
        import testcontainers.neo4j  # noqa: F401
    except ImportError:
        return None, (
            "Neo4j contract tests skipped: NEO4J_URI is not set and testcontainers is not installed"
        )
    try:
        import docker

        docker.from_env().ping()
    except Exception as e:
        return (
            None,
            f"Neo4j contract tests skipped: NEO4J_URI is not set and no Docker engine ({e})",
        )
    return "container", f"neo4j: in a {NEO4J_IMAGE} container (testcontainers)"


STORES = ("embedded", "neo4j") if neo4j_plan()[0] is not None else ("embedded",)
"""The stores every contract test runs against. Without a way to Neo4j its tests
are not generated, and ``test_neo4j_is_reachable`` is skipped with the reason:
one line, not one per test."""
