"""Learning in the Neo4j store: edges reinforced and decayed, and a learning
update applied atomically under its memories' and documents' locks."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from neo4j import ManagedTransaction

from hippocampus.model import EdgeType, Memory
from hippocampus.model.association import EdgeUpdate
from hippocampus.store import checks
from hippocampus.store.checks import check_decay_pass, check_learned
from hippocampus.store.neo4j import convert
from hippocampus.store.neo4j.connection import (
    WRITE_BATCH,
    Neo4jConnection,
    one_statement,
    run_counted,
    run_statement,
)
from hippocampus.store.neo4j.counts import Tally
from hippocampus.store.neo4j.graph import by_type
from hippocampus.store.neo4j.turns import (
    TurnsToLock,
    link_turns,
    lock_conversations,
    turn_place,
)
from hippocampus.store.records import LearnChange, Learned


class Neo4jLearning(Neo4jConnection):
    """Reinforcement, decay, and learning updates."""

    def reinforce_edges(self, collection: str, updates: Sequence[EdgeUpdate]) -> None:
        """Apply reinforcements set-based, in one transaction; the updates of one edge
        in the order given, edges in :func:`convert.lock_order` (so writers of the same
        hubs queue rather than deadlock). An
        existing edge gains ``delta`` up to ``cap`` (a weight already above the cap
        is kept), a missing one starts at ``initial`` when the update may create it
        (``create``) and is skipped otherwise; ``co_occurrences += 1``,
        ``last_co_occurred = at``. Updates whose memories do not exist, and memory
        edges from a memory to itself, are skipped; hubs are created when absent
        (by updates that may create)."""
        if not any(convert.update_row(u) is not None for u in updates):
            return

        def work(tx: ManagedTransaction) -> None:
            tally = Tally()
            _reinforce(tx, collection, updates, tally)
            tally.write(tx, collection)

        self._write("reinforce edges", work)

    def decay_edges(
        self,
        collection: str,
        *,
        period: str,
        unused_before: datetime,
        step: float,
        floor: float,
        types: Sequence[EdgeType] | None = None,
    ) -> int:
        """One decay pass: every edge last used (reinforced, else created) before
        ``unused_before`` and above ``floor`` loses ``step``, never below ``floor``.
        Idempotent per ``period``: a period already applied to the collection
        changes nothing and returns 0.

        The pass goes a page of memories per transaction (``WRITE_BATCH``), so
        its size is bounded whatever the collection's: a first pass over a large
        graph does not outgrow the server's transaction memory. Each edge it
        lowers is marked with the period, so a pass cut short (and the next one
        for the same period) finishes the work without decaying an edge twice;
        the pass is recorded when the last page is done. An edge is read again
        under its write lock before it is lowered: one reinforced after the page
        was read, while the pass waited for it, keeps its weight.

        Returns:
            How many edges were decayed.

        Raises:
            InvalidInputError: an empty period, a negative step, or a floor outside
                [0, 1].
        """
        check_decay_pass(period, step, floor)
        params = {
            "period": period,
            "unused_before": checks.utc(unused_before),
            "step": step,
            "floor": floor,
            "limit": WRITE_BATCH,
            "types": None if types is None else sorted({EdgeType(t).value for t in types}),
        }
        decayed = 0
        after: str | None = ""
        while after is not None:
            rows = self._write(
                "decay edges",
                one_statement("learn/decay_edges", {**params, "after": after}, collection),
            )
            if not rows:
                # A pass for this period is recorded (before this one, or by
                # another process while this one ran).
                return decayed
            decayed += int(rows[0]["decayed"])
            after = rows[0]["last"]
        self._write(
            "record a decay pass",
            one_statement(
                "learn/record_decay_pass",
                {"period": period, "unused_before": params["unused_before"], "decayed": decayed},
                collection,
            ),
        )
        return decayed

    def learn(
        self,
        collection: str,
        *,
        memory_ids: Sequence[str] = (),
        state_keys: Sequence[str] = (),
        change: LearnChange,
    ) -> Learned:
        """Apply one learning update atomically (see :meth:`GraphStore.learn`).

        One write transaction first locks the memories, then the state documents
        (``learn/lock_memories``, ``learn/lock_states``; each in sorted order), then
        reads them, so every API process on this database applies its updates of
        one memory or document one after another. A transaction the driver runs
        again (a deadlock, a lost race) runs ``change`` again on what it reads then.

        An update that moves a memory among its conversation's turns (a merged
        repeat) needs the conversations' locks, which come before any memory's
        (see :func:`~hippocampus.store.neo4j.turns.lock_turns`): the first time
        it finds that out it is rolled back and run again, those conversations
        locked first.
        """
        ids = sorted(set(memory_ids))
        keys = sorted(set(state_keys))
        conversations: set[str] = set()

        def work(tx: ManagedTransaction) -> Learned:
            locked = lock_conversations(tx, collection, conversations)
            read, states = _locked_reads(tx, collection, ids, keys)
            learned = change(read, states)
            check_learned(collection, read, learned)
            tally = Tally()
            _write_memories(tx, collection, read, learned, tally, locked)
            _write_states(tx, collection, keys, states, learned)
            _reinforce(tx, collection, learned.reinforce, tally)
            if learned.events:
                events = [convert.event_row(event) for event in learned.events]
                run_statement(tx, "memory/append_events", collection, events=events)
                tally.events(event["type"] for event in events)
            tally.write(tx, collection)
            return learned

        while True:
            try:
                learned = self._write("learn", work)
                if learned.memories:  # their tiers and categories may have moved
                    self._sizes.changed(collection)
                return learned
            except TurnsToLock as e:
                conversations.update(e.conversations)


def _locked_reads(
    tx: ManagedTransaction, collection: str, ids: Sequence[str], keys: Sequence[str]
) -> tuple[dict[str, Memory], dict[str, dict[str, Any]]]:
    """Lock the memories, then the state documents (each in the sorted order
    given), then read them: the memories by id, the documents by key."""
    if ids:
        run_statement(tx, "learn/lock_memories", collection, ids=ids)
    if keys:
        run_statement(tx, "learn/lock_states", collection, keys=keys)
    read = {
        row["id"]: convert.memory_of(row["doc"], row["embedding_model"])
        for row in (run_statement(tx, "memory/get_memories", collection, ids=ids) if ids else [])
    }
    states = {
        row["key"]: convert.state_of(row["value"])
        for row in (run_statement(tx, "memory/get_states", collection, keys=keys) if keys else [])
        if row["value"] is not None
    }
    return read, states


def _write_memories(
    tx: ManagedTransaction,
    collection: str,
    read: Mapping[str, Memory],
    learned: Learned,
    tally: Tally,
    locked: frozenset[str],
) -> None:
    """Write the memories a learning update changed (their vectors stay as they
    are) and relink the turns of those it moved, counting in ``tally``.

    Raises:
        TurnsToLock: a memory moved among the turns of a conversation not among
            ``locked``.
    """
    memories = list({m.id: m for m in learned.memories}.values())
    for memory in memories:
        model = read[memory.id].embedding_model  # the vector stays as it is
        tally.changed(read[memory.id], model, memory, model)
        run_statement(
            tx,
            "memory/replace_memory",
            collection,
            id=memory.id,
            properties=convert.memory_properties(memory, None, with_vector=False),
            embedding=None,
            embedding_model=None,
            drop_embedding=False,
        )
    # A merged repeat can make a memory a turn of its conversation.
    moved = [m for m in memories if turn_place(m) != turn_place(read[m.id])]
    if moved:
        places = [*moved, *(read[m.id] for m in moved)]
        wanted = {m.turn_of for m in places if m.turn_of is not None}
        if not wanted <= locked:
            raise TurnsToLock(wanted)
        link_turns(tx, collection, places, tally, locked)


def _write_states(
    tx: ManagedTransaction,
    collection: str,
    keys: Sequence[str],
    states: Mapping[str, dict[str, Any]],
    learned: Learned,
) -> None:
    """Write the state documents a learning update returned, and delete those of
    ``keys`` that locking made (``learn/lock_states``) and it left without a
    value."""
    if learned.states:
        rows = [
            {"key": key, "value": convert.state_value(key, doc)}
            for key, doc in learned.states.items()
        ]
        run_statement(tx, "memory/put_states", collection, items=rows)
    unwritten = [k for k in keys if k not in states and k not in learned.states]
    if unwritten:
        run_statement(tx, "learn/drop_unwritten_states", collection, keys=unwritten)


def _reinforce(
    tx: ManagedTransaction, collection: str, updates: Sequence[EdgeUpdate], tally: Tally
) -> None:
    """Run :meth:`Neo4jLearning.reinforce_edges`'s statements in ``tx``, counting the
    edges and hubs they create in ``tally``."""
    rows = convert.lock_order(row for u in updates if (row := convert.update_row(u)) is not None)
    # Consecutive updates alike in `create` go in one statement (one per edge
    # type when they may create: see upsert_edge_rows); the runs go in order, so the
    # locks are taken in lock order across them and an edge named twice is
    # updated in the order given.
    for create, run in itertools.groupby(rows, key=lambda r: r["create"]):
        batch = list(run)
        if not create:
            run_statement(tx, "learn/strengthen_edges", collection, updates=batch)
            continue
        for edge_type, typed in by_type(batch):
            made = run_counted(tx, "learn/reinforce_edges", collection, updates=typed)
            tally.created(edge_type, made)
