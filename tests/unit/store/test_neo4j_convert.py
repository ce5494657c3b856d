"""Values between engine models and the Neo4j statements."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from hippocampus.errors import InvalidInputError
from hippocampus.model import Edge, EdgeType, EdgeUpdate, Event, Memory, RetrievalMeta
from hippocampus.model import content_hash as hash_of
from hippocampus.store.neo4j import convert

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def test_a_text_query_is_the_indexed_terms_tagged_so_no_input_is_query_syntax() -> None:
    terms, words = convert.text_query("c", 'Pool AND "exhausted"? title:(x) NOT y~2 -z* pools')
    assert terms == ["pool", "exhaust", "titl", "x", "y", "2", "z"]
    tag = words[0].split("_")[0]
    assert words == [f"{tag}_{t}" for t in terms] and tag.isalnum() and len(tag) == 8
    assert convert.text_query("c", "?!  () : the") == ([], [])
    # Each collection its own tag; one collection always the same.
    assert convert.tagged("other", ["pool"]) != convert.tagged("c", ["pool"])
    assert convert.tagged("c", ["pool"]) == [words[0]]


def test_a_memory_reads_back_whole_with_the_model_of_its_stored_vector() -> None:
    memory = Memory(
        id="a",
        collection="c",
        content="text",
        created_at=datetime(2024, 1, 1),  # naive: taken as UTC
        updated_at=T0,
        content_hash=hash_of("text"),
        embedding_model="m",
        retrieval=RetrievalMeta(concepts=["pool"], confidence=0.7, last_used=T0),
    )
    props = convert.memory_properties(memory, np.arange(3, dtype=np.float32))
    assert props["created_at"] == T0 and props["created_at"].tzinfo is not None
    assert props["embedding"] == [0.0, 1.0, 2.0] and props["embedding_model"] == "m"
    assert (props["concepts"], props["confidence"]) == (["pool"], 0.7)
    assert convert.memory_of(props["doc"], props["embedding_model"]) == memory

    bare = convert.memory_properties(memory, None)
    assert bare["embedding"] is None and bare["embedding_model"] is None
    assert convert.memory_of(bare["doc"], None).embedding_model is None
    assert "embedding" not in convert.memory_properties(memory, None, with_vector=False)


def test_edge_rows_orient_associated_skip_self_loops_and_keep_the_last_of_repeats() -> None:
    later = T0 + timedelta(days=1)
    rows = convert.edge_rows(
        [
            Edge(source="b", type=EdgeType.ASSOCIATED, target="a", weight=0.4, created_at=T0),
            Edge(source="a", type=EdgeType.ASSOCIATED, target="a"),
            Edge(source="a", type=EdgeType.ASSOCIATED, target="b", weight=0.9),
            Edge(source="b", type=EdgeType.CONFLICTS_WITH, target="a", last_co_occurred=later),
        ]
    )
    assert [(r["source"], r["type"], r["target"], r["weight"]) for r in rows] == [
        ("a", "ASSOCIATED", "b", 0.9),
        ("b", "CONFLICTS_WITH", "a", 0.3),
    ]
    assert rows[0]["created_at"] == T0  # the repeat gave none: the earlier one's stays
    with pytest.raises(InvalidInputError):
        convert.record_edge_rows(
            Memory(
                id="a",
                collection="c",
                content="t",
                created_at=T0,
                updated_at=T0,
                content_hash=hash_of("t"),
            ),
            [Edge(source="b", type=EdgeType.ABOUT, target="x")],
        )


def test_update_rows_orient_associated_and_skip_self_loops() -> None:
    def update(source: str, target: str, edge_type: EdgeType) -> EdgeUpdate:
        return EdgeUpdate(
            source=source, type=edge_type, target=target, delta=0.1, cap=1.0, initial=0.3, at=T0
        )

    assert convert.update_row(update("a", "a", EdgeType.ASSOCIATED)) is None
    row = convert.update_row(update("b", "a", EdgeType.ASSOCIATED))
    assert row is not None and (row["source"], row["target"]) == ("a", "b")
    hub = convert.update_row(update("b", "b", EdgeType.ABOUT))  # a concept named like its memory
    assert hub is not None and (hub["source"], hub["target"]) == ("b", "b")


def test_edge_rows_come_in_one_lock_order_whatever_order_they_are_given_in() -> None:
    edges = [
        Edge(source=source, type=edge_type, target=target)
        for source in "ba"
        for edge_type in (EdgeType.IN_DOMAIN, EdgeType.ABOUT)
        for target in "yx"
    ]
    for given in (edges, edges[::-1]):
        rows = convert.edge_rows(given)
        assert [(r["type"], r["target"], r["source"]) for r in rows] == [
            ("ABOUT", "x", "a"),
            ("ABOUT", "x", "b"),
            ("ABOUT", "y", "a"),
            ("ABOUT", "y", "b"),
            ("IN_DOMAIN", "x", "a"),
            ("IN_DOMAIN", "x", "b"),
            ("IN_DOMAIN", "y", "a"),
            ("IN_DOMAIN", "y", "b"),
        ]
    # Hubs named by kind come in the order of the edge types that reach them.
    hubs = [{"kind": kind, "name": "n"} for kind in ("Domain", "Trigger", "Concept")]
    assert [h["kind"] for h in convert.hub_lock_order(hubs)] == ["Concept", "Trigger", "Domain"]


def test_events_keep_their_payload_and_name_their_conversation() -> None:
    event = Event(
        type="surfacing",
        at=datetime(2024, 1, 1, 12, tzinfo=timezone(timedelta(hours=2))),
        memory_ids=["a"],
        payload={"conversation_id": "conv-9", "score": 0.8, "nested": {"k": [1, 2]}},
    )
    row = convert.event_row(event)
    assert row["conversation_id"] == "conv-9"
    assert convert.event_of(row) == event
    assert (
        convert.event_row(Event(type="x", at=T0, payload={"conversation_id": 7}))["conversation_id"]
        is None
    )


def test_a_state_document_is_json_text_and_only_plain_json_is_taken() -> None:
    document = {"note": "café", "scores": [0.25, -1e-9], "done": None}
    text = convert.state_value("conv:1", document)
    assert text == '{"note":"café","scores":[0.25,-1e-09],"done":null}'
    assert convert.state_of(text) == document
    for bad in ({"x": float("nan")}, {"x": float("inf")}, {"when": T0}, {"ids": {"a", "b"}}):
        with pytest.raises(InvalidInputError) as raised:
            convert.state_value("conv:1", bad)
        assert raised.value.field == "items" and "conv:1" in raised.value.message
