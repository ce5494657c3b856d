import numpy as np
import pytest

from engine.retrieve.config import DEFAULT_RECIPE, RECIPES, SEED_COMPOSITE
from engine.retrieve.fusion import max_normalized, mmr, ranks, rrf, seed_composite, weighted


def test_ranks_break_ties_by_id() -> None:
    assert ranks({"b": 1.0, "a": 1.0, "c": 2.0}) == {"c": 1, "a": 2, "b": 3}


def test_rrf_sums_weighted_reciprocal_ranks() -> None:
    fused = rrf(
        {"dense": {"a": 0.9, "b": 0.8}, "lexical": {"b": 12.0, "c": 3.0}},
        {"dense": 1.0, "lexical": 0.5},
        k=60,
    )
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 0.5 / 61)
    assert fused["c"] == pytest.approx(0.5 / 62)


def test_rrf_ignores_signals_without_weight() -> None:
    assert rrf({"dense": {"a": 1.0}, "graph": {"z": 1.0}}, {"dense": 1.0}) == {"a": 1 / 61}


def test_weighted_normalizes_unbounded_signals() -> None:
    fused = weighted(
        {"dense": {"a": 0.5}, "lexical": {"a": 10.0, "b": 20.0}},
        {"dense": 1.0, "lexical": 1.0},
        normalize=("lexical",),
    )
    assert fused == {"a": pytest.approx(1.0), "b": pytest.approx(1.0)}


def test_max_normalized_maps_best_to_one() -> None:
    assert max_normalized({"a": 2.0, "b": 1.0, "c": -1.0}) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert max_normalized({"a": 0.0}) == {"a": 0.0}


def test_seed_composite_is_reproducible() -> None:
    assert seed_composite(0.9, 0.5, 0.2) == pytest.approx(0.4 * 0.9 + 0.3 * 0.5 + 0.3 * 0.2)
    assert SEED_COMPOSITE.fusion == "seed_composite"


def test_mmr_skips_a_near_duplicate() -> None:
    v = {
        "a": np.array([1.0, 0.0], dtype=np.float32),
        "a2": np.array([0.999, 0.04], dtype=np.float32),
        "b": np.array([0.0, 1.0], dtype=np.float32),
    }
    relevance = {"a": 1.0, "a2": 0.99, "b": 0.6}
    assert mmr(["a", "a2", "b"], relevance, v, lambda_=0.5, k=2) == ["a", "b"]
    assert mmr(["a", "a2", "b"], relevance, v, lambda_=1.0, k=2) == ["a", "a2"]


def test_recipes_are_named_and_the_default_exists() -> None:
    assert set(RECIPES) == {
        "BM25",
        "DENSE",
        "HYBRID",
        "HYBRID_GRAPH",
        "ASSOCIATIVE",
        "WEIGHTED",
        "SEED_COMPOSITE",
    }
    assert all(name == cfg.name for name, cfg in RECIPES.items())
    assert DEFAULT_RECIPE in RECIPES
