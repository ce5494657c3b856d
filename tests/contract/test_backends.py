"""Which stores the contract suite runs against, and that each is usable."""

from __future__ import annotations

import os

import pytest

from hippocampus.store import GraphStore
from tests.contract.backends import STORES, neo4j_plan


def test_neo4j_is_reachable(request: pytest.FixtureRequest) -> None:
    """Skipped, with the reason, where the suite has no Neo4j to run against (failed
    instead with ``NEO4J_REQUIRED=1``: in CI a skip would pass unnoticed)."""
    how, detail = neo4j_plan()
    if how is None:
        if os.environ.get("NEO4J_REQUIRED") == "1":
            pytest.fail(f"NEO4J_REQUIRED=1 but {detail}")
        pytest.skip(detail)
    assert "neo4j" in STORES
    store = request.getfixturevalue("neo4j_store")
    store.check()


def test_every_store_is_ready_to_serve(store: GraphStore) -> None:
    store.check()
