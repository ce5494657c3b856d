"""The embedded store's passages: kept in SQLite, rebuilt into the index at
start, and held in step with the table (``integrity_problems``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hippocampus.dense import PASSAGE_MARGIN
from hippocampus.errors import InvalidInputError
from hippocampus.model import RecallFilters
from hippocampus.store import MemoryRecord
from hippocampus.store.embedded import EmbeddedStore
from tests.contract.helpers import memory, unit, vec

C = "org:acme"
MODEL = "contract-model"


def _long(memory_id: str = "long") -> MemoryRecord:
    rows = np.stack([vec(f"{memory_id}-{n}") for n in range(1, 4)])
    return MemoryRecord(memory=memory(memory_id, C), vector=vec(memory_id), passages=rows)


def _passage_rows(path: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(path / "hippo.sqlite3") as conn:
        return conn.execute("SELECT memory_id, n FROM passages ORDER BY memory_id, n").fetchall()


def test_passages_survive_a_restart_and_the_index_is_rebuilt_from_them(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path) as store:
        store.add_memories(C, [_long(), MemoryRecord(memory=memory("short", C), vector=vec("s"))])
        assert store.integrity_problems() == []
    assert _passage_rows(tmp_path) == [("long", 1), ("long", 2), ("long", 3)]

    with EmbeddedStore(tmp_path) as store:
        (top, score), *_ = store.search_vectors(
            C, vec("long-3"), model=MODEL, k=2, filters=RecallFilters()
        )
        assert top == "long" and score == pytest.approx(1.0 - PASSAGE_MARGIN, abs=1e-5)
        assert store.integrity_problems() == []
        store.delete_memory(C, "long")
        assert store.integrity_problems() == []
    assert _passage_rows(tmp_path) == []


def test_integrity_notices_passages_the_index_does_not_hold(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path) as store:
        store.add_memories(C, [_long(), MemoryRecord(memory=memory("b", C), vector=vec("b"))])
        with sqlite3.connect(tmp_path / "hippo.sqlite3") as conn:
            conn.execute(
                "INSERT INTO passages VALUES (?, 'b', 1, ?, ?)", (C, MODEL, vec("x").tobytes())
            )
            conn.execute("DELETE FROM passages WHERE memory_id = 'long' AND n = 2")
        problems = store.integrity_problems()
    assert any("'b'" in p and "index's passages" in p for p in problems)
    assert any("'long'" in p and "numbering" in p for p in problems)


def test_a_rebuild_for_a_new_dimension_keeps_passages_in_step(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path) as store:
        store.add_memories(C, [_long(), _long("other")])
        # The model's vectors change size: the index is rebuilt, "other" leaves it.
        store.set_vectors(
            C, [("long", vec("new", 8), MODEL)], passages={"long": np.stack([vec("p", 8)])}
        )
        assert store.integrity_problems() == []
        hits = store.search_vectors(C, unit(vec("p", 8)), model=MODEL, k=5, filters=RecallFilters())
        assert [i for i, _ in hits] == ["long"]


def test_passages_of_another_dimension_or_not_finite_are_refused(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path) as store:
        for rows in (np.ones((2, 5), dtype=np.float32), np.full((1, 384), np.nan, np.float32)):
            with pytest.raises(InvalidInputError) as e:
                store.add_memories(
                    C, [MemoryRecord(memory=memory("a", C), vector=vec("a"), passages=rows)]
                )
            assert e.value.field == "passages"
        assert store.get_memories(C, ["a"]) == {}
