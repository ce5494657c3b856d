"""The store contract: edges read and written, the event log, counts, collections."""

from __future__ import annotations

from datetime import timedelta

from hippocampus.model import Edge, EdgeType, Event
from hippocampus.store import GraphStore
from tests.contract.helpers import ABOUT, ASSOCIATED, HAS_TRIGGER, IN_DOMAIN, T0, add, edge, memory


def test_associated_edges_are_stored_once_and_seen_from_both_ends(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a", "b", "c"], [edge("b", ASSOCIATED, "a", 0.4)])
    store.upsert_edges(collection, [edge("a", ASSOCIATED, "b", 0.7), edge("c", ASSOCIATED, "b")])
    assert [(e.source, e.target, e.weight) for e in store.edges_of(collection, "a")] == [
        ("a", "b", 0.7)
    ]
    assert [(e.source, e.target) for e in store.edges_of(collection, "b")] == [
        ("b", "a"),
        ("b", "c"),
    ]
    assert store.stats(collection).edges == {"ASSOCIATED": 2}


def test_edges_of_lists_every_type_by_type_then_target(store: GraphStore, collection: str) -> None:
    add(
        store,
        collection,
        ["a", "b"],
        [
            edge("a", IN_DOMAIN, "payments"),
            edge("a", ABOUT, "retry"),
            edge("a", ABOUT, "cache"),
            edge("a", HAS_TRIGGER, "deploy"),
        ],
    )
    store.upsert_edges(
        collection,
        [
            Edge(source="a", type=EdgeType.SYNTHESIZED_FROM, target="b"),
            Edge(source="b", type=EdgeType.CONFLICTS_WITH, target="a"),
        ],
    )
    assert [(e.type.value, e.target) for e in store.edges_of(collection, "a")] == [
        ("ABOUT", "cache"),
        ("ABOUT", "retry"),
        ("HAS_TRIGGER", "deploy"),
        ("IN_DOMAIN", "payments"),
        ("SYNTHESIZED_FROM", "b"),
    ]
    # Directed memory edges are seen from their source only.
    assert [(e.type.value, e.target) for e in store.edges_of(collection, "b")] == [
        ("CONFLICTS_WITH", "a")
    ]


def test_upsert_overwrites_and_skips_missing_memories_and_self_loops(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a", "b"])
    last = T0 + timedelta(days=4)
    store.upsert_edges(
        collection,
        [
            Edge(
                source="a",
                type=ABOUT,
                target="cache",
                weight=0.8,
                co_occurrences=3,
                last_co_occurred=last,
                kind="manual",
            ),
            edge("a", ASSOCIATED, "ghost"),
            edge("ghost", ABOUT, "cache"),
            edge("a", ASSOCIATED, "a"),
        ],
    )
    (e,) = store.edges_of(collection, "a")
    assert (e.type, e.target, e.weight, e.co_occurrences, e.kind) == (
        ABOUT,
        "cache",
        0.8,
        3,
        "manual",
    )
    assert e.last_co_occurred == last
    store.upsert_edges(collection, [edge("a", ABOUT, "cache", 0.2)])
    (e,) = store.edges_of(collection, "a")
    assert (e.weight, e.co_occurrences, e.last_co_occurred, e.kind) == (0.2, 0, None, None)
    assert [(h.name, h.degree) for h in store.match_hubs(collection, ["cache"])] == [("cache", 1)]


def test_add_memories_links_edges_within_the_batch(store: GraphStore, collection: str) -> None:
    add(
        store,
        collection,
        ["a", "b"],
        [edge("a", ASSOCIATED, "b", 0.6), edge("b", ASSOCIATED, "nowhere")],
    )
    assert [(e.source, e.target, e.weight) for e in store.edges_of(collection, "b")] == [
        ("b", "a", 0.6)
    ]


def test_edges_are_dated_by_their_own_creation_else_their_memory(
    store: GraphStore, collection: str
) -> None:
    given = T0 + timedelta(days=9)
    add(
        store,
        collection,
        [memory("a", collection, minutes=3 * 24 * 60)],
        [
            Edge(source="a", type=ABOUT, target="dated", created_at=given),
            Edge(source="a", type=ABOUT, target="undated"),
        ],
    )
    dates = {e.target: e.created_at for e in store.edges_of(collection, "a")}
    assert dates == {"dated": given, "undated": T0 + timedelta(days=3)}


def test_iter_edges_gives_every_edge_once(store: GraphStore, collection: str, other: str) -> None:
    ids = [f"m{i}" for i in range(5)]
    add(store, collection, ids, [edge(m, ABOUT, f"c{i % 2}") for i, m in enumerate(ids)])
    store.upsert_edges(
        collection,
        [
            edge("m1", ASSOCIATED, "m0", 0.4),
            Edge(source="m2", type=EdgeType.SYNTHESIZED_FROM, target="m3"),
        ],
    )
    add(store, other, ["m0"], [edge("m0", ABOUT, "c0")])
    edges = list(store.iter_edges(collection))
    assert len(edges) == 7
    assert len({(e.source, e.type, e.target) for e in edges}) == 7
    assoc = [e for e in edges if e.type is ASSOCIATED]
    assert [(e.source, e.target, e.weight) for e in assoc] == [("m0", "m1", 0.4)]
    assert all(e.created_at == T0 for e in edges if e.type is ABOUT)
    assert [e.source for e in store.iter_edges(other)] == ["m0"]


def test_edge_ends_are_the_edges_without_the_rest(
    store: GraphStore, collection: str, other: str
) -> None:
    ids = [f"m{i}" for i in range(6)]
    add(
        store,
        collection,
        ids,
        [edge(m, ABOUT, f"c{i % 2}", 0.25 + i / 10) for i, m in enumerate(ids)]
        + [edge("m3", IN_DOMAIN, "ops"), edge("m4", HAS_TRIGGER, "deploy", 0.9)],
    )
    store.upsert_edges(
        collection,
        [
            edge("m5", ASSOCIATED, "m0", 0.4),
            Edge(source="m2", type=EdgeType.SYNTHESIZED_FROM, target="m3"),
            Edge(source="m1", type=EdgeType.CONFLICTS_WITH, target="m2"),
        ],
    )
    add(store, other, ["m0"], [edge("m0", ABOUT, "c0")])
    ends = list(store.iter_edge_ends(collection))
    assert ends == [
        (e.source, e.type.value, e.target, e.weight) for e in store.iter_edges(collection)
    ]
    assert len(ends) == 11 and ("m0", "ASSOCIATED", "m5", 0.4) in ends
    assert list(store.iter_edge_ends(other)) == [("m0", "ABOUT", "c0", 0.5)]
    assert list(store.iter_edge_ends(f"{collection}-none")) == []


def test_events_are_kept_in_the_order_appended(
    store: GraphStore, collection: str, other: str
) -> None:
    first = [
        Event(type="retrieval", at=T0, memory_ids=["a", "b"], payload={"query": "cache"}),
        Event(type="use", at=T0, memory_ids=["b"], payload={"context": ["cache"], "n": 2}),
    ]
    second = [Event(type="retrieval", at=T0 - timedelta(days=1), payload={"conversation_id": "c1"})]
    store.append_events(collection, first)
    store.append_events(collection, second)
    store.append_events(other, first[:1])
    store.append_events(collection, [])
    assert list(store.iter_events(collection)) == [*first, *second]
    assert store.stats(collection).events == 3
    assert list(store.iter_events(other)) == first[:1]


def test_stats_count_one_collection(store: GraphStore, collection: str, other: str) -> None:
    add(
        store,
        collection,
        [
            memory("a", collection, category="decision"),
            memory("b", collection, category="decision", model=None),
            memory("c", collection),
        ],
        [edge("a", ABOUT, "cache"), edge("b", ABOUT, "cache"), edge("c", IN_DOMAIN, "payments")],
    )
    add(store, other, ["x"], [edge("x", ABOUT, "elsewhere")])
    stats = store.stats(collection)
    assert stats.memories == 3
    assert stats.by_category == {"decision": 2, "insight": 1}
    assert stats.by_tier == {"active": 3}
    assert stats.pending_embeddings == 1
    assert stats.hubs == {"Concept": 1, "Domain": 1}
    assert stats.edges == {"ABOUT": 2, "IN_DOMAIN": 1}
    assert stats.events == 0


def test_collections_never_see_each_other(store: GraphStore, collection: str, other: str) -> None:
    add(store, collection, ["a", "b"], [edge("a", ABOUT, "cache"), edge("a", ASSOCIATED, "b")])
    add(store, other, ["a"], [edge("a", ABOUT, "cache", 0.9)])
    assert {collection, other} <= set(store.list_collections())
    assert [e.weight for e in store.edges_of(other, "a")] == [0.9]
    assert store.delete_memory(other, "a") is True
    assert set(store.get_memories(collection, ["a", "b"])) == {"a", "b"}
    assert [h.degree for h in store.match_hubs(collection, ["cache"])] == [1]
    assert store.match_hubs(other, ["cache"]) == []
    assert other not in store.list_collections()
