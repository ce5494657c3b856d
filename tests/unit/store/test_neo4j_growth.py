"""The Neo4j store's bounded growth around its Cypher, on a stand-in driver: the
event log's retention. What the Cypher does is the contract suite's job."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine.errors import InvalidInputError
from engine.store.neo4j import Neo4jStore
from engine.store.neo4j.store import _WRITE_BATCH
from tests.unit.store.neo4j_fake import FakeDriver

C = "org:acme"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def make(driver: FakeDriver) -> Neo4jStore:
    return Neo4jStore(driver, dimensions=8)  # type: ignore[arg-type]


def test_compaction_goes_a_bounded_batch_per_transaction_until_done() -> None:
    counts = iter([_WRITE_BATCH, _WRITE_BATCH, 12])
    driver = FakeDriver(
        answers={"memory/compact_events": lambda params: [{"dropped": next(counts)}]}
    )
    assert make(driver).compact_events(C, before=T0, keep=50) == 2 * _WRITE_BATCH + 12
    assert [[name for name, _ in tx] for tx in driver.committed] == [["memory/compact_events"]] * 3
    assert driver.params_of("memory/compact_events") == {
        "collection": C,
        "before": T0,
        "keep": 50,
        "limit": _WRITE_BATCH,
    }


def test_compaction_without_bounds_runs_nothing_and_a_negative_count_is_refused() -> None:
    driver = FakeDriver()
    store = make(driver)
    assert store.compact_events(C) == 0
    with pytest.raises(InvalidInputError):
        store.compact_events(C, keep=-1)
    assert driver.ran() == []


def test_stats_add_the_compacted_events_to_those_the_log_holds() -> None:
    driver = FakeDriver(
        answers={
            "memory/stats_events": [{"type": "retrieval", "n": 4}, {"type": "use", "n": 1}],
            "memory/stats_compacted_events": [
                {"type": "retrieval", "n": 10},
                {"type": "surfaced", "n": 3},
            ],
        }
    )
    stats = make(driver).stats(C)
    assert stats.events_by_type == {"retrieval": 14, "surfaced": 3, "use": 1}
    assert (stats.events, stats.events_retained) == (18, 5)
