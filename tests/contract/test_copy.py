"""Copying a collection between stores (``hippo migrate``) loses nothing: from an
embedded store into each store, and from there into a fresh embedded store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from hippocampus.errors import ConflictError
from hippocampus.model import (
    Edge,
    EdgeType,
    EdgeUpdate,
    Event,
    Memory,
    RecallFilters,
    Review,
    Tier,
)
from hippocampus.model.association import ExpandParams
from hippocampus.store import GraphStore, MemoryRecord
from hippocampus.store.copy import copy_collection
from hippocampus.store.embedded import EmbeddedStore
from tests.contract.helpers import (
    ABOUT,
    ASSOCIATED,
    HAS_TRIGGER,
    IN_DOMAIN,
    MODEL,
    T0,
    concept,
    edge,
    memory,
    record,
    seed,
    vec,
)


def _engaged(m: Memory) -> Memory:
    """``m`` as hygiene and engagement leave a memory: merged duplicates and their
    conversations, a quality score, engagement counts, a review state."""
    return m.model_copy(
        update={
            "retrieval": m.retrieval.model_copy(
                update={
                    "duplicates": 2,
                    "conversation_ids": ["conv-1", "conv-2"],
                    "quality_score": 0.42,
                    "usefulness": 0.7,
                    "confidence": 0.35,
                    "usage_count": 3,
                    "last_used": T0 + timedelta(days=2),
                    "recent_dismissals": 2.5,
                    "dismissed_at": T0 + timedelta(days=3),
                    "irrelevant_contexts": ["feedback:lunch"],
                    "review": Review(
                        stability=4.5,
                        difficulty=6.25,
                        last_review=T0 + timedelta(days=3),
                        reviews=4,
                        lapses=1,
                    ),
                }
            )
        }
    )


def _said(m: Memory, minute: int, speaker: str) -> Memory:
    return m.model_copy(update={"occurred_at": T0 + timedelta(minutes=minute), "speaker": speaker})


def _fill(store: GraphStore, collection: str) -> None:
    """A collection with a bit of everything: vectors and none, every edge type,
    learned weights and dates, hub vectors, events, and memories as hygiene and
    engagement leave them (archived, merged duplicates, reviewed)."""
    store.add_memories(
        collection,
        [
            record(
                memory("a", collection, category="decision", tags=["ops"], domains=["db"]),
                [edge("a", ABOUT, "cache", 0.7), edge("a", IN_DOMAIN, "db", 0.5)],
            ),
            record(
                _engaged(memory("b", collection, minutes=1)),
                [edge("b", HAS_TRIGGER, "deploy", 0.6)],
            ),
            MemoryRecord(memory=memory("c", collection, minutes=2, model=None)),
            record(
                memory("d", collection, minutes=3, model="other-model", tier=Tier.ARCHIVED),
                [edge("d", ABOUT, "cache")],
            ),
            # Turns of one conversation, remembered in another order than said.
            record(_said(memory("e", collection, minutes=4, conversations=["chat"]), 9, "ada")),
            record(_said(memory("f", collection, minutes=5, conversations=["chat"]), 8, "bob")),
        ],
    )
    store.upsert_edges(
        collection,
        [
            Edge(source="c", type=EdgeType.SYNTHESIZED_FROM, target="a"),
            Edge(source="b", type=EdgeType.CONFLICTS_WITH, target="d", weight=0.2),
        ],
    )
    store.reinforce_edges(
        collection,
        [
            EdgeUpdate(
                source=s,
                type=ASSOCIATED,
                target=t,
                delta=0.1,
                cap=1.0,
                initial=0.3,
                at=T0 + timedelta(days=n),
                kind="co_retrieval",
            )
            for n, (s, t) in enumerate([("a", "b"), ("b", "a"), ("c", "d")])
        ],
    )
    store.set_hub_vectors(
        collection,
        [("Concept", "cache", vec("cache"), MODEL), ("Trigger", "deploy", vec("deploy"), MODEL)],
    )
    store.append_events(
        collection,
        [
            Event(type="retrieval", at=T0, memory_ids=["a", "b"], payload={"query": "cache"}),
            Event(type="use", at=T0 + timedelta(hours=1), memory_ids=["a"]),
        ],
    )


def _snapshot(store: GraphStore, collection: str) -> dict[str, object]:
    memories = list(store.iter_memories(collection))
    ids = [m.id for m in memories]
    vectors = store.get_vectors(collection, ids)
    anchors = [concept("cache"), seed("b", 0.8)]
    return {
        "memories": [m.model_copy(update={"collection": "-"}) for m in memories],
        "vectors": {i: v.tolist() for i, v in sorted(vectors.items())},
        "edges": sorted(
            (
                e.source,
                e.type.value,
                e.target,
                e.weight,
                e.co_occurrences,
                e.kind,
                e.last_co_occurred,
                e.created_at,
            )
            for e in store.iter_edges(collection)
        ),
        "hub_vectors": [(k, n, v.tolist(), m) for k, n, v, m in store.iter_hub_vectors(collection)],
        "events": list(store.iter_events(collection)),
        "turns": store.neighbour_turns(collection, ids, before=1, after=1),
        "stats": store.stats(collection),
        "expansion": [
            (x.memory_id, round(x.strength, 12), x.anchors)
            for x in store.expand(
                collection, anchors, params=ExpandParams(), filters=RecallFilters(), paths=False
            )
        ],
    }


def test_a_collection_copied_to_each_store_and_back_loses_nothing(
    store: GraphStore, new_collection: Callable[[], str], tmp_path: Path
) -> None:
    name = new_collection()
    with EmbeddedStore(tmp_path / "source") as source, EmbeddedStore(tmp_path / "back") as back:
        _fill(source, "origin")
        before = _snapshot(source, "origin")

        there = copy_collection(source, store, "origin", into=name)
        assert (there.memories, there.vectors, there.edges, there.hub_vectors, there.events) == (
            6,
            5,
            9,
            2,
            2,
        )
        assert _snapshot(store, name) == before
        assert before["turns"] == {"f": ([], ["e"]), "e": (["f"], []), "b": ([], [])}

        copy_collection(store, back, name, into="origin")
        assert _snapshot(back, "origin") == before
        np.testing.assert_array_equal(back.get_vectors("origin", ["a"])["a"], vec("a"))


def test_copying_into_a_collection_that_holds_memories_is_refused(
    store: GraphStore, collection: str, tmp_path: Path
) -> None:
    store.add_memories(collection, [record(memory("x", collection))])
    with EmbeddedStore(tmp_path / "source") as source:
        _fill(source, "origin")
        with pytest.raises(ConflictError):
            copy_collection(source, store, "origin", into=collection)
    assert [m.id for m in store.iter_memories(collection)] == ["x"]


def test_the_state_documents_named_are_copied_and_no_others(
    store: GraphStore, new_collection: Callable[[], str], tmp_path: Path
) -> None:
    name = new_collection()
    model = {"version": 3, "weights": {"length": 1.25}, "feedback_seen": 500}
    with EmbeddedStore(tmp_path / "source") as source:
        _fill(source, "origin")
        source.put_states("origin", {"quality_model": model, "conv:1": {"turn": 2}})
        report = copy_collection(
            source, store, "origin", into=name, states=["quality_model", "absent"]
        )
    assert report.states == 1
    assert store.get_states(name, ["quality_model", "conv:1", "absent"]) == {"quality_model": model}
