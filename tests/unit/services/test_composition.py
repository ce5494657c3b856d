"""The engine as its services: each built from what it is given, the engine's
settings kept by the service that uses them (engine.services)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hippocampus.config import Limits
from hippocampus.embed import HashingEmbedder
from hippocampus.errors import InvalidInputError
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.dedup import DedupConfig
from hippocampus.extract.quality import QualityConfig
from hippocampus.learn import LearningConfig
from hippocampus.model import MemoryPatch, NewMemory
from hippocampus.schedule import SeedScheduler
from hippocampus.service import Hippocampus
from hippocampus.services.checks import Checks
from hippocampus.services.context import Context
from hippocampus.services.features import TextFeatures
from hippocampus.services.judging import Judge
from hippocampus.services.memories import MemoryService
from hippocampus.services.quality import QualityGate
from hippocampus.services.remembering import RememberingService
from hippocampus.store.embedded import EmbeddedStore

C = "org:acme"
T0 = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
TRUSTED = QualityConfig(source_trust={"operator": 1.0})


@pytest.fixture
def engine(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    svc = Hippocampus(EmbeddedStore(tmp_path / "e"), HashingEmbedder(), spacy_extractor)
    try:
        yield svc
    finally:
        svc.close()


def test_a_setting_set_on_the_engine_is_the_one_its_service_uses(engine: Hippocampus) -> None:
    engine.limits = Limits(max_query_chars=5)
    with pytest.raises(InvalidInputError):
        engine.retrieval.recall(C, "a query longer than five")
    assert engine.checks.limits.max_query_chars == 5

    scheduler = SeedScheduler()
    engine.scheduler = scheduler
    assert engine.conversations.scheduler is scheduler

    engine.graph_health_max_age_s = 0.0
    assert engine.statistics.graph_health_max_age_s == 0.0
    engine.dedup = DedupConfig(candidates=3)
    assert engine.judge.dedup.candidates == 3
    engine.learning = LearningConfig(flush_at=7)
    assert engine.context.learning.flush_at == 7


def test_an_embedder_set_on_the_engine_embeds_for_every_service(engine: Hippocampus) -> None:
    engine.embedder = HashingEmbedder(dim=64)
    assert engine.context.embedder.name == engine.embedder.name
    embedded = engine.features.embed(["a short note"])
    assert embedded is not None and embedded.heads.shape == (1, 64)


def test_services_built_by_hand_from_their_collaborators_work_together(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    store = EmbeddedStore(tmp_path / "s")
    try:
        context = Context(
            store,
            HashingEmbedder(),
            spacy_extractor,
            limits=Limits(),
            learning=LearningConfig(),
            quality_config=TRUSTED,
        )
        checks = Checks(context)
        features = TextFeatures(context)
        quality = QualityGate(context, checks)
        judge = Judge(context, DedupConfig())
        remembering = RememberingService(context, checks, features, quality, judge)
        memories = MemoryService(context, checks, features, quality, judge)

        note = NewMemory(content="Deploys run from the release branch.", source="operator")
        stored = remembering.remember(C, note, now=T0).memory
        assert stored is not None
        edited = memories.edit(C, stored.id, MemoryPatch(importance=0.9), now=T0).memory
        assert memories.get(C, stored.id) == edited
        assert edited.importance == 0.9
    finally:
        store.close()
