"""The vector index's HNSW graph: approximate candidates scored exactly, filters,
writes staged into the graph, the graph saved and loaded, and checked."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hippocampus.dense import PASSAGE_MARGIN
from hippocampus.errors import ConfigError
from hippocampus.model import Memory, RecallFilters, Tier, content_hash, utcnow
from hippocampus.store import MemoryRecord
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.embedded.index import CollectionIndex, IndexEntry
from hippocampus.store.embedded.index_ann import Approximate, GraphPolicy, graph_folder

DIM = 16
N = 1_200


def vectors(n: int = N, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def entry(i: int, **kw: object) -> IndexEntry:
    fields: dict[str, object] = {
        "tier": Tier.ACTIVE,
        "category": "decision" if i % 2 else "insight",
        "tags": ("rare",) if i % 50 == 0 else (),
        **kw,
    }
    return IndexEntry(id=f"m{i}", **fields)  # type: ignore[arg-type]


def graphed(rows: np.ndarray, approximate_from: int = 500) -> CollectionIndex:
    index = CollectionIndex("c", GraphPolicy(approximate_from=approximate_from))
    index.put([(entry(i), rows[i], "model") for i in range(len(rows))])
    assert index.wait_for_graphs(timeout_s=60)
    return index


def exact(rows: np.ndarray, q: np.ndarray, k: int, allowed: list[int] | None = None) -> list[str]:
    ids = list(range(len(rows))) if allowed is None else allowed
    scores = rows[ids] @ (q / np.linalg.norm(q))
    return [f"m{ids[j]}" for j in np.argsort(-scores)[:k]]


def recall(index: CollectionIndex, rows: np.ndarray, filters: RecallFilters, ok: object) -> float:
    rng = np.random.default_rng(1)
    allowed = [i for i in range(len(rows)) if ok(i)]  # type: ignore[operator]
    hits = 0
    for _ in range(40):
        q = rng.standard_normal(DIM).astype(np.float32)
        found = index.search(q, model="model", k=10, filters=filters)
        hits += len({m for m, _ in found} & set(exact(rows, q, 10, allowed)))
    return hits / 400


def test_a_large_partition_gets_a_graph_and_a_small_one_does_not() -> None:
    rows = vectors()
    assert graphed(rows).graph_state() == {"model": (N, 0)}
    assert graphed(rows, approximate_from=N + 1).graph_state() == {}


def test_graph_candidates_are_scored_exactly() -> None:
    rows = vectors()
    index = graphed(rows)
    q = np.random.default_rng(5).standard_normal(DIM).astype(np.float32)
    found = index.search(q, model="model", k=10, filters=RecallFilters())
    unit = q / np.linalg.norm(q)
    for memory_id, score in found:
        assert score == pytest.approx(float(rows[int(memory_id[1:])] @ unit), abs=1e-6)
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    assert recall(index, rows, RecallFilters(), lambda i: True) >= 0.97


def test_the_graph_is_searched_not_the_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = vectors()
    index = graphed(rows)
    asked: list[int] = []
    original = Approximate.candidates

    def spy(self: Approximate, q: np.ndarray, count: int) -> np.ndarray:
        asked.append(count)
        return original(self, q, count)

    monkeypatch.setattr(Approximate, "candidates", spy)
    index.search(rows[3], model="model", k=10, filters=RecallFilters())
    assert asked, "an unfiltered search of a graphed partition asks the graph"
    asked.clear()
    # One memory in fifty passes: those are scanned exactly, the graph is not asked.
    found = index.search(rows[3], model="model", k=5, filters=RecallFilters(tags=["rare"]))
    assert not asked
    assert [m for m, _ in found] == exact(rows, rows[3], 5, list(range(0, N, 50)))


def test_filters_hold_through_the_graph() -> None:
    rows = vectors()
    index = graphed(rows)
    decisions = RecallFilters(categories=["decision"])
    assert recall(index, rows, decisions, lambda i: i % 2 == 1) >= 0.95
    q = rows[7]
    found = index.search(q, model="model", k=20, filters=decisions)
    assert all(int(m[1:]) % 2 == 1 for m, _ in found) and len(found) == 20
    index.put([(entry(i, tier=Tier.ARCHIVED), None, None) for i in range(0, N, 3)])
    active = index.search(q, model="model", k=30, filters=RecallFilters(tiers=[Tier.ACTIVE]))
    assert all(int(m[1:]) % 3 for m, _ in active) and len(active) == 30
    index.put([(entry(i, conversation_ids=("talk",)), None, None) for i in range(1, N, 3)])
    others = index.search(
        q, model="model", k=30, filters=RecallFilters(exclude_conversation_id="talk")
    )
    assert all(int(m[1:]) % 3 != 1 for m, _ in others) and len(others) == 30


def test_removed_and_replaced_vectors_follow_into_the_graph() -> None:
    rows = vectors()
    index = graphed(rows)
    for i in range(0, 100):
        index.remove(f"m{i}")
    fresh = vectors(50, seed=9)
    index.set_vectors([(f"m{100 + j}", fresh[j], "model") for j in range(50)])
    assert index.wait_for_graphs(timeout_s=60)
    assert index.graph_state() == {"model": (N - 100, 0)}
    assert index.graph_problems() == []
    for j in range(50):
        [(memory_id, score)] = index.search(fresh[j], model="model", k=1, filters=RecallFilters())
        assert memory_id == f"m{100 + j}" and score == pytest.approx(1.0, abs=1e-5)
    gone = {f"m{i}" for i in range(100)}
    for i in range(100):
        found = index.search(rows[i], model="model", k=10, filters=RecallFilters())
        assert not gone & {m for m, _ in found}


def test_vectors_waiting_for_the_graph_are_searched_too() -> None:
    rows = vectors()
    index = graphed(rows)
    extra = vectors(30, seed=4)
    part = index._partitions["model"]
    # Hold the worker off: the index's write lock is taken, then the vectors put.
    with index._lock.write():
        for j in range(30):
            index._entries[f"x{j}"] = IndexEntry(id=f"x{j}", tier=Tier.ACTIVE, category="c")
            index._slot_of[f"x{j}"] = N + j
            index._put_vector(f"x{j}", extra[j], "model")
        assert part.ann is not None and len(part.ann.staged) == 30
        staged = part.ann
        for j in range(30):
            found = index._search(part, extra[j], 1, RecallFilters())
            assert found[0][0] == f"x{j}"
        assert len(staged.staged) == 30  # still waiting: found by the exact pass


def test_a_damaged_graph_is_reported_by_the_check() -> None:
    index = graphed(vectors())
    ann = index._partitions["model"].ann
    assert ann is not None
    ann.graph.remove(int(ann.key_of_slot[5]))
    assert any("graph" in p for p in index.graph_problems())


# -- the store: saved, loaded, repaired --------------------------------------------


def record(i: int, vector: np.ndarray) -> MemoryRecord:
    now = utcnow()
    content = f"memory number {i}"
    memory = Memory(
        id=f"m{i}",
        collection="c",
        content=content,
        category="insight",
        created_at=now,
        updated_at=now,
        content_hash=content_hash(content),
        embedding_model="model",
    )
    return MemoryRecord(memory=memory, vector=vector, edges=[])


def filled_store(path: Path, rows: np.ndarray) -> EmbeddedStore:
    store = EmbeddedStore(path, synchronous="NORMAL", approximate_from=500)
    store.add_memories("c", [record(i, rows[i]) for i in range(len(rows))])
    assert store.wait_for_graphs("c", timeout_s=60)
    return store


def test_the_graph_is_saved_at_close_and_loaded_at_start(tmp_path: Path) -> None:
    rows = vectors()
    store = filled_store(tmp_path, rows)
    before = store.search_vectors("c", rows[11], model="model", k=10, filters=RecallFilters())
    store.close()
    assert (graph_folder(tmp_path / "graphs", "c", "model") / "graph.usearch").exists()
    store = EmbeddedStore(tmp_path, approximate_from=500)
    try:
        # Loaded whole: nothing waits to be added.
        assert store.graph_state("c") == {"model": (N, 0)}
        found = store.search_vectors("c", rows[11], model="model", k=10, filters=RecallFilters())
        assert found == before
        assert store.integrity_problems() == []
    finally:
        store.close()


def test_a_graph_behind_the_database_is_repaired_at_load(tmp_path: Path) -> None:
    rows = vectors()
    filled_store(tmp_path, rows).close()
    # Behind the saved graph's back (as after a crash): a vector changes, a memory
    # goes, another comes.
    moved = vectors(1, seed=8)[0]
    with sqlite3.connect(tmp_path / "hippo.sqlite3") as conn:
        conn.execute("UPDATE memories SET vector = ? WHERE id = 'm3'", (moved.tobytes(),))
        conn.execute("DELETE FROM memories WHERE id = 'm4'")
    store = EmbeddedStore(tmp_path, approximate_from=500)
    try:
        store.add_memories("c", [record(N, vectors(1, seed=6)[0])])
        assert store.wait_for_graphs("c", timeout_s=60)
        assert store.graph_state("c") == {"model": (N, 0)}
        assert store.integrity_problems() == []
        [(memory_id, _)] = store.search_vectors(
            "c", moved, model="model", k=1, filters=RecallFilters()
        )
        assert memory_id == "m3"
        found = store.search_vectors("c", rows[4], model="model", k=10, filters=RecallFilters())
        assert "m4" not in {m for m, _ in found}
    finally:
        store.close()


def test_an_unreadable_graph_is_rebuilt(tmp_path: Path) -> None:
    rows = vectors()
    filled_store(tmp_path, rows).close()
    folder = graph_folder(tmp_path / "graphs", "c", "model")
    (folder / "graph.usearch").write_bytes(b"not a graph")
    store = EmbeddedStore(tmp_path, approximate_from=500)
    try:
        assert store.wait_for_graphs("c", timeout_s=60)
        assert store.graph_state("c") == {"model": (N, 0)}
        [(memory_id, _)] = store.search_vectors(
            "c", rows[9], model="model", k=1, filters=RecallFilters()
        )
        assert memory_id == "m9"
    finally:
        store.close()


def test_approximate_from_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="approximate_from"):
        EmbeddedStore(tmp_path, approximate_from=0)


def test_passages_and_many_queries_search_through_the_graph_too() -> None:
    rows = vectors()
    index = graphed(rows)
    # A long memory: its head far from the query, a later passage on it.
    q = vectors(1, seed=12)[0]
    far = -q
    index.put(
        [(entry(7), far, "model")],
        passages={"m7": np.stack([far, q]).astype(np.float32)},
    )
    assert index.wait_for_graphs(timeout_s=60)
    [(memory_id, score)] = index.search(q, model="model", k=1, filters=RecallFilters())
    assert memory_id == "m7" and score == pytest.approx(1.0 - PASSAGE_MARGIN, abs=1e-5)
    many = index.search_many(
        np.stack([rows[3], rows[5]]), model="model", k=5, filters=RecallFilters(), passages=False
    )
    assert [hits[0][0] for hits in many] == ["m3", "m5"]
    assert many[0] == index.search(
        rows[3], model="model", k=5, filters=RecallFilters(), passages=False
    )


def test_many_queries_ask_the_graph_once_and_answer_as_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = vectors()
    index = graphed(rows)
    queries = vectors(12, seed=21)
    batches: list[int] = []
    original = Approximate.candidates_many

    def spy(self: Approximate, qs: np.ndarray, count: int) -> list[np.ndarray]:
        batches.append(qs.shape[0])
        return original(self, qs, count)

    monkeypatch.setattr(Approximate, "candidates_many", spy)
    for filters in (RecallFilters(), RecallFilters(categories=["decision"])):
        batches.clear()
        many = index.search_many(queries, model="model", k=8, filters=filters, passages=False)
        assert batches == [len(queries)]
        one_by_one = [
            index.search(q, model="model", k=8, filters=filters, passages=False) for q in queries
        ]
        # The same memories; scores to float32 rounding (the rows are normalized as
        # a matrix there, one by one here).
        assert [[m for m, _ in hits] for hits in many] == [
            [m for m, _ in hits] for hits in one_by_one
        ]
        for hits, alone in zip(many, one_by_one, strict=True):
            assert [s for _, s in hits] == pytest.approx([s for _, s in alone], abs=1e-6)
    # Few pass: scanned exactly, the graph is not asked.
    batches.clear()
    rare = index.search_many(
        queries, model="model", k=3, filters=RecallFilters(tags=["rare"]), passages=False
    )
    assert not batches
    assert [[m for m, _ in hits] for hits in rare] == [
        exact(rows, q, 3, list(range(0, N, 50))) for q in queries
    ]
