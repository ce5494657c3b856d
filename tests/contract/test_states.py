"""The store contract: small JSON state documents kept beside the graph, by
collection and key (``GraphStore.get_states`` / ``put_states``)."""

from __future__ import annotations

from typing import Any

import pytest

from hippocampus.errors import InvalidInputError
from hippocampus.store import GraphStore
from tests.contract.helpers import add

CONVERSATION: dict[str, Any] = {
    "turn": 3,
    "surfaced": ["m-1", "m-2"],
    "scores": {"m-1": 0.8125, "m-2": -1.5e-7},
    "closed": False,
    "topic": None,
    "note": 'café ☕, "quoted"\nand a new line',
    "nested": [{"depth": [1, [2, [3]]]}, {}],
}


def test_documents_come_back_as_written(store: GraphStore, collection: str) -> None:
    store.put_states(collection, {"conv:1": CONVERSATION, "empty": {}, "model": {"w": [0.5]}})
    assert store.get_states(collection, ["conv:1", "empty", "model"]) == {
        "conv:1": CONVERSATION,
        "empty": {},
        "model": {"w": [0.5]},
    }
    assert store.get_states(collection, ["model"]) == {"model": {"w": [0.5]}}


def test_a_write_replaces_the_whole_document_and_leaves_other_keys(
    store: GraphStore, collection: str
) -> None:
    store.put_states(collection, {"conv:1": {"turn": 1, "surfaced": ["a"]}, "conv:2": {"turn": 7}})
    store.put_states(collection, {"conv:1": {"turn": 2}})
    assert store.get_states(collection, ["conv:1", "conv:2"]) == {
        "conv:1": {"turn": 2},
        "conv:2": {"turn": 7},
    }
    store.put_states(collection, {})
    assert store.get_states(collection, ["conv:1"]) == {"conv:1": {"turn": 2}}


def test_absent_keys_are_left_out(store: GraphStore, collection: str) -> None:
    assert store.get_states(collection, ["conv:1"]) == {}
    store.put_states(collection, {"conv:1": {"turn": 1}})
    assert store.get_states(collection, ["nothing", "conv:1", "conv:1", "conv:9"]) == {
        "conv:1": {"turn": 1}
    }
    assert store.get_states(collection, []) == {}


def test_collections_keep_their_own_documents(
    store: GraphStore, collection: str, other: str
) -> None:
    store.put_states(collection, {"conv:1": {"owner": "first"}, "only-here": {"x": 1}})
    store.put_states(other, {"conv:1": {"owner": "second"}})
    assert store.get_states(collection, ["conv:1", "only-here"]) == {
        "conv:1": {"owner": "first"},
        "only-here": {"x": 1},
    }
    assert store.get_states(other, ["conv:1", "only-here"]) == {"conv:1": {"owner": "second"}}
    store.put_states(other, {"conv:1": {"owner": "changed"}})
    assert store.get_states(collection, ["conv:1"]) == {"conv:1": {"owner": "first"}}


def test_state_documents_do_not_make_a_collection(
    store: GraphStore, collection: str, other: str
) -> None:
    add(store, other, ["m"])
    store.put_states(collection, {"conv:1": {"turn": 1}})
    listed = store.list_collections()
    assert other in listed
    assert collection not in listed


def test_a_document_json_cannot_hold_is_refused_and_nothing_written(
    store: GraphStore, collection: str
) -> None:
    with pytest.raises(InvalidInputError):
        store.put_states(collection, {"good": {"x": 1}, "bad": {"x": float("nan")}})
    assert store.get_states(collection, ["good", "bad"]) == {}


def test_keys_are_listed_by_prefix_within_the_collection(
    store: GraphStore, collection: str, other: str
) -> None:
    assert store.list_state_keys(collection) == []
    store.put_states(
        collection,
        {"conversation:b": {}, "conversation:a": {}, "surfacing:1": {}, "model": {}},
    )
    store.put_states(other, {"conversation:z": {}})
    assert store.list_state_keys(collection, "conversation:") == [
        "conversation:a",
        "conversation:b",
    ]
    assert store.list_state_keys(collection) == [
        "conversation:a",
        "conversation:b",
        "model",
        "surfacing:1",
    ]
    assert store.list_state_keys(collection, "nothing:") == []
