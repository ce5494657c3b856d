"""The embedded store: SQLite (WAL) is the source of truth, an in-memory vector
index per collection answers similarity searches.

Concurrency: every write takes one process-wide lock, runs as one
``BEGIN IMMEDIATE … COMMIT`` transaction on the single write connection, then
updates the collection's index before the lock is released, so index updates
happen in commit order. Reads take a connection from a small pool (WAL lets them
run beside the writer) and never wait for the write lock, except the first use of
a collection, which builds its index.

One process owns a data directory: ``hippo.lock`` is held with ``flock`` for the
store's lifetime and names the owner's pid. The kernel drops the lock when the
process dies, even on ``kill -9``.

The store is the union of its roles, one class a role over a shared
:class:`~hippocampus.store.embedded.base.EmbeddedBase` (connections, locks,
in-memory indexes): memories, vectors, text, hubs, edges (the graph), learning,
events, state and admin, each in its own module.
"""

from __future__ import annotations

import errno
import fcntl
import importlib.resources
import logging
import os
import sqlite3
from pathlib import Path
from types import TracebackType

from hippocampus.errors import ConfigError, DataDirLockedError, StoreError, StoreUnavailableError
from hippocampus.store.embedded import graph_sql
from hippocampus.store.embedded.admin import EmbeddedAdmin
from hippocampus.store.embedded.base import translated
from hippocampus.store.embedded.edges import EmbeddedEdges
from hippocampus.store.embedded.events import EmbeddedEvents
from hippocampus.store.embedded.hubs import EmbeddedHubs
from hippocampus.store.embedded.index_ann import APPROXIMATE_FROM, GraphPolicy
from hippocampus.store.embedded.learning import EmbeddedLearning
from hippocampus.store.embedded.memories import EmbeddedMemories
from hippocampus.store.embedded.snapshots import OUTDATING_TRIGGERS, SNAPSHOT_FROM
from hippocampus.store.embedded.state import EmbeddedState
from hippocampus.store.embedded.text import EmbeddedText
from hippocampus.store.embedded.text_candidates import CANDIDATES_FROM
from hippocampus.store.embedded.vectors import EmbeddedVectors

logger = logging.getLogger(__name__)

DB_FILE = "hippo.sqlite3"
LOCK_FILE = "hippo.lock"
GRAPHS_FOLDER = "graphs"
SCHEMA_VERSION = 6

_SYNC_MODES = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})


class EmbeddedStore(
    EmbeddedMemories,
    EmbeddedVectors,
    EmbeddedText,
    EmbeddedHubs,
    EmbeddedEdges,
    EmbeddedLearning,
    EmbeddedEvents,
    EmbeddedState,
    EmbeddedAdmin,
):
    """A :class:`~hippocampus.store.GraphStore` in one local data directory.

    Files: ``hippo.sqlite3`` (with its WAL), ``hippo.lock``, ``graphs/`` (the
    HNSW graphs of large collections, saved at close) and ``snapshots/`` (the
    in-memory indexes of large collections, saved at close). The indexes of a
    collection (vectors, BM25 text, the walked graph, due dates) are built from
    SQLite on the collection's first use in the process, or loaded from its
    snapshot when nothing was written since; a saved graph is loaded then.

    Beyond the contract:

    - ASSOCIATED is undirected: stored once, and :meth:`edges_of` returns it from
      either end with ``source`` set to the memory asked about.
    - Memory edges from a memory to itself are ignored.
    - Hub nodes are deleted with their last edge.
    - ``Memory.embedding_model`` as stored always names the model of the stored
      vector (``None`` without one), whatever the caller's copy said.
    - Each model has one dimension per collection: that of its most recently
      written vector. Its vectors of another dimension (a model that changed size
      under the same name) leave the index and are returned by
      :meth:`pending_embeddings` until re-embedded.
    - Search filters match exactly (no case folding).
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        synchronous: str = "FULL",
        approximate_from: int = APPROXIMATE_FROM,
        snapshot_from: int = SNAPSHOT_FROM,
        text_candidates_from: int = CANDIDATES_FROM,
    ) -> None:
        """Open (creating when needed) the store in ``data_dir``.

        Args:
            data_dir: the directory holding the store's files; created if absent.
            synchronous: SQLite ``PRAGMA synchronous``. ``FULL`` (the default)
                makes every acknowledged write survive a power loss; ``NORMAL``
                survives a process crash (``kill -9``) but may lose the last
                writes on power loss, and is faster.
            approximate_from: vectors of one model in one collection from which
                searches go through a graph (approximate candidates, scored
                exactly); the graph is saved in ``graphs/`` at close.
            snapshot_from: memories of one collection from which its in-memory
                indexes are saved in ``snapshots/`` at close and loaded at the
                next start, when nothing was written in between (see
                :mod:`~hippocampus.store.embedded.snapshots`).
            text_candidates_from: memories of one collection from which its text
                searches take their candidates from tantivy (scored exactly), filled
                in the background (see
                :mod:`~hippocampus.store.embedded.text_candidates`).

        Raises:
            ConfigError: ``synchronous`` is not a SQLite mode.
            DataDirLockedError: another store (in this process or another) has
                the directory open.
            StoreUnavailableError: the directory or database cannot be opened.
            StoreError: the database was written by a newer schema version.
        """
        sync = synchronous.upper()
        if sync not in _SYNC_MODES:
            raise ConfigError(
                f"synchronous must be one of {', '.join(sorted(_SYNC_MODES))}, not {synchronous!r}"
            )
        if approximate_from < 1:
            raise ConfigError(f"approximate_from must be at least 1, not {approximate_from}")
        if snapshot_from < 1:
            raise ConfigError(f"snapshot_from must be at least 1, not {snapshot_from}")
        if text_candidates_from < 1:
            raise ConfigError(
                f"text_candidates_from must be at least 1, not {text_candidates_from}"
            )
        graphs = GraphPolicy(approximate_from, Path(data_dir) / GRAPHS_FOLDER)
        super().__init__(
            Path(data_dir),
            Path(data_dir) / DB_FILE,
            synchronous=sync,
            graphs=graphs,
            snapshot_from=snapshot_from,
            text_candidates_from=text_candidates_from,
        )
        try:
            self._data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreUnavailableError(
                f"cannot create the data directory {self._data_dir}: {e.strerror}"
            ) from e
        self._lock_fd: int | None = _lock_data_dir(self._data_dir)
        try:
            self._writer = self._connect(writer=True)
            self._create_schema(self._writer)
        except BaseException:
            self._closed = True
            if self._writer is not None:
                self._writer.close()
            _unlock_data_dir(self._lock_fd)
            self._lock_fd = None
            raise
        logger.info("embedded store opened at %s (synchronous=%s)", self._data_dir, sync)

    def __repr__(self) -> str:
        return f"EmbeddedStore({str(self._data_dir)!r})"

    def __enter__(self) -> EmbeddedStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def data_dir(self) -> Path:
        """The directory this store owns."""
        return self._data_dir

    def close(self) -> None:
        """Release the database connections and the data directory lock. Idempotent.

        Reads still running finish on their connection, which is closed when they
        give it back.
        """
        with self._write_lock:
            if self._closed:
                return
            with self._pool_lock:
                self._closed = True
                idle, self._idle_readers = self._idle_readers, []
            for index in self._indexes.values():
                index.close(save=True)
            for text in self._texts.values():
                text.close()
            self._save_snapshots()
            self._indexes.clear()
            self._texts.clear()
            self._graphs.clear()
            self._dues.clear()
            for conn in [*idle, self._writer]:
                if conn is None:
                    continue
                try:
                    conn.close()
                except sqlite3.Error:
                    logger.exception("closing a connection to %s failed", self._db_path)
            self._writer = None
            _unlock_data_dir(self._lock_fd)
            self._lock_fd = None
        logger.info("embedded store at %s closed", self._data_dir)

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        script = (
            importlib.resources.files("hippocampus.store.embedded")
            .joinpath("schema.sql")
            .read_text(encoding="utf-8")
        )
        with translated("create the schema"):
            conn.executescript(script + OUTDATING_TRIGGERS)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self._db_path} has schema version {version}; this Hippocampus reads "
                f"version {SCHEMA_VERSION} and older. Upgrade Hippocampus."
            )
        if version < SCHEMA_VERSION:
            with translated(f"migrate the schema from version {version}"):
                graph_sql.migrate(conn, version)


def _lock_data_dir(data_dir: Path) -> int:
    """Take ``hippo.lock`` exclusively and write our pid in it; return its descriptor."""
    path = data_dir / LOCK_FILE
    try:
        # No O_TRUNC: if another process holds the lock, its pid must stay readable.
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise StoreUnavailableError(f"cannot open the lock file {path}: {e.strerror}") from e
    try:
        # flock locks belong to the open file description, so a second open() of the
        # same file conflicts even inside one process: one store per directory.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        holder = _read_pid(fd)
        os.close(fd)
        if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise StoreUnavailableError(f"cannot lock {path}: {e.strerror}") from e
        if holder == str(os.getpid()):
            raise DataDirLockedError(
                f"{data_dir} is already open in this process (pid {holder}); "
                "close the other store first"
            ) from None
        raise DataDirLockedError(
            f"{data_dir} is in use by another Hippocampus process (pid {holder or 'unknown'}); "
            "stop it or choose another --data-dir"
        ) from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    except OSError as e:
        _unlock_data_dir(fd)
        raise StoreUnavailableError(f"cannot write the lock file {path}: {e.strerror}") from e
    return fd


def _read_pid(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""


def _unlock_data_dir(fd: int | None) -> None:
    if fd is None:
        return
    try:
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        logger.warning("releasing the data directory lock failed", exc_info=True)
    finally:
        os.close(fd)
