"""A conversation's turns in the Neo4j store: the NEXT edges that link them in
the order they happened, the conversations' locks that keep them one chain, and
the turns around a memory.

Every write that moves, adds or removes a turn relinks its conversation with
:func:`link_turns`, under the conversation's lock (:func:`lock_turns`), taken
before any memory's."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from neo4j import ManagedTransaction

from hippocampus.model import SEQUENCE_KIND, SEQUENCE_WEIGHT, EdgeType, Memory
from hippocampus.store import checks
from hippocampus.store.neo4j.connection import (
    Neo4jConnection,
    one_statement,
    run_counted,
    run_statement,
)
from hippocampus.store.neo4j.counts import Tally


class Neo4jTurns(Neo4jConnection):
    """The turns around memories of a conversation."""

    def neighbour_turns(
        self, collection: str, ids: Sequence[str], *, before: int, after: int
    ) -> dict[str, tuple[list[str], list[str]]]:
        """For each of ``ids`` that is a conversation turn, the ids of up to
        ``before`` turns just before it and ``after`` just after it in its
        conversation, each list in the order they happened (``NEXT`` order); read
        through the ``memory_turn`` index."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = self._read(
            "read neighbouring turns",
            one_statement(
                "memory/neighbour_turns",
                {"ids": wanted, "before": max(0, before), "after": max(0, after)},
                collection,
            ),
        )
        return {row["id"]: (list(row["earlier"]), list(row["later"])) for row in rows}


def turn_place(memory: Memory) -> tuple[str | None, datetime]:
    """Where a memory stands among turns: its conversation (``None`` outside any)
    and when it happened. A write that changes it relinks the turns."""
    return memory.turn_of, checks.utc(memory.occurred_at)


class TurnsToLock(Exception):
    """Raised inside a transaction that found it must relink turns of
    conversations it has not locked: run it again, these locked first."""

    def __init__(self, conversations: set[str]) -> None:
        super().__init__(f"conversations to lock first: {sorted(conversations)}")
        self.conversations = frozenset(conversations)


def lock_conversations(
    tx: ManagedTransaction, collection: str, conversations: Iterable[str]
) -> frozenset[str]:
    """Take the write locks of these conversations (``memory/lock_turns``), in
    sorted order; the conversations now locked."""
    locked = frozenset(conversations)
    if locked:
        run_statement(tx, "memory/lock_turns", collection, conversations=sorted(locked))
    return locked


def lock_turns(
    tx: ManagedTransaction, collection: str, memories: Iterable[Memory]
) -> frozenset[str]:
    """Lock the conversations these memories are turns of; the ones locked.

    Every write that relinks a conversation's turns holds its lock from before it
    reads their neighbours until it commits, so the writers of one conversation
    relink it one after another and leave one chain. A transaction takes these
    locks first, in sorted order, before any memory's (those it writes, those
    ``learn/lock_memories`` takes): the holder of a conversation may wait for a
    turn's memory, but never the other way round, so none deadlocks."""
    return lock_conversations(
        tx, collection, {m.turn_of for m in memories if m.turn_of is not None}
    )


def link_turns(
    tx: ManagedTransaction,
    collection: str,
    memories: Sequence[Memory],
    tally: Tally,
    locked: frozenset[str] = frozenset(),
) -> None:
    """Re-point the NEXT edges around the places these memories now hold or held
    (see ``cypher/memory/link_turns.cypher``), counting the change in ``tally``;
    memories outside any conversation hold no place. The conversations not among
    ``locked`` are locked here (late: a write that read a place anew under its
    locks and found another one)."""
    lock_conversations(
        tx,
        collection,
        {m.turn_of for m in memories if m.turn_of is not None} - locked,
    )
    places = [
        {"turn_of": m.turn_of, "occurred_at": checks.utc(m.occurred_at), "id": m.id}
        for m in memories
        if m.turn_of is not None
    ]
    if places:
        made = run_counted(
            tx,
            "memory/link_turns",
            collection,
            places=places,
            at=checks.utc(datetime.now(UTC)),
            weight=SEQUENCE_WEIGHT,
            kind=SEQUENCE_KIND,
        )
        tally.edges(EdgeType.NEXT.value, made.relationships_created - made.relationships_deleted)
