"""Bounded growth: the event log's retention run by maintenance, and resurfacing
answered from the store's due dates."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hippocampus.api.maintenance import MaintenanceLoop
from hippocampus.embed import HashingEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.model import Event, EventRetention, MemoryPatch, NewMemory, Tier
from hippocampus.schedule import FsrsScheduler, Scheduler, SeedScheduler, indexed_as
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

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
    events = [Event(type="retrieval", at=T0 + timedelta(minutes=i)) for i in range(9)]
    svc.store.append_events(C, events)
    before = svc.stats(C)
    # Nothing is 30 days old yet: the count bound keeps the newest 5.
    assert svc.compact_events(C) == 4
    after = svc.stats(C)
    assert list(svc.store.iter_events(C)) == events[4:]
    assert after.events == before.events
    assert after.retrieval_count == before.retrieval_count
    assert after.events_retained == 5
    assert svc.compact_events(C) == 0
    # A month on, the age bound drops the rest.
    assert svc.compact_events(C, now=datetime.now(UTC) + timedelta(days=31)) == 5
    assert svc.stats(C).events_retained == 0
    assert svc.stats(C).retrieval_count == before.retrieval_count


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
    svc.store.append_events(C, [Event(type="use", at=datetime(2020, 1, 1, tzinfo=UTC))] * 7)
    logged = svc.stats(C).events
    MaintenanceLoop(svc, interval_s=3600).run_once()
    stats = svc.stats(C)
    assert stats.events_retained == 5
    assert stats.events == logged


# -- resurfacing from the store's due dates ----------------------------------------------


class _OwnFsrs(FsrsScheduler):
    """The FSRS-style scheduler as a caller's own: no stored dates answer for it,
    so its due memories are found by a scan."""


@pytest.mark.parametrize("scheduler", [FsrsScheduler(), SeedScheduler()], ids=["fsrs", "seed"])
def test_resurfacing_from_the_due_dates_finds_what_a_scan_finds(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor, scheduler: Scheduler
) -> None:
    service = _service(tmp_path, spacy_extractor, scheduler=scheduler)
    try:
        texts = [f"Runbook note {i}: restart the {w} worker" for i, w in enumerate("abcdefghij")]
        made = []
        for day, text in enumerate(texts):
            out = service.remember(
                C, NewMemory(content=text, source=OPERATOR), now=T0 + timedelta(days=day)
            )
            made.append(out.memory.id)
        # Use some (usage, review state, confidence), reject one, archive one.
        for i, mid in enumerate(made[:4]):
            service.feedback(C, mid, helpful=True, now=T0 + timedelta(days=12 + i))
        service.feedback(C, made[4], helpful=False, now=T0 + timedelta(days=13))
        service.update(C, made[5], MemoryPatch(importance=0.95), now=T0 + timedelta(days=13))
        service.update(C, made[6], MemoryPatch(tier=Tier.ARCHIVED), now=T0 + timedelta(days=13))
        own = _OwnFsrs() if isinstance(scheduler, FsrsScheduler) else _OwnSeed()
        assert indexed_as(scheduler) is not None and indexed_as(own) is None
        for day in (10, 14, 20, 60):
            now = T0 + timedelta(days=day)
            for limit in (1, 3, 10):
                indexed = service.resurface(C, limit=limit, now=now)
                service.scheduler = own
                try:
                    scanned = service.resurface(C, limit=limit, now=now)
                finally:
                    service.scheduler = scheduler
                assert [(m.id, u) for m, u in indexed] == [(m.id, u) for m, u in scanned]
        assert service.resurface(C, limit=10, now=T0 + timedelta(days=60))
    finally:
        service.close()


class _OwnSeed(SeedScheduler):
    """The seed rule as a caller's own (scanned, as :class:`_OwnFsrs`)."""


# -- graph health, kept --------------------------------------------------------------------


def test_maintenance_computes_the_graph_health_again_once_it_is_too_old(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    service = _service(tmp_path, spacy_extractor, graph_health_max_age_s=3600.0)
    try:
        for text in ("redis pool size", "redis eviction policy"):
            service.remember(C, NewMemory(content=text, concepts=["redis"], source=OPERATOR))
        assert service.graph_health_due(C)
        MaintenanceLoop(service, interval_s=3600).run_once()
        assert not service.graph_health_due(C)
        kept = service.stats_graph_health(C)
        assert kept.components == 1 and kept.age_s < 60.0
        service.remember(
            C, NewMemory(content="kafka lag alarms", concepts=["kafka"], source=OPERATOR)
        )
        # Within the hour: served as kept, even across maintenance rounds.
        MaintenanceLoop(service, interval_s=3600).run_once()
        assert service.stats_graph_health(C).computed_at == kept.computed_at
        later = kept.computed_at + timedelta(hours=2)
        assert service.graph_health_due(C, now=later)
        aged = service.stats_graph_health(C, now=later)
        assert aged.age_s == pytest.approx(7200.0) and aged.components == 1
        service.graph_health_max_age_s = 0.0
        MaintenanceLoop(service, interval_s=3600).run_once()
        fresh = service.stats_graph_health(C)
        assert fresh.computed_at > kept.computed_at
        assert fresh.components == service.graph_health(C).components > 1
    finally:
        service.close()


def test_kept_figures_of_another_shape_are_computed_again(svc: Hippocampus) -> None:
    svc.remember(C, NewMemory(content="redis pool size", concepts=["redis"], source=OPERATOR))
    svc.store.put_states(C, {"graph_health": {"computed_at": "yesterday"}})
    health = svc.stats_graph_health(C)
    assert health.nodes_by_kind["Memory"] == 1 and health.age_s < 60.0
