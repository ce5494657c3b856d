"""Bounded growth: the event log's retention run by maintenance."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from api.maintenance import MaintenanceLoop
from engine.embed import HashingEmbedder
from engine.extract import SpacyConceptExtractor
from engine.extract.quality import QualityConfig
from engine.model import Event, EventRetention, NewMemory
from engine.service import Hippocampus
from engine.store.embedded import EmbeddedStore

C = "team:payments"
T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
OPERATOR = "operator"


def _service(tmp_path: Path, extractor: SpacyConceptExtractor, **kwargs: object) -> Hippocampus:
    return Hippocampus(
        EmbeddedStore(tmp_path / "data"),
        HashingEmbedder(),
        extractor,
        quality=QualityConfig(source_trust={OPERATOR: 1.0}),
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.fixture
def svc(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    service = _service(
        tmp_path, spacy_extractor, events=EventRetention(max_age_days=30, max_events=5)
    )
    yield service
    service.close()


def test_maintenance_drops_events_past_the_retention_and_stats_keep_their_totals(
    svc: Hippocampus,
) -> None:
    svc.remember(C, NewMemory(content="redis pool size", source=OPERATOR), now=T0)
    old = [Event(type="retrieval", at=T0 - timedelta(days=40 - i)) for i in range(3)]
    new = [Event(type="retrieval", at=T0 + timedelta(minutes=i)) for i in range(6)]
    svc.store.append_events(C, [*old, *new])
    before = svc.stats(C)
    assert svc.compact_events(C, now=T0 + timedelta(hours=1)) == 4
    after = svc.stats(C)
    assert list(svc.store.iter_events(C)) == new[1:]
    assert after.events == before.events
    assert after.retrieval_count == before.retrieval_count
    assert after.events_retained == 5
    assert svc.compact_events(C, now=T0 + timedelta(hours=1)) == 0


def test_a_retention_without_bounds_keeps_everything(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    service = _service(
        tmp_path, spacy_extractor, events=EventRetention(max_age_days=0, max_events=0)
    )
    try:
        service.store.append_events(C, [Event(type="use", at=T0 - timedelta(days=9999))])
        assert service.compact_events(C) == 0
        assert service.stats(C).events_retained == 1
    finally:
        service.close()


def test_the_maintenance_round_compacts_every_collection(svc: Hippocampus) -> None:
    svc.remember(C, NewMemory(content="redis pool size", source=OPERATOR))
    svc.store.append_events(C, [Event(type="use", at=datetime(2020, 1, 1, tzinfo=UTC))] * 2)
    MaintenanceLoop(svc, interval_s=3600).run_once()
    stats = svc.stats(C)
    assert stats.events_retained == 0
    assert stats.events == 2
