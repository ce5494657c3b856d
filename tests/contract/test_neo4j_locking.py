"""Concurrent writes on a live Neo4j: what only a real server's lock manager shows.

The contract suite checks that nothing is lost; these check how: writes that
touch one memory (or one conversation) from several threads at once take
their locks in one order and never deadlock, since a deadlock costs the
loser a retry (a second or more of back-off) and, past the retry time, the
request. Skipped without a Neo4j (``NEO4J_REQUIRED=1`` makes that a failure).
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from typing import Any

import pytest

from hippocampus.model import EdgeType, Memory
from hippocampus.store import Learned, MemoryRecord
from hippocampus.store.neo4j import Neo4jStore
from tests.contract.backends import neo4j_plan
from tests.contract.helpers import T0, add, memory

pytestmark = pytest.mark.skipif(neo4j_plan()[0] is None, reason=neo4j_plan()[1])

THREADS = 6
EACH = 8
NEXT = EdgeType.NEXT


@pytest.fixture
def collection(neo4j_store: Neo4jStore) -> Iterator[str]:
    name = f"contract-locking-{uuid.uuid4().hex[:8]}"
    yield name
    neo4j_store.drop_collection(name)


def deadlocks(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The driver's "retried after a deadlock" warnings captured so far."""
    return [r.getMessage() for r in caplog.records if "DeadlockDetected" in r.getMessage()]


def together(work: Callable[[int], None], threads: int = THREADS) -> None:
    """``work(n)`` in ``threads`` threads at once; re-raises the first failure."""
    failures: list[BaseException] = []

    def run(n: int) -> None:
        try:
            work(n)
        except BaseException as e:  # handed to the test thread below
            failures.append(e)

    workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if failures:
        raise failures[0]


def test_concurrent_learning_updates_of_one_memory_never_deadlock(
    neo4j_store: Neo4jStore, collection: str, caplog: pytest.LogCaptureFixture
) -> None:
    add(neo4j_store, collection, ["a"])

    def used(memories: Mapping[str, Memory], states: Mapping[str, dict[str, Any]]) -> Learned:
        a = memories["a"]
        meta = a.retrieval.model_copy(update={"usage_count": a.retrieval.usage_count + 1})
        return Learned(memories=[a.model_copy(update={"retrieval": meta})])

    def work(_: int) -> None:
        for _ in range(EACH):
            neo4j_store.learn(collection, memory_ids=["a"], change=used)

    caplog.set_level(logging.WARNING, logger="neo4j")
    together(work)
    got = neo4j_store.get_memories(collection, ["a"])["a"].retrieval.usage_count
    assert got == THREADS * EACH
    assert deadlocks(caplog) == []


TURNS = 10
"""Turns each thread writes to the one conversation."""


def _turn(memory_id: str, collection: str, minute: int) -> Memory:
    m = memory(memory_id, collection, conversations=["chat"], model=None)
    return m.model_copy(update={"occurred_at": T0 + timedelta(minutes=minute)})


def _next_edges(store: Neo4jStore, collection: str) -> list[tuple[str, str]]:
    return sorted((e.source, e.target) for e in store.iter_edges(collection) if e.type is NEXT)


def _chain_of(turns: list[Memory]) -> list[tuple[str, str]]:
    """The NEXT edges of exactly one chain through ``turns`` in conversation order."""
    ordered = sorted(turns, key=lambda m: (m.occurred_at, m.id))
    return sorted((a.id, b.id) for a, b in itertools.pairwise(ordered))


def _faults(edges: list[tuple[str, str]], turns: list[Memory]) -> list[str]:
    """How ``edges`` fail to be one chain through ``turns``: every turn but the
    last has exactly one NEXT out, every turn but the first exactly one in."""
    ordered = [m.id for m in sorted(turns, key=lambda m: (m.occurred_at, m.id))]
    out = collections.Counter(a for a, _ in edges)
    into = collections.Counter(b for _, b in edges)
    faults = []
    for n, turn in enumerate(ordered):
        want_out, want_in = int(n < len(ordered) - 1), int(n > 0)
        if out[turn] != want_out:
            faults.append(f"{turn}: {out[turn]} NEXT out")
        if into[turn] != want_in:
            faults.append(f"{turn}: {into[turn]} NEXT in")
    return faults


def _check_one_chain(store: Neo4jStore, collection: str, turns: list[Memory]) -> None:
    edges = _next_edges(store, collection)
    assert _faults(edges, turns) == []
    assert edges == _chain_of(turns)


def test_turns_written_to_one_conversation_at_once_form_exactly_one_chain(
    neo4j_store: Neo4jStore, collection: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Interleaved in time across the threads, two threads' turns at each moment
    # (ties go by id), each turn its own write.
    turns = [
        [_turn(f"t{n}-{i:02d}", collection, i * THREADS + 2 * (n // 2)) for i in range(TURNS)]
        for n in range(THREADS)
    ]

    def work(n: int) -> None:
        for m in turns[n]:
            neo4j_store.add_memories(collection, [MemoryRecord(memory=m)])

    caplog.set_level(logging.WARNING, logger="neo4j")
    together(work)
    assert deadlocks(caplog) == []
    _check_one_chain(neo4j_store, collection, [m for mine in turns for m in mine])


def test_turns_moved_and_deleted_at_once_leave_exactly_one_chain(
    neo4j_store: Neo4jStore, collection: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Every thread adds turns, moves one of its earlier turns elsewhere in time
    # and deletes another, all interleaved with the other threads' writes.
    kept: list[list[Memory]] = [[] for _ in range(THREADS)]

    def work(n: int) -> None:
        mine = kept[n]
        for i in range(TURNS):
            m = _turn(f"t{n}-{i:02d}", collection, i * THREADS + n)
            neo4j_store.add_memories(collection, [MemoryRecord(memory=m)])
            mine.append(m)
            if i % 3 == 2:
                moved = _turn(mine[0].id, collection, (TURNS - i) * THREADS + (n + 1) % THREADS)
                neo4j_store.replace_memory(
                    collection, MemoryRecord(memory=moved), replace_edges=False
                )
                mine[0] = moved
                gone = mine.pop(1)
                assert neo4j_store.delete_memory(collection, gone.id)

    caplog.set_level(logging.WARNING, logger="neo4j")
    together(work)
    assert deadlocks(caplog) == []
    _check_one_chain(neo4j_store, collection, [m for mine in kept for m in mine])


def _made_a_turn(turn: Memory) -> Callable[..., Learned]:
    """A learning update that makes a memory the turn ``turn`` (a merged repeat)."""

    def change(memories: Mapping[str, Memory], _: Mapping[str, dict[str, Any]]) -> Learned:
        was = memories[turn.id]
        meta = was.retrieval.model_copy(update={"conversation_ids": ["chat"]})
        update = {"retrieval": meta, "occurred_at": turn.occurred_at}
        return Learned(memories=[was.model_copy(update=update)])

    return change


def test_learning_updates_that_make_turns_at_once_leave_exactly_one_chain(
    neo4j_store: Neo4jStore, collection: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A learning update can make a memory a turn (a merged repeat): it needs
    # the conversation's lock, which it learns only after reading the memory.
    loose = [
        [memory(f"r{n}-{i:02d}", collection, model=None) for i in range(TURNS)]
        for n in range(THREADS)
    ]
    neo4j_store.add_memories(collection, [MemoryRecord(memory=m) for row in loose for m in row])
    turns: list[list[Memory]] = [[] for _ in range(THREADS)]

    def work(n: int) -> None:
        for i in range(TURNS):
            m = _turn(f"t{n}-{i:02d}", collection, i * THREADS + n)
            neo4j_store.add_memories(collection, [MemoryRecord(memory=m)])
            turns[n].append(m)
            repeat = _turn(f"r{n}-{i:02d}", collection, i * THREADS + (n + 3) % THREADS)
            merged = _made_a_turn(repeat)
            neo4j_store.learn(collection, memory_ids=[repeat.id], change=merged)
            turns[n].append(repeat)

    caplog.set_level(logging.WARNING, logger="neo4j")
    together(work)
    assert deadlocks(caplog) == []
    _check_one_chain(neo4j_store, collection, [m for mine in turns for m in mine])
