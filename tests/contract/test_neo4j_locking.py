"""Concurrent writes on a live Neo4j: what only a real server's lock manager shows.

The contract suite checks that nothing is lost; these check how: writes that
touch one memory (or one conversation) from several threads at once take
their locks in one order and never deadlock, since a deadlock costs the
loser a retry (a second or more of back-off) and, past the retry time, the
request. Skipped without a Neo4j (``NEO4J_REQUIRED=1`` makes that a failure).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from engine.model import Memory
from engine.store import Learned
from engine.store.neo4j import Neo4jStore
from tests.contract.backends import neo4j_plan
from tests.contract.helpers import add

pytestmark = pytest.mark.skipif(neo4j_plan()[0] is None, reason=neo4j_plan()[1])

THREADS = 6
EACH = 8


@pytest.fixture
def collection(neo4j_store: Neo4jStore) -> Iterator[str]:
    name = f"contract-locking-{uuid.uuid4().hex[:8]}"
    yield name
    neo4j_store.drop_collection(name)


def deadlocks(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The driver's "retried after a deadlock" warnings captured so far."""
    return [r.getMessage() for r in caplog.records if "DeadlockDetected" in r.getMessage()]


def together(work: Callable[[int], None], threads: int = THREADS) -> None:
    """``work(n)`` in ``threads`` threads at once; re-raises the first failure."""
    failures: list[BaseException] = []

    def run(n: int) -> None:
        try:
            work(n)
        except BaseException as e:  # handed to the test thread below
            failures.append(e)

    workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if failures:
        raise failures[0]


def test_concurrent_learning_updates_of_one_memory_never_deadlock(
    neo4j_store: Neo4jStore, collection: str, caplog: pytest.LogCaptureFixture
) -> None:
    add(neo4j_store, collection, ["a"])

    def used(memories: Mapping[str, Memory], states: Mapping[str, dict[str, Any]]) -> Learned:
        a = memories["a"]
        meta = a.retrieval.model_copy(update={"usage_count": a.retrieval.usage_count + 1})
        return Learned(memories=[a.model_copy(update={"retrieval": meta})])

    def work(_: int) -> None:
        for _ in range(EACH):
            neo4j_store.learn(collection, memory_ids=["a"], change=used)

    caplog.set_level(logging.WARNING, logger="neo4j")
    together(work)
    got = neo4j_store.get_memories(collection, ["a"])["a"].retrieval.usage_count
    assert got == THREADS * EACH
    assert deadlocks(caplog) == []
