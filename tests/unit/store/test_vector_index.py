"""The in-memory index on its own: rows, swap-remove, filters, models, top-k."""

from __future__ import annotations

import numpy as np
import pytest

from hippocampus.model import RecallFilters, Tier
from hippocampus.store.embedded.index import CollectionIndex, IndexEntry, similarities, top_k
from hippocampus.store.records import Vector

ALL_TIERS = RecallFilters(tiers=list(Tier))


def unit(rng: np.random.Generator, dim: int = 8) -> Vector:
    v = rng.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def entry(memory_id: str, **kw: object) -> IndexEntry:
    fields: dict[str, object] = {"tier": Tier.ACTIVE, "category": "insight", **kw}
    return IndexEntry(id=memory_id, **fields)  # type: ignore[arg-type]


def filled(n: int, dim: int = 8, seed: int = 0) -> tuple[CollectionIndex, dict[str, Vector]]:
    rng = np.random.default_rng(seed)
    vectors = {f"m{i}": unit(rng, dim) for i in range(n)}
    index = CollectionIndex("c")
    index.put([(entry(i), v, "model-a") for i, v in vectors.items()])
    return index, vectors


def brute_force(vectors: dict[str, Vector], q: Vector, k: int) -> list[str]:
    ids = list(vectors)
    scores = np.stack([vectors[i] for i in ids]) @ (q / np.linalg.norm(q))
    return [ids[j] for j in np.argsort(-scores, kind="stable")[:k]]


def test_search_matches_brute_force_best_first() -> None:
    index, vectors = filled(300)
    q = unit(np.random.default_rng(7))
    hits = index.search(q, model="model-a", k=10, filters=RecallFilters())
    assert [i for i, _ in hits] == brute_force(vectors, q, 10)
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(float(vectors[hits[0][0]] @ q), abs=1e-5)


def test_vectors_are_normalized_so_scores_are_cosines() -> None:
    index = CollectionIndex("c")
    index.put([(entry("a"), np.array([3.0, 4.0], dtype=np.float32), "m")])
    [(memory_id, score)] = index.search(
        np.array([6.0, 8.0], dtype=np.float32), model="m", k=5, filters=RecallFilters()
    )
    assert memory_id == "a" and score == pytest.approx(1.0, abs=1e-6)


def test_swap_remove_keeps_every_other_row_attached_to_its_id() -> None:
    index, vectors = filled(50)
    for gone in ("m0", "m17", "m49", "m25"):  # first, middle, last, and a moved row
        index.remove(gone)
        del vectors[gone]
    entries, indexed = index.snapshot()
    assert set(entries) == set(indexed) == set(vectors)
    for memory_id, row in indexed.items():
        np.testing.assert_allclose(row.vector, vectors[memory_id], atol=1e-6)
    for memory_id, v in vectors.items():
        assert index.search(v, model="model-a", k=1, filters=RecallFilters())[0][0] == memory_id


def test_dropped_vectors_leave_search_but_their_memories_stay_filtered_and_pending() -> None:
    index, vectors = filled(20)
    index.put([(entry("m3", tags=("ops",)), None, None)])
    index.drop_vectors(["m3", "m7", "unknown"])
    entries, indexed = index.snapshot()
    assert set(entries) == set(vectors) and set(indexed) == set(vectors) - {"m3", "m7"}
    assert index.vector_count("model-a") == 18
    assert index.counts()[3] == 2  # without a stored vector: what stats() reports pending
    for gone in ("m3", "m7"):
        found = index.search(vectors[gone], model="model-a", k=20, filters=ALL_TIERS)
        assert gone not in {i for i, _ in found} and len(found) == 18
    with index.matching(RecallFilters(tags=["ops"])) as passes:
        assert passes is not None and passes("m3") and not passes("m4")
    index.set_vectors([("m3", vectors["m3"], "model-a")])
    assert index.search(vectors["m3"], model="model-a", k=1, filters=ALL_TIERS)[0][0] == "m3"
    assert index.counts()[3] == 1


def test_buffer_grows_past_its_capacity_and_shrinks_back_to_nothing() -> None:
    index, vectors = filled(1000)
    assert index.vector_count("model-a") == 1000
    for memory_id in vectors:
        index.remove(memory_id)
    assert index.vector_count("model-a") == 0
    assert index.dim_of("model-a") == 8  # the model keeps its dimension
    assert (
        index.search(unit(np.random.default_rng(1)), model="model-a", k=3, filters=ALL_TIERS) == []
    )


def test_each_model_is_searched_alone_and_keeps_its_own_dimension() -> None:
    rng = np.random.default_rng(3)
    index = CollectionIndex("c")
    index.put(
        [
            (entry("old"), unit(rng, 4), "hashing"),
            (entry("new"), unit(rng, 6), "minilm"),
        ]
    )
    assert index.dim_of("hashing") == 4 and index.dim_of("minilm") == 6
    assert [i for i, _ in index.search(unit(rng, 6), model="minilm", k=5, filters=ALL_TIERS)] == [
        "new"
    ]
    assert index.search(unit(rng, 6), model="hashing", k=5, filters=ALL_TIERS) == []
    assert index.search(unit(rng, 4), model="absent", k=5, filters=ALL_TIERS) == []


def test_vector_of_another_dimension_for_the_same_model_stays_out() -> None:
    rng = np.random.default_rng(4)
    index = CollectionIndex("c")
    index.put([(entry("a"), unit(rng, 4), "m"), (entry("b"), unit(rng, 5), "m")])
    _, indexed = index.snapshot()
    assert set(indexed) == {"a"}
    assert "b" in index  # its metadata is still known


def test_build_takes_the_given_dimension_or_else_the_most_common_one() -> None:
    rng = np.random.default_rng(11)
    rows = [
        ("a", "active", "insight", None, "m", unit(rng, 4).tobytes(), None, 0),
        ("b", "active", "insight", None, "m", unit(rng, 6).tobytes(), None, 0),
        ("c", "active", "insight", None, "m", unit(rng, 6).tobytes(), None, 0),
    ]
    assert set(CollectionIndex.build("c", rows).snapshot()[1]) == {"b", "c"}
    given = CollectionIndex.build("c", rows, {"m": 4})
    assert set(given.snapshot()[1]) == {"a"} and given.dim_of("m") == 4


def test_tier_filter_and_tier_changes() -> None:
    index, vectors = filled(20)
    index.put([(entry("m3", tier=Tier.ARCHIVED), None, None)])
    index.put([(entry("m4", tier=Tier.QUARANTINED), None, None)])
    q = vectors["m3"]
    active = [i for i, _ in index.search(q, model="model-a", k=20, filters=RecallFilters())]
    assert "m3" not in active and "m4" not in active and len(active) == 18
    archived = index.search(q, model="model-a", k=20, filters=RecallFilters(tiers=[Tier.ARCHIVED]))
    assert [i for i, _ in archived] == ["m3"]
    assert len(index.search(q, model="model-a", k=50, filters=ALL_TIERS)) == 20
    # The vector stays when only metadata changes.
    _, indexed = index.snapshot()
    np.testing.assert_allclose(indexed["m3"].vector, vectors["m3"], atol=1e-6)


def test_filters_match_any_value_within_a_list_and_all_lists() -> None:
    rng = np.random.default_rng(5)
    index = CollectionIndex("c")
    index.put(
        [
            (entry("a", category="bug_fix", tags=("py",), domains=("backend",)), unit(rng), "m"),
            (entry("b", category="bug_fix", tags=("js",), domains=("frontend",)), unit(rng), "m"),
            (entry("c", category="pattern", tags=("py",), domains=("backend",)), unit(rng), "m"),
            (entry("d", category="pattern", tags=(), domains=()), unit(rng), "m"),
        ]
    )
    q = unit(rng)

    def ids(**kw: object) -> set[str]:
        hits = index.search(q, model="m", k=10, filters=RecallFilters.model_validate(kw))
        return {i for i, _ in hits}

    assert ids(domains=["backend", "frontend"]) == {"a", "b", "c"}
    assert ids(categories=["bug_fix"]) == {"a", "b"}
    assert ids(categories=["bug_fix"], tags=["py"]) == {"a"}
    assert ids(categories=["bug_fix"], domains=["nowhere"]) == set()
    assert ids(tags=["py"], domains=["backend"], categories=["pattern", "bug_fix"]) == {"a", "c"}


def test_excluding_a_conversation_drops_its_memories_with_and_without_other_filters() -> None:
    rng = np.random.default_rng(6)
    index = CollectionIndex("c")
    index.put(
        [
            (entry("a", conversation_ids=("conv-1",), tags=("t",)), unit(rng), "m"),
            (entry("b", conversation_ids=("conv-2",), tags=("t",)), unit(rng), "m"),
            (entry("c", tags=("t",)), unit(rng), "m"),
        ]
    )
    q = unit(rng)
    plain = index.search(
        q, model="m", k=10, filters=RecallFilters(exclude_conversation_id="conv-1")
    )
    tagged = index.search(
        q, model="m", k=10, filters=RecallFilters(tags=["t"], exclude_conversation_id="conv-1")
    )
    assert {i for i, _ in plain} == {i for i, _ in tagged} == {"b", "c"}


def test_metadata_update_moves_a_memory_between_inverted_indexes() -> None:
    rng = np.random.default_rng(8)
    index = CollectionIndex("c")
    index.put([(entry("a", tags=("old",)), unit(rng), "m")])
    index.put([(entry("a", tags=("new",)), None, None)])
    q = unit(rng)
    assert index.search(q, model="m", k=5, filters=RecallFilters(tags=["old"])) == []
    assert [i for i, _ in index.search(q, model="m", k=5, filters=RecallFilters(tags=["new"]))] == [
        "a"
    ]


def test_build_from_rows_equals_incremental_puts() -> None:
    index, vectors = filled(40)
    built = CollectionIndex.build(
        "c",
        [
            (i, "active", "insight", None, "model-a", v.tobytes(), None, 0)
            for i, v in vectors.items()
        ],
    )
    a_entries, a_vectors = index.snapshot()
    b_entries, b_vectors = built.snapshot()
    assert a_entries == b_entries
    assert a_vectors.keys() == b_vectors.keys()
    for memory_id in a_vectors:
        np.testing.assert_allclose(
            a_vectors[memory_id].vector, b_vectors[memory_id].vector, atol=1e-6
        )


def test_top_k_skips_masked_rows_and_handles_k_beyond_size() -> None:
    scores = np.array([0.1, -np.inf, 0.9, 0.5], dtype=np.float32)
    assert top_k(scores, 10).tolist() == [2, 3, 0]
    assert top_k(scores, 2).tolist() == [2, 3]
    assert top_k(scores, 0).tolist() == []


def test_zero_or_mismatched_query_finds_nothing() -> None:
    index, _ = filled(5)
    assert index.search(np.zeros(8, np.float32), model="model-a", k=3, filters=ALL_TIERS) == []
    assert index.search(np.ones(3, np.float32), model="model-a", k=3, filters=ALL_TIERS) == []


def test_reused_slots_do_not_inherit_the_filters_of_removed_memories() -> None:
    rng = np.random.default_rng(9)
    index = CollectionIndex("c")
    index.put([(entry("a", tags=("old",), conversation_ids=("conv",)), unit(rng), "m")])
    index.remove("a")
    index.put([(entry("b"), unit(rng), "m")])
    q = unit(rng)
    assert index.search(q, model="m", k=5, filters=RecallFilters(tags=["old"])) == []
    excluding = RecallFilters(exclude_conversation_id="conv")
    assert ids_of(index.search(q, model="m", k=5, filters=excluding)) == ["b"]


@pytest.mark.parametrize("share", [0.05, 0.9])
def test_filtered_search_matches_brute_force_over_the_matching_rows(share: float) -> None:
    rng = np.random.default_rng(10)
    vectors = {f"m{i}": unit(rng) for i in range(400)}
    tagged = {i for i in vectors if rng.random() < share}
    index = CollectionIndex("c")
    index.put([(entry(i, tags=("t",) if i in tagged else ()), v, "m") for i, v in vectors.items()])
    gone = sorted(tagged)[0]
    index.remove(gone)  # a swap-remove first, so rows and slots no longer line up
    tagged.discard(gone)
    q = unit(rng)
    hits = index.search(q, model="m", k=7, filters=RecallFilters(tags=["t"]))
    assert ids_of(hits) == brute_force({i: vectors[i] for i in tagged}, q, 7)


def ids_of(hits: list[tuple[str, float]]) -> list[str]:
    return [i for i, _ in hits]


def test_matching_passes_exactly_the_memories_search_returns() -> None:
    rng = np.random.default_rng(3)
    index = CollectionIndex("c")
    index.put(
        [
            (
                entry(
                    f"m{i}",
                    tier=list(Tier)[i % 7 % 3],
                    category=("insight", "bug_fix", "decision")[i % 3],
                    tags=("a", "b", "c")[: i % 4],
                    domains=(("x",), ("y",), ())[i % 5 % 3],
                    conversation_ids=("conv-1",) if i % 6 == 0 else (),
                ),
                unit(rng) if i % 4 else None,  # vectorless memories pass as well
                "model-a" if i % 4 else None,
            )
            for i in range(120)
        ]
    )
    every = [f"m{i}" for i in range(120)]
    for filters in (
        RecallFilters(),
        ALL_TIERS,
        RecallFilters(tiers=[Tier.ARCHIVED], categories=["bug_fix"]),
        RecallFilters(tags=["b", "c"], domains=["x"]),
        RecallFilters(tiers=list(Tier), exclude_conversation_id="conv-1"),
        RecallFilters(domains=["nowhere"]),
    ):
        found = index.search(unit(rng), model="model-a", k=200, filters=filters)
        with index.matching(filters) as passes:
            matched = every if passes is None else [i for i in every if passes(i)]
            assert passes is None or not passes("unknown")
            if passes is not None:  # many at once, as one at a time
                asked = [*every, "unknown"]
                assert passes.many(asked).tolist() == [passes(i) for i in asked]
        with_vector = {i for i in matched if int(i[1:]) % 4}
        assert with_vector == set(ids_of(found)), filters


def test_matching_is_none_when_no_memory_can_fail() -> None:
    index, _ = filled(10)
    with index.matching(RecallFilters()) as passes:
        assert passes is None
    with index.matching(RecallFilters(exclude_conversation_id="none")) as passes:
        assert passes is None
    with index.matching(RecallFilters(categories=["insight"])) as passes:
        assert passes is not None and passes("m3")


@pytest.mark.parametrize("rows", [0, 1, 40, 3_000])
def test_similarities_are_the_matrix_product_row_by_row(rows: int) -> None:
    rng = np.random.default_rng(rows)
    matrix = rng.standard_normal((rows, 384)).astype(np.float32)
    q = rng.standard_normal(384).astype(np.float32)
    got = similarities(matrix, q)
    assert got.shape == (rows,) and got.dtype == np.float32
    np.testing.assert_allclose(got, matrix @ q, rtol=1e-5, atol=1e-4)
    # A gathered (non-contiguous) selection of rows too.
    picked = matrix[::3]
    np.testing.assert_allclose(similarities(picked, q), picked @ q, rtol=1e-5, atol=1e-4)


def _mean_nearest(v: Vector, others: list[Vector], k: int) -> float:
    sims = sorted((float(v @ o) for o in others), reverse=True)
    return sum(sims[:k]) / k


def test_crowding_of_a_large_partition_uses_an_even_sample_drawn_again_after_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("hippocampus.store.embedded.index_search.CROWDING_SAMPLE", 4)
    monkeypatch.setattr("hippocampus.store.embedded.index_search.CROWDING_NEIGHBOURS", 4)
    index, vectors = filled(8)
    ids = list(vectors)
    # Rows 0, 2, 4 and 7 (evenly spaced over eight); 4 neighbours of 8 are
    # round(4 × 4 / 8) = 2 of the sample.
    sample = [vectors[ids[r]] for r in (0, 2, 4, 7)]
    found = index.crowding(["m1", "m0", "unknown"], model="model-a")
    assert set(found) == {"m1", "m0"}
    assert found["m1"] == pytest.approx(_mean_nearest(vectors["m1"], sample, 2), abs=1e-6)
    assert found["m0"] == pytest.approx(_mean_nearest(vectors["m0"], sample[1:], 2), abs=1e-6)
    assert index.crowding(["m1"], model="model-b") == {}
    # A twin of m1 joins: nine rows, sampled at 0, 2, 5 and 8 (the twin).
    index.put([(entry("twin"), vectors["m1"], "model-a")])
    again = index.crowding(["m1"], model="model-a")
    resampled = [vectors[ids[0]], vectors[ids[2]], vectors[ids[5]], vectors["m1"]]
    assert again["m1"] == pytest.approx(_mean_nearest(vectors["m1"], resampled, 2), abs=1e-6)
    assert again["m1"] > found["m1"]


def test_the_kept_tier_mask_follows_every_write() -> None:
    index, _ = filled(30)
    active = RecallFilters(tiers=[Tier.ACTIVE])
    assert index.slot_mask(active) is None  # every memory active
    index.put([(entry(f"m{i}", tier=Tier.ARCHIVED), None, None) for i in (3, 4)])
    first = index.slot_mask(active)
    assert first is not None and np.flatnonzero(~first).tolist() == [3, 4]
    first[:] = False  # the caller's copy: the kept mask is untouched
    again = index.slot_mask(active)
    assert again is not None and np.flatnonzero(~again).tolist() == [3, 4]
    index.put([(entry("m3"), None, None), (entry("m9", tier=Tier.QUARANTINED), None, None)])
    index.remove("m4")
    moved = index.slot_mask(active)
    assert moved is not None and np.flatnonzero(~moved).tolist() == [9]
    # No memory is left in the tiers this filter leaves out.
    assert index.slot_mask(RecallFilters(tiers=[Tier.ACTIVE, Tier.QUARANTINED])) is None
