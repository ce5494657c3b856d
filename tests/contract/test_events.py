"""The store contract: the event log's retention (``GraphStore.compact_events``)
drops events appended before a bound or beyond a count, and never changes the
totals the store reports."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest

from hippocampus.errors import InvalidInputError
from hippocampus.model import Event, utcnow
from hippocampus.store import GraphStore
from tests.contract.helpers import T0


def _log(days: list[int], kinds: tuple[str, ...] = ("retrieval", "use")) -> list[Event]:
    """One event per entry of ``days`` (its time: T0 plus that many days), the
    types taking turns, numbered in the payload so each is told apart."""
    return [
        Event(type=kinds[i % len(kinds)], at=T0 + timedelta(days=d), payload={"n": i})
        for i, d in enumerate(days)
    ]


def _between() -> datetime:
    """A moment after every event appended so far and before any appended next
    (by the store's clock: Neo4j's runs beside this one)."""
    time.sleep(0.05)
    moment = utcnow()
    time.sleep(0.05)
    return moment


def test_events_appended_before_the_bound_go_and_the_totals_stay(
    store: GraphStore, collection: str
) -> None:
    events = _log([0, 1, 2, 3, 4, 5])
    store.append_events(collection, events[:3])
    cut = _between()
    store.append_events(collection, events[3:])
    before = store.stats(collection)
    assert (before.events, before.events_retained) == (6, 6)

    assert store.compact_events(collection, before=cut) == 3
    assert list(store.iter_events(collection)) == events[3:]
    after = store.stats(collection)
    assert after.events == 6
    assert after.events_by_type == before.events_by_type == {"retrieval": 3, "use": 3}
    assert after.events_retained == 3
    # Nothing more is that old: a second pass drops nothing.
    assert store.compact_events(collection, before=cut) == 0
    assert store.stats(collection) == after


def test_the_age_bound_goes_by_when_events_came_not_the_time_they_name(
    store: GraphStore, collection: str
) -> None:
    # Dated a year ahead by a client's clock, appended first; then an imported
    # conversation dated years back, appended last.
    ahead = [Event(type="surfaced", at=utcnow() + timedelta(days=365))]
    imported = _log([-900, -899])
    store.append_events(collection, ahead)
    cut = _between()
    store.append_events(collection, imported)
    assert store.compact_events(collection, before=cut) == 1
    assert list(store.iter_events(collection)) == imported


def test_beyond_the_newest_kept_the_oldest_appended_go(store: GraphStore, collection: str) -> None:
    events = _log([5, 0, 3, 1, 4])
    store.append_events(collection, events[:2])
    store.append_events(collection, events[2:])
    assert store.compact_events(collection, keep=2) == 3
    assert list(store.iter_events(collection)) == events[3:]
    assert store.compact_events(collection, keep=2) == 0
    assert store.compact_events(collection, keep=0) == 2
    assert list(store.iter_events(collection)) == []
    stats = store.stats(collection)
    assert (stats.events, stats.events_retained) == (5, 0)
    assert stats.events_by_type == {"retrieval": 3, "use": 2}


def test_both_bounds_together_drop_what_either_would(store: GraphStore, collection: str) -> None:
    events = _log([0, 9, 1, 8, 7, 6])
    store.append_events(collection, events[:2])
    cut = _between()
    store.append_events(collection, events[2:])
    # The age bound drops the first two appended; keep=3 also the third.
    assert store.compact_events(collection, before=cut, keep=3) == 3
    assert list(store.iter_events(collection)) == events[3:]


def test_totals_go_on_counting_after_a_compaction(store: GraphStore, collection: str) -> None:
    store.append_events(collection, _log([0, 0, 0], kinds=("retrieval",)))
    store.compact_events(collection, keep=1)
    store.append_events(collection, _log([1, 1], kinds=("retrieval", "surfaced")))
    stats = store.stats(collection)
    assert stats.events_by_type == {"retrieval": 4, "surfaced": 1}
    assert (stats.events, stats.events_retained) == (5, 3)


def test_a_long_log_is_compacted_whole(store: GraphStore, collection: str) -> None:
    """More events than one transaction of either store drops."""
    events = _log([i // 100 for i in range(2_600)], kinds=("retrieval", "use", "surfaced"))
    store.append_events(collection, events)
    assert store.compact_events(collection, keep=100) == 2_500
    assert list(store.iter_events(collection)) == events[-100:]
    stats = store.stats(collection)
    assert stats.events == 2_600
    assert stats.events_retained == 100
    assert sum(stats.events_by_type.values()) == 2_600


def test_compaction_keeps_to_its_collection(store: GraphStore, collection: str, other: str) -> None:
    store.append_events(collection, _log([0, 1]))
    store.append_events(other, _log([0, 1]))
    assert store.compact_events(collection, before=_between()) == 2
    assert len(list(store.iter_events(other))) == 2
    assert store.stats(other).events_retained == 2


def test_no_bound_drops_nothing_and_a_negative_count_is_refused(
    store: GraphStore, collection: str
) -> None:
    store.append_events(collection, _log([-5000]))
    assert store.compact_events(collection) == 0
    # Appended just now, whatever time it names: younger than a day.
    assert store.compact_events(collection, before=utcnow() - timedelta(days=1)) == 0
    with pytest.raises(InvalidInputError):
        store.compact_events(collection, keep=-1)
    assert store.stats(collection).events_retained == 1
    # A collection with no log at all.
    assert store.compact_events(f"{collection}-none", keep=0, before=utcnow()) == 0
