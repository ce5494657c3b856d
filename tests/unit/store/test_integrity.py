"""The embedded store's integrity check: clean after real use, and it notices
tables and indexes that disagree."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.model import MemoryPatch, NewMemory
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.embedded.store import DB_FILE

C = "team:check"
OPERATOR = "operator"
TEXTS = [
    "Redis connection pool exhausted under checkout load: raise the pool size",
    "The nightly export job timed out because of a missing index on orders",
    "Retry storms without jitter took the billing service down twice",
    "A stale DNS entry sent webhook traffic to the old load balancer",
]


def _service(data_dir: Path, extractor: SpacyConceptExtractor) -> Hippocampus:
    return Hippocampus(
        EmbeddedStore(data_dir, synchronous="NORMAL"),
        HashingEmbedder(),
        extractor,
        quality=QualityConfig(source_trust={OPERATOR: 1.0}),
    )


@pytest.fixture
def used(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    """A service whose store went through every kind of write."""
    svc = _service(tmp_path / "data", spacy_extractor)
    outs = svc.remember_many(C, [NewMemory(content=t, source=OPERATOR) for t in TEXTS])
    ids = [o.memory.id for o in outs if o.memory is not None]
    for _ in range(3):
        svc.recall(C, "redis pool exhausted at checkout")
    svc.feedback(C, ids[0], helpful=True, context=["pool sizing"])
    svc.feedback(C, ids[1], helpful=False, context=["exports"])
    svc.update(C, ids[2], MemoryPatch(content="Retry storms without jitter: add backoff"))
    svc.update(C, ids[3], MemoryPatch(tags=["dns"]))
    svc.forget(C, ids[1])
    svc.decay(C)
    yield svc
    svc.close()


def _store(svc: Hippocampus) -> EmbeddedStore:
    assert isinstance(svc.store, EmbeddedStore)
    return svc.store


def test_a_used_store_is_consistent_live_and_reopened(
    used: Hippocampus, tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    assert _store(used).integrity_problems() == []
    used.close()
    reopened = _service(tmp_path / "data", spacy_extractor)
    try:
        assert _store(reopened).integrity_problems() == []
    finally:
        reopened.close()


def test_rows_changed_behind_the_index_are_reported(used: Hippocampus, tmp_path: Path) -> None:
    store = _store(used)
    memory_id = next(iter(store.iter_memories(C))).id
    with sqlite3.connect(tmp_path / "data" / DB_FILE) as conn:
        conn.execute("DELETE FROM memories WHERE collection = ? AND id = ?", (C, memory_id))
        conn.execute(
            "UPDATE edges SET weight = weight / 2 WHERE collection = ? AND type = 'ABOUT'", (C,)
        )
        conn.execute(
            "INSERT INTO hubs (collection, kind, name) VALUES (?, 'Concept', 'lonely')", (C,)
        )
    problems = "\n".join(store.integrity_problems())
    assert f"the vector index's memories has 1 extra, e.g. ['{memory_id}']" in problems
    assert f"the text index has 1 extra, e.g. ['{memory_id}']" in problems
    assert "edges to or from nothing" in problems
    assert "graph edges with another weight" in problems
    assert "hubs without edges, e.g. ['Concept:lonely']" in problems


def test_a_vector_dropped_on_edit_keeps_the_store_consistent(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    embedder = _Breakable()
    svc = Hippocampus(
        EmbeddedStore(tmp_path / "data"),
        embedder,
        spacy_extractor,
        quality=QualityConfig(source_trust={OPERATOR: 1.0}),
    )
    try:
        outs = svc.remember_many(C, [NewMemory(content=t, source=OPERATOR) for t in TEXTS])
        memory_id = outs[0].memory.id if outs[0].memory is not None else ""
        embedder.broken = True
        edited = svc.update(C, memory_id, MemoryPatch(content="Pool size raised to 200"))
        assert edited.needs_embedding
        store = _store(svc)
        assert store.stats(C).pending_embeddings == 1
        assert store.integrity_problems() == []
        embedder.broken = False
        assert svc.reindex(C) == 1
        assert store.integrity_problems() == []
    finally:
        svc.close()


def test_a_pending_count_that_disagrees_with_the_table_is_reported(
    used: Hippocampus, tmp_path: Path
) -> None:
    store = _store(used)
    memory_id = next(iter(store.iter_memories(C))).id
    with sqlite3.connect(tmp_path / "data" / DB_FILE) as conn:
        conn.execute(
            "UPDATE memories SET vector = NULL, vector_model = NULL,"
            " doc = json_set(doc, '$.embedding_model', NULL) WHERE collection = ? AND id = ?",
            (C, memory_id),
        )
    problems = "\n".join(store.integrity_problems())
    assert f"the vector index's vectors has 1 extra, e.g. ['{memory_id}']" in problems
    assert "the vector index counts 0 memories without a vector, the table 1" in problems


class _Breakable(HashingEmbedder):
    """The hashing embedder, raising while ``broken``."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = False

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.broken:
            raise RuntimeError("the model server is down")
        return super().encode(texts)
