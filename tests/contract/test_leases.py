"""Leases (``GraphStore.take_lease``): one holder at a time, every store.

On Neo4j the contenders are threads here and processes in production; the
store cannot tell them apart (each ask is its own transaction).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from hippocampus.errors import InvalidInputError
from hippocampus.store import GraphStore
from hippocampus.store.neo4j import Neo4jStore

CONTENDERS = 6


@pytest.fixture
def new_lease(store: GraphStore) -> Iterator[Callable[[], str]]:
    """Makes lease names of the test's own (a lease is the store's, not a
    collection's); on Neo4j, their nodes are deleted when the test ends."""
    made: list[str] = []

    def make() -> str:
        made.append(f"contract-lease-{uuid.uuid4().hex[:12]}")
        return made[-1]

    yield make
    if isinstance(store, Neo4jStore):
        with store._driver.session(database=store._database) as session:
            session.run("MATCH (l:Lease) WHERE l.name IN $names DELETE l", names=made).consume()


def test_of_holders_asking_at_once_one_gets_the_lease(
    store: GraphStore, new_lease: Callable[[], str]
) -> None:
    name = new_lease()
    start = threading.Barrier(CONTENDERS)
    taken: dict[str, bool] = {}

    def ask(holder: str) -> None:
        start.wait()
        taken[holder] = store.take_lease(name, holder, ttl_s=60.0)

    threads = [threading.Thread(target=ask, args=(f"p{n}",)) for n in range(CONTENDERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (winner,) = [holder for holder, got in taken.items() if got]
    assert len(taken) == CONTENDERS
    # The holder renews it; the others still wait.
    assert store.take_lease(name, winner, ttl_s=60.0)
    assert not any(store.take_lease(name, h, ttl_s=60.0) for h in taken if h != winner)


def test_a_lease_whose_term_ran_out_goes_to_the_next_holder(
    store: GraphStore, new_lease: Callable[[], str]
) -> None:
    name = new_lease()
    assert store.take_lease(name, "a", ttl_s=60.0)
    assert not store.take_lease(name, "b", ttl_s=60.0)
    assert store.take_lease(name, "a", ttl_s=0.05)  # a renews for a short term
    time.sleep(0.2)  # which runs out
    assert store.take_lease(name, "b", ttl_s=60.0)
    assert not store.take_lease(name, "a", ttl_s=60.0)
    # Another lease is another matter.
    assert store.take_lease(new_lease(), "a", ttl_s=60.0)


@pytest.mark.parametrize(
    ("name", "holder", "ttl_s"), [("", "a", 1.0), ("x", "", 1.0), ("x", "a", -1.0)]
)
def test_a_lease_needs_a_name_a_holder_and_a_term(
    store: GraphStore, name: str, holder: str, ttl_s: float
) -> None:
    with pytest.raises(InvalidInputError):
        store.take_lease(name, holder, ttl_s)
