"""The Neo4j store's schema: its constraints and indexes, created by an
explicit :meth:`Neo4jSchema.setup` that waits for them to come online and
migrates the data of an older schema, and the check that it is in place."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from neo4j import ManagedTransaction, Record

from hippocampus.errors import ConfigError, StoreError, StoreUnavailableError
from hippocampus.store.neo4j import convert, counts
from hippocampus.store.neo4j.admin import collection_names
from hippocampus.store.neo4j.connection import (
    DAWN,
    WRITE_BATCH,
    Neo4jConnection,
    one_statement,
    run_statement,
)
from hippocampus.store.neo4j.counts import Tally
from hippocampus.store.neo4j.statements import statement
from hippocampus.store.neo4j.turns import link_turns

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 7
"""The schema :meth:`Neo4jSchema.setup` creates. A later version adds a step to
``_migrate`` and bumps this. Version 3 adds passages: their key and vector
index, which the schema statements create (no data changes). Version 4 adds the
event log's retention: the counts of compacted events, keyed by collection and
type (no data changes; events are found by age through event_order). Version 5 stores due
dates for resurfacing on every memory, indexed (setup computes those of the
memories written before: :meth:`Neo4jSchema._date_memories`). Version 6 adds
the key of the conversations' locks (TurnOrder; each is made at its
conversation's next write), the crowding sample's index and the leases' key,
keeps counters beside each collection (:mod:`hippocampus.store.neo4j.counts`) and
indexes each memory's terms, tagged with its collection, for lexical recall
(setup does both for the collections written before:
:meth:`Neo4jSchema._count_collection`). Version 7 indexes each hub's edges in
order of strength, for expansion to read a hub's strongest without reading
them all (setup ranks the edges written before: :meth:`Neo4jSchema._rank_hub_edges`)."""
SCHEMA_OWNER = "hippocampus"
VECTOR_INDEX = "memory_embedding"
PASSAGE_INDEX = "passage_embedding"
TEXT_INDEX = "memory_terms"
_SCHEMA: tuple[str, ...] = (
    "schema/memory_key",
    "schema/domain_key",
    "schema/trigger_key",
    "schema/concept_key",
    "schema/domain_edge_rank",
    "schema/trigger_edge_rank",
    "schema/concept_edge_rank",
    "schema/decay_pass_key",
    "schema/schema_version_key",
    "schema/state_key",
    "schema/memory_hash",
    "schema/memory_created",
    "schema/memory_turn",
    "schema/turn_order_key",
    "schema/memory_seed_due",
    "schema/memory_fsrs_due",
    "schema/memory_sample",
    "schema/event_order",
    "schema/event_seq",
    "schema/event_log_key",
    "schema/compacted_events_key",
    "schema/count_key",
    "schema/term_count_key",
    "schema/memory_embedding",
    "schema/memory_terms",
    "schema/passage_key",
    "schema/passage_embedding",
    "schema/lease_key",
)
"""Schema statements, in order; each creates the index (or the constraint and its
index) named after its file."""
_INDEXES: tuple[str, ...] = tuple(name.split("/")[1] for name in _SCHEMA)
_POLL_S = 0.5


class Neo4jSchema(Neo4jConnection):
    """Setup, migrations, and the check that the schema is in place."""

    def setup(self, *, timeout_s: float = 300.0) -> None:
        """Create the schema, idempotently, and wait until every index is ONLINE.

        Uniqueness of memory ids and hub names per collection, indexes for hashes,
        creation order and the event log, the vector index over memory embeddings
        (cosine, :attr:`dimensions`) and the full-text index over content. Then the
        schema version is recorded (migrating an older database first).

        Raises:
            ConfigError: the vector index exists with another dimension.
            StoreError: an index failed, or the database has a newer schema.
            StoreUnavailableError: Neo4j cannot be reached, or the indexes are not
                online after ``timeout_s``.
        """
        self._check_open()
        vector_indexes = ("schema/memory_embedding", "schema/passage_embedding")
        for name in _SCHEMA:
            params = {"dimensions": self._dimensions} if name in vector_indexes else {}
            self._write(f"apply {name}", _runner(name, params))
        self._await_indexes(timeout_s)
        version = self._read("read the schema version", _version_reader)
        if version is not None and version > SCHEMA_VERSION:
            raise StoreError(
                f"the database has schema version {version}; this Hippocampus knows "
                f"version {SCHEMA_VERSION} and older. Upgrade Hippocampus."
            )
        for step in range(version or SCHEMA_VERSION, SCHEMA_VERSION):
            self._migrate(step)
        self._write(
            "record the schema version",
            _runner(
                "schema/write_schema_version", {"name": SCHEMA_OWNER, "version": SCHEMA_VERSION}
            ),
        )
        logger.info("neo4j schema version %d is set up", SCHEMA_VERSION)

    def _migrate(self, step: int) -> None:
        """Bring the data from schema version ``step`` to ``step + 1``, collection
        by collection, at most ``WRITE_BATCH`` memories or events per
        transaction: no transaction grows with the database. A migration cut
        short keeps the pages it finished, and setup run again does the rest
        (the version is recorded only after every step).

        Version 2 gives memories occurred_at and turn_of and links each
        conversation's turns in order (:meth:`_migrate_turns`), and numbers the
        events (:meth:`_number_events`); version 5 stores due dates
        (:meth:`_date_memories`); version 6 counts each collection and indexes
        its terms (:meth:`_count_collection`), lexical recall's index replacing
        the content index; version 7 ranks the hub edges
        (:meth:`_rank_hub_edges`). The other versions only add indexes."""
        if step == 1:
            for collection in self._collections():
                self._migrate_turns(collection)
            rows = self._read(
                "list collections with events", one_statement("schema/list_event_collections", {})
            )
            for row in rows:
                self._number_events(row["collection"])
        elif step == 4:
            for collection in self._collections():
                self._date_memories(collection)
        elif step == 5:
            self._write("drop the content index", _runner("schema/drop_memory_content", {}))
            for collection in self._collections():
                self._count_collection(collection)
        elif step == 6:
            for collection in self._collections():
                self._rank_hub_edges(collection)

    def _collections(self) -> list[str]:
        """The collections to migrate, as :meth:`Neo4jAdmin.list_collections` lists
        them."""
        return self._read("list collections", collection_names)

    def _migrate_turns(self, collection: str) -> None:
        """Version 1 to 2 for one collection's memories, a page by id per
        transaction: the page's memories without occurred_at get it, and turn_of,
        and are linked into their conversations (``memory/link_turns`` re-points
        the turns around each, so pages may come in any order of time)."""
        after = ""
        while True:
            rows = self._write(
                "give memories their conversation turns", _turns_migrator(collection, after)
            )
            if len(rows) < WRITE_BATCH:
                return
            after = max(str(row["id"]) for row in rows)

    def _number_events(self, collection: str) -> None:
        """Version 1 to 2 for one collection's event log: number its events in the
        order version 1 read them back, ``WRITE_BATCH`` per transaction."""
        after = DAWN.isoformat()
        while True:
            (row,) = self._write(
                "number events",
                one_statement(
                    "schema/number_events", {"after": after, "limit": WRITE_BATCH}, collection
                ),
            )
            if int(row["numbered"]) < WRITE_BATCH:
                return
            after = str(row["last"])

    def _date_memories(self, collection: str) -> None:
        """Store the due dates of a collection's memories written before schema
        version 5, a page per transaction (resumable: a page done stays done)."""
        dated, after = 0, ""
        while True:
            rows = self._read(
                "list undated memories",
                one_statement(
                    "schema/list_undated_memories",
                    {"after": after, "limit": WRITE_BATCH},
                    collection,
                ),
            )
            if not rows:
                break
            items = [
                {"id": row["id"], **convert.due_properties(convert.memory_of(row["doc"], None))}
                for row in rows
            ]
            self._write(
                "date memories", one_statement("schema/date_memories", {"items": items}, collection)
            )
            dated += len(rows)
            if len(rows) < WRITE_BATCH:
                break
            after = str(rows[-1]["id"])
        if dated:
            logger.info("due dates stored for %d memories of %s", dated, collection)

    def _rank_hub_edges(self, collection: str) -> None:
        """Give the hub edges of a collection written before schema version 7
        their place in their hub's order of strength, the memories of a page per
        transaction (resumable: a page done stays done, and again is the same)."""
        after, ranked = "", 0
        while True:
            (row,) = self._write(
                "rank hub edges",
                one_statement(
                    "schema/rank_hub_edges", {"after": after, "limit": WRITE_BATCH}, collection
                ),
            )
            ranked += int(row["edges"])
            if int(row["memories"]) < WRITE_BATCH:
                break
            after = str(row["last"])
        if ranked:
            logger.info("%d hub edges of %s ranked", ranked, collection)

    def _count_collection(self, collection: str) -> None:
        """Count a collection written before schema version 6 into its counters:
        the old counters go, one read counts the memories, edges, hubs and events,
        the memories' terms are indexed and counted a page per transaction, then
        the counts are stored (run again, it counts afresh)."""
        while True:
            (row,) = self._write(
                "drop a collection's counters",
                one_statement("schema/drop_counts", {"limit": WRITE_BATCH}, collection),
            )
            if int(row["deleted"]) < WRITE_BATCH:
                break
        tally = self._read("count a collection", lambda tx: counts.census(tx, collection))
        self._index_terms(collection, tally)
        self._write(
            "store a collection's counts",
            _counter_rows("memory/add_counts", collection, tally.rows()),
        )
        terms = tally.term_rows()
        for start in range(0, len(terms), WRITE_BATCH):
            self._write(
                "store a collection's term counts",
                _counter_rows(
                    "memory/add_term_counts", collection, terms[start : start + WRITE_BATCH]
                ),
            )
        logger.info("counters of %s built", collection)

    def _index_terms(self, collection: str, tally: Tally) -> None:
        """Store the tagged terms of every memory of the collection (for
        memory_terms), a page per transaction, counting them into ``tally``."""
        after = ""
        while True:
            rows = self._read(
                "list memory content",
                one_statement(
                    "schema/list_memory_content",
                    {"after": after, "limit": WRITE_BATCH},
                    collection,
                ),
            )
            items = []
            for row in rows:
                tally.text(row["content"])
                terms = convert.text_terms(collection, row["content"])
                items.append({"id": row["id"], "terms": terms})
            if items:
                self._write(
                    "index memory terms",
                    one_statement("schema/set_memory_terms", {"items": items}, collection),
                )
            if len(rows) < WRITE_BATCH:
                return
            after = str(rows[-1]["id"])

    def _await_indexes(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            rows = self._read(
                "read the index states",
                one_statement("schema/show_indexes", {"names": list(_INDEXES)}),
            )
            states = {row["name"]: row for row in rows}
            failed = [name for name, row in states.items() if row["state"] == "FAILED"]
            if failed:
                raise StoreError(f"Neo4j could not build the indexes {', '.join(sorted(failed))}")
            for index in (VECTOR_INDEX, PASSAGE_INDEX):
                vector = states.get(index)
                if vector is None:
                    continue
                config = (vector["options"] or {}).get("indexConfig") or {}
                dims = config.get("vector.dimensions")
                if dims is not None and int(dims) != self._dimensions:
                    raise ConfigError(
                        f"the vector index {index} holds {dims}-d vectors but the "
                        f"embedding model makes {self._dimensions}-d ones: drop it "
                        f"(DROP INDEX {index}) and run `hippo setup` again"
                    )
            waiting = [n for n in _INDEXES if n not in states or states[n]["state"] != "ONLINE"]
            if not waiting:
                return
            if time.monotonic() >= deadline:
                raise StoreUnavailableError(
                    f"indexes not online after {timeout_s:.0f} s: {', '.join(waiting)}"
                )
            time.sleep(_POLL_S)

    def check(self) -> None:
        """Raise StoreUnavailableError if the store cannot serve right now: closed,
        Neo4j unreachable, or the schema not set up (run :meth:`setup`)."""
        self._check_open()
        version = self._read("check the store", _version_reader)
        if version is None:
            raise StoreUnavailableError("the Neo4j schema is not set up: run `hippo setup`")
        if version != SCHEMA_VERSION:
            raise StoreUnavailableError(
                f"the Neo4j schema is at version {version}, this Hippocampus needs "
                f"{SCHEMA_VERSION}: run `hippo setup`"
            )


def _turns_migrator(collection: str, after: str) -> Callable[[ManagedTransaction], list[Record]]:
    """A transaction function migrating the page of memories after ``after`` (see
    :meth:`Neo4jSchema._migrate_turns`). Its NEXT edges are not counted here: the
    migration to version 6 counts each collection afresh."""

    def work(tx: ManagedTransaction) -> list[Record]:
        params = {"after": after, "limit": WRITE_BATCH}
        rows = run_statement(tx, "schema/migrate_turns", collection, **params)
        memories = [convert.memory_of(r["doc"], None) for r in rows if r["doc"]]
        link_turns(tx, collection, memories, Tally())
        return rows

    return work


def _counter_rows(
    name: str, collection: str, rows: Sequence[dict[str, Any]]
) -> Callable[[ManagedTransaction], None]:
    """A transaction function adding counter ``rows`` to shard 0 (setup's counts)."""

    def work(tx: ManagedTransaction) -> None:
        counts.add_rows(tx, name, collection, 0, rows)

    return work


def _runner(name: str, params: dict[str, Any]) -> Callable[[ManagedTransaction], None]:
    """A transaction function running one statement for its effect."""

    def work(tx: ManagedTransaction) -> None:
        tx.run(statement(name), params).consume()

    return work


def _version_reader(tx: ManagedTransaction) -> int | None:
    (row,) = run_statement(tx, "schema/read_schema_version", name=SCHEMA_OWNER)
    version = row["version"]
    return int(version) if version is not None else None
