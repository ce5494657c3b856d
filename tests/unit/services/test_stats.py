"""The statistics service: what it ranks, and what it reads to rank it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.model import Memory, MemoryPatch, NewMemory, Tier
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

C = "org:acme"
T0 = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
TOPICS = ("postgres pool size", "redis eviction policy", "kafka partition count", "nginx timeout")


@pytest.fixture
def engine(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    svc = Hippocampus(
        EmbeddedStore(tmp_path / "e"),
        HashingEmbedder(),
        spacy_extractor,
        quality=QualityConfig(source_trust={"operator": 1.0}),
    )
    try:
        yield svc
    finally:
        svc.close()


def test_the_most_valuable_are_ranked_without_reading_the_collection(
    engine: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored: list[Memory] = []
    for n, topic in enumerate(TOPICS):
        item = NewMemory(
            content=f"We settled the {topic} after the incident review number {n}.",
            importance=0.2 + 0.2 * n,
            source="operator",
        )
        outcome = engine.remember(C, item, now=T0)
        assert outcome.memory is not None
        stored.append(outcome.memory)
    best = stored[-1]
    engine.update(C, best.id, MemoryPatch(tier=Tier.ARCHIVED), now=T0)

    def no_scan(collection: str) -> Iterator[Memory]:
        raise AssertionError("most_valuable read the whole collection")

    monkeypatch.setattr(engine.store, "iter_memories", no_scan)
    top = engine.most_valuable(C, 2)
    # Archived memories are not offered; the rest by confidence × importance.
    assert [m.id for m in top] == [stored[2].id, stored[1].id]
    assert engine.most_valuable(C, 0) == []
