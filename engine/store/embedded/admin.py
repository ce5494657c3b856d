"""The embedded store as a whole (:class:`~hippocampus.store.roles.AdminRole`): its
collections, warming, counts, readiness and integrity checks, and leases."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from hippocampus.errors import StoreReadOnlyError, StoreUnavailableError
from hippocampus.store.checks import check_lease
from hippocampus.store.embedded import due, integrity
from hippocampus.store.embedded.base import EmbeddedBase
from hippocampus.store.embedded.index_ann import GraphPolicy
from hippocampus.store.records import StoreStats

_PROBE_BYTES = 16 * 1024
"""What the readiness check writes (and deletes) after a write was refused."""


class EmbeddedAdmin(EmbeddedBase):
    """Collections, counts, checks and leases of the whole store."""

    def __init__(
        self,
        data_dir: Path,
        db_path: Path,
        *,
        synchronous: str,
        graphs: GraphPolicy,
        snapshot_from: int,
        text_candidates_from: int,
    ) -> None:
        super().__init__(
            data_dir,
            db_path,
            synchronous=synchronous,
            graphs=graphs,
            snapshot_from=snapshot_from,
            text_candidates_from=text_candidates_from,
        )
        # Leases by name: (holder, end of term on the monotonic clock). The data
        # directory lock makes this process the store's only one: held here,
        # a lease is held against everyone.
        self._leases: dict[str, tuple[str, float]] = {}
        self._leases_lock = threading.Lock()

    def list_collections(self) -> list[str]:
        """Collections holding at least one memory, sorted."""
        with self._reading("list collections") as conn:
            rows = conn.execute(
                "SELECT DISTINCT collection FROM memories ORDER BY collection"
            ).fetchall()
        return [row[0] for row in rows]

    def warm(self) -> int:
        """Build every collection's indexes (vectors, text, graph) now rather than
        on its first request, which would otherwise wait for them: a tenth of a
        second for a few hundred long memories, seconds at 100k. A server runs this
        in the background as it starts. Stops quietly when the store is closed.

        Returns:
            How many collections it built (those already built are not counted).
        """
        built = 0
        try:
            for collection in self.list_collections():
                if collection not in self._indexes:
                    self._index(collection)
                    built += 1
        except StoreUnavailableError:
            if not self._closed:
                raise
        return built

    def stats(self, collection: str) -> StoreStats:
        """Counts for one collection. Memory counts come from the in-memory index (a
        scan of the memory rows, vectors and all, would take most of a second at
        100k); hubs, edges and events from SQLite. ``pending_embeddings`` counts
        memories with no vector at all. Hubs by kind, edges by type, events by
        type and the quality total are running totals kept by triggers
        (schema.sql): no request counts rows; events count those compacted
        away too (:meth:`compact_events`)."""
        memories, by_category, by_tier, vectorless = self._index(collection).counts()
        with self._reading("read stats") as conn:

            def counts(sql: str) -> dict[str, int]:
                return dict(conn.execute(sql, (collection,)).fetchall())

            hubs = counts("SELECT kind, n FROM hub_totals WHERE collection = ? AND n > 0")
            edges = counts("SELECT type, n FROM edge_totals WHERE collection = ? AND n > 0")
            held = counts("SELECT type, n FROM event_totals WHERE collection = ? AND n > 0")
            compacted = counts("SELECT type, n FROM events_compacted WHERE collection = ?")
            quality = conn.execute(
                "SELECT scored, total FROM quality_totals WHERE collection = ?", (collection,)
            ).fetchone()
        scored, total = quality if quality is not None else (0, 0.0)
        by_type = {t: held.get(t, 0) + compacted.get(t, 0) for t in sorted({*held, *compacted})}
        return StoreStats(
            memories=memories,
            by_category=by_category,
            by_tier=by_tier,
            pending_embeddings=vectorless,
            hubs=hubs,
            edges=edges,
            events=sum(by_type.values()),
            events_by_type=by_type,
            events_retained=sum(held.values()),
            quality_scored=scored,
            quality_sum=total if scored else 0.0,
        )

    def check(self) -> None:
        """Raise StoreUnavailableError if the store cannot serve right now: closed,
        the data directory or database not writable, a trivial query failing, or
        the latest write refused (disk full, read-only) and a probe write refused
        too. The probe runs only after a refusal, so the check clears by itself
        once space is freed or write access is back.

        Raises:
            StoreFullError: the disk is full.
            StoreReadOnlyError: the directory, database or file system may not be
                written.
            StoreUnavailableError: any other reason.
        """
        self._check_open()
        for path in (self._data_dir, self._db_path):
            if not os.access(path, os.W_OK):
                raise StoreReadOnlyError(f"{path} is not writable")
        with self._reading("check the store") as conn:
            conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if self._writes_refused is not None:
            # Room for a few pages, given back in the same transaction: writes that
            # fail for want of space fail here too.
            with self._write_lock, self._transaction("check that writes are taken") as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('write_probe', zeroblob(?))",
                    (_PROBE_BYTES,),
                )
                conn.execute("DELETE FROM meta WHERE key = 'write_probe'")

    def integrity_problems(self) -> list[str]:
        """Check the database and the in-memory indexes against each other (this
        store only: for checks after a crash, and tests). SQLite's
        ``PRAGMA integrity_check``; then per collection: every memory document
        agrees with its row; the vector index holds exactly the memories (tier,
        category) and a vector for each stored one of its model's dimension; the
        text index and the graph hold exactly the memories; the graph holds
        exactly the walked edges, with their weights; no edge hangs from a
        missing memory or hub, no hub is left without an edge, ASSOCIATED is
        stored from its smaller id. Collections not used since the store opened
        get their indexes built first (so those are checked as rebuilt from disk).
        Writes wait meanwhile.

        Returns:
            One line per problem found; empty when all is well.
        """
        with self._write_lock, self._reading("check integrity") as conn:
            problems = integrity.database_problems(conn)
            collections = [
                row[0]
                for row in conn.execute(
                    "SELECT collection FROM memories UNION SELECT collection FROM edges "
                    "UNION SELECT collection FROM hubs UNION SELECT collection FROM passages"
                ).fetchall()
            ]
            for collection in collections:
                index = self._index(collection)
                problems += integrity.collection_problems(
                    conn, collection, index, self._texts[collection], self._graphs[collection]
                )
                problems += due.problems(conn, collection, self._dues[collection])
        return problems

    def take_lease(self, name: str, holder: str, ttl_s: float) -> bool:
        """Take the lease ``name`` for ``holder`` (see the contract), in memory: no
        other process opens this store, so its threads are the only contenders."""
        check_lease(name, holder, ttl_s)
        self._check_open()
        with self._leases_lock:
            now = time.monotonic()
            held = self._leases.get(name)
            if held is not None and held[0] != holder and held[1] > now:
                return False
            self._leases[name] = (holder, now + ttl_s)
            return True
