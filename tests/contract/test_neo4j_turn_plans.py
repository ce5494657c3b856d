"""Query plans of the conversation-order statements, on a real server (skipped
without one).

A turn's neighbours are found by seeking ``memory_turn`` (collection, turn_of,
occurred_at) with a range, read in index order and cut after the few turns
wanted: never by reading every turn of the conversation, nor by a range over
``memory_key``'s ids. So what ``memory/neighbour_turns`` (every default recall)
and ``memory/link_turns`` (every write of a turn) cost does not grow with the
conversation: the same in one of 2,000 turns as in one of 200.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

import pytest

from hippocampus.model import EdgeType, Memory
from hippocampus.store import MemoryRecord
from hippocampus.store.neo4j import Neo4jStore
from tests.contract.backends import neo4j_plan
from tests.contract.helpers import T0, memory
from tests.contract.plans import SCANS, PlanningDriver, db_hits, operator_name, operators

pytestmark = pytest.mark.skipif(neo4j_plan()[0] is None, reason=neo4j_plan()[1])

SHORT = 200
LONG = 2_000
TURN_INDEX = "Memory(collection, turn_of, occurred_at)"
"""How a plan names the ``memory_turn`` index."""
NEXT = EdgeType.NEXT
TURN_STATEMENTS = frozenset({"memory/neighbour_turns", "memory/link_turns", "memory/lock_turns"})


@pytest.fixture
def collection(neo4j_store: Neo4jStore) -> Iterator[str]:
    name = f"contract-turn-plans-{uuid.uuid4().hex[:8]}"
    yield name
    neo4j_store.drop_collection(name)


def _turn(memory_id: str, collection: str, conversation: str, minute: int) -> Memory:
    m = memory(memory_id, collection, conversations=[conversation], model=None)
    return m.model_copy(update={"occurred_at": T0 + timedelta(minutes=minute)})


def _conversation(store: Neo4jStore, collection: str, name: str, n: int) -> list[Memory]:
    """``n`` turns of conversation ``name``, two at each minute (ties go by id)."""
    turns = [_turn(f"{name}-{i:05d}", collection, name, i // 2) for i in range(n)]
    for start in range(0, n, 1_000):
        store.add_memories(
            collection, [MemoryRecord(memory=m) for m in turns[start : start + 1_000]]
        )
    return turns


def _order(m: Memory) -> tuple[datetime, str]:
    return m.occurred_at, m.id


def _details(node: Mapping[str, Any]) -> str:
    return str((node.get("args") or {}).get("Details", ""))


def _index_reads(plan: Mapping[str, Any]) -> list[str]:
    """``operator: details`` of every operator of the plan that reads an index."""
    return [
        f"{operator_name(node)}: {_details(node)}"
        for node in operators(plan)
        if "Index" in operator_name(node)
    ]


def _check_seeks(name: str, plan: Mapping[str, Any]) -> None:
    """The plan seeks memory_turn, or a key by equality; it scans nothing. (Once
    in a full test run the planner scanned the whole memory_turn index for the
    same-moment side: the statements now ask for seeks.)"""
    scans = [
        f"{operator_name(n)}: {_details(n)}"
        for n in operators(plan)
        if operator_name(n) in SCANS or "Scan" in operator_name(n)
    ]
    assert not scans, (name, scans)
    reads = _index_reads(plan)
    assert reads, name
    for read in reads:
        assert read.startswith("NodeIndexSeek") or read.startswith("NodeUniqueIndexSeek"), read
        if TURN_INDEX in read:
            continue
        # Otherwise a key looked up by equality: a memory by id, a TurnOrder.
        assert " id < " not in read and " id > " not in read, read
        assert "Memory(collection, id)" in read or "TurnOrder(collection, turn_of)" in read, read


def test_turn_neighbours_are_seeks_whose_cost_does_not_grow_with_the_conversation(
    neo4j_store: Neo4jStore, collection: str
) -> None:
    short = _conversation(neo4j_store, collection, "short", SHORT)
    long = _conversation(neo4j_store, collection, "long", LONG)
    driver = PlanningDriver(neo4j_store._driver, mode="PROFILE", only=TURN_STATEMENTS)
    store = Neo4jStore(
        driver,  # type: ignore[arg-type]
        database=neo4j_store._database,
        dimensions=neo4j_store.dimensions,
    )
    cost: dict[str, dict[str, int]] = {}
    written: dict[str, Memory] = {}
    for turns in (short, long):
        conversation = turns[0].turn_of
        assert conversation is not None
        # A turn in the middle, one of a tie (the one just before it is at the
        # same moment), and its neighbours.
        middle = turns[len(turns) // 2 + 1]
        found = store.neighbour_turns(collection, [middle.id], before=3, after=3)
        at = len(turns) // 2 + 1
        assert found == {
            middle.id: ([m.id for m in turns[at - 3 : at]], [m.id for m in turns[at + 1 : at + 4]])
        }
        # A turn written into the middle, after the two at its moment (by id):
        # the statement runs twice (PROFILE), relinking the same way again.
        new = _turn(f"{conversation}-new", collection, conversation, len(turns) // 4)
        store.add_memories(collection, [MemoryRecord(memory=new)])
        written[conversation] = new
        cost[conversation] = {}
        for name in TURN_STATEMENTS:
            plans = driver.plans_of(name)
            assert plans, name
            for plan in plans:
                _check_seeks(name, plan)
            cost[conversation][name] = db_hits(plans[0])
        driver.planned.clear()

    for name in ("memory/neighbour_turns", "memory/link_turns"):
        few, many = cost["short"][name], cost["long"][name]
        # Ten times the turns cost (about) the same: a few hits per turn read.
        assert many <= 1.5 * few, (name, few, many)
        assert many < 200, (name, many)
    # Exactly one chain through each conversation, the new turns spliced in.
    edges = sorted(
        (e.source, e.target) for e in neo4j_store.iter_edges(collection) if e.type is NEXT
    )
    chains = []
    for turns in (short, long):
        ordered = sorted([*turns, written[turns[0].turn_of or ""]], key=_order)
        chains += [(a.id, b.id) for a, b in itertools.pairwise(ordered)]
    assert edges == sorted(chains)
