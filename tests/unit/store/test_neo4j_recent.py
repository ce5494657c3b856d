"""The Neo4j store's vectors read a moment ago (engine/store/neo4j/recent.py)."""

from __future__ import annotations

import numpy as np
import pytest

from hippocampus.store.neo4j import recent
from hippocampus.store.neo4j.recent import RecentVectors


def _v(x: float) -> np.ndarray:
    return np.full(4, x, dtype=np.float32)


def test_a_vector_kept_is_taken_by_id_and_model_as_a_copy() -> None:
    kept = RecentVectors()
    kept.keep("c", kept.mark("c"), [("a", "m1", _v(1)), ("b", "m2", _v(2)), ("x", None, _v(3))])
    assert set(kept.take("c", ["a", "b", "x"], None)) == {"a", "b"}
    assert set(kept.take("c", ["a", "b"], "m1")) == {"a"}
    assert kept.take("other", ["a"], None) == {}
    taken = kept.take("c", ["a"], None)["a"]
    taken[:] = 9.0
    np.testing.assert_array_equal(kept.take("c", ["a"], None)["a"], _v(1))


def test_a_write_forgets_and_a_read_begun_before_it_keeps_nothing() -> None:
    kept = RecentVectors()
    kept.keep("c", kept.mark("c"), [("a", "m", _v(1)), ("b", "m", _v(2))])
    before = kept.mark("c")
    kept.forget("c", ["a"])
    assert set(kept.take("c", ["a", "b"], None)) == {"b"}
    kept.keep("c", before, [("a", "m", _v(0))])  # read the old vector: not kept
    assert kept.take("c", ["a"], None) == {}
    kept.keep("c", kept.mark("c"), [("a", "m", _v(3))])
    np.testing.assert_array_equal(kept.take("c", ["a"], None)["a"], _v(3))
    kept.forget("c")
    assert kept.take("c", ["a", "b"], None) == {}


def test_vectors_are_kept_a_few_seconds_and_a_bounded_number(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(recent.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(recent, "RECENT_KEPT", 3)
    kept = RecentVectors()
    kept.keep("c", kept.mark("c"), [(f"m{i}", "m", _v(i)) for i in range(5)])
    assert set(kept.take("c", [f"m{i}" for i in range(5)], None)) == {"m2", "m3", "m4"}
    now[0] += recent.RECENT_MAX_AGE_S + 0.1
    assert kept.take("c", ["m2", "m3", "m4"], None) == {}
