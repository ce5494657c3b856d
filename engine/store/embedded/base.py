"""What every role of the embedded store works on: the SQLite connections (one
writer behind the write lock, a pool of readers), transactions and the
translation of sqlite3 errors, and the per-collection in-memory indexes (vectors,
text, graph, due dates), built from SQLite on a collection's first use.
"""

from __future__ import annotations

import ctypes
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from hippocampus.errors import (
    StoreError,
    StoreFullError,
    StoreReadOnlyError,
    StoreUnavailableError,
)
from hippocampus.store.embedded import due, graph_sql, snapshots
from hippocampus.store.embedded.due import DueIndex
from hippocampus.store.embedded.graph import CollectionGraph
from hippocampus.store.embedded.index import CollectionIndex, IndexEntry
from hippocampus.store.embedded.index_ann import GraphPolicy
from hippocampus.store.embedded.text_candidates import CANDIDATES_FROM
from hippocampus.store.embedded.text_index import TextIndex
from hippocampus.store.records import Vector

logger = logging.getLogger(__name__)

SNAPSHOTS_FOLDER = "snapshots"

_BUSY_TIMEOUT_S = 10.0
_MAX_IDLE_READERS = 32
_WRITER_CACHE_KIB = 64 * 1024

# sqlite3 messages that mean "cannot serve right now" rather than "this call is wrong"
# (besides a full disk and a read-only database: see _wrap).
_UNAVAILABLE_HINTS = (
    "disk i/o error",
    "unable to open",
    "database is locked",
    "cannot operate on a closed",
    "not a database",
    "malformed",
)

_SELECT_INDEX_ROWS = """
SELECT id, tier, category,
       json_extract(doc, '$.tags', '$.retrieval.domains', '$.retrieval.conversation_ids'),
       vector_model, vector, json_extract(doc, '$.speaker'), occurred_at
FROM memories WHERE collection = ?
ORDER BY created_at, rowid
"""
_SELECT_PASSAGES = """
SELECT memory_id, model, vector FROM passages WHERE collection = ? ORDER BY memory_id, n
"""


class EmbeddedBase:
    """The connections, locks and in-memory indexes of an
    :class:`~hippocampus.store.embedded.store.EmbeddedStore`, shared by its roles.

    Each role's class derives from this one; the store is their union.
    """

    def __init__(
        self,
        data_dir: Path,
        db_path: Path,
        *,
        synchronous: str,
        graphs: GraphPolicy,
        snapshot_from: int = snapshots.SNAPSHOT_FROM,
        text_candidates_from: int = CANDIDATES_FROM,
    ) -> None:
        """The shared state of a store about to open ``db_path`` in ``data_dir``;
        ``synchronous`` is a checked SQLite mode, ``graphs`` when vectors get a
        graph for approximate search and where it is saved, ``snapshot_from`` the
        memories from which a collection's indexes are saved at close (see
        :mod:`~hippocampus.store.embedded.snapshots`), ``text_candidates_from``
        the memories from which its text searches take tantivy's candidates (see
        :mod:`~hippocampus.store.embedded.text_candidates`). Nothing is opened
        here."""
        self._data_dir = data_dir
        self._graph_policy = graphs
        self._snapshot_from = snapshot_from
        self._text_candidates_from = text_candidates_from
        self._snapshot_root = data_dir / SNAPSHOTS_FOLDER
        # The snapshot token of each collection whose indexes were loaded from one.
        self._restored: dict[str, str] = {}
        self._db_path = db_path
        self._synchronous = synchronous
        self._closed = False
        self._write_lock = threading.RLock()
        self._pool_lock = threading.Lock()
        self._idle_readers: list[sqlite3.Connection] = []
        self._indexes: dict[str, CollectionIndex] = {}
        # BM25 over content, per collection: built with the collection's index and
        # kept beside it (a vector-index rebuild leaves content, and it, unchanged).
        self._texts: dict[str, TextIndex] = {}
        # The walked graph per collection, built and published with its index.
        self._graphs: dict[str, CollectionGraph] = {}
        # Due dates for resurfacing per collection, built and published with its index.
        self._dues: dict[str, DueIndex] = {}
        # Why the latest write was refused (disk full, read-only), until one succeeds.
        self._writes_refused: StoreUnavailableError | None = None
        self._writer: sqlite3.Connection | None = None

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailableError(f"the store at {self._data_dir} is closed")

    def _connect(self, *, writer: bool) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self._db_path,
                timeout=_BUSY_TIMEOUT_S,
                isolation_level=None,  # transactions are explicit: BEGIN IMMEDIATE … COMMIT
                check_same_thread=False,  # used by whichever thread holds the lock / lease
            )
        except sqlite3.Error as e:
            raise _wrap(e, f"open {self._db_path}") from e
        try:
            with translated(f"configure {self._db_path}"):
                conn.execute("PRAGMA foreign_keys = ON")
                conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
                if writer:
                    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                    if str(mode).lower() != "wal":
                        raise StoreUnavailableError(
                            f"{self._db_path} cannot use write-ahead logging (journal mode {mode})"
                        )
                    # Checked by the store's constructor: safe to inline.
                    conn.execute(f"PRAGMA synchronous = {self._synchronous}")
                    # Inserts touch several indexes at random keys (ids, hashes,
                    # targets): a larger page cache keeps their inner pages resident.
                    conn.execute(f"PRAGMA cache_size = -{_WRITER_CACHE_KIB}")
                else:
                    conn.execute("PRAGMA query_only = ON")
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def _transaction(self, action: str) -> Iterator[sqlite3.Connection]:
        """One write transaction on the write connection. Caller holds the write lock."""
        self._check_open()
        conn = self._writer
        assert conn is not None
        try:
            with translated(action):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        try:
                            conn.execute("ROLLBACK")
                        except sqlite3.Error:
                            logger.exception("rollback failed in %s", self._db_path)
                    raise
        except (StoreFullError, StoreReadOnlyError) as e:
            if self._writes_refused is None:
                logger.error("writes to %s are refused: %s", self._db_path, e.message)
            self._writes_refused = e
            raise
        if self._writes_refused is not None:
            logger.warning("writes to %s are taken again", self._db_path)
            self._writes_refused = None

    @contextmanager
    def _reading(self, action: str) -> Iterator[sqlite3.Connection]:
        """Lend a read connection for the ``with`` block."""
        conn = self._acquire_reader()
        try:
            with translated(action):
                yield conn
        finally:
            self._release_reader(conn)

    def _acquire_reader(self) -> sqlite3.Connection:
        with self._pool_lock:
            self._check_open()
            if self._idle_readers:
                return self._idle_readers.pop()
        return self._connect(writer=False)

    def _release_reader(self, conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            logger.exception("resetting a read connection to %s failed", self._db_path)
            conn.close()
            return
        with self._pool_lock:
            if not self._closed and len(self._idle_readers) < _MAX_IDLE_READERS:
                self._idle_readers.append(conn)
                return
        conn.close()

    def _index(self, collection: str) -> CollectionIndex:
        """The collection's vector index, built from SQLite on first use."""
        index = self._indexes.get(collection)
        if index is not None:
            return index
        # Built under the write lock so no write commits between the table scan
        # and the index going live (writes update only indexes already built).
        with self._write_lock:
            self._check_open()
            index = self._indexes.get(collection)
            if index is None:
                restored = self._restore_snapshot(collection)
                # The text index and graph go live first: whoever sees the collection
                # index (the unlocked fast path above) finds them too.
                if restored is not None:
                    token, indexes = restored
                    index = indexes.index
                    self._texts[collection] = indexes.text
                    self._graphs[collection] = indexes.graph
                    self._dues[collection] = indexes.due
                    self._restored[collection] = token
                else:
                    index = self._build_index(collection)
                    self._texts[collection] = self._build_text_index(collection)
                    self._graphs[collection] = self._build_graph(collection, index)
                    with self._reading("build the due index") as conn:
                        self._dues[collection] = due.load(conn, collection)
                self._indexes[collection] = index
                _give_back_memory()
            return index

    def loaded_from_snapshot(self, collection: str) -> bool:
        """Whether this process loaded the collection's indexes from the snapshot
        the last close saved (rather than building them from the rows)."""
        return collection in self._restored

    def _restore_snapshot(self, collection: str) -> tuple[str, snapshots.Indexes] | None:
        """The collection's indexes as saved at the last close, and their token,
        when nothing has been written since; ``None`` otherwise. Caller holds the
        write lock."""
        token = self._snapshot_token(collection)
        if token is None:
            return None
        started = time.perf_counter()
        folder = snapshots.folder_of(self._snapshot_root, collection)
        restored = snapshots.load(
            folder, token, collection, self._graph_policy, self._text_candidates_from
        )
        if restored is None:
            return None
        logger.info(
            "collection %s: indexes of %d memories loaded from %s in %.2f s",
            collection,
            len(restored.index),
            folder,
            time.perf_counter() - started,
        )
        return token, restored

    def _snapshot_token(self, collection: str) -> str | None:
        """The token of the collection's recorded snapshot (``None``: none, or a
        write since)."""
        with self._reading("read the index snapshots") as conn:
            row = conn.execute(
                "SELECT token FROM index_snapshots WHERE collection = ?", (collection,)
            ).fetchone()
        return None if row is None else str(row[0])

    def _save_snapshots(self) -> None:
        """At close: save the indexes of each large collection that changed since
        they were built or loaded, record them, and remove the snapshots no longer
        recorded. Caller holds the write lock; nothing is written after this."""
        conn = self._writer
        if conn is None or self._writes_refused is not None:
            return
        try:
            with translated("read the index snapshots"):
                standing = dict(conn.execute("SELECT collection, token FROM index_snapshots"))
        except StoreError:
            logger.exception("reading the index snapshots failed")
            return
        recorded: dict[str, str] = {}
        for collection, index in self._indexes.items():
            if len(index) < self._snapshot_from:
                continue
            loaded = self._restored.get(collection)
            if loaded is not None and standing.get(collection) == loaded:
                continue  # unchanged since it was loaded: its snapshot stands
            token = uuid.uuid4().hex
            folder = snapshots.folder_of(self._snapshot_root, collection)
            built = snapshots.Indexes(
                index, self._texts[collection], self._graphs[collection], self._dues[collection]
            )
            started = time.perf_counter()
            try:
                snapshots.save(folder, token, built)
            except Exception:  # the store closes all the same; the next start builds
                logger.exception("saving the index snapshot to %s failed", folder)
                continue
            recorded[collection] = token
            logger.info(
                "collection %s: indexes of %d memories saved in %.1f s",
                collection,
                len(index),
                time.perf_counter() - started,
            )
        try:
            with translated("record the index snapshots"):
                if recorded:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        conn.executemany(
                            "INSERT OR REPLACE INTO index_snapshots (collection, token)"
                            " VALUES (?, ?)",
                            recorded.items(),
                        )
                        conn.execute("COMMIT")
                    except BaseException:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
                        raise
                kept = [c for (c,) in conn.execute("SELECT collection FROM index_snapshots")]
        except StoreError:
            logger.exception("recording the index snapshots failed")
            return
        snapshots.prune(
            self._snapshot_root, {snapshots.folder_of(self._snapshot_root, c) for c in kept}
        )

    def _refresh_index(
        self,
        index: CollectionIndex,
        entries: list[tuple[IndexEntry, Vector | None, str | None]],
        rebuild: bool,
        passages: Mapping[str, Vector] | None = None,
    ) -> None:
        """Bring the index in step with a committed write. Caller holds the write lock."""
        if rebuild:
            self._indexes[index.collection] = self._build_index(index.collection)
            index.close(save=False)
        else:
            index.put(entries, passages)

    def _build_text_index(self, collection: str) -> TextIndex:
        started = time.perf_counter()
        with self._reading("build the text index") as conn:
            cursor = conn.execute(
                "SELECT id, json_extract(doc, '$.content') FROM memories WHERE collection = ?",
                (collection,),
            )
            index = TextIndex.build(collection, cursor, self._text_candidates_from)
        if len(index):
            logger.info(
                "collection %s: text index of %d memories built in %.2f s",
                collection,
                len(index),
                time.perf_counter() - started,
            )
        return index

    def _graph(self, collection: str) -> CollectionGraph:
        """The collection's graph, built with its index on first use."""
        self._index(collection)
        graph = self._graphs.get(collection)
        if graph is None:  # closed since _index() returned
            self._check_open()
            raise StoreUnavailableError(f"the store at {self._data_dir} is closing")
        return graph

    def _build_graph(self, collection: str, index: CollectionIndex) -> CollectionGraph:
        started = time.perf_counter()
        with self._reading("build the graph") as conn:
            graph = graph_sql.load_graph(conn, collection, index)
        if len(graph):
            logger.info(
                "collection %s: graph of %d nodes and %d edges built in %.2f s",
                collection,
                len(graph),
                graph.edge_count,
                time.perf_counter() - started,
            )
        return graph

    def _build_index(self, collection: str) -> CollectionIndex:
        started = time.perf_counter()
        with self._reading("build the vector index") as conn:
            dims = dict(
                conn.execute(
                    "SELECT model, dim FROM vector_dims WHERE collection = ?", (collection,)
                ).fetchall()
            )
            expected = conn.execute(
                "SELECT count(*) FROM memories WHERE collection = ?", (collection,)
            ).fetchone()[0]
            cursor = conn.execute(_SELECT_INDEX_ROWS, (collection,))
            passages = conn.execute(_SELECT_PASSAGES, (collection,)).fetchall()
            index = CollectionIndex.build(
                collection, cursor, dims, passages, graphs=self._graph_policy, expected=expected
            )
        if len(index):
            logger.info(
                "collection %s: index of %d memories built in %.2f s",
                collection,
                len(index),
                time.perf_counter() - started,
            )
        return index


def _give_back_memory() -> None:
    """Hand the heap an index build freed back to the system. glibc keeps freed
    memory for the process: the rows a build read (a million memories' worth is
    gigabytes of tuples) stayed resident after they were dropped."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc: nothing to ask
        return
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        trim(0)


# -- sqlite3 errors -----------------------------------------------------------------


def _wrap(error: sqlite3.Error, action: str) -> StoreError:
    message = f"cannot {action}: {error}"
    text = str(error).lower()
    name = getattr(error, "sqlite_errorname", "") or ""
    if name == "SQLITE_FULL" or "disk is full" in text:
        return StoreFullError(message)
    if name.startswith("SQLITE_READONLY") or "readonly" in text or "read-only" in text:
        return StoreReadOnlyError(message)
    if any(hint in text for hint in _UNAVAILABLE_HINTS):
        return StoreUnavailableError(message)
    return StoreError(message)


@contextmanager
def translated(action: str) -> Iterator[None]:
    """Turn sqlite3 errors raised in the block into StoreError / StoreUnavailableError."""
    try:
        yield
    except sqlite3.Error as e:
        raise _wrap(e, action) from e
