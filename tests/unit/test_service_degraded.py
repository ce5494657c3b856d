"""The engine with an embedder that is missing or failing: writes are kept and
flagged, recall and surfacing fall back to text and graph with a warning, and
the flagged memories are embedded once the embedder is back."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from hippocampus.api.maintenance import MaintenanceLoop
from hippocampus.embed import Embedder, HashingEmbedder, UnavailableEmbedder
from hippocampus.errors import ConfigError, EmbeddingError
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.model import EdgeType, MemoryPatch, NewMemory, RecallFilters
from hippocampus.retrieve.config import EMBEDDER_DOWN_WARNING
from hippocampus.service import NOT_EMBEDDED_REASON, Hippocampus
from hippocampus.store.embedded import EmbeddedStore

C = "team:degraded"
MODEL = "hashing-v1-384"
POOL = "Connection pool exhausted under load after the driver upgrade"
RETRY = "Retry storms follow a cache node restart"


class _Model:
    """Where the model is: absent until ``there`` (the load fails), then a real
    hashing embedder that can be made to misbehave at call time."""

    def __init__(self) -> None:
        self.there = False
        self.failure: str | None = None

    def load(self) -> Embedder:
        if not self.there:
            raise ConfigError("no sentence-transformers model at /srv/models/minilm")
        return _Flaky(self)


class _Flaky(HashingEmbedder):
    def __init__(self, model: _Model) -> None:
        super().__init__()
        self.model = model

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        good = super().encode(texts)
        if self.model.failure == "raise":
            raise RuntimeError("segfault in tokenizer at 10.1.2.3")
        if self.model.failure == "nan":
            good[:, 0] = np.nan
        if self.model.failure == "shape":
            return good[:, :32]
        return good


@pytest.fixture
def model() -> _Model:
    return _Model()


@pytest.fixture
def svc(
    tmp_path: Path, model: _Model, spacy_extractor: SpacyConceptExtractor
) -> Iterator[Hippocampus]:
    """The engine as it starts when its model cannot be loaded."""
    service = Hippocampus(
        EmbeddedStore(tmp_path / "data"),
        UnavailableEmbedder(MODEL, 384, "missing", load=model.load),
        spacy_extractor,
        quality=QualityConfig(source_trust={"operator": 1.0}),
    )
    yield service
    service.close()


def _vectorless(svc: Hippocampus, memory_id: str) -> None:
    """The memory is stored, flagged, and nothing of it is in the vector index."""
    memory = svc.get(C, memory_id)
    assert memory.needs_embedding
    assert svc.store.get_vectors(C, [memory_id]) == {}
    probe = HashingEmbedder().encode([memory.content])[0]
    assert memory_id not in dict(
        svc.store.search_vectors(C, probe, model=MODEL, k=50, filters=RecallFilters())
    )


def test_a_model_missing_at_start_keeps_writes_then_embeds_them_once_loaded(
    svc: Hippocampus, model: _Model
) -> None:
    assert not svc.embedder_health().healthy
    out = svc.remember(C, NewMemory(content=POOL))
    assert out.created and not out.embedded
    assert NOT_EMBEDDED_REASON in out.reasons
    assert "/srv/models" not in " ".join(out.reasons)
    assert out.memory is not None
    mid = out.memory.id
    _vectorless(svc, mid)
    # Extraction and the graph are there all the same.
    assert out.memory.retrieval.concepts
    assert any(e.type == EdgeType.ABOUT for e in svc.store.edges_of(C, mid))
    assert svc.stats(C).pending_embeddings == 1

    result = svc.recall(C, "connection pool exhausted")
    assert [h.memory.id for h in result.hits] == [mid]
    assert result.hits[0].similarity is None
    assert result.warnings == [EMBEDDER_DOWN_WARNING]
    with pytest.raises(EmbeddingError):
        svc.reindex(C)  # still missing: nothing to embed with, nothing lost
    assert svc.stats(C).pending_embeddings == 1

    model.there = True
    MaintenanceLoop(svc, interval_s=3600).run_once()
    assert svc.embedder_health().healthy
    assert svc.stats(C).pending_embeddings == 0
    assert svc.get(C, mid).embedding_model == MODEL
    dense = svc.recall(C, "connection pool exhausted", recipe="DENSE")
    assert [h.memory.id for h in dense.hits] == [mid] and dense.warnings == []
    assert dense.hits[0].similarity is not None and dense.hits[0].similarity > 0.5


@pytest.mark.parametrize("failure", ["raise", "nan", "shape"])
def test_an_embedder_failing_at_call_time_keeps_writes_out_of_the_vector_index(
    svc: Hippocampus, model: _Model, failure: str
) -> None:
    model.there = True
    assert svc.recover_embedder().healthy
    kept = svc.remember(C, NewMemory(content="Retry storms follow a cache node restart"))
    assert kept.embedded
    model.failure = failure
    outs = svc.remember_many(
        C,
        [
            NewMemory(content=POOL),
            NewMemory(content="Disable HTTP keep-alive behind the old load balancer"),
        ],
    )
    assert all(o.created and not o.embedded for o in outs)
    for o in outs:
        assert o.memory is not None
        _vectorless(svc, o.memory.id)
    health = svc.embedder_health()
    assert not health.healthy and "10.1.2.3" not in (health.reason or "")
    assert svc.stats(C).pending_embeddings == 2

    result = svc.recall(C, "connection pool exhausted", min_score=0.9)
    assert outs[0].memory is not None
    assert result.hits and result.hits[0].memory.id == outs[0].memory.id
    assert result.warnings == [
        EMBEDDER_DOWN_WARNING,
        "min_score was not applied: the query has no vector",
    ]

    model.failure = None
    MaintenanceLoop(svc, interval_s=3600).run_once()
    assert svc.stats(C).pending_embeddings == 0
    hits = svc.recall(C, "connection pool exhausted", recipe="DENSE").hits
    assert hits[0].memory.id == outs[0].memory.id


def test_content_edited_while_the_embedder_fails_drops_the_old_vector_until_reembedded(
    svc: Hippocampus, model: _Model
) -> None:
    model.there = True
    assert svc.recover_embedder().healthy
    out = svc.remember(C, NewMemory(content=POOL, tags=["db"]))
    assert out.memory is not None and out.embedded
    mid = out.memory.id
    old_probe = HashingEmbedder().encode([POOL])[0]
    found = svc.store.search_vectors(C, old_probe, model=MODEL, k=5, filters=RecallFilters())
    assert found[0][0] == mid
    assert svc.stats(C).pending_embeddings == 0

    model.failure = "raise"
    edited = svc.update(C, mid, MemoryPatch(content=RETRY))
    assert edited.needs_embedding
    # The old text's vector would match the new text by the old one: it is gone.
    _vectorless(svc, mid)
    assert mid not in dict(
        svc.store.search_vectors(C, old_probe, model=MODEL, k=50, filters=RecallFilters())
    )
    assert svc.stats(C).pending_embeddings == 1
    assert [m.id for m in svc.store.pending_embeddings(C, MODEL, 10)] == [mid]
    # Still found by its new text, its tag kept.
    result = svc.recall(C, "retry storms cache restart")
    assert [h.memory.id for h in result.hits] == [mid]
    assert result.warnings == [EMBEDDER_DOWN_WARNING]
    assert svc.get(C, mid).tags == ["db"]

    model.failure = None
    MaintenanceLoop(svc, interval_s=3600).run_once()
    assert svc.stats(C).pending_embeddings == 0
    assert svc.get(C, mid).embedding_model == MODEL
    np.testing.assert_allclose(
        svc.store.get_vectors(C, [mid])[mid], HashingEmbedder().encode([RETRY])[0], atol=1e-6
    )
    dense = svc.recall(C, "Retry storms follow a cache node restart", recipe="DENSE")
    assert dense.hits[0].memory.id == mid and dense.warnings == []


def test_without_a_vector_repeats_are_still_merged_by_hash_and_by_words(
    svc: Hippocampus,
) -> None:
    first = svc.remember(C, NewMemory(content=POOL))
    again = svc.remember(C, NewMemory(content=POOL))
    assert first.memory is not None
    assert again.duplicate_of == first.memory.id and not again.created
    near = svc.remember(
        C, NewMemory(content="Connection pool exhausted under load after a driver upgrade")
    )
    assert near.duplicate_of == first.memory.id and not near.created
    other = svc.remember(
        C, NewMemory(content="Connection pool not exhausted under load after the driver upgrade")
    )
    assert other.created and other.conflicts_with == [first.memory.id]
    assert svc.stats(C).memories == 2


def test_surfacing_falls_back_to_text_and_graph_with_a_warning(svc: Hippocampus) -> None:
    svc.remember(
        C,
        NewMemory(
            content="Connection pool exhausted under load: raise max_pool_size and add "
            "a timeout to every checkout",
            triggers=["connection pool", "pool exhausted", "timeout"],
        ),
    )
    outcome = svc.message(C, "conv-1", "The connection pool is exhausted again, timeouts")
    assert outcome.warnings == [EMBEDDER_DOWN_WARNING]
    assert outcome.conversation.messages == 1


def test_a_healthy_embedder_gives_no_warnings(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    service = Hippocampus(EmbeddedStore(tmp_path / "ok"), HashingEmbedder(), spacy_extractor)
    try:
        service.remember(C, NewMemory(content=POOL))
        assert service.recall(C, "connection pool").warnings == []
        assert service.message(C, "conv-1", "connection pool exhausted").warnings == []
        assert service.embedder_health().healthy
    finally:
        service.close()


def test_the_former_name_of_the_random_seed_still_works_with_a_warning(tmp_path: Path) -> None:
    from hippocampus.extract import KeywordConceptExtractor

    store = EmbeddedStore(tmp_path / "data")
    with pytest.warns(DeprecationWarning, match="random_seed"):
        service = Hippocampus(store, HashingEmbedder(), KeywordConceptExtractor(), seed=4)
    try:
        assert service.surfacer.random_seed == 4
    finally:
        service.close()
