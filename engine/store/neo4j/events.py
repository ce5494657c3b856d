"""The Neo4j store's event log: appended in commit order, read back in pages,
compacted with its totals kept."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime

from neo4j import ManagedTransaction

from hippocampus.errors import InvalidInputError
from hippocampus.model import Event
from hippocampus.store.neo4j import convert
from hippocampus.store.neo4j.connection import (
    PAGE,
    WRITE_BATCH,
    Neo4jConnection,
    one_statement,
    run_statement,
)
from hippocampus.store.neo4j.counts import Tally


class Neo4jEvents(Neo4jConnection):
    """The event log."""

    def append_events(self, collection: str, events: Sequence[Event]) -> None:
        """Append to the collection's event log, in the order given."""
        if not events:
            return
        rows = [convert.event_row(event) for event in events]

        def work(tx: ManagedTransaction) -> None:
            run_statement(tx, "memory/append_events", collection, events=rows)
            tally = Tally()
            tally.events(row["type"] for row in rows)
            tally.write(tx, collection)

        self._write("append events", work)

    def iter_events(self, collection: str) -> Iterator[Event]:
        """The collection's event log, in the order it was appended (the order the
        appends committed). Streams in pages."""
        after = -1
        while True:
            page = self._read(
                "list events",
                one_statement("memory/iter_events", {"after": after, "limit": PAGE}, collection),
            )
            for row in page:
                yield convert.event_of(row)
            if len(page) < PAGE:
                return
            after = int(page[-1]["seq"])

    def compact_events(
        self, collection: str, *, before: datetime | None = None, keep: int | None = None
    ) -> int:
        """Drop the events appended before ``before`` (by the server's clock) and
        those beyond the newest ``keep``, ``WRITE_BATCH`` per transaction; each type dropped is
        counted on the collection's ``CompactedEvents`` node in the same
        transaction, so the totals :meth:`stats` reports stay as they were.

        Raises:
            InvalidInputError: a negative ``keep``.
        """
        if keep is not None and keep < 0:
            raise InvalidInputError("keep must not be negative", field="keep")
        if before is None and keep is None:
            return 0
        params = {
            "before": convert.maybe_utc(before),
            "keep": keep,
            "limit": WRITE_BATCH,
        }
        dropped = 0
        while True:
            (row,) = self._write(
                "compact the event log", one_statement("memory/compact_events", params, collection)
            )
            n = int(row["dropped"])
            dropped += n
            if n < WRITE_BATCH:
                return dropped
