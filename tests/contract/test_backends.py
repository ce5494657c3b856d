"""Which stores the contract suite runs against, and that each is usable."""

from __future__ import annotations

import pytest

from engine.store import GraphStore
from tests.contract.backends import STORES, neo4j_plan


def test_neo4j_is_reachable(request: pytest.FixtureRequest) -> None:
    """Skipped, with the reason, where the suite has no Neo4j to run against."""
    how, detail = neo4j_plan()
    if how is None:
        pytest.skip(detail)
    assert "neo4j" in STORES
    store = request.getfixturevalue("neo4j_store")
    store.check()


def test_every_store_is_ready_to_serve(store: GraphStore) -> None:
    store.check()
