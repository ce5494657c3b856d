"""Writes on a live Neo4j: races with other writes, which only a real server's
lock manager shows, and how vectors are stored.

The races are made certain, not hoped for: one write holds a lock (inside a
learning update, or in a transaction the test keeps open) while the other is
started and seen waiting for it (``SHOW TRANSACTIONS``); only then is the lock
let go. Batch writes that name shared hubs take their locks in one order
whatever order they are given in, so concurrent ones never deadlock (as in
``test_neo4j_locking.py``). Every vector a statement writes is kept as a float32
array, whatever the driver sends. Skipped without a Neo4j (``NEO4J_REQUIRED=1`` makes
that a failure).
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from hippocampus.model import Edge, EdgeType, EdgeUpdate, Memory
from hippocampus.store import Learned
from hippocampus.store.neo4j import Neo4jStore, convert
from hippocampus.store.neo4j.statements import statement
from tests.contract.backends import neo4j_plan
from tests.contract.helpers import ABOUT, DIM, MODEL, T0, add, edge, memory, record, vec
from tests.contract.test_neo4j_locking import deadlocks, together

pytestmark = pytest.mark.skipif(neo4j_plan()[0] is None, reason=neo4j_plan()[1])

WAIT_S = 30.0
"""How long a write may take to reach the lock it is meant to wait for: only a
broken server or a stuck test waits this long."""


@pytest.fixture
def collection(neo4j_store: Neo4jStore) -> Iterator[str]:
    name = f"contract-writes-{uuid.uuid4().hex[:8]}"
    yield name
    neo4j_store.drop_collection(name)


def run_in_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[BaseException]]:
    """``work()`` started in a thread; its failure, if any, lands in the list."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as e:  # handed to the test thread
            failures.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, failures


def wait_until_blocked(store: Neo4jStore, collection: str) -> None:
    """Return once a transaction on ``collection`` waits for a lock."""
    deadline = time.monotonic() + WAIT_S
    with store._driver.session(database=store._database) as session:
        while time.monotonic() < deadline:
            row = session.run(
                "SHOW TRANSACTIONS YIELD status, parameters"
                " WHERE status STARTS WITH 'Blocked' AND parameters.collection = $collection"
                " RETURN count(*) AS n",
                collection=collection,
            ).single()
            if row is not None and row["n"] > 0:
                return
            time.sleep(0.01)
    raise AssertionError(f"no transaction on {collection!r} came to wait for a lock")


def used(memory: Memory) -> Memory:
    meta = memory.retrieval
    return memory.model_copy(
        update={"retrieval": meta.model_copy(update={"usage_count": meta.usage_count + 1})}
    )


# -- re-embedding against learning ------------------------------------------------


def test_re_embedding_while_a_learning_update_holds_the_memory_loses_neither(
    neo4j_store: Neo4jStore, collection: str
) -> None:
    add(neo4j_store, collection, ["a"])
    new = vec("a, re-embedded")
    at = T0 + timedelta(days=1)
    started: list[tuple[threading.Thread, list[BaseException]]] = []

    def re_embed() -> None:
        neo4j_store.set_vectors(collection, [("a", new, "model-2")], at=at)

    def learning(memories: Mapping[str, Memory], _: Mapping[str, dict[str, Any]]) -> Learned:
        if not started:
            started.append(run_in_thread(re_embed))
            wait_until_blocked(neo4j_store, collection)
        return Learned(memories=[used(memories["a"])])

    neo4j_store.learn(collection, memory_ids=["a"], change=learning)
    thread, failures = started[0]
    thread.join()
    assert failures == []
    got = neo4j_store.get_memories(collection, ["a"])["a"]
    assert got.retrieval.usage_count == 1
    assert (got.embedding_model, got.embedding_generated_at) == ("model-2", at)
    np.testing.assert_array_equal(neo4j_store.get_vectors(collection, ["a"])["a"], new)


# -- decay against reinforcement ----------------------------------------------------


def test_an_edge_reinforced_while_a_decay_pass_waits_for_it_is_not_decayed(
    neo4j_store: Neo4jStore, collection: str
) -> None:
    add(neo4j_store, collection, ["a"], [edge("a", ABOUT, "x", 0.5)])
    now = T0 + timedelta(days=400)
    reinforcement = EdgeUpdate(
        source="a", type=ABOUT, target="x", delta=0.1, cap=1.0, initial=0.3, at=now
    )
    decayed: list[int] = []

    def decay() -> None:
        decayed.append(
            neo4j_store.decay_edges(
                collection,
                period="p1",
                unused_before=now - timedelta(days=180),
                step=0.05,
                floor=0.1,
            )
        )

    # The reinforcement holds the edge's write lock, uncommitted, while the pass
    # selects the edge by its old used_at and comes to wait for the lock.
    with neo4j_store._driver.session(database=neo4j_store._database) as session:
        tx = session.begin_transaction()
        tx.run(
            statement("learn/reinforce_edges"),
            collection=collection,
            updates=[convert.update_row(reinforcement)],
        ).consume()
        thread, failures = run_in_thread(decay)
        wait_until_blocked(neo4j_store, collection)
        tx.commit()
    thread.join()
    assert failures == []
    assert decayed == [0]
    (kept,) = neo4j_store.edges_of(collection, "a")
    assert kept.weight == pytest.approx(0.6)
    assert kept.last_co_occurred == now


# -- lock order of batch writes -----------------------------------------------------

HUBS = 24
ROUNDS = 6


def shuffled(items: Sequence[Any], n: int) -> list[Any]:
    """``items`` in an order of thread ``n``'s own."""
    out = list(items)
    random.Random(n).shuffle(out)
    return out


def hub_edges(source: str, n: int, round_: int) -> list[Edge]:
    """Edges from ``source`` to the round's hubs of every kind, in thread ``n``'s
    order: every thread names the same hubs, none in the same order."""
    names = [f"hub {round_}-{i:02d}" for i in range(HUBS)]
    kinds = (EdgeType.ABOUT, EdgeType.IN_DOMAIN, EdgeType.HAS_TRIGGER)
    return shuffled([edge(source, kind, name) for kind in kinds for name in names], n)


def test_edges_to_shared_hubs_written_in_any_order_never_deadlock(
    neo4j_store: Neo4jStore, collection: str, caplog: pytest.LogCaptureFixture
) -> None:
    add(neo4j_store, collection, [f"m{n}" for n in range(6)])

    def work(n: int) -> None:
        for r in range(ROUNDS):
            # New memories, new hubs: every round creates nodes and edges.
            fresh = [memory(f"new-{n}-{r}-{i}", collection) for i in range(2)]
            records = [record(m, hub_edges(m.id, n + i, r)) for i, m in enumerate(fresh)]
            neo4j_store.add_memories(collection, records)
            neo4j_store.upsert_edges(collection, hub_edges(f"m{n}", n, r))
            updates = [
                EdgeUpdate(
                    source=e.source,
                    type=e.type,
                    target=e.target + "!",
                    delta=0.1,
                    cap=1.0,
                    initial=0.3,
                    at=T0,
                )
                for e in hub_edges(f"m{n}", n, r)
            ]
            neo4j_store.reinforce_edges(collection, updates)

    caplog.set_level(logging.WARNING, logger="neo4j")
    together(work)
    assert deadlocks(caplog) == []
    assert len(neo4j_store.edges_of(collection, "m0")) == 2 * ROUNDS * 3 * HUBS


# -- vectors as float32 -------------------------------------------------------------

ROUNDED = float(np.float32(0.1))
"""0.1 rounded to the nearest float32: what a float32 property gives back for 0.1."""


def stored_values(store: Neo4jStore, query: str, **params: Any) -> list[float]:
    with store._driver.session(database=store._database) as session:
        row = session.run(query, params).single()
    assert row is not None
    return list(row["embedding"])


def run_statement(store: Neo4jStore, name: str, **params: Any) -> None:
    with store._driver.session(database=store._database) as session:
        session.run(statement(name), params).consume()


def test_every_vector_the_store_writes_is_kept_as_float32(
    neo4j_store: Neo4jStore, collection: str
) -> None:
    # A float64 value sent to each statement comes back rounded to float32: the
    # property is a float32 array, half the size of a list of Python floats.
    value = [0.1] * DIM
    add(
        neo4j_store,
        collection,
        [memory("a", collection), memory("h", collection)],
        [edge("h", ABOUT, "x")],
    )
    memory_vector = "MATCH (m:Memory {collection: $c, id: $id}) RETURN m.embedding AS embedding"
    props = convert.memory_properties(memory("b", collection), vec("b"))
    run_statement(
        neo4j_store,
        "memory/add_memories",
        collection=collection,
        memories=[{**props, "embedding": value}],
    )
    assert stored_values(neo4j_store, memory_vector, c=collection, id="b") == [ROUNDED] * DIM
    run_statement(
        neo4j_store,
        "memory/set_vectors",
        collection=collection,
        items=[{"id": "a", "embedding": value, "embedding_model": MODEL, "doc": None}],
    )
    assert stored_values(neo4j_store, memory_vector, c=collection, id="a") == [ROUNDED] * DIM
    run_statement(
        neo4j_store,
        "memory/replace_memory",
        collection=collection,
        id="h",
        properties={},
        embedding=value,
        embedding_model=MODEL,
        drop_embedding=False,
    )
    assert stored_values(neo4j_store, memory_vector, c=collection, id="h") == [ROUNDED] * DIM
    run_statement(
        neo4j_store,
        "memory/set_passages",
        collection=collection,
        items=[{"id": "a", "model": MODEL, "passages": [value]}],
    )
    passage = (
        "MATCH (p:Passage {collection: $c, memory_id: 'a', n: 1}) RETURN p.embedding AS embedding"
    )
    assert stored_values(neo4j_store, passage, c=collection) == [ROUNDED] * DIM
    run_statement(
        neo4j_store,
        "memory/set_hub_vectors",
        collection=collection,
        items=[{"kind": "Concept", "name": "x", "embedding": value, "embedding_model": MODEL}],
    )
    hub = "MATCH (h:Concept {collection: $c, name: 'x'}) RETURN h.embedding AS embedding"
    assert stored_values(neo4j_store, hub, c=collection) == [ROUNDED] * DIM
