"""What every part of the Neo4j store stands on: sessions of its database, one
managed transaction per call, and the statements run inside them.

:class:`Neo4jConnection` holds the driver and runs a call's work in one managed
transaction (:meth:`~Neo4jConnection._read`, :meth:`~Neo4jConnection._write`),
retrying a write that lost a race; the functions below run statements from
``cypher/`` inside such a transaction. Each part of the store (one per role of
the contract, see :mod:`hippocampus.store.roles`) derives from
:class:`Neo4jConnection`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from neo4j import Driver, GraphDatabase, ManagedTransaction, Record, Session
from neo4j.exceptions import DriverError, Neo4jError

from hippocampus.errors import StoreUnavailableError
from hippocampus.store.neo4j.recent import RecentVectors
from hippocampus.store.neo4j.sizes import Sizes
from hippocampus.store.neo4j.statements import statement
from hippocampus.store.neo4j.translate import translated, worth_another_run

logger = logging.getLogger(__name__)

T = TypeVar("T")

PAGE = 500
_RACE_RETRIES = 3
WRITE_BATCH = 1_000
"""Memories per decay transaction, nodes per drop transaction, events per
compaction transaction, memories or events per migration transaction: bounded
work per transaction, whatever the collection's size."""
DAWN = datetime(1, 1, 1, tzinfo=UTC)
"""Before any memory's creation: where
:meth:`~hippocampus.store.neo4j.memories.Neo4jMemories.iter_memories` starts."""


class Neo4jConnection:
    """The driver of a Neo4j store and the transactions every call runs in.

    Args:
        driver: a configured driver; the store closes it.
        database: the database to use.
        dimensions: the vector dimension of the embedding model, for the vector
            indexes.
    """

    def __init__(self, driver: Driver, *, database: str, dimensions: int) -> None:
        self._driver = driver
        self._database = database
        self._dimensions = dimensions
        self._closed = False
        # Every session waits for the bookmarks of the store's own last writes:
        # on a cluster, a read then sees what this store wrote before it, even
        # from a replica (a single server shows that anyway).
        self._bookmarks = GraphDatabase.bookmark_manager()
        # What sizes a first vector search, as last read (see sizes.py).
        self._sizes = Sizes()
        # Vectors read a moment ago, for the rest of a recall (see recent.py).
        self._recent = RecentVectors()

    @property
    def dimensions(self) -> int:
        """The vector dimension the vector index is made for."""
        return self._dimensions

    def _memories_written(self, collection: str, ids: Sequence[str] | None = None) -> None:
        """This store's write of the memories ``ids`` (every memory of the
        collection when ``None``) committed: what sizes a vector search is read
        again, and their vectors read a moment ago are forgotten."""
        self._sizes.changed(collection)
        self._recent.forget(collection, ids)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailableError("the Neo4j store is closed")

    def _session(self) -> Session:
        """A session of the store's database, causally after the store's writes."""
        return self._driver.session(database=self._database, bookmark_manager=self._bookmarks)

    def _read(self, action: str, work: Callable[[ManagedTransaction], T]) -> T:
        """Run ``work`` in one managed read transaction."""
        self._check_open()
        with translated(action), self._session() as session:
            return session.execute_read(work)

    def _write(self, action: str, work: Callable[[ManagedTransaction], T]) -> T:
        """Run ``work`` in one managed write transaction: applied whole or not at all.

        A transaction that lost a race the driver does not retry (a hub deleted
        by a concurrent prune under a MERGE that had matched it; a prune that
        found an edge committed after its check), or whose deadlock the driver
        reported under a failed result rather than retrying it, runs again, up
        to ``_RACE_RETRIES`` times; still losing, the call fails as unavailable
        (503: try again), never as a store fault.
        """
        self._check_open()
        attempt = 0
        with translated(action):
            while True:
                attempt += 1
                try:
                    with self._session() as session:
                        return session.execute_write(work)
                except (Neo4jError, DriverError) as e:
                    if not worth_another_run(e):
                        raise
                    if attempt > _RACE_RETRIES:
                        raise StoreUnavailableError(
                            f"cannot {action}: it kept colliding with concurrent writes ({e})"
                        ) from e
                    logger.info("%s collided with a concurrent write; running it again", action)


def run_statement(
    tx: ManagedTransaction, which: str, collection: str | None = None, /, **params: Any
) -> list[Record]:
    """Run the statement ``which`` in ``tx`` (with ``$collection`` when given) and
    read all its records."""
    if collection is not None:
        params["collection"] = collection
    return list(tx.run(statement(which), params))


def one_list(rows: Sequence[Record], key: str) -> list[Any]:
    """The list ``key`` of a statement that answers in one row; empty when it
    answered none (EXPLAIN, a stand-in driver)."""
    return list(rows[0][key]) if rows else []


def run_counted(tx: ManagedTransaction, which: str, collection: str, /, **params: Any) -> Any:
    """Run the statement ``which`` in ``tx`` for its effect: the server's counts of
    what it created and deleted (``SummaryCounters``)."""
    params["collection"] = collection
    return tx.run(statement(which), params).consume().counters


def one_statement(
    name: str, params: dict[str, Any], collection: str | None = None
) -> Callable[[ManagedTransaction], list[Record]]:
    """A transaction function running one statement."""

    def work(tx: ManagedTransaction) -> list[Record]:
        return run_statement(tx, name, collection, **params)

    return work
