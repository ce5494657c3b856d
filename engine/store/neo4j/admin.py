"""The Neo4j store's collections, counts, leases and life: listing and dropping
collections, their stats, leases, reaching the server and closing the driver."""

from __future__ import annotations

import logging

from neo4j import ManagedTransaction

from hippocampus.store.checks import check_lease
from hippocampus.store.neo4j import counts
from hippocampus.store.neo4j.connection import (
    WRITE_BATCH,
    Neo4jConnection,
    one_statement,
    run_statement,
)
from hippocampus.store.neo4j.translate import translated
from hippocampus.store.records import StoreStats

logger = logging.getLogger(__name__)


def collection_names(tx: ManagedTransaction) -> list[str]:
    """Collections holding at least one memory, sorted: one index seek each
    (``memory/list_collections``), all in ``tx``."""
    found: list[str] = []
    while rows := run_statement(tx, "memory/list_collections", after=found[-1] if found else ""):
        if found and rows[0]["collection"] <= found[-1]:
            break  # each seek goes past the last one found, or the list ends
        found.append(rows[0]["collection"])
    return found


class Neo4jAdmin(Neo4jConnection):
    """Collections, stats, leases, and the store's connection to the server."""

    def reads_side_by_side(self, collection: str) -> bool:
        """Always: reads wait on the server, which answers several at once."""
        return True

    def warm(self) -> int:
        """Nothing to build: the server keeps the indexes."""
        self._check_open()
        return 0

    def list_collections(self) -> list[str]:
        """Collections holding at least one memory, sorted: one index seek each
        (``memory/list_collections``), all in one read transaction."""
        return self._read("list collections", collection_names)

    def stats(self, collection: str) -> StoreStats:
        """Counts for one collection, from its counters (:mod:`.counts`): a read of
        a few nodes, whatever its size. ``pending_embeddings`` counts memories with
        no vector at all."""

        def work(tx: ManagedTransaction) -> StoreStats:
            kept = counts.read(tx, collection)
            return counts.stats_of(
                kept, run_statement(tx, "memory/stats_compacted_events", collection)
            )

        return self._read("read stats", work)

    def drop_collection(self, collection: str) -> None:
        """Delete every node of the collection with its edges (the memories, hubs,
        event log, decay passes and state documents), ``WRITE_BATCH`` nodes per
        transaction so that none outgrows the server's transaction memory: a drop
        cut short leaves part of the collection, and running it again finishes
        it. Not part of the store contract: for tests and operators."""
        while True:
            (row,) = self._write(
                "drop a collection's passages",
                one_statement("memory/drop_passages", {"limit": WRITE_BATCH}, collection),
            )
            if int(row["deleted"]) < WRITE_BATCH:
                break
        while True:
            (row,) = self._write(
                "drop a collection",
                one_statement("memory/drop_collection", {"limit": WRITE_BATCH}, collection),
            )
            if int(row["deleted"]) < WRITE_BATCH:
                self._memories_written(collection)
                return

    def take_lease(self, name: str, holder: str, ttl_s: float) -> bool:
        """Take the lease ``name`` for ``holder`` (see the contract): its node's
        write lock first, then who holds it, read under that lock, in one write
        transaction; the term runs on the server's clock."""
        check_lease(name, holder, ttl_s)
        ttl_ms = round(ttl_s * 1000)

        def work(tx: ManagedTransaction) -> bool:
            run_statement(tx, "learn/lock_lease", name=name)
            (row,) = run_statement(tx, "learn/take_lease", name=name, holder=holder, ttl_ms=ttl_ms)
            return bool(row["taken"])

        return self._write("take a lease", work)

    def verify_connectivity(self) -> None:
        """Reach the server once (within the connection timeout).

        Raises:
            StoreUnavailableError: Neo4j cannot be reached, or refuses the credentials.
        """
        self._check_open()
        with translated("reach Neo4j"):
            self._driver.verify_connectivity()

    def close(self) -> None:
        """Close the driver and its connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._driver.close()
        except Exception:
            logger.warning("closing the neo4j driver failed", exc_info=True)
        logger.info("neo4j store closed")
