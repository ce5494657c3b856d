"""The embedded store's learning (:class:`~hippocampus.store.roles.LearningRole`):
edges reinforced and decayed, and one atomic learning update over memories, state,
edges and events."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from hippocampus.model import EdgeType, Tier
from hippocampus.model.association import EdgeUpdate
from hippocampus.store.checks import check_decay_pass, check_learned, micros
from hippocampus.store.embedded import due, graph_sql, tables, turns
from hippocampus.store.embedded.base import EmbeddedBase
from hippocampus.store.embedded.due import DueEntry
from hippocampus.store.embedded.index import IndexEntry
from hippocampus.store.records import LearnChange, Learned, MemoryRecord


class EmbeddedLearning(EmbeddedBase):
    """Reinforcement, decay and learning updates, in SQLite and the in-memory
    graph and indexes at once."""

    def reinforce_edges(self, collection: str, updates: Sequence[EdgeUpdate]) -> None:
        """Apply reinforcements in one transaction, in order: an existing edge gains
        ``delta`` up to ``cap`` (a weight already above the cap is kept, never
        lowered), a missing one starts at ``initial``; ``co_occurrences += 1``,
        ``last_co_occurred = at``. ASSOCIATED is stored from its smaller id. Updates
        whose memories do not exist, and memory edges from a memory to itself, are
        skipped; hubs are created when absent."""
        if not updates:
            return
        with self._write_lock:
            graph = self._graph(collection)
            applied = graph_sql.reinforcements(graph, updates)
            if not applied:
                return
            with self._transaction("reinforce edges") as conn:
                graph_sql.reinforce(conn, collection, applied)
            graph.reinforce(applied)

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
        """One decay pass: every edge of the ``types`` (``None``: all) last used
        (reinforced, else created) before ``unused_before`` and above ``floor``
        loses ``step``, never below ``floor``.
        Idempotent per ``period``: a period already applied to the collection
        changes nothing and returns 0.

        Returns:
            How many edges were decayed.

        Raises:
            InvalidInputError: an empty period, a negative step, or a floor outside
                [0, 1].
        """
        check_decay_pass(period, step, floor)
        cutoff = micros(unused_before)
        with self._write_lock:
            graph = self._graph(collection)
            with self._transaction("decay edges") as conn:
                decayed = graph_sql.decay(
                    conn,
                    collection,
                    period=period,
                    unused_before=cutoff,
                    step=step,
                    floor=floor,
                    types=types,
                )
            if decayed is None:
                return 0
            graph.decay(cutoff, step, floor, types=types)
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

        The write lock and the ``BEGIN IMMEDIATE`` transaction make the read, the
        change and the write one step: no other write, in this process or
        another, can come between them.
        """
        ids = list(dict.fromkeys(memory_ids))
        keys = list(dict.fromkeys(state_keys))
        with self._write_lock:
            index = self._index(collection)
            graph = self._graph(collection)
            with self._transaction("learn") as conn:
                read = tables.read_memories(conn, collection, ids)
                states = tables.read_states(conn, collection, keys)
                learned = change(read, states)
                check_learned(collection, read, learned)
                memories = list({m.id: m for m in learned.memories}.values())
                dues = {m.id: due.due_columns(m) for m in memories}
                conn.executemany(
                    "UPDATE memories SET doc = json_set(:doc, '$.embedding_model', vector_model),"
                    " category = :category, tier = :tier, occurred_at = :occurred,"
                    f" turn_of = :turn_of, {due.SET_DUE_COLUMNS}"
                    " WHERE collection = :c AND id = :i",
                    [
                        {
                            "doc": m.model_dump_json(),
                            "category": m.category,
                            "tier": Tier(m.tier).value,
                            "occurred": micros(m.occurred_at),
                            "turn_of": m.turn_of,
                            "c": collection,
                            "i": m.id,
                            **dues[m.id],
                        }
                        for m in memories
                    ],
                )
                # A merged repeat can make a memory a turn of its conversation.
                moved = [
                    place
                    for m in memories
                    if tables.place(m) != tables.place(read[m.id])
                    for place in tables.turn_keys(
                        [MemoryRecord(memory=m), MemoryRecord(memory=read[m.id])]
                    )
                ]
                if moved:
                    turns.relink(conn, collection, moved, micros(tables.now()))
                if learned.states:
                    conn.executemany(
                        tables.UPSERT_STATE, tables.state_rows(collection, learned.states)
                    )
                applied = graph_sql.reinforcements(graph, learned.reinforce)
                if applied:
                    graph_sql.reinforce(conn, collection, applied)
                tables.insert_events(conn, collection, learned.events)
            if memories:
                # The stored vector (and its model) stay: the entries say only
                # what the index filters on.
                index.put([(IndexEntry.of(m), None, read[m.id].embedding_model) for m in memories])
                self._dues[collection].put([DueEntry.of(m, dues[m.id]) for m in memories])
            if applied:
                graph.reinforce(applied)
        return learned
