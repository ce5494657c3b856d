import math

import numpy as np
import pytest

from hippocampus.retrieve.config import DEFAULT_RECIPE, RECIPES, SEED_COMPOSITE
from hippocampus.retrieve.fusion import (
    calibrated,
    lifted,
    max_normalized,
    mmr,
    ranks,
    rrf,
    seed_composite,
    specific_terms,
    spread,
    top_overlap,
    weighted,
)


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


@pytest.mark.parametrize(
    ("a", "b", "lambda_"),
    [
        ([1.0, 0.0], [0.0, 1.0], 0.5),
        # Stored vectors need not be unit length: beside a short vector, a
        # near-duplicate is no less one.
        ([0.2, 0.0], [0.0, 0.2], 0.7),
    ],
)
def test_mmr_skips_a_near_duplicate(a: list[float], b: list[float], lambda_: float) -> None:
    v = {
        "a": np.array(a, dtype=np.float32),
        "a2": np.array([0.999, 0.04], dtype=np.float32),
        "b": np.array(b, dtype=np.float32),
    }
    relevance = {"a": 1.0, "a2": 0.99, "b": 0.6}
    assert mmr(["a", "a2", "b"], relevance, v, lambda_=lambda_, k=2) == ["a", "b"]
    assert mmr(["a", "a2", "b"], relevance, v, lambda_=1.0, k=2) == ["a", "a2"]


def test_mmr_leaves_a_vector_of_another_dimension_unpenalized() -> None:
    # A collection re-embedded part way: the odd vector is not compared at all.
    v = {
        "a": np.array([1.0, 0.0], dtype=np.float32),
        "a2": np.array([1.0, 0.0, 0.0], dtype=np.float32),
        "b": np.array([0.0, 1.0], dtype=np.float32),
    }
    relevance = {"a": 1.0, "a2": 0.9, "b": 0.85}
    assert mmr(["a", "a2", "b"], relevance, v, lambda_=0.5, k=3) == ["a", "a2", "b"]
    assert mmr(["a", "b"], relevance, {}, lambda_=0.5, k=5) == ["a", "b"]


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


def test_calibrated_scores_are_similarities_when_words_set_nothing_apart() -> None:
    dense = {f"m{i}": 0.9 - i * 0.05 for i in range(10)}
    flat = {f"m{i}": 3.0 for i in range(10)}  # every memory shares the query's words alike
    assert calibrated(dense, flat, lexical_weight=1.0) == pytest.approx(dense)


def test_calibrated_adds_a_lexical_lead_in_cosine_units() -> None:
    dense = {f"m{i}": 0.5 - i * 0.01 for i in range(10)}
    lexical = {f"m{i}": 1.0 for i in range(10)} | {"m9": 11.0}  # a rare name only m9 has
    fused = calibrated(dense, lexical, lexical_weight=1.0)
    d = spread(dense, 20)
    lx = spread(lexical, 20)
    assert d is not None and lx is not None
    assert fused["m9"] == pytest.approx(dense["m9"] + d.std * lx.z(11.0))
    assert sorted(fused, key=fused.__getitem__, reverse=True)[:2] == ["m0", "m9"]
    assert fused["m0"] == pytest.approx(dense["m0"])  # below the lexical mean: no lead


def test_calibrated_gives_text_only_matches_the_least_similarity_seen() -> None:
    dense = {"a": 0.6, "b": 0.5, "c": 0.4}
    fused = calibrated(dense, {"a": 1.0, "b": 1.0, "c": 1.0, "z": 1.0}, lexical_weight=1.0)
    assert fused["z"] == pytest.approx(0.4)


@pytest.mark.parametrize("matches", [1, 2, 5])
def test_one_of_few_matches_for_a_rare_word_leads_by_the_deviations_of_its_rarity(
    matches: int,
) -> None:
    # Twenty candidates, a few of which share a word with the query: the others
    # count 0 on the lexical signal, so the few stand out by sqrt(20/n - 1)
    # deviations of it, whatever their BM25 score.
    dense = {f"m{i:02}": 0.40 - i * 0.01 for i in range(20)}
    rare = {f"m{19 - i:02}": 5.94 for i in range(matches)}  # the least similar ones
    fused = calibrated(dense, rare, lexical_weight=0.5)
    d = spread(dense, 20)
    assert d is not None
    lead = 0.5 * d.std * math.sqrt(20 / matches - 1)
    for mid in rare:
        assert fused[mid] == pytest.approx(dense[mid] + lead)
    for mid in dense.keys() - rare.keys():
        assert fused[mid] == pytest.approx(dense[mid])


def test_the_only_match_for_a_rare_word_passes_memories_without_one_unless_far_more_similar() -> (
    None
):
    dense = {f"m{i:02}": 0.30 - i * 0.005 for i in range(20)} | {"m00": 0.55}
    fused = calibrated(dense, {"m10": 2.0}, lexical_weight=0.5)
    d = spread(dense, 20)
    assert d is not None
    # sqrt(19) / 2 deviations of similarity: more than two.
    beaten = [mid for mid, s in fused.items() if s > fused["m10"]]
    assert beaten
    assert all(dense[mid] - dense["m10"] > 2.0 * d.std for mid in beaten)
    assert all(
        fused[mid] < fused["m10"]
        for mid in dense.keys() - {"m10"}
        if dense[mid] - dense["m10"] <= 2.0 * d.std
    )


def test_calibrated_without_similarities_ranks_by_words() -> None:
    assert calibrated({}, {"a": 4.0, "b": 2.0}, lexical_weight=1.0) == {"a": 1.0, "b": 0.5}


@pytest.mark.parametrize(
    ("query", "count"),
    [
        ("how should I retry calls to an external service", 0),
        ("When did Caroline go to the LGBTQ support group?", 2),
        ("What did I say on March 15, 2024 about Flask 2.0?", 5),
        ("I'm Craig. I've used Redis.", 2),
    ],
)
def test_specific_terms_count_names_numbers_and_dates(query: str, count: int) -> None:
    assert specific_terms(query) == count


def test_top_overlap_is_the_share_of_best_matches_both_signals_hold() -> None:
    dense = {f"m{i}": 1.0 - i / 100 for i in range(20)}
    assert top_overlap(dense, dict(dense)) == 1.0
    assert top_overlap(dense, {f"x{i}": float(i) for i in range(20)}) == 0.0
    # Half of lexical's ten best are among dense's ten best; the rest are not.
    lexical = {**{f"m{i}": 10.0 - i for i in range(5)}, **{f"x{i}": 4.0 - i for i in range(5)}}
    assert top_overlap(dense, lexical) == 0.5
    # Only the ten best count: dense's eleventh is no agreement.
    assert top_overlap(dense, {"m10": 9.0, "x": 1.0}, top=10) == 0.0


def test_corroboration_places_the_best_lexical_matches_among_the_best_similarities() -> None:
    from hippocampus.retrieve.fusion import corroboration

    dense = {f"m{i}": 0.9 - i / 100 for i in range(20)}  # mean 0.805, std 0.0577
    # The words' best three are the model's best three.
    found = corroboration(dense, {"m0": 3.0, "m1": 2.0, "m2": 1.0})
    assert found == pytest.approx((0.89 - 0.805) / 0.0577, abs=0.01)
    # The words' best three lie far below what the model finds best.
    low = {**dense, "a": 0.3, "b": 0.32, "c": 0.34}
    found = corroboration(low, {"a": 3.0, "b": 2.0, "c": 1.0, "m0": 0.5})
    assert found == pytest.approx((0.32 - 0.805) / 0.0577, abs=0.01)
    # Only matches with a similarity count; none, or no spread: no answer.
    assert corroboration(dense, {"x": 3.0, "y": 2.0}) is None
    assert corroboration({"a": 0.5, "b": 0.5, "c": 0.5}, {"a": 1.0}) is None


def test_top_overlap_compares_as_many_as_the_shorter_list_holds() -> None:
    dense = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6}
    assert top_overlap(dense, {"a": 3.0, "z": 2.0}) == 0.5
    assert top_overlap(dense, {}) == 1.0


def test_one_anchor_lifts_at_most_the_cap_and_more_anchors_add_in_full() -> None:
    assert lifted(0.3, 0.5, 0.5, weight=1.2, cap=0.05) == pytest.approx(0.35)
    assert lifted(0.3, 0.01, 0.01, weight=1.2, cap=0.05) == pytest.approx(0.312)
    # Two anchors of 0.25 each: the strongest capped, the second in full.
    assert lifted(0.3, 0.5, 0.25, weight=1.2, cap=0.05) == pytest.approx(0.3 + 0.05 + 0.3)


def test_a_clearly_better_direct_match_stays_above_a_single_anchor_neighbour() -> None:
    cap = 0.05
    better = lifted(0.48, 0.0, 0.0, weight=1.2, cap=cap)
    neighbour = lifted(0.40, 0.9, 0.9, weight=1.2, cap=cap)
    assert better > neighbour
