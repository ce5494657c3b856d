"""The embedded store's graph: hubs, expansion, reinforcement, decay, migration.

Expansion numbers are pinned on small hand-built graphs, and the vectorized walk is
checked against a plain Python walk of the same rules on random graphs.
"""

from __future__ import annotations

import math
import random
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from hippocampus.errors import InvalidInputError
from hippocampus.model import Edge, EdgeType, Memory, RecallFilters, RetrievalMeta, Tier
from hippocampus.model import content_hash as hash_of
from hippocampus.model.association import (
    MEMORY_NODE,
    Anchor,
    EdgeUpdate,
    ExpandParams,
    Expansion,
    GraphPath,
)
from hippocampus.store import MemoryRecord, Vector
from hippocampus.store.embedded import EmbeddedStore, graph_sql, tables
from hippocampus.store.embedded import graph as graph_module
from hippocampus.store.embedded import graph_expand as graph_expand_module
from hippocampus.store.embedded import store as store_module
from hippocampus.store.embedded import turns as turns_module
from hippocampus.store.embedded.graph_walk import degree_factor

C = "org:acme"
OTHER = "persona:ada"
MODEL = "hashing-8"
T0 = datetime(2024, 1, 1, tzinfo=UTC)
ALL_TIERS = RecallFilters(tiers=list(Tier))
D = 0.85  # ExpandParams' default damping
PIVOT = 20.0  # ExpandParams' default hub_degree_pivot

ABOUT, IN_DOMAIN, HAS_TRIGGER = EdgeType.ABOUT, EdgeType.IN_DOMAIN, EdgeType.HAS_TRIGGER
ASSOCIATED = EdgeType.ASSOCIATED


def memory(
    memory_id: str,
    collection: str = C,
    *,
    days: int = 0,
    tier: Tier = Tier.ACTIVE,
    category: str = "insight",
    tags: tuple[str, ...] = (),
    conversations: tuple[str, ...] = (),
) -> Memory:
    text = f"memory {memory_id}"
    at = T0 + timedelta(days=days)
    return Memory(
        id=memory_id,
        collection=collection,
        content=text,
        category=category,
        tier=tier,
        tags=list(tags),
        created_at=at,
        updated_at=at,
        content_hash=hash_of(text),
        embedding_model=MODEL,
        retrieval=RetrievalMeta(conversation_ids=list(conversations)),
    )


def vec(seed: int, dim: int = 8) -> Vector:
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def edge(source: str, edge_type: EdgeType, target: str, weight: float = 0.5) -> Edge:
    return Edge(source=source, type=edge_type, target=target, weight=weight)


def add(
    store: EmbeddedStore,
    memories: Sequence[Memory | str],
    edges: Sequence[Edge] = (),
    collection: str = C,
) -> None:
    """Add memories (ids or Memory objects) with the edges leaving each."""
    records = []
    for i, m in enumerate(memories):
        mem = memory(m, collection) if isinstance(m, str) else m
        own = tuple(e for e in edges if e.source == mem.id)
        records.append(MemoryRecord(memory=mem, vector=vec(i), edges=own))
    store.add_memories(collection, records)


def concept(name: str, strength: float = 1.0) -> Anchor:
    return Anchor(kind="Concept", name=name, strength=strength)


def seed(memory_id: str, strength: float = 1.0) -> Anchor:
    return Anchor(kind=MEMORY_NODE, name=memory_id, strength=strength)


def expand(
    store: EmbeddedStore,
    anchors: Sequence[Anchor],
    collection: str = C,
    filters: RecallFilters = ALL_TIERS,
    **params: object,
) -> dict[str, Expansion]:
    found = store.expand(
        collection, anchors, params=ExpandParams.model_validate(params), filters=filters
    )
    return {e.memory_id: e for e in found}


def steps(path: GraphPath) -> list[tuple[str, float, str, str]]:
    return [(s.type.value, s.weight, s.kind, s.name) for s in path.steps]


def factor(degree: int) -> float:
    return 1.0 / (1.0 + math.log(1.0 + degree / PIVOT))


def walked_in_sqlite(store: EmbeddedStore, collection: str = C) -> list[tuple[object, ...]]:
    with store._reading("test") as conn:
        rows = conn.execute(
            "SELECT source, type, target, weight, used_at FROM edges WHERE collection = ?"
            " AND type IN ('IN_DOMAIN', 'HAS_TRIGGER', 'ABOUT', 'ASSOCIATED')",
            (collection,),
        ).fetchall()
    return sorted(tuple(r) for r in rows)


def assert_graph_mirrors_sqlite(store: EmbeddedStore, collection: str = C) -> None:
    graph = store._graph(collection)
    graph.check()
    assert graph.edges() == walked_in_sqlite(store, collection)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    s = EmbeddedStore(tmp_path / "data")
    yield s
    s.close()


@pytest.fixture
def redis_graph(store: EmbeddedStore) -> EmbeddedStore:
    """redis: m1 0.5, m2 0.8, m3 0.3; pool: m1 0.6, m4 0.5; m2 -ASSOCIATED 0.7- m5."""
    add(
        store,
        ["m1", "m2", "m3", "m4", "m5"],
        [
            edge("m1", ABOUT, "redis", 0.5),
            edge("m2", ABOUT, "redis", 0.8),
            edge("m3", ABOUT, "redis", 0.3),
            edge("m1", ABOUT, "pool", 0.6),
            edge("m4", ABOUT, "pool", 0.5),
            edge("m2", ASSOCIATED, "m5", 0.7),
        ],
    )
    return store


def test_a_graph_read_in_small_chunks_is_the_graph_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    store = EmbeddedStore(data)
    names = [f"m{i}" for i in range(40)]
    kinds = (ABOUT, EdgeType.IN_DOMAIN, EdgeType.HAS_TRIGGER)
    edges = [
        edge(names[i], kinds[i % 3], f"hub{(i * 7) % 11}", 0.1 + (i % 9) / 10) for i in range(40)
    ] + [edge(names[i], ASSOCIATED, names[(i * 5 + 3) % 40], 0.4) for i in range(0, 40, 3)]
    add(store, names, edges)
    whole = store._graph(C).edges()
    store.close()
    # Reopened, its edges come back 7 rows at a time: hubs met in any order.
    monkeypatch.setattr(graph_module, "_EDGE_CHUNK", 7)
    store = EmbeddedStore(data)
    try:
        assert_graph_mirrors_sqlite(store)
        assert store._graph(C).edges() == whole
        found = expand(store, [concept("hub3")])
        assert found and set(found) <= set(names)
    finally:
        store.close()


@pytest.mark.parametrize("paths", [True, False])
def test_anchors_walked_in_groups_find_what_one_walk_finds(
    store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch, paths: bool
) -> None:
    # A collection too large for one scratch walks its anchors in groups; a
    # scratch of a few cells forces groups of one anchor here.
    rng = random.Random(3)
    names = [f"m{i}" for i in range(60)]
    hubs = [f"hub{j}" for j in range(8)]
    edges = [
        edge(m, rng.choice((ABOUT, EdgeType.IN_DOMAIN)), rng.choice(hubs), rng.uniform(0.2, 1.0))
        for m in names
        for _ in range(3)
    ] + [
        edge(names[i], ASSOCIATED, names[(i * 7 + 1) % 60], rng.uniform(0.3, 0.9))
        for i in range(60)
    ]
    add(store, names, edges)
    anchors = [concept(h, 1.0 - j / 20) for j, h in enumerate(hubs[:5])]

    def walked() -> list[tuple[str, float, int, float, list[list[tuple[str, float, str, str]]]]]:
        found = store.expand(
            C, anchors, params=ExpandParams(max_results=40), filters=ALL_TIERS, paths=paths
        )
        return [
            (e.memory_id, e.strength, e.anchors, e.best, [steps(p) for p in e.paths]) for e in found
        ]

    whole = walked()
    assert len(whole) > 10
    monkeypatch.setattr(graph_expand_module, "SCRATCH_CELLS", store._graph(C)._n_nodes)
    grouped = walked()
    assert [w[0] for w in grouped] == [w[0] for w in whole]
    for (_, strength, n, best, found_paths), (_, s2, n2, b2, p2) in zip(
        grouped, whole, strict=True
    ):
        assert strength == pytest.approx(s2, rel=1e-12) and best == b2 and n == n2
        assert found_paths == p2
    # The per-node buffers go back to their pool as clean as they came.
    pooled = graph_expand_module.TOTALS._free
    assert pooled
    for buffers in pooled:
        assert not buffers.barrier.any() and not buffers.count.any()
        assert not buffers.strength.any() and not buffers.best.any()
        assert (buffers.best_of == -1).all()


# -- hubs ---------------------------------------------------------------------------------


def test_match_hubs_finds_every_kind_by_exact_name_with_its_degree(store: EmbeddedStore) -> None:
    add(
        store,
        ["a", "b", "c"],
        [
            edge("a", ABOUT, "redis"),
            edge("b", ABOUT, "redis"),
            edge("c", HAS_TRIGGER, "redis"),
            edge("a", IN_DOMAIN, "database"),
        ],
    )
    found = store.match_hubs(C, ["redis", "Redis", "database", "redis", "nothing"])
    assert [(h.kind, h.name, h.similarity, h.degree) for h in found] == [
        ("Trigger", "redis", 1.0, 1),
        ("Concept", "redis", 1.0, 2),
        ("Domain", "database", 1.0, 1),
    ]
    assert store.match_hubs(C, []) == []
    assert store.match_hubs(OTHER, ["redis"]) == []


def test_search_hubs_ranks_hubs_by_name_vector_similarity(store: EmbeddedStore) -> None:
    add(store, ["a"], [edge("a", ABOUT, name) for name in ("redis", "kafka", "pool")])
    add(store, ["b"], [edge("b", ABOUT, "redis"), edge("b", HAS_TRIGGER, "redis")])
    assert store.hubs_without_vectors(C, MODEL, 10) == [
        ("Concept", "kafka"),
        ("Concept", "pool"),
        ("Concept", "redis"),
        ("Trigger", "redis"),
    ]
    redis, kafka, near_redis = np.eye(8, dtype=np.float32)[:3]
    near_redis = redis + 0.5 * near_redis
    store.set_hub_vectors(
        C,
        [
            ("Concept", "redis", redis, MODEL),
            ("Concept", "kafka", kafka, MODEL),
            ("Trigger", "redis", near_redis, MODEL),
            ("Concept", "ghost", redis, MODEL),  # no such hub: skipped
        ],
    )
    assert store.hubs_without_vectors(C, MODEL, 10) == [("Concept", "pool")]
    assert store.hubs_without_vectors(C, "other-model", 2) == [
        ("Concept", "kafka"),
        ("Concept", "pool"),
    ]
    hits = store.search_hubs(C, redis, model=MODEL, k=5, min_similarity=0.5)
    assert [(h.kind, h.name, h.degree) for h in hits] == [
        ("Concept", "redis", 2),
        ("Trigger", "redis", 1),
    ]
    assert hits[0].similarity == pytest.approx(1.0)
    assert hits[0].similarity > hits[1].similarity >= 0.5
    assert len(store.search_hubs(C, redis, model=MODEL, k=1, min_similarity=-1.0)) == 1
    assert store.search_hubs(C, redis, model="other-model", k=5, min_similarity=0.0) == []
    assert store.search_hubs(C, vec(1, dim=4), model=MODEL, k=5, min_similarity=0.0) == []
    assert store.search_hubs(OTHER, redis, model=MODEL, k=5, min_similarity=0.0) == []


def test_hubs_waiting_for_a_vector_are_sought_not_scanned(store: EmbeddedStore) -> None:
    # Every write asks which hubs wait for a vector: at a million hubs a walk of
    # the collection's hubs read every hub's vector.
    add(store, ["a"], [edge("a", ABOUT, name) for name in ("redis", "kafka", "pool")])
    store.set_hub_vectors(C, [("Concept", "redis", vec(1), MODEL)])
    for model, expected in (
        (MODEL, [("Concept", "kafka"), ("Concept", "pool")]),
        ("other-model", [("Concept", "kafka"), ("Concept", "pool"), ("Concept", "redis")]),
    ):
        statements: list[str] = []
        with store._reading("test") as conn:
            conn.set_trace_callback(statements.append)
            try:
                assert graph_sql.hubs_without_vectors(conn, C, model, 10) == expected
            finally:
                conn.set_trace_callback(None)
            plans = [
                detail
                for sql in statements
                for *_, detail in conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
            ]
        reads = [d for d in plans if " hubs " in d]
        assert reads and all("USING INDEX hubs_" in d for d in reads[:3]), plans
        # With vectors of another model left, the hubs are read in order (each
        # read then finds hubs to embed from the start).
        assert (model == MODEL) == all("USING INDEX hubs_" in d for d in reads), plans


def test_hub_vectors_survive_reopen_and_leave_with_their_hub(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path) as s:
        add(s, ["a", "b"], [edge("a", ABOUT, "redis"), edge("b", ABOUT, "kafka")])
        s.set_hub_vectors(
            C, [("Concept", "redis", vec(1), MODEL), ("Concept", "kafka", vec(2), MODEL)]
        )
    with EmbeddedStore(tmp_path) as s:
        hits = s.search_hubs(C, vec(1), model=MODEL, k=5, min_similarity=0.9)
        assert [(h.name, h.degree) for h in hits] == [("redis", 1)]
        s.delete_memory(C, "a")
        assert s.search_hubs(C, vec(1), model=MODEL, k=5, min_similarity=0.9) == []
        assert s.hubs_without_vectors(C, MODEL, 10) == []


def test_a_new_dimension_of_a_model_drops_its_other_hub_vectors(store: EmbeddedStore) -> None:
    add(store, ["a"], [edge("a", ABOUT, "redis"), edge("a", ABOUT, "kafka")])
    store.set_hub_vectors(
        C, [("Concept", "redis", vec(1), MODEL), ("Concept", "kafka", vec(2), MODEL)]
    )
    store.set_hub_vectors(C, [("Concept", "redis", vec(1, dim=4), MODEL)])
    assert store.hubs_without_vectors(C, MODEL, 10) == [("Concept", "kafka")]
    hits = store.search_hubs(C, vec(1, dim=4), model=MODEL, k=5, min_similarity=0.0)
    assert [h.name for h in hits] == ["redis"]


def test_set_hub_vectors_refuses_bad_input(store: EmbeddedStore) -> None:
    add(store, ["a"], [edge("a", ABOUT, "redis")])
    with pytest.raises(InvalidInputError) as e:
        store.set_hub_vectors(C, [("Memory", "a", vec(1), MODEL)])
    assert e.value.field == "kind"
    with pytest.raises(InvalidInputError):
        store.set_hub_vectors(C, [("Concept", "redis", vec(1), "")])
    with pytest.raises(InvalidInputError):
        store.set_hub_vectors(C, [("Concept", "redis", np.array([np.nan], np.float32), MODEL)])


# -- expansion: pinned numbers -------------------------------------------------------------


def test_path_strength_is_the_product_of_weights_damping_and_hub_degree_factors(
    redis_graph: EmbeddedStore,
) -> None:
    found = expand(redis_graph, [concept("redis", 0.9)])
    r, p = factor(3), factor(2)
    # One hop from the anchor hub: strength × damping × factor(redis) × weight.
    assert found["m2"].strength == pytest.approx(0.9 * D * r * 0.8)
    assert found["m1"].strength == pytest.approx(0.9 * D * r * 0.5)
    assert found["m3"].strength == pytest.approx(0.9 * D * r * 0.3)
    # Two hops: memory to memory needs no hub factor.
    assert found["m5"].strength == pytest.approx(0.9 * D * r * 0.8 * D * 0.7)
    # Three hops through a second hub: its factor too.
    assert found["m4"].strength == pytest.approx(0.9 * D * r * 0.5 * D * 0.6 * D * p * 0.5)
    assert [e.memory_id for e in found.values()] == ["m2", "m1", "m5", "m3", "m4"]
    (path,) = found["m4"].paths
    assert path.anchor == concept("redis", 0.9)
    assert path.strength == pytest.approx(found["m4"].strength)
    assert steps(path) == [
        ("ABOUT", 0.5, "Memory", "m1"),
        ("ABOUT", 0.6, "Concept", "pool"),
        ("ABOUT", 0.5, "Memory", "m4"),
    ]
    assert steps(found["m5"].paths[0]) == [
        ("ABOUT", 0.8, "Memory", "m2"),
        ("ASSOCIATED", 0.7, "Memory", "m5"),
    ]
    assert all(e.anchors == 1 for e in found.values())


def test_inverse_degree_mode_divides_a_path_through_a_hub_by_its_degree(
    redis_graph: EmbeddedStore,
) -> None:
    found = expand(redis_graph, [concept("redis", 0.9)], hub_degree_mode="inverse", damping=1.0)
    # redis has 3 memories, pool 2: a hub passes on 1/degree of what reaches it.
    assert found["m2"].strength == pytest.approx(0.9 / 3 * 0.8)
    assert found["m4"].strength == pytest.approx(0.9 / 3 * 0.5 * 0.6 / 2 * 0.5)


def test_without_the_degree_penalty_hubs_cost_only_damping(redis_graph: EmbeddedStore) -> None:
    found = expand(redis_graph, [concept("redis")], hub_degree_penalty=False, damping=0.5)
    assert found["m2"].strength == pytest.approx(0.5 * 0.8)
    assert found["m4"].strength == pytest.approx(0.5 * 0.5 * 0.5 * 0.6 * 0.5 * 0.5)


def test_max_depth_bounds_the_edges_in_a_path(redis_graph: EmbeddedStore) -> None:
    assert set(expand(redis_graph, [concept("redis")], max_depth=1)) == {"m1", "m2", "m3"}
    assert set(expand(redis_graph, [concept("redis")], max_depth=2)) == {"m1", "m2", "m3", "m5"}
    assert set(expand(redis_graph, [concept("redis")], max_depth=3)) == {
        "m1",
        "m2",
        "m3",
        "m4",
        "m5",
    }


def test_each_anchor_keeps_its_best_path_and_strengths_add_over_anchors(
    redis_graph: EmbeddedStore,
) -> None:
    # A second, weaker route from redis to m5.
    redis_graph.upsert_edges(C, [edge("m3", ASSOCIATED, "m5", 0.9)])
    found = expand(redis_graph, [concept("redis"), concept("pool", 0.5)])
    r, p = factor(3), factor(2)
    from_redis, from_pool = D * r * 0.5, 0.5 * D * p * 0.6
    m1 = found["m1"]
    assert m1.anchors == 2
    assert m1.strength == pytest.approx(from_redis + from_pool)
    assert [path.anchor.name for path in m1.paths] == ["redis", "pool"]  # strongest first
    assert [path.strength for path in m1.paths] == pytest.approx([from_redis, from_pool])
    m5 = found["m5"]
    assert m5.anchors == 1
    assert m5.strength == pytest.approx(D * r * 0.8 * D * 0.7)  # via m2, not via m3
    assert steps(m5.paths[0])[0] == ("ABOUT", 0.8, "Memory", "m2")


def test_paths_do_not_run_through_another_anchor(redis_graph: EmbeddedStore) -> None:
    # Alone, redis reaches m4 through pool; with pool an anchor too, m4 is pool's
    # alone, and m2 is redis's alone (pool would reach it only through redis).
    alone = expand(redis_graph, [concept("redis")])
    assert alone["m4"].anchors == 1 and alone["m4"].paths[0].anchor.name == "redis"
    both = expand(redis_graph, [concept("redis"), concept("pool")])
    assert [p.anchor.name for p in both["m4"].paths] == ["pool"]
    assert [p.anchor.name for p in both["m2"].paths] == ["redis"]


def test_a_memory_anchor_is_reached_by_others_but_never_by_itself(
    redis_graph: EmbeddedStore,
) -> None:
    found = expand(redis_graph, [seed("m2")])
    assert "m2" not in found
    assert found["m5"].strength == pytest.approx(D * 0.7)
    assert found["m1"].strength == pytest.approx(D * 0.8 * D * factor(3) * 0.5)
    both = expand(redis_graph, [seed("m2"), concept("redis")])
    assert both["m2"].anchors == 1
    assert [p.anchor.name for p in both["m2"].paths] == ["redis"]


def test_expansions_without_paths_keep_strengths_and_anchor_counts(
    redis_graph: EmbeddedStore,
) -> None:
    anchors = [concept("redis"), concept("pool", 0.5), seed("m5")]
    full = redis_graph.expand(C, anchors, params=ExpandParams(), filters=ALL_TIERS)
    bare = redis_graph.expand(C, anchors, params=ExpandParams(), filters=ALL_TIERS, paths=False)
    assert [e.model_copy(update={"paths": []}) for e in full] == bare
    assert any(e.anchors == 2 for e in bare)


def test_duplicate_and_unknown_anchors(redis_graph: EmbeddedStore) -> None:
    found = expand(
        redis_graph,
        [
            concept("redis", 0.4),
            concept("redis", 0.8),
            concept("nothing"),
            seed("ghost"),
            Anchor(kind="Planet", name="redis"),
            Anchor(kind="Trigger", name="redis"),
        ],
    )
    assert found["m2"].strength == pytest.approx(0.8 * D * factor(3) * 0.8)
    assert found["m2"].anchors == 1
    assert expand(redis_graph, [concept("nothing")]) == {}
    assert expand(redis_graph, []) == {}


def test_hub_fanout_follows_only_the_strongest_edges_ties_by_memory_id(
    store: EmbeddedStore,
) -> None:
    weights = {"b0": 0.2, "b1": 0.9, "b2": 0.5, "b3": 0.9, "b4": 0.7, "b5": 0.5}
    add(store, list(weights), [edge(m, ABOUT, "big", w) for m, w in weights.items()])
    assert list(expand(store, [concept("big")], hub_fanout=3)) == ["b1", "b3", "b4"]
    assert list(expand(store, [concept("big")], hub_fanout=5)) == ["b1", "b3", "b4", "b2", "b5"]
    # The order follows weight changes.
    store.upsert_edges(C, [edge("b0", ABOUT, "big", 1.0)])
    assert list(expand(store, [concept("big")], hub_fanout=2)) == ["b0", "b1"]
    # The penalty counts every linked memory, not only those followed.
    (top,) = expand(store, [concept("big")], hub_fanout=1).values()
    assert top.strength == pytest.approx(D * factor(6) * 1.0)


def test_the_frontier_carries_only_the_strongest_nodes_to_the_next_hop(
    store: EmbeddedStore,
) -> None:
    # hub -> m_i (weight w_i) -> g_i -> x_i: a frontier of 2 after the first hop
    # walks on only from the two strongest m_i.
    weights = [0.3, 0.9, 0.5, 0.8]
    mids = [f"m{i}" for i in range(4)]
    ends = [f"x{i}" for i in range(4)]
    edges = [edge(m, ABOUT, "hub", w) for m, w in zip(mids, weights, strict=True)]
    edges += [edge(m, ABOUT, f"g{i}") for i, m in enumerate(mids)]
    edges += [edge(x, ABOUT, f"g{i}") for i, x in enumerate(ends)]
    add(store, mids + ends, edges)
    assert {"x0", "x1", "x2", "x3"} <= set(expand(store, [concept("hub")], frontier=100))
    narrow = set(expand(store, [concept("hub")], frontier=2))
    assert narrow == {*mids, "x1", "x3"}


def test_max_results_keeps_the_strongest_ties_by_id(store: EmbeddedStore) -> None:
    add(store, ["c", "a", "d", "b"], [edge(m, ABOUT, "hub") for m in "cadb"])
    assert list(expand(store, [concept("hub")], max_results=2)) == ["a", "b"]
    assert list(expand(store, [concept("hub")])) == ["a", "b", "c", "d"]


def test_filters_drop_results_but_paths_still_run_through_them(store: EmbeddedStore) -> None:
    add(
        store,
        [
            memory("hot", tier=Tier.ARCHIVED, category="decision"),
            memory("warm", tags=("ops",), conversations=("conv-1",)),
            memory("cold", category="decision", tags=("ops",)),
        ],
        [
            edge("hot", ABOUT, "redis", 0.9),
            edge("warm", ABOUT, "redis", 0.5),
            edge("hot", ASSOCIATED, "cold", 0.9),
        ],
    )
    anchors = [concept("redis")]
    assert set(expand(store, anchors)) == {"hot", "warm", "cold"}
    active = expand(store, anchors, filters=RecallFilters())
    assert set(active) == {"warm", "cold"}
    assert steps(active["cold"].paths[0])[0][3] == "hot"  # walked through the archived one
    assert set(expand(store, anchors, filters=RecallFilters(categories=["decision"]))) == {"cold"}
    assert set(expand(store, anchors, filters=RecallFilters(tags=["ops"]))) == {"warm", "cold"}
    excluded = RecallFilters(exclude_conversation_id="conv-1")
    assert set(expand(store, anchors, filters=excluded)) == {"cold"}


def test_conflict_and_synthesis_edges_are_not_walked(store: EmbeddedStore) -> None:
    add(store, ["a", "b", "c"], [edge("a", ABOUT, "redis")])
    store.upsert_edges(
        C,
        [
            Edge(source="a", type=EdgeType.CONFLICTS_WITH, target="b"),
            Edge(source="c", type=EdgeType.SYNTHESIZED_FROM, target="a"),
        ],
    )
    assert set(expand(store, [concept("redis")])) == {"a"}
    assert expand(store, [seed("a")]) == {}


def test_expansion_is_deterministic_and_the_same_after_reopen(tmp_path: Path) -> None:
    rng = random.Random(7)
    ids = [f"m{i:02d}" for i in range(40)]
    edges = [edge(m, ABOUT, f"c{rng.randrange(6)}", 0.5) for m in ids]
    edges += [edge(m, HAS_TRIGGER, f"t{rng.randrange(4)}", 0.5) for m in ids]
    edges += [edge(ids[i], ASSOCIATED, ids[i + 1], 0.5) for i in range(0, 39, 3)]
    anchors = [concept("c1"), concept("c2", 0.7), seed("m05"), seed("m17", 0.6)]
    kw: dict[str, object] = {"hub_fanout": 3, "frontier": 4}
    with EmbeddedStore(tmp_path) as s:
        add(s, ids, edges)
        first = expand(s, anchors, **kw)
        assert expand(s, list(reversed(anchors)), **kw) == first
        assert len(first) > 5
    with EmbeddedStore(tmp_path) as s:
        assert expand(s, anchors, **kw) == first


# -- expansion: against a plain Python walk ------------------------------------------------

_KIND_CODE = {MEMORY_NODE: 0, "Domain": 1, "Trigger": 2, "Concept": 3}
_HUB_OF = {"IN_DOMAIN": "Domain", "HAS_TRIGGER": "Trigger", "ABOUT": "Concept"}
_TYPE_TO = {"Domain": "IN_DOMAIN", "Trigger": "HAS_TRIGGER", "Concept": "ABOUT"}
Node = tuple[str, str]


def reference_expand(
    memories: set[str],
    edges: Sequence[Edge],
    anchors: Sequence[Anchor],
    params: ExpandParams,
    passes: Callable[[str], bool],
) -> list[tuple[str, float, int, list[tuple[str, float, list[tuple[str, float, str, str]]]]]]:
    """The rules of CollectionGraph.expand, one candidate at a time."""
    adj: dict[Node, dict[Node, float]] = {}
    for e in edges:
        if e.type.value in _HUB_OF:
            a, b = (MEMORY_NODE, e.source), (_HUB_OF[e.type.value], e.target)
        elif e.type is ASSOCIATED:
            a, b = (MEMORY_NODE, e.source), (MEMORY_NODE, e.target)
        else:
            continue
        adj.setdefault(a, {})[b] = e.weight
        adj.setdefault(b, {})[a] = e.weight

    def exists(node: Node) -> bool:
        return node[1] in memories if node[0] == MEMORY_NODE else node in adj

    def block(node: Node) -> list[tuple[Node, float]]:
        items = list(adj.get(node, {}).items())
        if node[0] == MEMORY_NODE:
            return sorted(items, key=lambda kv: (_KIND_CODE[kv[0][0]], kv[0][1]))
        return sorted(items, key=lambda kv: (-kv[1], kv[0][1]))

    merged: dict[Node, Anchor] = {}
    for anchor in anchors:
        key = (anchor.kind, anchor.name)
        known = anchor.kind in _KIND_CODE and exists(key)
        if known and (key not in merged or anchor.strength > merged[key].strength):
            merged[key] = anchor
    ordered = sorted(merged.values(), key=lambda a: (a.kind, a.name))
    barrier = {(a.kind, a.name) for a in ordered}
    reached: dict[str, list[tuple[float, int, list[tuple[str, float, str, str]]]]] = {}
    for index, anchor in enumerate(ordered):
        start = (anchor.kind, anchor.name)
        best: dict[Node, float] = {start: anchor.strength}
        path: dict[Node, list[tuple[str, float, str, str]]] = {start: []}
        frontier = [(start, anchor.strength)]
        for hop in range(1, params.max_depth + 1):
            last = hop == params.max_depth
            found: dict[Node, tuple[float, int, list[tuple[str, float, str, str]]]] = {}
            position = 0
            for node, value in frontier:
                hub = node[0] != MEMORY_NODE
                entries = block(node)
                if hub:
                    entries = entries[: params.hub_fanout]
                elif last:
                    entries = [kv for kv in entries if kv[0][0] == MEMORY_NODE]
                step = value * params.damping
                if hub and params.hub_degree_penalty:
                    step = step * degree_factor(len(adj[node]), params)
                for other, weight in entries:
                    candidate = step * weight
                    held = found[other][0] if other in found else best.get(other, 0.0)
                    if candidate > held:
                        kind = other[0] if other[0] != MEMORY_NODE else node[0]
                        edge_type = _TYPE_TO.get(kind, "ASSOCIATED")
                        walked = [*path[node], (edge_type, weight, other[0], other[1])]
                        found[other] = (candidate, position, walked)
                    position += 1
            improved = sorted(found, key=lambda n: found[n][1])
            for node in improved:
                best[node], path[node] = found[node][0], found[node][2]
            onward = [n for n in improved if n not in barrier]
            chosen = sorted(onward, key=lambda n: (-found[n][0], found[n][1]))[: params.frontier]
            frontier = [(n, found[n][0]) for n in sorted(chosen, key=lambda n: found[n][1])]
        for node, value in best.items():
            if node[0] == MEMORY_NODE and node != start and value > 0.0:
                reached.setdefault(node[1], []).append((value, index, path[node]))
    results = []
    for memory_id, paths in reached.items():
        if not passes(memory_id):
            continue
        total = 0.0
        for value, _, _ in sorted(paths, key=lambda p: p[1]):
            total += value
        ranked = sorted(paths, key=lambda p: (-p[0], p[1]))
        results.append(
            (memory_id, total, len(paths), [(ordered[i].name, v, s) for v, i, s in ranked])
        )
    results.sort(key=lambda r: (-r[1], r[0]))
    return results[: params.max_results]


@pytest.mark.parametrize(("graph_seed", "ties"), [(s, s % 2 == 1) for s in range(8)])
def test_expansion_matches_a_plain_walk_on_random_graphs(
    store: EmbeddedStore, graph_seed: int, ties: bool
) -> None:
    """With ``ties`` weights come from two values, so equal strengths abound and
    the tie-breaking rules decide frontiers, fan-outs, paths and order."""
    rng = random.Random(graph_seed)

    def weight() -> float:
        return rng.choice([0.5, 0.8]) if ties else round(rng.uniform(0.05, 1.0), 6)

    ids = [f"m{i:03d}" for i in range(rng.randrange(30, 90))]
    archived = set(rng.sample(ids, 5))
    hubs = [(t, f"{t.value.lower()}-{i}") for t in (ABOUT, HAS_TRIGGER) for i in range(8)]
    edges: list[Edge] = []
    for m in ids:
        for edge_type, name in rng.sample(hubs, rng.randrange(1, 5)):
            edges.append(edge(m, edge_type, name, weight()))
        if rng.random() < 0.4:
            other = rng.choice(ids)
            if other != m and not any(
                e.type is ASSOCIATED and {e.source, e.target} == {m, other} for e in edges
            ):
                edges.append(edge(m, ASSOCIATED, other, weight()))
    add(
        store,
        [memory(m, tier=Tier.ARCHIVED if m in archived else Tier.ACTIVE) for m in ids],
        edges,
    )
    anchors = [concept(name, 1.0 if ties else rng.uniform(0.2, 1.0)) for _, name in hubs[:3]]
    anchors += [seed(m, 1.0 if ties else rng.uniform(0.2, 1.0)) for m in rng.sample(ids, 3)]
    anchors.append(Anchor(kind="Trigger", name=hubs[9][1]))
    for params in (
        ExpandParams(),
        ExpandParams(hub_fanout=3, frontier=4, max_results=15),
        ExpandParams(max_depth=2, hub_degree_penalty=False, frontier=2),
        ExpandParams(max_depth=1),
        ExpandParams(max_depth=2, hub_degree_mode="inverse", damping=1.0),
    ):
        got = store.expand(C, anchors, params=params, filters=RecallFilters())
        want = reference_expand(set(ids), edges, anchors, params, lambda m: m not in archived)
        assert len(want) >= 5
        assert [e.memory_id for e in got] == [w[0] for w in want]
        for e, (_, total, count, paths) in zip(got, want, strict=True):
            assert e.strength == pytest.approx(total, rel=1e-12)
            assert e.anchors == count
            assert [(p.anchor.name, steps(p)) for p in e.paths] == [(a, s) for a, _, s in paths]
            assert [p.strength for p in e.paths] == pytest.approx([v for _, v, _ in paths])


# -- reinforcement ------------------------------------------------------------------------


def update(
    source: str,
    target: str,
    edge_type: EdgeType = ASSOCIATED,
    *,
    at: datetime = T0,
    delta: float = 0.1,
    cap: float = 1.0,
    initial: float = 0.3,
    kind: str | None = "co_retrieval",
) -> EdgeUpdate:
    return EdgeUpdate(
        source=source,
        type=edge_type,
        target=target,
        delta=delta,
        cap=cap,
        initial=initial,
        at=at,
        kind=kind,
    )


def test_a_new_edge_starts_at_initial_with_its_counters(store: EmbeddedStore) -> None:
    add(store, ["a", "b"])
    at = T0 + timedelta(days=2)
    store.reinforce_edges(C, [update("b", "a", at=at, initial=0.25)])
    assert store.edges_of(C, "a") == [
        Edge(
            source="a",
            type=ASSOCIATED,
            target="b",
            weight=0.25,
            co_occurrences=1,
            last_co_occurred=at,
            created_at=at,
            kind="co_retrieval",
        )
    ]
    assert store.stats(C).edges == {"ASSOCIATED": 1}
    assert expand(store, [seed("a")])["b"].strength == pytest.approx(D * 0.25)


def test_reinforcement_adds_delta_up_to_the_cap_and_counts(store: EmbeddedStore) -> None:
    add(store, ["a", "b"], [edge("a", ABOUT, "redis", 0.5)])
    for day in range(6):
        store.reinforce_edges(
            C,
            [
                update("a", "b", at=T0 + timedelta(days=day), cap=0.6),
                update("a", "redis", ABOUT, at=T0 + timedelta(days=day), delta=0.2, kind=None),
            ],
        )
    edges = {e.type: e for e in store.edges_of(C, "a")}
    assert edges[ASSOCIATED].weight == pytest.approx(0.6)
    assert edges[ASSOCIATED].co_occurrences == 6
    assert edges[ASSOCIATED].last_co_occurred == T0 + timedelta(days=5)
    assert edges[ASSOCIATED].created_at == T0
    assert edges[ABOUT].weight == pytest.approx(1.0)
    assert edges[ABOUT].co_occurrences == 6
    assert edges[ABOUT].created_at == T0  # the memory's creation: it came with it
    assert_graph_mirrors_sqlite(store)


def test_reinforcement_never_lowers_a_weight_above_its_cap(store: EmbeddedStore) -> None:
    add(store, ["a", "b"])
    store.upsert_edges(C, [edge("a", ASSOCIATED, "b", 0.9)])
    store.reinforce_edges(C, [update("a", "b", cap=0.6, delta=0.02)])
    (e,) = store.edges_of(C, "a")
    assert e.weight == pytest.approx(0.9) and e.co_occurrences == 1


def test_reinforcement_creates_hubs_and_skips_what_cannot_exist(store: EmbeddedStore) -> None:
    add(store, ["a", "b"])
    store.reinforce_edges(
        C,
        [
            update("a", "fresh concept", ABOUT, kind=None),
            update("a", "ghost"),
            update("ghost", "a"),
            update("ghost", "topic", ABOUT),
            update("a", "a"),
            update("b", "a", EdgeType.CONFLICTS_WITH, kind=None),
        ],
    )
    assert store.stats(C).edges == {"ABOUT": 1, "CONFLICTS_WITH": 1}
    assert store.stats(C).hubs == {"Concept": 1}
    assert [(h.name, h.degree) for h in store.match_hubs(C, ["fresh concept", "topic"])] == [
        ("fresh concept", 1)
    ]
    assert [e.target for e in store.edges_of(C, "b")] == ["a"]
    assert expand(store, [concept("fresh concept")])["a"].strength == pytest.approx(
        D * factor(1) * 0.3
    )
    assert_graph_mirrors_sqlite(store)


def test_reinforce_updates_in_one_batch_apply_in_order(store: EmbeddedStore) -> None:
    add(store, ["a", "b"])
    store.reinforce_edges(C, [update("a", "b"), update("b", "a"), update("a", "b")])
    (e,) = store.edges_of(C, "a")
    assert e.weight == pytest.approx(0.5) and e.co_occurrences == 3
    assert_graph_mirrors_sqlite(store)


# -- decay --------------------------------------------------------------------------------


def test_decay_lowers_only_edges_unused_before_the_cutoff(store: EmbeddedStore) -> None:
    add(
        store,
        [memory("old"), memory("young", days=100), memory("other")],
        [
            edge("old", ABOUT, "redis", 0.5),
            edge("young", ABOUT, "redis", 0.5),
            edge("old", ABOUT, "floor", 0.12),
            edge("old", ABOUT, "bottom", 0.1),
        ],
    )
    # Created long ago but reinforced recently: not decayed.
    store.reinforce_edges(C, [update("old", "other", at=T0 + timedelta(days=90))])
    cutoff = T0 + timedelta(days=50)
    assert store.decay_edges(C, period="p1", unused_before=cutoff, step=0.05, floor=0.1) == 2
    weights = {e.target: e.weight for e in store.edges_of(C, "old")}
    assert weights == pytest.approx({"redis": 0.45, "floor": 0.1, "bottom": 0.1, "other": 0.3})
    assert {e.target: e.weight for e in store.edges_of(C, "young")} == {"redis": 0.5}
    found = expand(store, [concept("redis")], hub_degree_penalty=False)
    assert found["old"].strength == pytest.approx(D * 0.45)
    assert_graph_mirrors_sqlite(store)


def test_decay_is_idempotent_per_period(store: EmbeddedStore) -> None:
    add(store, ["a", "b"], [edge("a", ABOUT, "redis", 0.5)])
    later = T0 + timedelta(days=200)
    assert store.decay_edges(C, period="2024-07-19", unused_before=later, step=0.05, floor=0.1) == 1
    assert store.decay_edges(C, period="2024-07-19", unused_before=later, step=0.05, floor=0.1) == 0
    assert store.edges_of(C, "a")[0].weight == pytest.approx(0.45)
    assert store.decay_edges(C, period="2024-07-20", unused_before=later, step=0.05, floor=0.1) == 1
    assert store.edges_of(C, "a")[0].weight == pytest.approx(0.4)
    assert_graph_mirrors_sqlite(store)


def test_decay_reorders_hub_fanout(store: EmbeddedStore) -> None:
    add(
        store,
        [memory("a"), memory("b", days=100)],
        [edge("a", ABOUT, "hub", 0.6), edge("b", ABOUT, "hub", 0.55)],
    )
    assert list(expand(store, [concept("hub")], hub_fanout=1)) == ["a"]
    store.decay_edges(C, period="p", unused_before=T0 + timedelta(days=50), step=0.1, floor=0.1)
    assert list(expand(store, [concept("hub")], hub_fanout=1)) == ["b"]
    assert_graph_mirrors_sqlite(store)


def test_decay_refuses_bad_arguments(store: EmbeddedStore) -> None:
    for kw in ({"period": ""}, {"step": -0.1}, {"floor": 1.5}):
        args: dict[str, object] = {"period": "p", "step": 0.05, "floor": 0.1, **kw}
        with pytest.raises(InvalidInputError):
            store.decay_edges(C, unused_before=T0, **args)  # type: ignore[arg-type]


# -- edges: dates and iteration -----------------------------------------------------------


def test_edges_are_dated_by_their_own_creation_else_their_memory(store: EmbeddedStore) -> None:
    given = T0 + timedelta(days=9)
    add(
        store,
        [memory("a", days=3)],
        [
            Edge(source="a", type=ABOUT, target="dated", created_at=given),
            Edge(source="a", type=ABOUT, target="undated"),
        ],
    )
    dates = {e.target: e.created_at for e in store.edges_of(C, "a")}
    assert dates == {"dated": given, "undated": T0 + timedelta(days=3)}
    used = T0 + timedelta(days=20)
    store.upsert_edges(C, [Edge(source="a", type=ABOUT, target="late", last_co_occurred=used)])
    assert {e.target: e.created_at for e in store.edges_of(C, "a")}["late"] == used


def test_iter_edges_gives_every_edge_once(
    store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tables, "CHUNK", 3)
    ids = [f"m{i}" for i in range(5)]
    add(store, ids, [edge(m, ABOUT, f"c{i % 2}") for i, m in enumerate(ids)])
    store.upsert_edges(
        C,
        [
            edge("m1", ASSOCIATED, "m0", 0.4),
            Edge(source="m2", type=EdgeType.SYNTHESIZED_FROM, target="m3"),
        ],
    )
    add(store, ["m0"], [edge("m0", ABOUT, "c0")], collection=OTHER)
    edges = list(store.iter_edges(C))
    assert len(edges) == 7
    assert len({(e.source, e.type, e.target) for e in edges}) == 7
    assoc = [e for e in edges if e.type is ASSOCIATED]
    assert [(e.source, e.target, e.weight) for e in assoc] == [("m0", "m1", 0.4)]
    assert all(e.created_at == T0 for e in edges)
    assert [e.source for e in store.iter_edges(OTHER)] == ["m0"]


# -- the in-memory graph mirrors SQLite -----------------------------------------------------


def test_adjacency_follows_every_write_and_equals_sqlite_after_reopen(tmp_path: Path) -> None:
    rng = random.Random(3)
    ids = [f"m{i:02d}" for i in range(30)]
    names = [f"c{i}" for i in range(6)]
    with EmbeddedStore(tmp_path) as s:
        add(s, ids[:20], [edge(m, ABOUT, rng.choice(names), 0.5) for m in ids[:20]])
        for step in range(60):
            action = rng.randrange(6)
            live = [m.id for m in s.iter_memories(C)]
            if action == 0 and len(live) < 30:
                new = [m for m in ids if m not in live][:2]
                add(
                    s,
                    new,
                    [edge(m, rng.choice([ABOUT, HAS_TRIGGER]), rng.choice(names)) for m in new],
                )
            elif action == 1 and live:
                s.delete_memory(C, rng.choice(live))
            elif action == 2 and len(live) > 1:
                a, b = rng.sample(live, 2)
                s.reinforce_edges(
                    C,
                    [
                        update(a, b, at=T0 + timedelta(days=step)),
                        update(a, rng.choice(names), ABOUT, at=T0 + timedelta(days=step)),
                    ],
                )
            elif action == 3 and live:
                m = rng.choice(live)
                s.replace_memory(
                    C,
                    MemoryRecord(memory=memory(m), edges=(edge(m, ABOUT, rng.choice(names), 0.7),)),
                    replace_edges=True,
                )
            elif action == 4 and len(live) > 1:
                a, b = rng.sample(live, 2)
                s.upsert_edges(C, [edge(a, ASSOCIATED, b, rng.uniform(0.1, 1.0))])
            else:
                s.decay_edges(
                    C,
                    period=f"p{step}",
                    unused_before=T0 + timedelta(days=step),
                    step=0.05,
                    floor=0.1,
                )
            assert_graph_mirrors_sqlite(s)
        live_graph = s._graph(C).edges()
        anchors = [concept(n) for n in names[:3]]
        before = expand(s, anchors)
    with EmbeddedStore(tmp_path) as s:
        assert s._graph(C).edges() == live_graph
        assert_graph_mirrors_sqlite(s)
        assert expand(s, anchors) == before


def test_filters_stay_right_after_the_vector_index_is_rebuilt(store: EmbeddedStore) -> None:
    add(
        store,
        [memory("a"), memory("b", tier=Tier.ARCHIVED)],
        [edge("a", ABOUT, "x"), edge("b", ABOUT, "x")],
    )
    assert set(expand(store, [concept("x")], filters=RecallFilters())) == {"a"}
    # A vector of another size for the model rebuilds the index, renumbering slots.
    store.add_memories(
        C, [MemoryRecord(memory=memory("c"), vector=vec(3, dim=5), edges=(edge("c", ABOUT, "x"),))]
    )
    assert set(expand(store, [concept("x")], filters=RecallFilters())) == {"a", "c"}


def test_collections_are_isolated(store: EmbeddedStore) -> None:
    add(store, ["a", "b"], [edge("a", ABOUT, "redis"), edge("b", ABOUT, "redis")])
    add(store, ["a"], [edge("a", ABOUT, "redis")], collection=OTHER)
    store.reinforce_edges(C, [update("a", "b")])
    store.reinforce_edges(OTHER, [update("a", "b")])  # no b there: skipped
    assert set(expand(store, [concept("redis")])) == {"a", "b"}
    assert set(expand(store, [concept("redis")], collection=OTHER)) == {"a"}
    assert store.match_hubs(OTHER, ["redis"])[0].degree == 1
    later = T0 + timedelta(days=300)
    assert store.decay_edges(C, period="p", unused_before=later, step=0.1, floor=0.1) == 3
    assert store.decay_edges(OTHER, period="p", unused_before=later, step=0.1, floor=0.1) == 1
    assert store.edges_of(OTHER, "a")[0].weight == pytest.approx(0.4)
    assert_graph_mirrors_sqlite(store)
    assert_graph_mirrors_sqlite(store, OTHER)


# -- migration ----------------------------------------------------------------------------

V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta (key, value) VALUES ('schema_version', '1');
CREATE TABLE memories (
    collection TEXT NOT NULL, id TEXT NOT NULL, doc TEXT NOT NULL, category TEXT NOT NULL,
    tier TEXT NOT NULL, content_hash TEXT NOT NULL, created_at INTEGER NOT NULL,
    vector BLOB, vector_model TEXT, PRIMARY KEY (collection, id));
CREATE TABLE vector_dims (collection TEXT NOT NULL, model TEXT NOT NULL, dim INTEGER NOT NULL,
    PRIMARY KEY (collection, model)) WITHOUT ROWID;
CREATE TABLE hubs (collection TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
    PRIMARY KEY (collection, kind, name)) WITHOUT ROWID;
CREATE TABLE edges (collection TEXT NOT NULL, source TEXT NOT NULL, type TEXT NOT NULL,
    target TEXT NOT NULL, weight REAL NOT NULL, co_occurrences INTEGER NOT NULL,
    last_co_occurred TEXT, kind TEXT, PRIMARY KEY (collection, source, type, target))
    WITHOUT ROWID;
CREATE INDEX edges_by_target ON edges (collection, target);
CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, collection TEXT NOT NULL,
    type TEXT NOT NULL, at TEXT NOT NULL, memory_ids TEXT NOT NULL, payload TEXT NOT NULL);
"""


def test_a_version_1_database_is_migrated_in_place(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    conn = sqlite3.connect(tmp_path / store_module.DB_FILE)
    conn.executescript(V1_SCHEMA)
    for i, m in enumerate([memory("a"), memory("b", days=10)]):
        conn.execute(
            "INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                C,
                m.id,
                m.model_dump_json(),
                m.category,
                m.tier.value,
                m.content_hash,
                int((m.created_at - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1e6),
                vec(i).tobytes(),
                MODEL,
            ),
        )
    used = T0 + timedelta(days=40)
    conn.executemany(
        "INSERT INTO hubs VALUES (?, ?, ?)", [(C, "Concept", "redis"), (C, "Concept", "kafka")]
    )
    conn.executemany(
        "INSERT INTO edges VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (C, "a", "ABOUT", "redis", 0.5, 0, None, None),
            (C, "b", "ABOUT", "redis", 0.5, 0, None, None),
            (C, "b", "ABOUT", "kafka", 0.5, 0, None, None),
            (C, "a", "ASSOCIATED", "b", 0.6, 3, used.isoformat(), "co_retrieval"),
        ],
    )
    conn.commit()
    conn.close()

    with EmbeddedStore(tmp_path) as s:
        with s._reading("test") as c:
            version = c.execute("SELECT value FROM meta").fetchone()[0]
            assert version == str(store_module.SCHEMA_VERSION)
        dates = {(e.type, e.target): e.created_at for e in s.edges_of(C, "b")}
        assert dates == {
            (ABOUT, "kafka"): T0 + timedelta(days=10),
            (ABOUT, "redis"): T0 + timedelta(days=10),
            (ASSOCIATED, "a"): T0,
        }
        assert_graph_mirrors_sqlite(s)
        assert expand(s, [concept("redis")], hub_degree_penalty=False)["b"].strength == (
            pytest.approx(D * 0.5)
        )
        # The reinforced edge decays by its last use, the others by their creation.
        n = s.decay_edges(C, period="p", unused_before=T0 + timedelta(days=20), step=0.1, floor=0.1)
        assert n == 3
        assert {e.target: e.weight for e in s.edges_of(C, "a")} == pytest.approx(
            {"redis": 0.4, "b": 0.6}
        )
        s.set_hub_vectors(C, [("Concept", "redis", vec(1), MODEL)])
        assert [h.name for h in s.search_hubs(C, vec(1), model=MODEL, k=3, min_similarity=0.9)] == [
            "redis"
        ]
    # A second open finds version 2 and changes nothing.
    with EmbeddedStore(tmp_path) as s:
        assert len(list(s.iter_edges(C))) == 4


# -- concurrency ----------------------------------------------------------------------------


def test_expansions_run_beside_writes(store: EmbeddedStore) -> None:
    ids = [f"m{i:02d}" for i in range(40)]
    add(store, ids, [edge(m, ABOUT, f"c{i % 4}") for i, m in enumerate(ids)])
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set():
                found = expand(store, [concept("c1"), seed("m03")], filters=RecallFilters())
                assert all(e.strength > 0 and e.paths for e in found.values())
        except BaseException as e:  # handed to the main thread
            errors.append(e)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        for step in range(30):
            a, b = ids[step % 40], ids[(step * 7 + 1) % 40]
            store.reinforce_edges(C, [update(a, b, at=T0 + timedelta(days=step))])
            if step % 5 == 0:
                store.delete_memory(C, ids[39 - step // 5])
                add(store, [f"n{step}"], [edge(f"n{step}", ABOUT, "c1")])
    finally:
        done.set()
        for t in readers:
            t.join()
    assert not errors
    assert_graph_mirrors_sqlite(store)


def test_an_older_database_gets_occurred_at_and_linked_turns(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    conn = sqlite3.connect(tmp_path / store_module.DB_FILE)
    conn.executescript(V1_SCHEMA)
    olds = [
        memory("b", days=2, conversations=("chat",)),
        memory("a", days=1, conversations=("chat", "later")),
        memory("c", days=3, conversations=("chat",)),
        memory("loose", days=4),
    ]
    for m in olds:
        conn.execute(
            "INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                C,
                m.id,
                # As written before memories had a time and a speaker.
                m.model_dump_json(exclude={"occurred_at", "speaker"}),
                m.category,
                m.tier.value,
                m.content_hash,
                int((m.created_at - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1e6),
                None,
                None,
            ),
        )
    conn.commit()
    conn.close()

    with EmbeddedStore(tmp_path) as s:
        stored = s.get_memories(C, ["a", "loose"])
        assert stored["a"].occurred_at == T0 + timedelta(days=1)
        assert stored["loose"].occurred_at == stored["loose"].created_at
        assert stored["a"].speaker is None
        nexts = sorted((e.source, e.target) for e in s.iter_edges(C) if e.type is EdgeType.NEXT)
        assert nexts == [("a", "b"), ("b", "c")]
        assert s.neighbour_turns(C, ["b"], before=1, after=1) == {"b": (["a"], ["c"])}
        # Writes after the migration keep the order.
        s.add_memories(
            C,
            [
                MemoryRecord(
                    memory("between", days=9, conversations=("chat",)).model_copy(
                        update={"occurred_at": T0 + timedelta(days=2, hours=12)}
                    )
                )
            ],
        )
        nexts = sorted((e.source, e.target) for e in s.iter_edges(C) if e.type is EdgeType.NEXT)
        assert nexts == [("a", "b"), ("b", "between"), ("between", "c")]


def test_neighbour_turns_read_their_keys_in_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Keys are read a chunk of ids per statement; a chunk of two splits these
    # ids (a repeat, a loose memory and an absent id among them) over four.
    monkeypatch.setattr(turns_module, "_KEYS_CHUNK", 2)
    with EmbeddedStore(tmp_path) as s:
        s.add_memories(
            C,
            [
                MemoryRecord(memory=memory(f"t{n}", days=n, conversations=("chat",)))
                for n in (2, 0, 3, 1)
            ]
            + [MemoryRecord(memory=memory("loose", days=5))],
        )
        found = s.neighbour_turns(
            C, ["t1", "loose", "t3", "absent", "t1", "t0", "t2"], before=1, after=1
        )
    assert found == {
        "t1": (["t0"], ["t2"]),
        "t3": (["t2"], []),
        "t0": ([], ["t1"]),
        "t2": (["t1"], ["t3"]),
    }
    assert list(found) == ["t1", "t3", "t0", "t2"]
