"""The live Neo4j that the end-to-end tests run ``hippo serve`` on.

It is named as tools/neo4j-server/with-neo4j.sh exports it: ``NEO4J_URI``,
``NEO4J_USER``, ``NEO4J_PASSWORD`` (``NEO4J_DATABASE`` optional) and, for Neo4j
Browser, ``NEO4J_HTTP``. Without one a test skips with the reason; with
``NEO4J_REQUIRED=1`` (``make test``, CI) it fails instead, as the contract suite
does. Each test works in a collection of its own, dropped when it ends: the
server may be shared, and no test wipes it.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from hippocampus.store.neo4j import Neo4jStore

DIMENSIONS = 384
"""The hashing embedder's (bench/server.py's default), which is the model's too."""


def _unavailable(reason: str) -> None:
    if os.environ.get("NEO4J_REQUIRED") == "1":
        pytest.fail(f"NEO4J_REQUIRED=1 but {reason}")
    pytest.skip(reason)


@dataclass(frozen=True)
class LiveNeo4j:
    uri: str
    user: str
    password: str
    database: str
    http: str | None
    """The HTTP connector's base URL, where Neo4j Browser is served (``/browser/``)."""

    def server_settings(self) -> dict[str, str]:
        """The ``HIPPO_*`` variables of a ``hippo serve`` on this Neo4j."""
        return {
            "HIPPO_STORE": "neo4j",
            "HIPPO_NEO4J__URI": self.uri,
            "HIPPO_NEO4J__USER": self.user,
            "HIPPO_NEO4J__PASSWORD": self.password,
            "HIPPO_NEO4J__DATABASE": self.database,
        }


def live_neo4j() -> LiveNeo4j:
    """The Neo4j the environment names; skips (or fails, when required) without one."""
    uri = os.environ.get("NEO4J_URI")
    if not uri:
        _unavailable("NEO4J_URI is not set: no live Neo4j for this end-to-end test")
    return LiveNeo4j(
        uri=str(uri),
        user=os.environ.get("NEO4J_USER", "neo4j"),
        password=os.environ.get("NEO4J_PASSWORD", ""),
        database=os.environ.get("NEO4J_DATABASE", "neo4j"),
        http=os.environ.get("NEO4J_HTTP") or None,
    )


@contextlib.contextmanager
def scratch_collection(neo4j: LiveNeo4j, prefix: str) -> Iterator[str]:
    """A fresh collection name on ``neo4j``, its schema set up first (idempotent: a
    server started for the run may not have it yet); the collection is dropped
    when the block ends."""
    try:
        store = Neo4jStore.connect(
            neo4j.uri,
            user=neo4j.user,
            password=neo4j.password,
            database=neo4j.database,
            dimensions=DIMENSIONS,
        )
    except Exception as e:
        _unavailable(f"{neo4j.uri} is not usable ({e})")
    with contextlib.closing(store):
        try:
            store.verify_connectivity()
            store.setup(timeout_s=120.0)
        except Exception as e:
            _unavailable(f"{neo4j.uri} is not usable ({e})")
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        try:
            yield name
        finally:
            store.drop_collection(name)
