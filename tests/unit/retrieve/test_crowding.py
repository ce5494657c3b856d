"""Crowding: a memory close to the query only for sitting among many like it
loses to one as close that says something of its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hippocampus.dense import VectorSample, crowding_of
from hippocampus.model import RecallFilters
from hippocampus.retrieve.config import ASSOCIATIVE, DENSE, SearchConfig
from hippocampus.retrieve.pipeline import Retrieval, retrieve
from hippocampus.store import MemoryRecord, Vector
from hippocampus.store.embedded import EmbeddedStore
from tests.unit.retrieve.test_pipeline import MODEL, T0, C, FixedExtractor, memory

DIM = 8


def axis(i: int) -> Vector:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    return v


def at(similarity: float, direction: Vector) -> Vector:
    """A unit vector at ``similarity`` to the query (axis 0), the rest along
    ``direction`` (taken orthogonal to the query and to unit length)."""
    rest = direction.astype(np.float32).copy()
    rest[0] = 0.0
    rest /= np.linalg.norm(rest)
    out: Vector = (similarity * axis(0) + np.sqrt(1.0 - similarity**2) * rest).astype(np.float32)
    return out


QUERY = axis(0)
# Six near repeats, each 0.60 from the query; one memory just below them that is
# like none of them; three far memories.
VECTORS = {
    **{f"repeat{i}": at(0.60, axis(1) + 0.05 * axis(2 + i)) for i in range(6)},
    "distinct": at(0.58, -axis(1) + axis(2)),
    **{f"far{i}": at(0.10, axis(5 + i)) for i in range(3)},
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    s = EmbeddedStore(tmp_path / "data")
    s.add_memories(C, [MemoryRecord(memory=memory(m, ()), vector=v) for m, v in VECTORS.items()])
    yield s
    s.close()


def run(store: EmbeddedStore, config: SearchConfig) -> Retrieval:
    return retrieve(
        store,
        FixedExtractor({}),
        C,
        "q",
        QUERY,
        model=MODEL,
        config=config,
        filters=RecallFilters(),
        limit=len(VECTORS),
        now=T0,
    )


def ranked(store: EmbeddedStore, crowding: float) -> list[str]:
    found = run(store, ASSOCIATIVE.model_copy(update={"crowding": crowding}))
    return [c.memory_id for c in found.candidates]


def test_a_memory_like_no_other_passes_near_repeats_that_match_a_little_better(
    store: EmbeddedStore,
) -> None:
    assert ranked(store, 0.0)[0].startswith("repeat")
    assert ranked(store, ASSOCIATIVE.crowding)[0] == "distinct"


@pytest.mark.parametrize("config", [ASSOCIATIVE, DENSE], ids=lambda c: c.name)
def test_crowding_leaves_the_reported_similarity_alone(
    store: EmbeddedStore, config: SearchConfig
) -> None:
    found = run(store, config)
    by_id = {c.memory_id: c for c in found.candidates}
    assert by_id["distinct"].similarity == pytest.approx(0.58, abs=1e-6)
    assert by_id["repeat0"].similarity == pytest.approx(0.60, abs=1e-6)
    if config is DENSE:
        # DENSE never weighs crowding: its score is the cosine, repeats first.
        assert all(c.score == pytest.approx(c.similarity) for c in found.candidates)
        assert found.candidates[0].memory_id.startswith("repeat")


def test_a_sample_stands_for_the_collection_by_its_share_of_neighbours() -> None:
    # A sample of 4 of 400 memories: the nearest round(50 × 4 / 400) = 1 of the
    # sample stands for a memory's 50 nearest.
    sample_vectors = np.stack([axis(1), axis(2), at(0.5, axis(1)), axis(3)])
    sample = VectorSample(ids=["s1", "s2", "s3", "s4"], vectors=sample_vectors, total=400)
    found = crowding_of(["m", "s1"], np.stack([axis(1), axis(1)]), sample, 50)
    assert found["m"] == pytest.approx(1.0)
    # s1 is in the sample: its nearest other is s3, at sqrt(1 - 0.5²) to it.
    assert found["s1"] == pytest.approx(np.sqrt(0.75), abs=1e-6)
    # The whole collection sampled: the 50 nearest, or all the others when fewer.
    whole = VectorSample(ids=sample.ids, vectors=sample_vectors, total=4)
    (value,) = crowding_of(["s1"], axis(1)[None, :], whole, 50).values()
    assert value == pytest.approx((0.0 + np.sqrt(0.75) + 0.0) / 3, abs=1e-6)
    assert crowding_of(["m"], axis(1)[None, :], VectorSample(["s1"], axis(1)[None, :], 1), 50) == {}
