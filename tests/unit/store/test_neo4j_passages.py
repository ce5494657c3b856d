"""The Neo4j store's passages on a stand-in driver: which statements write,
delete and search them, and how passage hits merge with memory hits."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from hippocampus.dense import PASSAGE_MARGIN
from hippocampus.errors import ConfigError, InvalidInputError
from hippocampus.model import Memory, RecallFilters
from hippocampus.model import content_hash as hash_of
from hippocampus.store import MemoryRecord
from hippocampus.store.neo4j import Neo4jStore
from hippocampus.store.neo4j.schema import _INDEXES, PASSAGE_INDEX, VECTOR_INDEX
from hippocampus.store.neo4j.vectors import _MIN_CANDIDATES, MAX_CANDIDATES
from tests.unit.store.neo4j_fake import FakeDriver, counted_vectors

C = "org:acme"
T0 = datetime(2024, 1, 1, tzinfo=UTC)
DIM = 4


def memory(memory_id: str, model: str | None = "m") -> Memory:
    text = f"memory {memory_id}"
    return Memory(
        id=memory_id,
        collection=C,
        content=text,
        created_at=T0,
        updated_at=T0,
        content_hash=hash_of(text),
        embedding_model=model,
    )


def make(driver: FakeDriver) -> Neo4jStore:
    return Neo4jStore(driver, dimensions=DIM)  # type: ignore[arg-type]


VECTOR = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
ROWS = np.array([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]], dtype=np.float32)


def test_passages_are_written_with_their_memories_in_one_transaction() -> None:
    driver = FakeDriver()
    make(driver).add_memories(
        C,
        [
            MemoryRecord(memory=memory("long"), vector=VECTOR, passages=ROWS),
            MemoryRecord(memory=memory("short"), vector=VECTOR),
        ],
    )
    assert len(driver.committed) == 1
    (item,) = driver.params_of("memory/set_passages")["items"]
    assert item == {"id": "long", "model": "m", "passages": ROWS.tolist()}

    plain = FakeDriver()
    make(plain).add_memories(C, [MemoryRecord(memory=memory("short"), vector=VECTOR)])
    assert "memory/set_passages" not in plain.ran()


def test_passages_need_a_vector_of_their_dimension() -> None:
    store = make(FakeDriver())
    with pytest.raises(InvalidInputError):
        store.add_memories(C, [MemoryRecord(memory=memory("a", None), passages=ROWS)])
    with pytest.raises(InvalidInputError):
        store.add_memories(
            C, [MemoryRecord(memory=memory("a"), vector=VECTOR, passages=ROWS[:, :3])]
        )


def test_a_new_vector_or_a_dropped_one_replaces_the_passages_and_metadata_keeps_them() -> None:
    driver = FakeDriver(answers={"memory/replace_memory": [{"id": "a"}]})
    store = make(driver)
    store.replace_memory(C, MemoryRecord(memory=memory("a")), replace_edges=False)
    assert "memory/set_passages" not in driver.ran()

    store.replace_memory(C, MemoryRecord(memory=memory("a"), vector=VECTOR), replace_edges=False)
    assert driver.params_of("memory/set_passages")["items"] == [
        {"id": "a", "model": "m", "passages": []}
    ]
    dropped = FakeDriver(answers={"memory/replace_memory": [{"id": "a"}]})
    make(dropped).replace_memory(
        C, MemoryRecord(memory=memory("a", None), drop_vector=True), replace_edges=False
    )
    assert dropped.params_of("memory/set_passages")["items"][0]["passages"] == []


def test_re_embedding_replaces_vectors_and_passages_together() -> None:
    driver = FakeDriver()
    make(driver).set_vectors(
        C, [("long", VECTOR, "m"), ("short", VECTOR, "m")], passages={"long": ROWS}
    )
    ((*_, vectors, passages),) = [[name for name, _ in tx] for tx in driver.committed]
    assert (vectors, passages) == ("memory/set_vectors", "memory/set_passages")
    items = driver.params_of("memory/set_passages")["items"]
    assert items == [
        {"id": "long", "model": "m", "passages": ROWS.tolist()},
        {"id": "short", "model": "m", "passages": []},
    ]


def test_stored_passages_come_back_as_rows() -> None:
    driver = FakeDriver(
        answers={"memory/get_passages": [{"id": "long", "passages": ROWS.tolist()}]}
    )
    found = make(driver).get_passages(C, ["long", "short"])
    assert list(found) == ["long"]
    np.testing.assert_array_equal(found["long"], ROWS)
    assert found["long"].dtype == np.float32


def test_a_memory_scores_its_best_passage_when_that_beats_its_vector() -> None:
    driver = FakeDriver(
        answers={
            "memory/read_counts": counted_vectors("m"),
            "recall/search_vectors": [
                {
                    "seen": 3,
                    "hits": [{"id": "a", "similarity": 0.6}, {"id": "b", "similarity": 0.5}],
                }
            ],
            "recall/search_passages": [
                {
                    "seen": 2,
                    "hits": [{"id": "b", "similarity": 0.9}, {"id": "c", "similarity": 0.4}],
                }
            ],
        }
    )
    store = make(driver)
    hits = store.search_vectors(C, VECTOR, model="m", k=2, filters=RecallFilters())
    # A passage counts less the margin (see PASSAGE_MARGIN).
    assert [(i, round(x, 6)) for i, x in hits] == [
        ("b", round(0.9 - PASSAGE_MARGIN, 6)),
        ("a", 0.6),
    ]
    params = driver.params_of("recall/search_passages")
    assert params["index"] == PASSAGE_INDEX and params["model"] == "m" and params["k"] == 2
    assert params["tiers"] == ["active"]

    heads_only = store.search_vectors(
        C, VECTOR, model="m", k=2, filters=RecallFilters(), passages=False
    )
    assert heads_only == [("a", 0.6), ("b", 0.5)]


def test_passages_the_index_answers_short_are_searched_exhaustively() -> None:
    driver = FakeDriver(
        answers={
            # However wide the search, the index answers short.
            "recall/search_passages": lambda params: [
                {"seen": params["candidates"], "hits": [{"id": "c", "similarity": 0.4}]}
            ],
            "recall/search_passages_exact": [
                {"id": "c", "similarity": 0.4},
                {"id": "d", "similarity": 0.3},
            ],
        }
    )
    (hits,) = make(driver).search_vectors_many(
        C, VECTOR[None, :], model="m", k=2, filters=RecallFilters()
    )
    assert [(i, round(x, 6)) for i, x in hits] == [
        ("c", round(0.4 - PASSAGE_MARGIN, 6)),
        ("d", round(0.3 - PASSAGE_MARGIN, 6)),
    ]
    widths = [p["candidates"] for _, p in driver.committed[0] if p.get("index") == PASSAGE_INDEX]
    assert widths == [_MIN_CANDIDATES * 4**i for i in range(4)] + [MAX_CANDIDATES]
    assert driver.ran()[-1] == "recall/search_passages_exact"
    assert len(driver.committed) == 1


def test_setup_makes_the_passage_index_and_checks_its_dimension() -> None:
    def indexes(dims: int) -> list[dict[str, object]]:
        return [
            {
                "name": name,
                "state": "ONLINE",
                "options": {"indexConfig": {"vector.dimensions": dims}}
                if name == PASSAGE_INDEX
                else ({"indexConfig": {"vector.dimensions": DIM}} if name == VECTOR_INDEX else {}),
            }
            for name in _INDEXES
        ]

    assert {"passage_key", PASSAGE_INDEX} <= set(_INDEXES)
    driver = FakeDriver(
        answers={
            "schema/show_indexes": indexes(DIM),
            "schema/read_schema_version": [{"version": None}],
        }
    )
    make(driver).setup()
    assert driver.params_of("schema/passage_embedding") == {"dimensions": DIM}
    other = FakeDriver(answers={"schema/show_indexes": indexes(1536)})
    with pytest.raises(ConfigError, match=PASSAGE_INDEX):
        make(other).setup()
