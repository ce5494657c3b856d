"""The seed's rules reachable through the engine: usefulness from feedback, co-use,
lifecycle, summary, provenance and the learned state that travels with a collection."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine.embed import HashingEmbedder
from engine.extract import SpacyConceptExtractor
from engine.extract.quality import QualityConfig
from engine.model import NewMemory
from engine.service import Hippocampus
from engine.store.embedded import EmbeddedStore

C = "team:seed"
T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
OPERATOR = "operator"


def _service(path: Path, extractor: SpacyConceptExtractor) -> Hippocampus:
    return Hippocampus(
        EmbeddedStore(path),
        HashingEmbedder(),
        extractor,
        quality=QualityConfig(source_trust={OPERATOR: 1.0}),
    )


@pytest.fixture
def svc(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    service = _service(tmp_path / "data", spacy_extractor)
    yield service
    service.close()


def _remember(svc: Hippocampus, text: str, **extra: object) -> str:
    out = svc.remember(C, NewMemory(content=text, source=OPERATOR, **extra), now=T0)  # type: ignore[arg-type]
    return out.memory.id


def test_usefulness_moves_with_feedback_and_reorders_the_seed_composite(
    svc: Hippocampus,
) -> None:
    first = _remember(svc, "Retry the payment webhook with exponential backoff and jitter")
    second = _remember(svc, "Retry the payment webhook after a fixed delay of five seconds")
    query = "retry the payment webhook"
    before = svc.recall(C, query, limit=2, recipe="SEED_COMPOSITE", learn=False, now=T0)
    top, other = (h.memory.id for h in before.hits)

    for day in range(3):
        at = T0 + timedelta(hours=day + 1)
        svc.feedback(C, top, helpful=False, now=at)
        svc.feedback(C, other, helpful=True, now=at)

    assert svc.get(C, other).retrieval.usefulness == pytest.approx(4 / 5)
    assert svc.get(C, top).retrieval.usefulness == pytest.approx(1 / 5)
    after = svc.recall(C, query, limit=2, recipe="SEED_COMPOSITE", learn=False, now=T0)
    assert [h.memory.id for h in after.hits] == [other, top]
    assert {first, second} == {top, other}
