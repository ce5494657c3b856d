"""The queue of what bare retrievals taught: written by its own writer, never on a
recall's thread; a flush returns once everything queued before it is written;
a failed write keeps the queue for the next flush, within a bound."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.errors import StoreUnavailableError
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.learn import LearningConfig
from hippocampus.model import EdgeType, EdgeUpdate, NewMemory
from hippocampus.service import Hippocampus
from hippocampus.services.learning import QUEUE_KEPT
from hippocampus.store.embedded import EmbeddedStore

C = "team:queue"
T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
QUERY = "redis connection pool exhausted under checkout load"
NOTES = [
    "Redis connection pool exhausted under checkout load on Black Friday",
    "Checkout load test showed the pool size was too small for redis",
    "Connection pool settings for redis documented in the runbook",
    "Under heavy load the redis pool needs a wait timeout",
]


@pytest.fixture
def svc(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    service = Hippocampus(
        EmbeddedStore(tmp_path / "data"),
        HashingEmbedder(),
        spacy_extractor,
        learning=LearningConfig(flush_at=1),  # every recall fills the queue
    )
    service.remember_many(C, [NewMemory(content=text) for text in NOTES], now=T0)
    yield service
    service.close()


def _co_occurrences(svc: Hippocampus) -> int:
    return sum(e.co_occurrences for e in svc.store.iter_edges(C) if e.type == EdgeType.ASSOCIATED)


def _retrievals(svc: Hippocampus) -> int:
    return sum(1 for e in svc.store.iter_events(C) if e.type == "retrieval")


def test_a_recall_that_fills_the_queue_does_not_wait_for_its_write(
    svc: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    write = svc.store.reinforce_edges
    started, release = threading.Event(), threading.Event()

    def slow_write(collection: str, updates: Sequence[EdgeUpdate]) -> None:
        started.set()
        assert release.wait(timeout=30)  # a writer queued behind other writers' locks
        write(collection, updates)

    monkeypatch.setattr(svc.store, "reinforce_edges", slow_write)
    svc.record_use(C, [h.memory.id for h in svc.recall(C, QUERY, limit=2, learn=False).hits])
    before = _co_occurrences(svc)

    answered = svc.recall(C, QUERY, limit=3, now=T0)  # returns while its learning waits
    assert answered.hits
    assert started.wait(timeout=30), "the learning writer never started"
    assert _retrievals(svc) == 0
    release.set()
    svc.flush_learning()  # waits for the writer's flush, then writes what is left
    assert _retrievals(svc) == 1
    assert _co_occurrences(svc) > before


def test_a_failed_flush_keeps_the_queue_for_the_next(
    svc: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc.flush_learning()
    write = svc.store.append_events
    failing = [True]

    def append(collection: str, events: Sequence[object]) -> None:
        if failing[0]:
            raise StoreUnavailableError("the disk is full")
        write(collection, events)  # type: ignore[arg-type]

    monkeypatch.setattr(svc.store, "append_events", append)
    svc.learning = LearningConfig(flush_at=10_000)  # no flush of its own
    svc.recall(C, QUERY, limit=3, now=T0)
    with pytest.raises(StoreUnavailableError):
        svc.flush_learning()
    edges = _co_occurrences(svc)  # the edges were written: they are not queued again
    failing[0] = False
    svc.flush_learning()
    assert _retrievals(svc) == 1
    assert _co_occurrences(svc) == edges


def test_while_writes_keep_failing_the_queue_stays_bounded(
    svc: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(collection: str, updates: Sequence[EdgeUpdate]) -> None:
        raise StoreUnavailableError("the disk is full")

    def queued() -> int:
        svc.learning_queue._writer.submit(lambda: None).result()  # its flush is done
        return sum(len(updates) for updates, _ in svc.learning_queue._pending.values())

    monkeypatch.setattr(svc.store, "reinforce_edges", refuse)
    svc.learning = LearningConfig(flush_at=5)
    svc.recall(C, QUERY, limit=3, now=T0)
    one_recall = queued()
    assert one_recall > 0  # kept for the next flush
    for _ in range(40):
        svc.recall(C, QUERY, limit=3, now=T0)
        with pytest.raises(StoreUnavailableError):
            svc.flush_learning()
        assert queued() <= QUEUE_KEPT * 5
