"""EmbeddedStore: learned models kept across restarts, pending-embedding counts,
batched vector search."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from hippocampus.model import Memory, RecallFilters, Tier, content_hash
from hippocampus.store import MemoryRecord, Vector
from hippocampus.store.embedded import EmbeddedStore

C = "org:acme"
OTHER = "persona:ada"
MODEL = "hashing-8"
T0 = datetime(2024, 1, 1, tzinfo=UTC)
ALL_TIERS = RecallFilters(tiers=list(Tier))


def memory(memory_id: str, *, model: str | None = MODEL, tier: Tier = Tier.ACTIVE) -> Memory:
    text = f"memory {memory_id}"
    return Memory(
        id=memory_id,
        collection=C,
        content=text,
        tier=tier,
        created_at=T0,
        updated_at=T0,
        content_hash=content_hash(text),
        embedding_model=model,
    )


def vec(seed: int, dim: int = 8) -> Vector:
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def record(m: Memory) -> MemoryRecord:
    seed = zlib.crc32(m.id.encode())
    return MemoryRecord(memory=m, vector=vec(seed) if m.embedding_model else None)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    s = EmbeddedStore(tmp_path / "data")
    yield s
    s.close()


def test_learned_models_in_state_documents_survive_reopening(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with EmbeddedStore(data) as store:
        assert store.get_states(C, ["quality_model"]) == {}
        store.put_states(C, {"quality_model": {"version": 1, "weights": {"length": 2.5}}})
        store.put_states(C, {"quality_model": {"version": 2, "weights": {"length": 3.0}}})
        store.put_states(OTHER, {"quality_model": {"version": 7}})
    with EmbeddedStore(data) as store:
        assert store.get_states(C, ["quality_model"]) == {
            "quality_model": {"version": 2, "weights": {"length": 3.0}}
        }
        assert store.get_states(OTHER, ["quality_model"]) == {"quality_model": {"version": 7}}
        assert store.list_collections() == []  # state alone makes no collection


def test_pending_count_covers_missing_and_other_model_vectors(store: EmbeddedStore) -> None:
    store.add_memories(
        C,
        [
            record(memory("a")),
            record(memory("b", model=None)),
            record(memory("c", model="old-model")),
        ],
    )
    assert store.count_pending_embeddings(C, MODEL) == 2
    assert store.count_pending_embeddings(C, "old-model") == 2
    assert len(store.pending_embeddings(C, MODEL, 10)) == 2
    store.set_vectors(C, [("b", vec(1), MODEL), ("c", vec(2), MODEL)])
    assert store.count_pending_embeddings(C, MODEL) == 0


def test_batched_vector_search_matches_one_search_per_vector(store: EmbeddedStore) -> None:
    store.add_memories(
        C,
        [
            record(memory(f"m{i}", tier=Tier.ARCHIVED if i % 4 == 0 else Tier.ACTIVE))
            for i in range(40)
        ],
    )
    queries = np.vstack([vec(100 + i) for i in range(6)] + [np.zeros(8, dtype=np.float32)])
    for filters in (RecallFilters(), ALL_TIERS, RecallFilters(categories=["insight"])):
        many = store.search_vectors_many(C, queries, model=MODEL, k=5, filters=filters)
        assert len(many) == len(queries)
        for q, found in zip(queries, many, strict=True):
            one = store.search_vectors(C, q, model=MODEL, k=5, filters=filters)
            assert [i for i, _ in found] == [i for i, _ in one]
            assert np.allclose([s for _, s in found], [s for _, s in one], atol=1e-6)
    assert store.search_vectors_many(C, queries, model="nope", k=5, filters=ALL_TIERS) == [
        [] for _ in queries
    ]
    wrong_dim = np.ones((2, 4), dtype=np.float32)
    assert store.search_vectors_many(C, wrong_dim, model=MODEL, k=5, filters=ALL_TIERS) == [[], []]
