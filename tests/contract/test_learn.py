"""The store contract: a learning update (``GraphStore.learn``) reads what it
names and writes what it makes of it in one transaction, and two updates of one
memory or document never interleave.

The interleaving is made certain, not hoped for: the first update's change starts
a second update from another thread and gives it time to run before returning. A
store that read outside the first update's transaction (or wrote without its
lock) would let the second read the old value; a store that serializes them
makes the second wait, and read what the first wrote.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from hippocampus.errors import InvalidInputError, NotFoundError
from hippocampus.model import Event, Memory, Tier
from hippocampus.store import GraphStore, Learned, MemoryRecord
from tests.contract.helpers import ASSOCIATED, T0, add, memory
from tests.contract.test_learning import update

OVERLAP_S = 0.3
"""How long the first update waits for the second, which a store that does not
serialize them lets finish meanwhile. Only whether a broken store is caught
depends on it, never whether a correct one passes."""


def used(m: Memory, times: int = 1) -> Memory:
    meta = m.retrieval
    return m.model_copy(
        update={
            "retrieval": meta.model_copy(update={"usage_count": meta.usage_count + times}),
        }
    )


def test_an_update_reads_what_it_names_and_writes_it_all_at_once(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a", "b"])
    store.put_states(collection, {"counter": {"n": 4}})
    given: dict[str, Any] = {}

    def change(memories: Mapping[str, Memory], states: Mapping[str, dict[str, Any]]) -> Learned:
        given.update(memories=sorted(memories), states=dict(states))
        return Learned(
            memories=[used(memories["a"]).model_copy(update={"tier": Tier.ARCHIVED})],
            states={"counter": {"n": states["counter"]["n"] + 1}, "new": {"made": True}},
            reinforce=[update("a", "b")],
            events=[Event(type="engagement", at=T0, memory_ids=["a"], payload={"x": 1})],
        )

    learned = store.learn(
        collection, memory_ids=["b", "a", "gone"], state_keys=["counter", "absent"], change=change
    )
    assert given == {"memories": ["a", "b"], "states": {"counter": {"n": 4}}}
    a = store.get_memories(collection, ["a"])["a"]
    assert (a.retrieval.usage_count, a.tier) == (1, Tier.ARCHIVED)
    assert a.embedding_model == memory("a", collection).embedding_model
    assert store.get_states(collection, ["counter", "new", "absent"]) == {
        "counter": {"n": 5},
        "new": {"made": True},
    }
    assert "absent" not in store.list_state_keys(collection)
    (associated,) = [e for e in store.edges_of(collection, "a") if e.type == ASSOCIATED]
    assert (associated.target, associated.weight) == ("b", pytest.approx(0.3))
    assert [e.payload for e in store.iter_events(collection)] == [{"x": 1}]
    assert learned.states["counter"] == {"n": 5}


def test_an_update_that_raises_writes_nothing(store: GraphStore, collection: str) -> None:
    add(store, collection, ["a", "b"])

    def change(memories: Mapping[str, Memory], states: Mapping[str, dict[str, Any]]) -> Learned:
        # What it would write is made, then it refuses.
        Learned(memories=[used(memories["a"])], states={"s": {}}, reinforce=[update("a", "b")])
        raise NotFoundError("no such surfacing")

    with pytest.raises(NotFoundError):
        store.learn(collection, memory_ids=["a"], state_keys=["s"], change=change)
    assert store.get_memories(collection, ["a"])["a"].retrieval.usage_count == 0
    assert store.get_states(collection, ["s"]) == {}
    assert store.list_state_keys(collection) == []
    assert store.edges_of(collection, "a") == []


def test_an_update_changes_what_was_learned_of_a_memory_never_what_it_says(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a", "b"])

    def rewrite(memories: Mapping[str, Memory], _states: object) -> Learned:
        return Learned(memories=[memories["a"].model_copy(update={"content": "something else"})])

    def unnamed(memories: Mapping[str, Memory], _states: object) -> Learned:
        return Learned(memories=[used(memory("b", collection))], states={"s": {}})

    for change in (rewrite, unnamed):
        with pytest.raises(InvalidInputError):
            store.learn(collection, memory_ids=["a"], change=change)
    assert store.get_memories(collection, ["a", "b"]) == {
        "a": memory("a", collection),
        "b": memory("b", collection),
    }
    assert store.get_states(collection, ["s"]) == {}


def test_a_memory_given_its_first_conversation_becomes_one_of_its_turns(
    store: GraphStore, collection: str
) -> None:
    add(
        store,
        collection,
        [
            memory("t1", collection, minutes=1, conversations=["c"]),
            memory("loose", collection, minutes=2),
            memory("t3", collection, minutes=3, conversations=["c"]),
        ],
    )

    def merged_in(memories: Mapping[str, Memory], _states: object) -> Learned:
        meta = memories["loose"].retrieval
        return Learned(
            memories=[
                memories["loose"].model_copy(
                    update={
                        "retrieval": meta.model_copy(
                            update={"duplicates": 1, "conversation_ids": ["c"]}
                        )
                    }
                )
            ]
        )

    store.learn(collection, memory_ids=["loose"], change=merged_in)
    assert store.neighbour_turns(collection, ["loose", "t1"], before=1, after=1) == {
        "loose": (["t1"], ["t3"]),
        "t1": ([], ["loose"]),
    }


def test_two_updates_of_one_memory_and_one_document_never_interleave(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a"])
    seen: list[tuple[int, int]] = []
    second_done = threading.Event()

    def count(memories: Mapping[str, Memory], states: Mapping[str, dict[str, Any]]) -> Learned:
        n = states.get("counter", {}).get("n", 0)
        seen.append((memories["a"].retrieval.usage_count, n))
        return Learned(memories=[used(memories["a"])], states={"counter": {"n": n + 1}})

    def second() -> None:
        store.learn(collection, memory_ids=["a"], state_keys=["counter"], change=count)
        second_done.set()

    runner: list[threading.Thread] = []

    def first(memories: Mapping[str, Memory], states: Mapping[str, dict[str, Any]]) -> Learned:
        if not runner:
            runner.append(threading.Thread(target=second))
            runner[0].start()
            second_done.wait(OVERLAP_S)
        return count(memories, states)

    store.learn(collection, memory_ids=["a"], state_keys=["counter"], change=first)
    runner[0].join()
    assert store.get_memories(collection, ["a"])["a"].retrieval.usage_count == 2
    assert store.get_states(collection, ["counter"]) == {"counter": {"n": 2}}
    # The second read what the first wrote (a store that retries the first may
    # show its reads more than once, never a second that read before it).
    assert seen[-1] == (1, 1)


def test_many_concurrent_updates_lose_none(store: GraphStore, collection: str) -> None:
    add(store, collection, ["a"])
    threads, each = 6, 10

    def count(memories: Mapping[str, Memory], states: Mapping[str, dict[str, Any]]) -> Learned:
        n = states.get("counter", {}).get("n", 0)
        return Learned(memories=[used(memories["a"])], states={"counter": {"n": n + 1}})

    def work() -> None:
        for _ in range(each):
            store.learn(collection, memory_ids=["a"], state_keys=["counter"], change=count)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert store.get_memories(collection, ["a"])["a"].retrieval.usage_count == threads * each
    assert store.get_states(collection, ["counter"]) == {"counter": {"n": threads * each}}


def test_an_edit_keeps_what_learning_recorded_since_it_read(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a"])
    read = store.get_memories(collection, ["a"])["a"]
    store.learn(
        collection,
        memory_ids=["a"],
        change=lambda memories, _s: Learned(
            memories=[used(memories["a"], 3).model_copy(update={"tier": Tier.ARCHIVED})]
        ),
    )
    edited = read.model_copy(update={"importance": 0.9, "tags": ["edited"]})
    store.replace_memory(
        collection,
        MemoryRecord(memory=edited, keep_learned=True, keep_tier=True),
        replace_edges=False,
    )
    after = store.get_memories(collection, ["a"])["a"]
    assert (after.importance, after.tags) == (0.9, ["edited"])
    assert after.retrieval.usage_count == 3
    assert after.tier == Tier.ARCHIVED
    # An edit that sets the tier itself keeps the learned counts and its tier.
    store.replace_memory(
        collection,
        MemoryRecord(memory=edited, keep_learned=True, keep_tier=False),
        replace_edges=False,
    )
    after = store.get_memories(collection, ["a"])["a"]
    assert (after.retrieval.usage_count, after.tier) == (3, read.tier)
