"""The store contract: when a memory happened and who said it (filters), and the
order of a conversation's turns (NEXT edges, neighbouring turns)."""

from __future__ import annotations

from datetime import timedelta

from hippocampus.model import (
    SEQUENCE_WEIGHT,
    EdgeType,
    EdgeUpdate,
    Memory,
    RecallFilters,
)
from hippocampus.model.association import ExpandParams
from hippocampus.store import GraphStore, MemoryRecord
from tests.contract.helpers import (
    ABOUT,
    MODEL,
    T0,
    concept,
    edge,
    ids,
    memory,
    record,
    unit,
    vec,
)

NEXT = EdgeType.NEXT


def turn(
    memory_id: str,
    collection: str,
    minute: int,
    *,
    conversation: str = "chat-1",
    speaker: str | None = None,
    content: str | None = None,
) -> Memory:
    """A turn remembered at T0 that happened ``minute`` minutes after T0."""
    m = memory(memory_id, collection, conversations=[conversation], content=content)
    return m.model_copy(update={"occurred_at": T0 + timedelta(minutes=minute), "speaker": speaker})


def chain(store: GraphStore, collection: str) -> list[tuple[str, str]]:
    """Every NEXT edge of the collection as (from, to), sorted."""
    return sorted((e.source, e.target) for e in store.iter_edges(collection) if e.type is NEXT)


# -- filters ----------------------------------------------------------------------------


def _said(store: GraphStore, collection: str) -> None:
    query = vec("query")
    rows = [
        ("early", 0, "ada"),
        ("middle", 60, "bob"),
        ("late", 120, "ada"),
        ("unsaid", 90, None),
    ]
    store.add_memories(
        collection,
        [
            record(
                turn(i, collection, minute, speaker=speaker, content=f"kafka partition note {i}"),
                edges=[edge(i, ABOUT, "kafka")],
                vector=unit(query) + 0.1 * n * unit(vec(n)),
            )
            for n, (i, minute, speaker) in enumerate(rows)
        ],
    )


def _found(store: GraphStore, collection: str, filters: RecallFilters) -> dict[str, set[str]]:
    """What each search (dense, lexical, graph walk) finds under ``filters``."""
    dense = store.search_vectors(collection, vec("query"), model=MODEL, k=10, filters=filters)
    text = store.search_text(collection, "kafka partition", k=10, filters=filters)
    walk = store.expand(
        collection,
        [concept("kafka")],
        params=ExpandParams(hub_degree_penalty=False),
        filters=filters,
    )
    return {
        "dense": set(ids(dense)),
        "text": set(ids(text)),
        "graph": {x.memory_id for x in walk},
    }


def test_occurred_range_is_half_open_in_every_search(store: GraphStore, collection: str) -> None:
    _said(store, collection)
    half_open = RecallFilters(
        occurred_after=T0 + timedelta(minutes=60), occurred_before=T0 + timedelta(minutes=120)
    )
    for found in _found(store, collection, half_open).values():
        assert found == {"middle", "unsaid"}
    after = RecallFilters(occurred_after=T0 + timedelta(minutes=61))
    for found in _found(store, collection, after).values():
        assert found == {"late", "unsaid"}
    before = RecallFilters(occurred_before=T0 + timedelta(minutes=60))
    for found in _found(store, collection, before).values():
        assert found == {"early"}


def test_speakers_filter_keeps_memories_said_by_one_of_them(
    store: GraphStore, collection: str
) -> None:
    _said(store, collection)
    for found in _found(store, collection, RecallFilters(speakers=["ada"])).values():
        assert found == {"early", "late"}
    both = RecallFilters(speakers=["ada", "bob"], occurred_after=T0 + timedelta(minutes=30))
    for found in _found(store, collection, both).values():
        assert found == {"middle", "late"}
    for found in _found(store, collection, RecallFilters(speakers=["nobody"])).values():
        assert found == set()


def test_speakers_filter_ignores_case_on_either_side(store: GraphStore, collection: str) -> None:
    _said(store, collection)
    shouted = turn("shouted", collection, 30, speaker="Bob", content="kafka partition note shout")
    store.add_memories(
        collection,
        [record(shouted, edges=[edge("shouted", ABOUT, "kafka")], vector=unit(vec("query")))],
    )
    for speakers in (["BOB"], ["bob"], ["Bob"]):
        for found in _found(store, collection, RecallFilters(speakers=speakers)).values():
            assert found == {"middle", "shouted"}
    assert RecallFilters(speakers=["ADA"]).admits(store.get_memories(collection, ["late"])["late"])


def test_filters_follow_an_edited_time_and_speaker(store: GraphStore, collection: str) -> None:
    _said(store, collection)
    moved = turn("early", collection, 200, speaker="bob", content="kafka partition note early")
    store.replace_memory(collection, MemoryRecord(memory=moved), replace_edges=False)
    late = RecallFilters(occurred_after=T0 + timedelta(minutes=150), speakers=["bob"])
    for found in _found(store, collection, late).values():
        assert found == {"early"}
    stored = store.get_memories(collection, ["early"])["early"]
    assert stored.occurred_at == T0 + timedelta(minutes=200) and stored.speaker == "bob"


# -- conversation order -----------------------------------------------------------------


def test_turns_are_linked_in_the_order_they_happened(store: GraphStore, collection: str) -> None:
    # Remembered in another order than they happened, and from two conversations.
    store.add_memories(
        collection,
        [
            record(turn("c", collection, 30)),
            record(turn("a", collection, 10)),
            record(turn("x", collection, 20, conversation="chat-2")),
            record(memory("loose", collection)),
        ],
    )
    assert chain(store, collection) == [("a", "c")]
    store.add_memories(collection, [record(turn("b", collection, 20))])
    assert chain(store, collection) == [("a", "b"), ("b", "c")]
    store.add_memories(
        collection,
        [record(turn("d", collection, 40)), record(turn("first", collection, 0))],
    )
    assert chain(store, collection) == [("a", "b"), ("b", "c"), ("c", "d"), ("first", "a")]
    (link,) = [e for e in store.edges_of(collection, "b") if e.type is NEXT]
    assert (link.target, link.weight, link.kind) == ("c", SEQUENCE_WEIGHT, "sequence")


def test_turns_at_the_same_moment_are_ordered_by_id(store: GraphStore, collection: str) -> None:
    store.add_memories(collection, [record(turn(i, collection, 5)) for i in ("t2", "t1", "t3")])
    assert chain(store, collection) == [("t1", "t2"), ("t2", "t3")]


def test_deleting_a_turn_links_its_neighbours(store: GraphStore, collection: str) -> None:
    store.add_memories(collection, [record(turn(i, collection, n)) for n, i in enumerate("abcd")])
    assert store.delete_memory(collection, "b")
    assert chain(store, collection) == [("a", "c"), ("c", "d")]
    assert store.delete_memory(collection, "d")
    assert chain(store, collection) == [("a", "c")]
    assert store.delete_memory(collection, "a")
    assert chain(store, collection) == []


def test_a_turn_given_another_time_moves_in_the_order(store: GraphStore, collection: str) -> None:
    store.add_memories(collection, [record(turn(i, collection, n)) for n, i in enumerate("abcd")])
    store.replace_memory(
        collection, MemoryRecord(memory=turn("a", collection, 10)), replace_edges=False
    )
    assert chain(store, collection) == [("b", "c"), ("c", "d"), ("d", "a")]
    # Out of every conversation: it leaves the order.
    loose = store.get_memories(collection, ["c"])["c"]
    loose = loose.model_copy(
        update={"retrieval": loose.retrieval.model_copy(update={"conversation_ids": []})}
    )
    store.replace_memory(collection, MemoryRecord(memory=loose), replace_edges=False)
    assert chain(store, collection) == [("b", "d"), ("d", "a")]


def test_neighbour_turns_are_read_in_order(store: GraphStore, collection: str) -> None:
    store.add_memories(
        collection,
        [record(turn(f"t{n}", collection, n)) for n in (3, 0, 4, 1, 2)]
        + [record(turn("other", collection, 2, conversation="chat-2"))]
        + [record(memory("loose", collection))],
    )
    found = store.neighbour_turns(
        collection, ["t2", "t0", "t4", "other", "loose", "absent"], before=2, after=1
    )
    assert found == {
        "t2": (["t0", "t1"], ["t3"]),
        "t0": ([], ["t1"]),
        "t4": (["t2", "t3"], []),
        "other": ([], []),
    }
    assert store.neighbour_turns(collection, ["t2"], before=0, after=5) == {
        "t2": ([], ["t3", "t4"])
    }


def test_next_edges_neither_decay_nor_learn(store: GraphStore, collection: str) -> None:
    store.add_memories(collection, [record(turn(i, collection, n)) for n, i in enumerate("ab")])
    store.reinforce_edges(
        collection,
        [
            EdgeUpdate(source="a", type=NEXT, target="b", delta=0.1, cap=1.0, initial=0.3, at=T0),
            EdgeUpdate(
                source="a", type=NEXT, target="missing", delta=0.1, cap=1.0, initial=0.3, at=T0
            ),
        ],
    )
    decayed = store.decay_edges(
        collection,
        period="far-future",
        unused_before=T0 + timedelta(days=10_000),
        step=0.5,
        floor=0.1,
    )
    assert decayed == 0
    (link,) = [e for e in store.iter_edges(collection) if e.type is NEXT]
    assert (link.source, link.target, link.weight, link.co_occurrences) == (
        "a",
        "b",
        SEQUENCE_WEIGHT,
        0,
    )
