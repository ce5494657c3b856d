"""The Neo4j store as an operator runs it, on a live server (skipped without one;
``NEO4J_REQUIRED=1`` makes that a failure): what crowding's sample costs as a
collection grows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from engine.store.neo4j import Neo4jStore
from tests.contract.backends import neo4j_plan
from tests.contract.helpers import MODEL, memory, record
from tests.contract.plans import PlanningDriver, db_hits

pytestmark = pytest.mark.skipif(neo4j_plan()[0] is None, reason=neo4j_plan()[1])


@pytest.fixture
def dropped(neo4j_store: Neo4jStore) -> Iterator[list[str]]:
    """Collections to drop when the test ends."""
    made: list[str] = []
    yield made
    for name in made:
        neo4j_store.drop_collection(name)


def _name(dropped: list[str], prefix: str) -> str:
    name = f"contract-{prefix}-{uuid.uuid4().hex[:8]}"
    dropped.append(name)
    return name


def _planning(
    store: Neo4jStore, mode: str, only: frozenset[str]
) -> tuple[PlanningDriver, Neo4jStore]:
    # The session store's own driver, wrapped: the planning store never closes it.
    driver = PlanningDriver(store._driver, mode=mode, only=only)
    planned = Neo4jStore(
        driver,  # type: ignore[arg-type]
        database=store._database,
        dimensions=store.dimensions,
    )
    return driver, planned


def _with_vectors(store: Neo4jStore, collection: str, n: int) -> None:
    for start in range(0, n, 2_000):
        store.add_memories(
            collection,
            [record(memory(f"v{i:05d}", collection)) for i in range(start, min(n, start + 2_000))],
        )


# -- crowding's sample --------------------------------------------------------------------


def _sample_hits(store: Neo4jStore, collection: str) -> int:
    """The database hits of reading one sample of the collection's vectors."""
    driver, planned = _planning(store, "PROFILE", frozenset({"memory/sample_vectors"}))
    assert planned.crowding(collection, ["v00000"], model=MODEL)
    return sum(db_hits(plan) for plan in driver.plans_of("memory/sample_vectors"))


def test_crowding_reads_a_sample_that_costs_the_same_at_ten_times_the_memories(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    small, large = _name(dropped, "sample-1k"), _name(dropped, "sample-10k")
    _with_vectors(neo4j_store, small, 1_000)
    _with_vectors(neo4j_store, large, 10_000)
    at_small, at_large = _sample_hits(neo4j_store, small), _sample_hits(neo4j_store, large)
    assert at_large < 1.5 * at_small, (at_small, at_large)
