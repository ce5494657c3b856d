"""The Neo4j store: the :class:`~hippocampus.store.GraphStore` contract over the
official driver, every statement a file under ``cypher/``.

Graph model (labels and relationship types as in DESIGN.md; every edge holds
``weight, co_occurrences, last_co_occurred, created_at, used_at, kind``)::

    (:Memory {collection, id, doc, embedding, embedding_model, content, ...})
    (:Memory)-[:IN_DOMAIN]->(:Domain {collection, name})
    (:Memory)-[:HAS_TRIGGER]->(:Trigger {collection, name})
    (:Memory)-[:ABOUT]->(:Concept {collection, name})
    (:Memory)-[:ASSOCIATED]->(:Memory)    stored once, from the smaller id; undirected
    (:Memory)-[:CONFLICTS_WITH]->(:Memory)
    (:Memory)-[:SUPERSEDES]->(:Memory)    from the newer of two conflicting memories
    (:Memory)-[:SYNTHESIZED_FROM]->(:Memory)
    (:Memory)-[:NEXT]->(:Memory)          a conversation's turns, in the order they happened
    (:Event {collection, type, at, memory_ids, payload, ...})
    (:EventLog {collection, next})           numbers events in commit order
    (:CompactedEvents {collection, type, n}) events of a type the retention dropped
    (:TurnOrder {collection, turn_of, relinks}) a conversation's lock: its turns'
                                             NEXT edges are relinked one writer at a time
    (:DecayPass {collection, period, ...})   (:SchemaVersion {name, version})
    (:State {collection, key, value})        value: the document as JSON text
    (:Passage {collection, memory_id, n, model, embedding})-[:PART_OF]->(:Memory)
                                             a long memory's passages after its first

Every node carries its ``collection`` and every statement matches on it. Hub
nodes also hold their name vector (``embedding``, ``embedding_model``).

Each call is one managed transaction (``execute_read`` / ``execute_write``): a
write is applied whole or not at all, and what may pass on a second try (a lost
connection, a leader switch, a deadlock) is retried by the driver with backoff
for up to ``max_retry_s``. Failures reach the caller as engine errors
(:mod:`hippocampus.store.neo4j.translate`).

Nothing talks to Neo4j before the first call: the constructor only configures the
driver. :meth:`setup` creates the schema (constraints, vector and full-text
indexes) and must have run once against the database; :meth:`check` says so.
"""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, TypeVar

import numpy as np
from neo4j import (
    Driver,
    GraphDatabase,
    ManagedTransaction,
    NotificationDisabledClassification,
    Record,
    Session,
)
from neo4j.exceptions import ConfigurationError, Neo4jError

from hippocampus.dense import (
    CROWDING_NEIGHBOURS,
    CROWDING_SAMPLE,
    PASSAGE_MARGIN,
    VectorSample,
    crowding_of,
)
from hippocampus.embed.base import normalize_rows
from hippocampus.errors import (
    ConfigError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    StoreError,
    StoreUnavailableError,
)
from hippocampus.lexical import bm25_score
from hippocampus.model import (
    SEQUENCE_KIND,
    SEQUENCE_WEIGHT,
    Edge,
    EdgeType,
    Event,
    Memory,
    RecallFilters,
    Tier,
    with_learning_of,
)
from hippocampus.model.association import (
    Anchor,
    EdgeUpdate,
    ExpandParams,
    Expansion,
    GraphPath,
    HubMatch,
    PathStep,
)
from hippocampus.schedule import IndexedSchedule
from hippocampus.store import checks
from hippocampus.store.checks import check_decay_pass, check_learned, check_lease
from hippocampus.store.neo4j import convert, counts
from hippocampus.store.neo4j.counts import Tally
from hippocampus.store.neo4j.graph_model import HUB_LABELS, NODE_KINDS
from hippocampus.store.neo4j.statements import statement
from hippocampus.store.neo4j.translate import lost_race, translated
from hippocampus.store.records import (
    EdgeEnds,
    LearnChange,
    Learned,
    MemoryRecord,
    StoreStats,
    Vector,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA_VERSION = 7
"""The schema :meth:`Neo4jStore.setup` creates. A later version adds a step to
``_migrate`` and bumps this. Version 3 adds passages: their key and vector
index, which the schema statements create (no data changes). Version 4 adds the
event log's retention: the counts of compacted events, keyed by collection and
type (no data changes; events are found by age through event_order). Version 5 stores due
dates for resurfacing on every memory, indexed (setup computes those of the
memories written before: :meth:`Neo4jStore._date_memories`). Version 6 adds
the key of the conversations' locks (TurnOrder; each is made at its
conversation's next write), the crowding sample's index and the leases' key,
keeps counters beside each collection (:mod:`hippocampus.store.neo4j.counts`) and
indexes each memory's terms, tagged with its collection, for lexical recall
(setup does both for the collections written before:
:meth:`Neo4jStore._count_collection`). Version 7 indexes each hub's edges in
order of strength, for expansion to read a hub's strongest without reading
them all (setup ranks the edges written before: :meth:`Neo4jStore._rank_hub_edges`)."""
SCHEMA_OWNER = "hippocampus"
VECTOR_INDEX = "memory_embedding"
PASSAGE_INDEX = "passage_embedding"
TEXT_INDEX = "memory_terms"
DEFAULT_DIMENSIONS = 384
SAMPLE_MAX_AGE_S = 60.0
"""How long a sample of a collection's vectors (for :meth:`Neo4jStore.crowding`)
is answered from memory before it is read again."""
INDEX_SIZE_MAX_AGE_S = 10.0
"""How long a read of the database's number of memories (a bound on the vector
index's size, see :func:`_first_width`) serves vector searches before it is read
again: it only sizes a first search, and one that finds too few widens."""
SAMPLES_KEPT = 64
"""Samples held in memory at most (the least recently used go first): one per
collection and model in use, whatever the number of collections."""

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

_PAGE = 500
_RACE_RETRIES = 3
_WRITE_BATCH = 1_000
"""Memories per decay transaction, nodes per drop transaction, events per
compaction transaction, memories or events per migration transaction: bounded
work per transaction, whatever the collection's size."""
_SEARCH_OVERSAMPLE = 10
"""Passage searches ask for ``k`` times this many candidates first."""
_TEXT_OVERSAMPLE = 4
"""Full-text searches ask for ``k`` times this many candidates first (at least
:data:`_MIN_TEXT_CANDIDATES`). Lucene picks them in its BM25 order, whose term
statistics are already the collection's (terms are tagged with it); only its
document count and mean length are the whole index's, which move a memory a
few places, not past four times ``k``: at 100k memories, the 50 best of 200 candidates
were the 50 best of 500 for 60 queries of 60, at half the time."""
_SHARE_OVERSAMPLE = 2
"""A first search of the memories' vector index asks for this many times the
candidates among which the collection's share of the index, filtered by
category and tier, should hold ``k`` (see :func:`_first_width`)."""
_MIN_CANDIDATES = 100
_MAX_CANDIDATES = 10_000
_WIDEN = 4
"""How much wider each next index search is, when the filters left too few hits."""
_MIN_TEXT_CANDIDATES = 200
"""Full-text candidates of a first search: the ranking is exact when the
collection's memories sharing a term with the query are fewer."""
_POLL_S = 0.5
_DAWN = datetime(1, 1, 1, tzinfo=UTC)
"""Before any memory's creation: where :meth:`Neo4jStore.iter_memories` starts."""
_HASH_END = "\U0010ffff"
"""Above every content hash: where the circle of hashes a sample goes round ends."""


class Neo4jStore:
    """A :class:`~hippocampus.store.GraphStore` in a Neo4j 5 database.

    Beyond the contract:

    - ASSOCIATED is undirected: stored once (from the smaller id) and returned by
      :meth:`edges_of` from either end with ``source`` set to the memory asked about.
    - Memory edges from a memory to itself are ignored; hub nodes are deleted with
      their last edge.
    - ``Memory.embedding_model`` as read always names the model of the stored
      vector (``None`` without one).
    - Dense search goes through the vector index, which holds vectors of the
      configured dimension from every collection: it first asks for as many
      candidates as the collection's share of the database needs (twice that:
      :func:`_first_width`); when too few of them belong to the collection and
      pass the filters, it asks for four times as many, up to 10,000, before it
      searches the collection exhaustively. It searches exhaustively at once
      when the query has another dimension, or when the collection's counters
      say that the filter's categories and tiers leave too few memories for the
      index to find.
    - Lexical search scores BM25 as the embedded store does (its tokenizer, the
      collection's own statistics, kept as counters); the full-text index finds
      the candidates, a bounded number of them (``recall/search_text``).
    - Search filters match exactly (no case folding).

    Args:
        driver: a configured driver (see :meth:`connect`); the store closes it.
        database: the database to use.
        dimensions: the vector dimension of the embedding model, for the vector
            index.
    """

    parallel_reads = True
    """Reads wait on the server, which answers several at once."""

    def __init__(
        self, driver: Driver, *, database: str = "neo4j", dimensions: int = DEFAULT_DIMENSIONS
    ) -> None:
        if dimensions < 1:
            raise ConfigError("the vector dimension must be positive")
        self._driver = driver
        self._database = database
        self._dimensions = dimensions
        self._closed = False
        # (collection, model) -> (read at, sample), least recently used first, and
        # the samples being read now: see _sample.
        self._samples: OrderedDict[tuple[str, str], tuple[float, VectorSample]] = OrderedDict()
        self._sampling: dict[tuple[str, str], threading.Event] = {}
        self._samples_lock = threading.Lock()
        # (read at, memories in the database): see _index_size.
        self._indexed: tuple[float, int] | None = None
        # Every session waits for the bookmarks of the store's own last writes:
        # on a cluster, a read then sees what this store wrote before it, even
        # from a replica (a single server shows that anyway).
        self._bookmarks = GraphDatabase.bookmark_manager()

    @classmethod
    def connect(
        cls,
        uri: str,
        *,
        user: str,
        password: str,
        database: str = "neo4j",
        dimensions: int = DEFAULT_DIMENSIONS,
        max_retry_s: float = 5.0,
        timeout_s: float = 5.0,
    ) -> Neo4jStore:
        """A store on the Neo4j at ``uri``. Nothing is contacted yet.

        Args:
            uri: ``bolt://``, ``neo4j://`` (routing) or their ``+s`` variants.
            user: the user name.
            password: the password.
            database: the database to use.
            dimensions: the vector dimension of the embedding model.
            max_retry_s: how long a transaction is retried on transient errors
                before the call fails (a request waits at most about this long
                while Neo4j is away).
            timeout_s: how long opening a connection may take. Taking one from
                the pool may take longer: as long as opening one, plus as long as
                a call may wait on retries (at least ``timeout_s`` more), so a
                busy pool is waited for and a slow connection is reported as one.

        Raises:
            ConfigError: the URI or settings are not usable.
        """
        try:
            driver = GraphDatabase.driver(
                uri,
                auth=(user, password),
                max_transaction_retry_time=max_retry_s,
                connection_timeout=timeout_s,
                connection_acquisition_timeout=timeout_s + max(max_retry_s, timeout_s),
                user_agent="hippocampus",
                # "No such property / label / relationship type yet": what a fresh
                # database says of names the statements use before any memory
                # holds them; the driver would log each statement whole.
                notifications_disabled_classifications=[
                    NotificationDisabledClassification.UNRECOGNIZED
                ],
            )
        except (ConfigurationError, ValueError) as e:
            raise ConfigError(f"cannot use the Neo4j settings ({uri}): {e}") from e
        logger.info("neo4j store configured for %s (database %s)", uri, database)
        return cls(driver, database=database, dimensions=dimensions)

    def __repr__(self) -> str:
        return f"Neo4jStore(database={self._database!r})"

    def __enter__(self) -> Neo4jStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def dimensions(self) -> int:
        """The vector dimension the vector index is made for."""
        return self._dimensions

    # -- schema -----------------------------------------------------------------------

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
        by collection, at most ``_WRITE_BATCH`` memories or events per
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
            for collection in self.list_collections():
                self._migrate_turns(collection)
            rows = self._read(
                "list collections with events", _records("schema/list_event_collections", {})
            )
            for row in rows:
                self._number_events(row["collection"])
        elif step == 4:
            for collection in self.list_collections():
                self._date_memories(collection)
        elif step == 5:
            self._write("drop the content index", _runner("schema/drop_memory_content", {}))
            for collection in self.list_collections():
                self._count_collection(collection)
        elif step == 6:
            for collection in self.list_collections():
                self._rank_hub_edges(collection)

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
            if len(rows) < _WRITE_BATCH:
                return
            after = max(str(row["id"]) for row in rows)

    def _number_events(self, collection: str) -> None:
        """Version 1 to 2 for one collection's event log: number its events in the
        order version 1 read them back, ``_WRITE_BATCH`` per transaction."""
        after = _DAWN.isoformat()
        while True:
            (row,) = self._write(
                "number events",
                _records(
                    "schema/number_events", {"after": after, "limit": _WRITE_BATCH}, collection
                ),
            )
            if int(row["numbered"]) < _WRITE_BATCH:
                return
            after = str(row["last"])

    def _date_memories(self, collection: str) -> None:
        """Store the due dates of a collection's memories written before schema
        version 5, a page per transaction (resumable: a page done stays done)."""
        dated, after = 0, ""
        while True:
            rows = self._read(
                "list undated memories",
                _records(
                    "schema/list_undated_memories",
                    {"after": after, "limit": _WRITE_BATCH},
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
                "date memories", _records("schema/date_memories", {"items": items}, collection)
            )
            dated += len(rows)
            if len(rows) < _WRITE_BATCH:
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
                _records(
                    "schema/rank_hub_edges", {"after": after, "limit": _WRITE_BATCH}, collection
                ),
            )
            ranked += int(row["edges"])
            if int(row["memories"]) < _WRITE_BATCH:
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
                _records("schema/drop_counts", {"limit": _WRITE_BATCH}, collection),
            )
            if int(row["deleted"]) < _WRITE_BATCH:
                break
        tally = self._read("count a collection", lambda tx: counts.census(tx, collection))
        self._index_terms(collection, tally)
        self._write(
            "store a collection's counts",
            _counter_rows("memory/add_counts", collection, tally.rows()),
        )
        terms = tally.term_rows()
        for start in range(0, len(terms), _WRITE_BATCH):
            self._write(
                "store a collection's term counts",
                _counter_rows(
                    "memory/add_term_counts", collection, terms[start : start + _WRITE_BATCH]
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
                _records(
                    "schema/list_memory_content",
                    {"after": after, "limit": _WRITE_BATCH},
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
                    _records("schema/set_memory_terms", {"items": items}, collection),
                )
            if len(rows) < _WRITE_BATCH:
                return
            after = str(rows[-1]["id"])

    def _await_indexes(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            rows = self._read(
                "read the index states", _records("schema/show_indexes", {"names": list(_INDEXES)})
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

    # -- memories ---------------------------------------------------------------------

    def add_memories(self, collection: str, records: Sequence[MemoryRecord]) -> None:
        """Insert new memories with their vectors and edges, all or nothing.

        Hub nodes named by the edges are created when absent; memory edges whose
        target memory exists neither in the store nor in the batch are skipped.

        Raises:
            ConflictError: an id already exists in the collection, or is repeated in
                the batch (nothing is written).
            InvalidInputError: a memory of another collection, an edge that does not
                leave its memory, a vector without ``embedding_model``, or a vector
                that is not a finite one-dimensional array.
        """
        if not records:
            return
        rows: list[dict[str, Any]] = []
        edges: list[dict[str, Any]] = []
        passages: list[dict[str, Any]] = []
        stored: list[tuple[Memory, str | None]] = []
        seen: set[str] = set()
        repeated: list[str] = []
        for record in records:
            memory = record.memory
            checks.check_collection(collection, memory)
            if memory.id in seen:
                repeated.append(memory.id)
            seen.add(memory.id)
            vector = self._record_vector(record)
            item = _passage_item(record, vector)
            if item["passages"]:
                passages.append(item)
            rows.append(convert.memory_properties(memory, vector))
            stored.append((memory, memory.embedding_model if vector is not None else None))
            edges.extend(convert.record_edge_rows(memory, record.edges))
        if repeated:
            raise ConflictError(f"ids repeated in the batch: {_some(repeated)}", field="id")
        ids = list(seen)
        added = [r.memory for r in records]

        def work(tx: ManagedTransaction) -> None:
            # The conversations first, before any memory (see _lock_turns).
            locked = _lock_turns(tx, collection, added)
            existing = [r["id"] for r in _run(tx, "memory/existing_ids", collection, ids=ids)]
            if existing:
                raise ConflictError(
                    f"memories already exist in {collection!r}: {_some(existing)}", field="id"
                )
            _run(tx, "memory/add_memories", collection, memories=rows)
            tally = Tally()
            for memory, model in stored:
                tally.memory(memory, model)
            if passages:
                _run(tx, "memory/set_passages", collection, items=passages)
            # One order over the whole batch, not record by record.
            _upsert_edges(tx, collection, edges, tally)
            _link_turns(tx, collection, added, tally, locked)
            tally.write(tx, collection)

        self._write("add memories", work)

    def get_memories(self, collection: str, ids: Sequence[str]) -> dict[str, Memory]:
        """The memories among ``ids`` that exist in the collection, by id."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = self._read(
            "read memories", _records("memory/get_memories", {"ids": wanted}, collection)
        )
        return {memory.id: memory for memory in convert.memories_of(rows)}

    def replace_memory(self, collection: str, record: MemoryRecord, *, replace_edges: bool) -> None:
        """Overwrite an existing memory.

        The vector is replaced when ``record.vector`` is given (with the memory's
        ``embedding_model``), removed with ``record.drop_vector`` (the memory is then
        pending re-embedding) and kept otherwise. With ``replace_edges`` the memory's
        hub edges become the hub edges of ``record.edges``; memory edges among
        ``record.edges`` are upserted and its other memory edges kept. Hubs left
        without edges are deleted.

        Raises:
            NotFoundError: no such memory in the collection.
            InvalidInputError: as for :meth:`add_memories`, or ``drop_vector`` with
                a vector.
        """
        memory = record.memory
        checks.check_collection(collection, memory)
        if record.drop_vector:
            if record.vector is not None:
                raise InvalidInputError(
                    f"memory {memory.id!r}: a vector cannot be given and dropped at once",
                    field="vector",
                )
            memory = memory.model_copy(update={"embedding_model": None})
        vector = self._record_vector(record)
        passages = _passage_item(record, vector)
        properties = convert.memory_properties(memory, vector, with_vector=False)
        edges = convert.record_edge_rows(memory, record.edges) if replace_edges else []
        params = {
            "id": memory.id,
            "properties": properties,
            "embedding": convert.vector_value(vector) if vector is not None else None,
            "embedding_model": memory.embedding_model if vector is not None else None,
            "drop_embedding": record.drop_vector,
        }

        def work(tx: ManagedTransaction) -> None:
            written = params
            was = _stored(tx, collection, memory.id)
            locked: frozenset[str] = frozenset()
            if was is not None and _turn_place(was) != _turn_place(memory):
                # A move: its conversations are locked first (before any memory).
                locked = _lock_turns(tx, collection, [memory, was])
            # Locked before it is read again: no write of it commits between (a
            # learning update's, or one whose counts would then be lost).
            lock = "learn/lock_memories" if record.keep_learned else "memory/lock_memories"
            _run(tx, lock, collection, ids=[memory.id])
            was = _stored(tx, collection, memory.id)
            now = memory
            if record.keep_learned and was is not None:
                now = with_learning_of(memory, was, tier=record.keep_tier)
                written = {
                    **params,
                    "properties": convert.memory_properties(now, vector, with_vector=False),
                }
            if not _run(tx, "memory/replace_memory", collection, **written):
                raise NotFoundError(f"no memory {memory.id!r} in {collection!r}")
            tally = Tally()
            if was is not None:
                tally.changed(was, was.embedding_model, now, _model_after(record, was))
            if vector is not None or record.drop_vector:
                _run(tx, "memory/set_passages", collection, items=[passages])
            if was is not None and _turn_place(was) != _turn_place(memory):
                _link_turns(tx, collection, [memory, was], tally, locked)
            if replace_edges:
                _replace_hub_edges(tx, collection, memory.id, edges, tally)
            tally.write(tx, collection)

        self._write("replace a memory", work)

    def delete_memory(self, collection: str, memory_id: str) -> bool:
        """Remove a memory with every edge that touches it; hubs left without edges
        go too. ``False`` if absent."""

        def work(tx: ManagedTransaction) -> bool:
            was = _stored(tx, collection, memory_id)
            locked: frozenset[str] = frozenset()
            if was is not None and was.turn_of is not None:
                # A turn: its conversation is locked first (before any memory).
                locked = _lock_turns(tx, collection, [was])
            # Locked, then read again: the counts move from what it holds.
            _run(tx, "memory/lock_memories", collection, ids=[memory_id])
            was = _stored(tx, collection, memory_id)
            _run(tx, "memory/delete_passages", collection, ids=[memory_id])
            found = _run(tx, "memory/delete_memory", collection, id=memory_id)
            if not found:
                return False
            tally = Tally()
            for edge_type in found[0]["edges"]:
                tally.edges(edge_type, -1)
            for kind in found[0]["pruned"]:
                tally.hubs(kind, -1)
            if was is not None:
                tally.memory(was, was.embedding_model, -1)
                _link_turns(tx, collection, [was], tally, locked)
            tally.write(tx, collection)
            return True

        return self._write("delete a memory", work)

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
            _records(
                "memory/neighbour_turns",
                {"ids": wanted, "before": max(0, before), "after": max(0, after)},
                collection,
            ),
        )
        return {row["id"]: (list(row["earlier"]), list(row["later"])) for row in rows}

    def iter_memories(self, collection: str) -> Iterator[Memory]:
        """Every memory of the collection, oldest first (ties by id).

        Streams in pages, each its own read: a memory written while the iteration
        runs may or may not be seen.
        """
        after_at: Any = _DAWN
        after_id = ""
        while True:
            page = self._read(
                "list memories",
                _records(
                    "memory/iter_memories",
                    {"after_at": after_at, "after_id": after_id, "limit": _PAGE},
                    collection,
                ),
            )
            yield from convert.memories_of(page)
            if len(page) < _PAGE:
                return
            # As a plain UTC offset, the way memories store it: the server hands
            # it back in the zone "UTC", which it orders apart from the same
            # moment at +00:00, so a page key read back as given matched
            # nothing at its own moment and the pages after the first were lost.
            # The key is the last row still there: one deleted while read has null
            # properties (and sorts last).
            last = next((r for r in reversed(page) if r["created_at"] is not None), None)
            if last is None:
                return
            moment = convert.native_datetime(last["created_at"])
            after_at = moment.astimezone(UTC) if moment is not None else _DAWN
            after_id = last["id"]

    def due_memories(
        self, collection: str, *, schedule: IndexedSchedule, now: datetime, limit: int
    ) -> list[Memory]:
        """Active memories due at ``now`` by the due dates stored on them under
        ``schedule``, the ``limit`` most valuable first (then the most overdue,
        then by id), through the schedule's index on due dates.

        Raises:
            InvalidInputError: an unknown schedule.
        """
        if schedule not in ("seed", "fsrs"):
            raise InvalidInputError(f"no stored due dates for {schedule!r}", field="schedule")
        if limit <= 0:
            return []
        params = {"schedule": schedule, "now": checks.micros(now), "limit": limit}
        rows = self._read("list due memories", _records("memory/due_memories", params, collection))
        return convert.memories_of(rows)

    def find_by_hash(self, collection: str, content_hash: str) -> list[str]:
        """Ids of memories whose normalized content hashes to ``content_hash``, oldest
        first."""
        rows = self._read(
            "find memories by hash",
            _records("memory/find_by_hash", {"content_hash": content_hash}, collection),
        )
        return [row["id"] for row in rows if row["id"] is not None]

    # -- vectors ----------------------------------------------------------------------

    def search_vectors(
        self,
        collection: str,
        vector: Vector,
        *,
        model: str,
        k: int,
        filters: RecallFilters,
        passages: bool = True,
    ) -> list[tuple[str, float]]:
        """Top ``k`` memories by cosine similarity among those whose vector was made
        by ``model`` and that pass ``filters``; best first. With ``passages`` a long
        memory scores the best of its vector's similarity and its passages' (found
        through their own vector index, merged here by memory).
        """
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if k <= 0 or not _usable(query):
            return []  # a zero or non-finite query finds nothing
        params = {"model": model, "k": k, **convert.filter_params(filters)}

        def work(tx: ManagedTransaction) -> list[tuple[str, float]]:
            # One transaction for both searches: one snapshot, one round of
            # begin and commit the fewer.
            hits = _memory_vector_hits(
                tx, collection, query, filters, params, self._dimensions, self._index_size
            )
            if not passages:
                return hits
            found = _passage_hits(tx, collection, query, params, self._dimensions)
            return _best_of(hits, found, k)

        return self._read("search vectors", work)

    def search_vectors_many(
        self,
        collection: str,
        vectors: Vector,
        *,
        model: str,
        k: int,
        filters: RecallFilters,
        passages: bool = True,
    ) -> list[list[tuple[str, float]]]:
        """:meth:`search_vectors` for each row of a 2-D ``vectors`` (a 1-D one is one
        row): one list per row, in order, all read in one transaction. Passages
        (with ``passages``) are searched row by row.

        The vector index answers every row in one statement; a row it answers
        short (too few of its nearest candidates belong to the collection and pass
        the filters) is searched wider, alone, as :meth:`search_vectors` does, and
        exhaustively when the widest search still falls short; every row is
        searched exhaustively when the queries have another dimension than the
        index or the filter is too selective for it. A zero or non-finite row
        finds nothing.
        """
        rows = np.asarray(vectors, dtype=np.float32)
        if rows.ndim != 2:
            rows = rows.reshape(1, -1)
        usable = [i for i in range(rows.shape[0]) if np.isfinite(rows[i]).all() and rows[i].any()]
        if k <= 0 or rows.shape[1] == 0 or not usable:
            return [[] for _ in range(rows.shape[0])]
        params = {"model": model, "k": k, **convert.filter_params(filters)}

        def work(tx: ManagedTransaction) -> list[list[tuple[str, float]]]:
            # Built afresh on each try: the driver may run this function again.
            found: list[list[tuple[str, float]]] = [[] for _ in range(rows.shape[0])]
            short = usable
            candidates = None
            if rows.shape[1] == self._dimensions:
                candidates = _first_width(tx, collection, filters, model, k, self._index_size)
            if candidates is not None:
                answered = _run(
                    tx,
                    "recall/search_vectors_many",
                    collection,
                    queries=[{"row": i, "vector": convert.vector_value(rows[i])} for i in usable],
                    index=VECTOR_INDEX,
                    candidates=candidates,
                    **params,
                )
                short = []
                for answer in answered:
                    i = int(answer["row"])
                    hits = _live_hits(answer["hits"])
                    if len(hits) >= k or answer["seen"] < candidates:
                        found[i] = hits
                    else:
                        short.append(i)
            for i in short:
                # A row the first search answered short is searched wider, alone,
                # from the next width on.
                row = {**params, "vector": convert.vector_value(rows[i])}
                widened = (
                    _index_hits(
                        tx, collection, "recall/search_vectors", row, k, _widths(candidates)[1:]
                    )
                    if candidates is not None
                    else None
                )
                found[i] = widened if widened is not None else _exact_hits(tx, collection, row)
            if passages:
                for i in usable:
                    hits = _passage_hits(tx, collection, rows[i], params, self._dimensions)
                    found[i] = _best_of(found[i], hits, k)
            return found

        return self._read("search vectors", work)

    def set_vectors(
        self,
        collection: str,
        items: Sequence[tuple[str, Vector, str]],
        *,
        at: datetime | None = None,
        passages: Mapping[str, Vector] | None = None,
    ) -> None:
        """Store ``(memory_id, vector, model)`` for existing memories (re-embedding),
        stamped ``embedding_generated_at = at``: the documents are locked as a
        learning update locks them (``learn/lock_memories``), then read and written
        back in the same transaction, so no learning update commits between the read
        and the write (and is lost). Each memory's passages become
        ``passages[memory_id]`` (none when absent: stored passages go). Ids that no
        longer exist are skipped.

        Raises:
            InvalidInputError: a vector that is not a finite one-dimensional array,
                passages that are not a finite 2-D array of its dimension, or an
                empty model name.
        """
        rows: list[dict[str, Any]] = []
        passage_items = []
        for memory_id, vector, model in items:
            if not model:
                raise InvalidInputError("a vector needs the name of its model", field="model")
            checked = checks.check_vector(vector, memory_id)
            rows.append(
                {
                    "id": memory_id,
                    "embedding": convert.vector_value(checked),
                    "embedding_model": model,
                }
            )
            rest = _check_passages((passages or {}).get(memory_id), checked, memory_id)
            passage_items.append({"id": memory_id, "model": model, "passages": rest})
        if not rows:
            return

        ids = sorted({row["id"] for row in rows})

        def work(tx: ManagedTransaction) -> None:
            # Locked before they are read: a learning update of them waits, and
            # the counts move from what they hold.
            _run(tx, "memory/lock_memories", collection, ids=ids)
            found = {
                row["id"]: convert.memory_of(row["doc"], row["embedding_model"])
                for row in _run(tx, "memory/get_memories", collection, ids=ids)
            }
            tally = Tally()
            for row in rows:
                was = found.get(row["id"])
                row["doc"] = None
                if was is not None:
                    now = was.model_copy(
                        update={
                            "embedding_model": row["embedding_model"],
                            "embedding_generated_at": at,
                        }
                    )
                    row["doc"] = now.model_dump_json()
                    tally.changed(was, was.embedding_model, now, now.embedding_model)
                    found[row["id"]] = now  # an id given twice: its last vector stays
            _run(tx, "memory/set_vectors", collection, items=rows)
            _run(tx, "memory/set_passages", collection, items=passage_items)
            tally.write(tx, collection)

        self._write("store vectors", work)

    def get_vectors(self, collection: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors of the given memories (those that have one), as given."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = self._read(
            "read vectors", _records("memory/get_vectors", {"ids": wanted}, collection)
        )
        return convert.vectors_of(_one_list(rows, "vectors"))

    def similarities(
        self, collection: str, ids: Sequence[str], vector: Vector, *, model: str
    ) -> dict[str, float]:
        """The cosine similarity to ``vector`` of the given memories' own vectors of
        ``model``, computed by the server (``memory/similarities``): the scores
        travel, not the vectors."""
        wanted = list(dict.fromkeys(ids))
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if not wanted or not _usable(query):
            return {}
        params = {"ids": wanted, "vector": convert.vector_value(query), "model": model}
        rows = self._read("read similarities", _records("memory/similarities", params, collection))
        return dict(_live_hits(_one_list(rows, "hits")))

    def crowding(self, collection: str, ids: Sequence[str], *, model: str) -> dict[str, float]:
        """How crowded the given memories' neighbourhoods are: their stored vectors
        of ``model`` against a sample of the collection's (see :meth:`_sample`)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = self._read(
            "read vectors",
            _records("memory/model_vectors", {"ids": wanted, "model": model}, collection),
        )
        vectors = convert.vectors_of(_one_list(rows, "vectors"))
        if not vectors:
            return {}
        sample = self._sample(collection, model)
        found = [mid for mid, v in vectors.items() if v.shape[0] == sample.vectors.shape[-1]]
        if not found:
            return {}
        units = normalize_rows(np.asarray([vectors[mid] for mid in found], dtype=np.float32))
        return crowding_of(found, units, sample, CROWDING_NEIGHBOURS)

    def _index_size(self, tx: ManagedTransaction) -> int:
        """How many memories the database holds (``recall/index_size``), read in
        ``tx`` when the last read is older than :data:`INDEX_SIZE_MAX_AGE_S`."""
        kept = self._indexed
        now = time.monotonic()
        if kept is not None and now - kept[0] < INDEX_SIZE_MAX_AGE_S:
            return kept[1]
        sized = _run(tx, "recall/index_size")
        if not sized:
            return 0  # no answer (EXPLAIN, a stand-in driver): nothing to keep
        memories = int(sized[0]["memories"])
        self._indexed = (now, memories)
        return memories

    def _sample(self, collection: str, model: str) -> VectorSample:
        """The sample of ``model``'s vectors in the collection that crowding measures
        against (:meth:`_read_sample`), kept for :data:`SAMPLE_MAX_AGE_S` and among
        the :data:`SAMPLES_KEPT` last used. One thread reads a new one at a time:
        meanwhile the others take the old one, or wait when there is none."""
        key = (collection, model)
        while True:
            with self._samples_lock:
                kept = self._samples.get(key)
                if kept is not None:
                    self._samples.move_to_end(key)
                    if time.monotonic() - kept[0] < SAMPLE_MAX_AGE_S:
                        return kept[1]
                reading = self._sampling.get(key)
                if reading is None:
                    reading = self._sampling[key] = threading.Event()
                    break
            if kept is not None:
                return kept[1]
            reading.wait()  # then the new sample is kept, or the reader failed
        try:
            read_at = time.monotonic()
            sample = self._read_sample(collection, model)
            with self._samples_lock:
                self._samples[key] = (read_at, sample)
                self._samples.move_to_end(key)
                while len(self._samples) > SAMPLES_KEPT:
                    self._samples.popitem(last=False)
        finally:
            with self._samples_lock:
                del self._sampling[key]
            reading.set()
        return sample

    def _read_sample(self, collection: str, model: str) -> VectorSample:
        """Up to :data:`CROWDING_SAMPLE` of ``model``'s vectors in the collection,
        normalized: those whose content hashes follow a random hash, going round
        to the first hash when the last is reached. Content hashes (sha256) are
        spread evenly, so this is a random sample, read through an index in hash
        order (``cypher/memory/sample_vectors.cypher``) without reading the rest
        of the collection; its ``total`` is estimated from how far round the
        hashes it reaches (:func:`_sample_total`)."""
        start = f"{random.getrandbits(64):016x}"

        def work(tx: ManagedTransaction) -> tuple[list[Record], list[Record]]:
            def arc(low: str, high: str, size: int) -> list[Record]:
                params = {"model": model, "low": low, "high": high, "size": size}
                return _run(tx, "memory/sample_vectors", collection, **params)

            onward = arc(start, _HASH_END, CROWDING_SAMPLE)
            rest = CROWDING_SAMPLE - len(onward)
            return onward, arc("", start, rest) if rest else []

        onward, wrapped = self._read("read a sample of vectors", work)
        rows = [r for r in onward + wrapped if r["embedding"] is not None]
        if rows:
            vectors = normalize_rows(
                np.asarray([convert.vector_of(r["embedding"]) for r in rows], dtype=np.float32)
            )
        else:
            vectors = np.empty((0, 0), dtype=np.float32)
        return VectorSample(
            ids=[r["id"] for r in rows],
            vectors=vectors,
            total=_sample_total(start, onward, wrapped),
        )

    def get_passages(self, collection: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored passage vectors (2-D, in order, as given) of the given memories
        that have any."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = self._read(
            "read passage vectors", _records("memory/get_passages", {"ids": wanted}, collection)
        )
        return {
            row["id"]: np.asarray(row["passages"], dtype=np.float32)
            for row in rows
            if row["passages"]
        }

    def pending_embeddings(self, collection: str, model: str, limit: int) -> list[Memory]:
        """Memories with no vector, or a vector from another model, oldest first."""
        if limit <= 0:
            return []
        rows = self._read(
            "list pending embeddings",
            _records("memory/pending_embeddings", {"model": model, "limit": limit}, collection),
        )
        return convert.memories_of(rows)

    def count_pending_embeddings(self, collection: str, model: str) -> int:
        """How many memories :meth:`pending_embeddings` would list with no limit, from
        the collection's counters (:mod:`.counts`)."""
        kept = self._read("count pending embeddings", lambda tx: counts.read(tx, collection))
        return counts.pending(kept, model)

    # -- lexical ----------------------------------------------------------------------

    def search_text(
        self, collection: str, query: str, *, k: int, filters: RecallFilters
    ) -> list[tuple[str, float]]:
        """Top ``k`` memories by BM25 relevance of their content to ``query`` among
        those that pass ``filters``, scored as the embedded store scores them (its
        tokenizer, and this collection's own statistics); best first, scores > 0
        only, ties by id. The full-text index gives a bounded number of
        candidates (``recall/search_text`` says when the ranking is exact), more
        while the filters leave fewer than ``k`` of them."""
        terms, words = convert.text_query(collection, query)
        if not terms or k <= 0:
            return []
        params = {
            "index": TEXT_INDEX,
            "query": " ".join(words),
            "terms": words,
            **convert.filter_params(filters),
        }
        return self._read("search text", lambda tx: _text_hits(tx, collection, terms, params, k))

    def text_neighbours(self, collection: str, text: str, *, k: int) -> list[str]:
        """Up to ``k`` memories sharing words with ``text``, in the full-text
        index's order (``recall/text_neighbours``): no term counts are read, which
        for a long text against 200 candidates is most of :meth:`search_text`."""
        terms, words = convert.text_query(collection, text)
        if not terms or k <= 0:
            return []
        params = {"index": TEXT_INDEX, "query": " ".join(words), "k": k}
        rows = self._read("search text", _records("recall/text_neighbours", params, collection))
        return list(dict.fromkeys(_one_list(rows, "ids")))

    # -- hubs -------------------------------------------------------------------------

    def match_hubs(self, collection: str, names: Sequence[str]) -> list[HubMatch]:
        """Hubs of any kind named exactly (no case folding) one of ``names``, with
        similarity 1.0 and their degree; in the order of ``names``, then of kinds
        (Domain, Trigger, Concept)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return []
        rows = self._read(
            "match hubs", _records("recall/match_hubs", {"names": wanted}, collection)
        )
        return [
            HubMatch(kind=row["kind"], name=row["name"], similarity=1.0, degree=row["degree"])
            for row in rows
        ]

    def search_hubs(
        self, collection: str, vector: Vector, *, model: str, k: int, min_similarity: float
    ) -> list[HubMatch]:
        """Up to ``k`` hubs whose name embedding by ``model`` has cosine similarity of
        at least ``min_similarity`` with ``vector``; best first, ties by kind and
        name. A query of another dimension than the hub vectors finds nothing."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if k <= 0 or query.shape[0] == 0 or not np.isfinite(query).all() or not query.any():
            return []
        rows = self._read(
            "search hubs",
            _records(
                "recall/search_hubs",
                {
                    "vector": convert.vector_value(query),
                    "model": model,
                    "k": k,
                    "min_similarity": min_similarity,
                },
                collection,
            ),
        )
        return [
            HubMatch(
                kind=row["kind"],
                name=row["name"],
                similarity=min(1.0, max(-1.0, float(row["similarity"]))),
                degree=row["degree"],
            )
            for row in rows
        ]

    def hubs_without_vectors(
        self, collection: str, model: str, limit: int
    ) -> list[tuple[str, str]]:
        """``(kind, name)`` of up to ``limit`` hubs with no name embedding from
        ``model``, by kind then name."""
        if limit <= 0:
            return []
        rows = self._read(
            "list hubs without vectors",
            _records("memory/hubs_without_vectors", {"model": model, "limit": limit}, collection),
        )
        return [(row["kind"], row["name"]) for row in rows]

    def set_hub_vectors(
        self, collection: str, items: Sequence[tuple[str, str, Vector, str]]
    ) -> None:
        """Store ``(kind, name, vector, model)`` name embeddings of existing hubs;
        others are skipped. A hub holds one vector: one of another model is
        replaced.

        Raises:
            InvalidInputError: an unknown hub kind, an empty model name, or a vector
                that is not a finite one-dimensional array.
        """
        rows = []
        for kind, name, vector, model in items:
            if kind not in HUB_LABELS:
                raise InvalidInputError(f"{kind!r} is not a hub kind", field="kind")
            if not model:
                raise InvalidInputError("a vector needs the name of its model", field="model")
            checked = checks.check_vector(vector, f"{kind} {name}")
            rows.append(
                {
                    "kind": kind,
                    "name": name,
                    "embedding": convert.vector_value(checked),
                    "embedding_model": model,
                }
            )
        if rows:
            self._write(
                "store hub vectors",
                _records(
                    "memory/set_hub_vectors", {"items": convert.hub_lock_order(rows)}, collection
                ),
            )

    def iter_hub_vectors(self, collection: str) -> Iterator[tuple[str, str, Vector, str]]:
        """``(kind, name, vector, model)`` of every hub that has a name embedding, by
        kind then name."""
        rows = self._read("read hub vectors", _records("memory/iter_hub_vectors", {}, collection))
        for row in rows:
            vector = convert.vector_of(row["embedding"])
            yield row["kind"], row["name"], vector, row["embedding_model"]

    # -- graph ------------------------------------------------------------------------

    def expand(
        self,
        collection: str,
        anchors: Sequence[Anchor],
        *,
        params: ExpandParams,
        filters: RecallFilters,
        paths: bool = True,
    ) -> list[Expansion]:
        """Walk weighted edges from the anchors and return the memories reached that
        pass ``filters``, strongest first, in one query (``cypher/recall/expand.cypher``,
        which states the rules: those of the embedded store, so both stores give the
        same candidates and strengths on the same graph).

        Anchors are merged by (kind, name), keeping the strongest; anchors of other
        kinds than Memory, Domain, Trigger and Concept, and unknown nodes, are
        ignored.
        """
        merged: dict[tuple[str, str], Anchor] = {}
        for anchor in anchors:
            if anchor.kind not in NODE_KINDS:
                logger.debug("anchor kind %r is not a node kind; ignored", anchor.kind)
                continue
            key = (anchor.kind, anchor.name)
            held = merged.get(key)
            if held is None or anchor.strength > held.strength:
                merged[key] = anchor
        ordered = sorted(merged.values(), key=lambda a: (a.kind, a.name))
        if not ordered:
            return []
        query = {
            "anchors": [{"kind": a.kind, "name": a.name, "strength": a.strength} for a in ordered],
            "max_depth": params.max_depth,
            "damping": params.damping,
            "fanout": params.hub_fanout,
            "frontier": params.frontier,
            "penalty": params.hub_degree_penalty,
            "degree_mode": params.hub_degree_mode,
            "pivot": params.hub_degree_pivot,
            "min_factor": params.hub_min_factor,
            "max_hub_degree": params.max_hub_degree,
            "max_results": params.max_results,
            "paths": paths,
            **convert.filter_params(filters),
        }
        rows = self._read("expand", _records("recall/expand", query, collection))
        found = []
        for row in _one_list(rows, "found"):
            reached = row["reached"]
            if row["memory_id"] is None or _through_deleted(reached):
                # A node the walk reached was deleted while it ran (reads see
                # committed deletes at once): that memory is gone, or its path
                # no longer exists. The next recall walks the graph as it is.
                continue
            strongest = min(reached, key=lambda r: (-r["strength"], r["anchor"]), default=None)
            walked: list[GraphPath] = []
            if paths:
                ranked = sorted(reached, key=lambda r: (-r["strength"], r["anchor"]))
                walked = [
                    GraphPath(
                        anchor=ordered[r["anchor"]],
                        steps=[
                            PathStep(
                                type=EdgeType(s["type"]),
                                weight=s["weight"],
                                kind=s["kind"],
                                name=s["name"],
                            )
                            for s in r["steps"]
                        ],
                        strength=r["strength"],
                    )
                    for r in ranked
                ]
            found.append(
                Expansion(
                    memory_id=row["memory_id"],
                    strength=float(row["strength"]),
                    anchors=len(reached),
                    best=float(strongest["strength"]) if strongest else 0.0,
                    best_anchor=ordered[strongest["anchor"]] if strongest else None,
                    paths=walked,
                )
            )
        return found

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

        The pass goes a page of memories per transaction (``_WRITE_BATCH``), so
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
            "limit": _WRITE_BATCH,
            "types": None if types is None else sorted({EdgeType(t).value for t in types}),
        }
        decayed = 0
        after: str | None = ""
        while after is not None:
            rows = self._write(
                "decay edges",
                _records("learn/decay_edges", {**params, "after": after}, collection),
            )
            if not rows:
                # A pass for this period is recorded (before this one, or by
                # another process while this one ran).
                return decayed
            decayed += int(rows[0]["decayed"])
            after = rows[0]["last"]
        self._write(
            "record a decay pass",
            _records(
                "learn/record_decay_pass",
                {"period": period, "unused_before": params["unused_before"], "decayed": decayed},
                collection,
            ),
        )
        return decayed

    def iter_edges(self, collection: str) -> Iterator[Edge]:
        """Every edge of the collection, each ASSOCIATED edge once (from its smaller
        id), by source, type and target. Streams in pages of memories."""
        after = ""
        while True:
            page = self._read(
                "list edges",
                _records("memory/iter_edges", {"after": after, "limit": _PAGE}, collection),
            )
            for row in page:
                for entry in row["edges"]:
                    yield convert.edge_of(row["source"], entry)
            if len(page) < _PAGE:
                return
            after = page[-1]["source"]

    def iter_edge_ends(self, collection: str) -> Iterator[EdgeEnds]:
        """``(source, type, target, weight)`` of every edge, as :meth:`iter_edges`
        orders them; streams in pages of memories."""
        after = ""
        while True:
            page = self._read(
                "list edges",
                _records("memory/iter_edge_ends", {"after": after, "limit": _PAGE}, collection),
            )
            for row in page:
                source = row["source"]
                for edge_type, target, weight in row["edges"]:
                    yield (source, edge_type, target, float(weight))
            if len(page) < _PAGE:
                return
            after = page[-1]["source"]

    # -- edges ------------------------------------------------------------------------

    def edges_of(self, collection: str, memory_id: str) -> list[Edge]:
        """Edges leaving the memory, and ASSOCIATED edges reaching it (turned so that
        ``source`` is ``memory_id``); ordered by type, then target."""
        rows = self._read("read edges", _records("memory/edges_of", {"id": memory_id}, collection))
        return [convert.edge_of(memory_id, row) for row in rows]

    def upsert_edges(self, collection: str, edges: Sequence[Edge]) -> None:
        """Create or overwrite edges (weights and counters as given).

        Hub nodes are created when absent. Edges whose source memory (or, for
        memory edges, target memory) does not exist are skipped, as are memory
        edges from a memory to itself. An edge given no ``created_at`` keeps its
        own, or when new is dated by its memory's creation.
        """
        rows = convert.edge_rows(edges)
        if not rows:
            return

        def work(tx: ManagedTransaction) -> None:
            tally = Tally()
            _upsert_edges(tx, collection, rows, tally)
            tally.write(tx, collection)

        self._write("write edges", work)

    # -- events -----------------------------------------------------------------------

    def append_events(self, collection: str, events: Sequence[Event]) -> None:
        """Append to the collection's event log, in the order given."""
        if not events:
            return
        rows = [convert.event_row(event) for event in events]

        def work(tx: ManagedTransaction) -> None:
            _run(tx, "memory/append_events", collection, events=rows)
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
                _records("memory/iter_events", {"after": after, "limit": _PAGE}, collection),
            )
            for row in page:
                yield convert.event_of(row)
            if len(page) < _PAGE:
                return
            after = int(page[-1]["seq"])

    def compact_events(
        self, collection: str, *, before: datetime | None = None, keep: int | None = None
    ) -> int:
        """Drop the events appended before ``before`` (by the server's clock) and
        those beyond the newest ``keep``, ``_WRITE_BATCH`` per transaction; each type dropped is
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
            "limit": _WRITE_BATCH,
        }
        dropped = 0
        while True:
            (row,) = self._write(
                "compact the event log", _records("memory/compact_events", params, collection)
            )
            n = int(row["dropped"])
            dropped += n
            if n < _WRITE_BATCH:
                return dropped

    # -- state ------------------------------------------------------------------------

    def get_states(self, collection: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """State documents by key; absent keys are left out."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        rows = self._read("read state", _records("memory/get_states", {"keys": wanted}, collection))
        return {row["key"]: convert.state_of(row["value"]) for row in rows}

    def put_states(self, collection: str, items: Mapping[str, dict[str, Any]]) -> None:
        """Write state documents in one transaction, replacing same-key ones.

        Raises:
            InvalidInputError: a document JSON cannot hold (nothing is written).
        """
        # By key: two writers of the same new keys MERGE them in one order.
        rows = [
            {"key": key, "value": convert.state_value(key, doc)}
            for key, doc in sorted(items.items())
        ]
        if rows:
            self._write("write state", _records("memory/put_states", {"items": rows}, collection))

    def list_state_keys(self, collection: str, prefix: str = "") -> list[str]:
        """Keys of state documents starting with ``prefix``, sorted."""
        rows = self._read(
            "list state", _records("memory/list_state_keys", {"prefix": prefix}, collection)
        )
        return [row["key"] for row in rows]

    # -- learning -------------------------------------------------------------------

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
        (see ``_lock_turns``): the first time it finds that out it is rolled
        back and run again, those conversations locked first.
        """
        ids = sorted(set(memory_ids))
        keys = sorted(set(state_keys))
        conversations: set[str] = set()

        def work(tx: ManagedTransaction) -> Learned:
            locked = _lock_conversations(tx, collection, conversations)
            if ids:
                _run(tx, "learn/lock_memories", collection, ids=ids)
            if keys:
                _run(tx, "learn/lock_states", collection, keys=keys)
            read = {
                row["id"]: convert.memory_of(row["doc"], row["embedding_model"])
                for row in (_run(tx, "memory/get_memories", collection, ids=ids) if ids else [])
            }
            states = {
                row["key"]: convert.state_of(row["value"])
                for row in (_run(tx, "memory/get_states", collection, keys=keys) if keys else [])
                if row["value"] is not None
            }
            learned = change(read, states)
            check_learned(collection, read, learned)
            memories = list({m.id: m for m in learned.memories}.values())
            tally = Tally()
            for memory in memories:
                model = read[memory.id].embedding_model  # the vector stays as it is
                tally.changed(read[memory.id], model, memory, model)
                _run(
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
            moved = [m for m in memories if _turn_place(m) != _turn_place(read[m.id])]
            if moved:
                places = [*moved, *(read[m.id] for m in moved)]
                wanted = {m.turn_of for m in places if m.turn_of is not None}
                if not wanted <= locked:
                    raise _TurnsToLock(wanted)
                _link_turns(tx, collection, places, tally, locked)
            if learned.states:
                rows = [
                    {"key": key, "value": convert.state_value(key, doc)}
                    for key, doc in learned.states.items()
                ]
                _run(tx, "memory/put_states", collection, items=rows)
            unwritten = [k for k in keys if k not in states and k not in learned.states]
            if unwritten:
                _run(tx, "learn/drop_unwritten_states", collection, keys=unwritten)
            _reinforce(tx, collection, learned.reinforce, tally)
            if learned.events:
                events = [convert.event_row(event) for event in learned.events]
                _run(tx, "memory/append_events", collection, events=events)
                tally.events(event["type"] for event in events)
            tally.write(tx, collection)
            return learned

        while True:
            try:
                return self._write("learn", work)
            except _TurnsToLock as e:
                conversations.update(e.conversations)

    # -- collections ------------------------------------------------------------------

    def warm(self) -> int:
        """Nothing to build: the server keeps the indexes."""
        self._check_open()
        return 0

    def list_collections(self) -> list[str]:
        """Collections holding at least one memory, sorted: one index seek each
        (``memory/list_collections``), all in one read transaction."""

        def work(tx: ManagedTransaction) -> list[str]:
            found: list[str] = []
            while rows := _run(tx, "memory/list_collections", after=found[-1] if found else ""):
                if found and rows[0]["collection"] <= found[-1]:
                    break  # each seek goes past the last one found, or the list ends
                found.append(rows[0]["collection"])
            return found

        return self._read("list collections", work)

    def stats(self, collection: str) -> StoreStats:
        """Counts for one collection, from its counters (:mod:`.counts`): a read of
        a few nodes, whatever its size. ``pending_embeddings`` counts memories with
        no vector at all."""

        def work(tx: ManagedTransaction) -> StoreStats:
            kept = counts.read(tx, collection)
            return counts.stats_of(kept, _run(tx, "memory/stats_compacted_events", collection))

        return self._read("read stats", work)

    def drop_collection(self, collection: str) -> None:
        """Delete every node of the collection with its edges (the memories, hubs,
        event log, decay passes and state documents), ``_WRITE_BATCH`` nodes per
        transaction so that none outgrows the server's transaction memory: a drop
        cut short leaves part of the collection, and running it again finishes
        it. Not part of the store contract: for tests and operators."""
        while True:
            (row,) = self._write(
                "drop a collection's passages",
                _records("memory/drop_passages", {"limit": _WRITE_BATCH}, collection),
            )
            if int(row["deleted"]) < _WRITE_BATCH:
                break
        while True:
            (row,) = self._write(
                "drop a collection",
                _records("memory/drop_collection", {"limit": _WRITE_BATCH}, collection),
            )
            if int(row["deleted"]) < _WRITE_BATCH:
                return

    def verify_connectivity(self) -> None:
        """Reach the server once (within the connection timeout).

        Raises:
            StoreUnavailableError: Neo4j cannot be reached, or refuses the credentials.
        """
        self._check_open()
        with translated("reach Neo4j"):
            self._driver.verify_connectivity()

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

    # -- leases -----------------------------------------------------------------------

    def take_lease(self, name: str, holder: str, ttl_s: float) -> bool:
        """Take the lease ``name`` for ``holder`` (see the contract): its node's
        write lock first, then who holds it, read under that lock, in one write
        transaction; the term runs on the server's clock."""
        check_lease(name, holder, ttl_s)
        ttl_ms = round(ttl_s * 1000)

        def work(tx: ManagedTransaction) -> bool:
            _run(tx, "learn/lock_lease", name=name)
            (row,) = _run(tx, "learn/take_lease", name=name, holder=holder, ttl_ms=ttl_ms)
            return bool(row["taken"])

        return self._write("take a lease", work)

    # -- internals --------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailableError("the Neo4j store is closed")

    def _record_vector(self, record: MemoryRecord) -> Vector | None:
        if record.vector is None:
            return None
        if record.memory.embedding_model is None:
            raise InvalidInputError(
                f"memory {record.memory.id!r} has a vector but no embedding_model",
                field="embedding_model",
            )
        return checks.check_vector(record.vector, record.memory.id)

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
        found an edge committed after its check) runs again, up to
        ``_RACE_RETRIES`` times; still losing, the call fails as unavailable
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
                except Neo4jError as e:
                    if not lost_race(e):
                        raise
                    if attempt > _RACE_RETRIES:
                        raise StoreUnavailableError(
                            f"cannot {action}: it kept colliding with concurrent writes ({e})"
                        ) from e
                    logger.info("%s collided with a concurrent write; running it again", action)


def _through_deleted(reached: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a path of an expansion row steps through a node deleted mid-walk
    (its name reads as null)."""
    return any(step["name"] is None for r in reached for step in r["steps"])


def _usable(query: Vector) -> bool:
    """Whether a query vector can be searched with: finite, not empty, not zero."""
    return bool(query.shape[0] and np.isfinite(query).all() and query.any())


def _check_passages(value: Vector | None, vector: Vector, memory_id: str) -> list[list[float]]:
    """Passage vectors as written (:func:`~hippocampus.store.checks.check_passages`),
    one list of floats each."""
    rows = checks.check_passages(value, vector, memory_id)
    return [] if rows is None else [convert.vector_value(row) for row in rows]


def _hash_point(content_hash: str) -> float | None:
    """Where a content hash lies on the circle of hashes, in [0, 1); ``None`` for
    one that is not hexadecimal (not a hash the engine made)."""
    try:
        return int(content_hash[:16], 16) / 16**16 if len(content_hash) >= 16 else None
    except ValueError:
        return None


def _sample_total(start: str, onward: Sequence[Record], wrapped: Sequence[Record]) -> int:
    """How many memories a sample read from the hash ``start`` stands for: all
    there are when it came back short (it went all the way round); else ``n /
    a``, its ``n`` memories being spread evenly over the arc ``a`` of the circle
    of hashes that it covers."""
    n = len(onward) + len(wrapped)
    if n < CROWDING_SAMPLE:
        return n
    begin, end = _hash_point(start), _hash_point((wrapped or onward)[-1]["hash"])
    if begin is None or end is None:
        return n
    arc = end - begin + (1.0 if wrapped else 0.0)
    return max(n, round(n / arc)) if arc > 0.0 else n


def _passage_item(record: MemoryRecord, vector: Vector | None) -> dict[str, Any]:
    """The ``memory/set_passages`` row of a record: its passages, which need its
    vector (none without one)."""
    if record.passages is not None and vector is None:
        raise InvalidInputError(
            f"memory {record.memory.id!r} has passage vectors but no vector", field="passages"
        )
    return {
        "id": record.memory.id,
        "model": record.memory.embedding_model,
        "passages": _check_passages(record.passages, vector, record.memory.id)
        if vector is not None
        else [],
    }


def _memory_vector_hits(
    tx: ManagedTransaction,
    collection: str,
    query: Vector,
    filters: RecallFilters,
    params: dict[str, Any],
    dimensions: int,
    index_size: Callable[[ManagedTransaction], int],
) -> list[tuple[str, float]]:
    """Top ``params["k"]`` memories by the cosine similarity of their own vector
    (made by ``params["model"]``) among those that pass ``filters``; best first:
    through the vector index when the index's dimension is the query's, else (or
    when the index cannot find them) by exhaustive scan.

    Filters: any-of within ``domains``, ``categories`` and ``tags``, the lists
    AND-ed; ``tiers``; ``exclude_conversation_id`` drops memories whose
    ``retrieval.conversation_ids`` hold it.
    """
    k = int(params["k"])
    row = {**params, "vector": convert.vector_value(query)}
    first = (
        _first_width(tx, collection, filters, str(params["model"]), k, index_size)
        if query.shape[0] == dimensions
        else None
    )
    if first is not None:
        hits = _index_hits(tx, collection, "recall/search_vectors", row, k, _widths(first))
        if hits is not None:
            return hits
    return _exact_hits(tx, collection, row)


def _passage_hits(
    tx: ManagedTransaction,
    collection: str,
    query: Vector,
    params: dict[str, Any],
    dimensions: int,
) -> list[tuple[str, float]]:
    """The top ``params["k"]`` memories by their best passage: through the passage
    vector index, or exhaustively when it cannot answer (as for memory vectors)."""
    k = int(params["k"])
    value = convert.vector_value(query)
    if query.shape[0] == dimensions:
        row = {**params, "vector": value}
        first = min(max(k * _SEARCH_OVERSAMPLE, _MIN_CANDIDATES), _MAX_CANDIDATES)
        hits = _index_hits(tx, collection, "recall/search_passages", row, k, _widths(first))
        if hits is not None:
            return hits
    rows = _run(tx, "recall/search_passages_exact", collection, vector=value, **params)
    return _live_hits(rows)


def _first_width(
    tx: ManagedTransaction,
    collection: str,
    filters: RecallFilters,
    model: str,
    k: int,
    index_size: Callable[[ManagedTransaction], int],
) -> int | None:
    """How many candidates a first search of the memories' vector index asks for,
    or ``None`` when the index cannot find ``k`` memories that pass ``filters``.

    The index holds every collection's vectors, and the collection's counters
    say how many of its memories with a vector of ``model`` pass the category
    and tier filters: their share of the database's memories (an upper bound on
    the index's size) is about their share of any nearest candidates. The first
    search asks for :data:`_SHARE_OVERSAMPLE` times the candidates that should
    hold ``k`` of them (at least :data:`_MIN_CANDIDATES`): twice ``k`` for the
    only collection, 20 times ``k`` for a tenth of the database. ``None`` when
    fewer than ``k`` pass, or so few that even :data:`_MAX_CANDIDATES`
    candidates would hold fewer than ``k``, or when the collection holds no
    more vectors of ``model`` than that first search would ask for: the exact
    scan, which reads only the collection's, answers those at once and for
    less, where the index would be searched wider and wider first.
    ``index_size``: the database's memories (at most :data:`INDEX_SIZE_MAX_AGE_S`
    old); a count behind the truth asks too few at first, and the search widens."""
    passing, vectors = counts.passing(
        counts.read(tx, collection),
        model=model,
        categories=filters.categories,
        tiers=[Tier(t).value for t in filters.tiers],
    )
    if passing < k:
        return None
    indexed = max(index_size(tx), vectors)
    if passing * _MAX_CANDIDATES < k * indexed:
        return None
    wanted = -(-_SHARE_OVERSAMPLE * k * indexed // passing)  # rounded up
    width = min(max(wanted, _MIN_CANDIDATES), _MAX_CANDIDATES)
    return width if width < vectors else None


def _index_hits(
    tx: ManagedTransaction,
    collection: str,
    name: str,
    params: dict[str, Any],
    k: int,
    widths: Sequence[int],
) -> list[tuple[str, float]] | None:
    """The top ``k`` hits of the index search ``name`` (``recall/search_vectors``
    or ``recall/search_passages``), asked for each of ``widths`` candidates in
    turn (see :func:`_widths`) while the filters leave fewer than ``k`` and the
    index has more; ``None`` when the widest search still falls short: only the
    exact scan can answer."""
    index = PASSAGE_INDEX if name == "recall/search_passages" else VECTOR_INDEX
    for candidates in widths:
        answered = _run(tx, name, collection, index=index, candidates=candidates, **params)
        if not answered:
            return []
        hits = _live_hits(answered[0]["hits"])
        if len(hits) >= k or answered[0]["seen"] < candidates:
            return hits
    return None


def _live_hits(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, float]]:
    """``(id, similarity)`` of the hits, without those of a memory deleted while
    the search ran: the index still handed its node over, and a deleted node's
    properties read as null."""
    return [
        (row["id"], float(row["similarity"]))
        for row in rows
        if row["id"] is not None and row["similarity"] is not None
    ]


def _exact_hits(
    tx: ManagedTransaction, collection: str, params: dict[str, Any]
) -> list[tuple[str, float]]:
    """The top hits by exhaustive cosine over the collection's memories."""
    rows = _run(tx, "recall/search_vectors_exact", collection, **params)
    return _live_hits(rows)


def _text_hits(
    tx: ManagedTransaction,
    collection: str,
    terms: list[str],
    params: dict[str, Any],
    k: int,
) -> list[tuple[str, float]]:
    """:meth:`Neo4jStore.search_text`'s answer: the full-text index's candidates
    (widened while the filters leave fewer than ``k`` and more are there),
    scored by BM25 with the collection's counts."""
    n, total = counts.text_statistics(counts.read(tx, collection))
    dfs = counts.document_frequencies(tx, collection, terms) if n and total else []
    if not any(dfs):
        return []
    first = min(max(k * _TEXT_OVERSAMPLE, _MIN_TEXT_CANDIDATES), _MAX_CANDIDATES)
    for candidates in _widths(first):
        (row,) = _run(tx, "recall/search_text", collection, candidates=candidates, **params)
        if len(row["hits"]) >= k or row["seen"] < candidates:
            break
    # A memory deleted after the index handed its node over reads as nulls: its
    # id, its length and how often it holds each term.
    scored = [
        (hit["id"], bm25_score(hit["tfs"], dfs, hit["length"], n, total))
        for hit in row["hits"]
        if hit["id"] is not None and hit["length"] is not None and None not in hit["tfs"]
    ]
    ranked = sorted((hit for hit in scored if hit[1] > 0.0), key=lambda hit: (-hit[1], hit[0]))
    return ranked[:k]


def _widths(first: int) -> list[int]:
    """How many candidates an index search asks for, try after try: ``first``,
    then :data:`_WIDEN` times as many each time, up to :data:`_MAX_CANDIDATES`
    (nothing when ``first`` is past it)."""
    widths = []
    width = first
    while width <= _MAX_CANDIDATES:
        widths.append(width)
        if width == _MAX_CANDIDATES:
            break
        width = min(width * _WIDEN, _MAX_CANDIDATES)
    return widths


def _best_of(
    hits: list[tuple[str, float]], passage_hits: list[tuple[str, float]], k: int
) -> list[tuple[str, float]]:
    """Each memory's best score of its vector's and its passages' (less
    :data:`PASSAGE_MARGIN`), the top ``k``
    (ties by id). Exact: the top ``k`` by the best of two scores lie among the top
    ``k`` by each."""
    best = dict(hits)
    for memory_id, similarity in passage_hits:
        counted = similarity - PASSAGE_MARGIN  # see PASSAGE_MARGIN
        if counted > best.get(memory_id, -2.0):
            best[memory_id] = counted
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))[:k]
    return [(memory_id, min(1.0, max(-1.0, s))) for memory_id, s in ranked]


def _stored(tx: ManagedTransaction, collection: str, memory_id: str) -> Memory | None:
    """The memory as stored now, inside ``tx``."""
    rows = _run(tx, "memory/get_memories", collection, ids=[memory_id])
    return convert.memory_of(rows[0]["doc"], rows[0]["embedding_model"]) if rows else None


def _model_after(record: MemoryRecord, was: Memory) -> str | None:
    """The model of the vector a memory holds once ``record`` replaced it (``was``
    as stored before): the record's with a vector, none when it drops the vector,
    else the one it had."""
    if record.vector is not None:
        return record.memory.embedding_model
    return None if record.drop_vector else was.embedding_model


def _turn_place(memory: Memory) -> tuple[str | None, datetime]:
    return memory.turn_of, checks.utc(memory.occurred_at)


class _TurnsToLock(Exception):
    """Raised inside a transaction that found it must relink turns of
    conversations it has not locked: run it again, these locked first."""

    def __init__(self, conversations: set[str]) -> None:
        super().__init__(f"conversations to lock first: {sorted(conversations)}")
        self.conversations = frozenset(conversations)


def _lock_conversations(
    tx: ManagedTransaction, collection: str, conversations: Iterable[str]
) -> frozenset[str]:
    """Take the write locks of these conversations (``memory/lock_turns``), in
    sorted order; the conversations now locked."""
    locked = frozenset(conversations)
    if locked:
        _run(tx, "memory/lock_turns", collection, conversations=sorted(locked))
    return locked


def _lock_turns(
    tx: ManagedTransaction, collection: str, memories: Iterable[Memory]
) -> frozenset[str]:
    """Lock the conversations these memories are turns of; the ones locked.

    Every write that relinks a conversation's turns holds its lock from before it
    reads their neighbours until it commits, so the writers of one conversation
    relink it one after another and leave one chain. A transaction takes these
    locks first, in sorted order, before any memory's (those it writes, those
    ``learn/lock_memories`` takes): the holder of a conversation may wait for a
    turn's memory, but never the other way round, so none deadlocks."""
    return _lock_conversations(
        tx, collection, {m.turn_of for m in memories if m.turn_of is not None}
    )


def _link_turns(
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
    _lock_conversations(
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
        made = _run_counted(
            tx,
            "memory/link_turns",
            collection,
            places=places,
            at=checks.utc(datetime.now(UTC)),
            weight=SEQUENCE_WEIGHT,
            kind=SEQUENCE_KIND,
        )
        tally.edges(EdgeType.NEXT.value, made.relationships_created - made.relationships_deleted)


def _turns_migrator(collection: str, after: str) -> Callable[[ManagedTransaction], list[Record]]:
    """A transaction function migrating the page of memories after ``after`` (see
    :meth:`Neo4jStore._migrate_turns`). Its NEXT edges are not counted here: the
    migration to version 6 counts each collection afresh."""

    def work(tx: ManagedTransaction) -> list[Record]:
        params = {"after": after, "limit": _WRITE_BATCH}
        rows = _run(tx, "schema/migrate_turns", collection, **params)
        memories = [convert.memory_of(r["doc"], None) for r in rows if r["doc"]]
        _link_turns(tx, collection, memories, Tally())
        return rows

    return work


def _upsert_edges(
    tx: ManagedTransaction, collection: str, rows: Sequence[dict[str, Any]], tally: Tally
) -> None:
    """Run ``memory/upsert_edges`` on ``rows``, one statement per edge type, so
    that the server's counts of what each created are the edges (and hubs) of
    that type it added, for ``tally``."""
    # Sorted: concurrent writes to shared hubs take their locks in one order.
    for edge_type, batch in _by_type(convert.lock_order(rows)):
        made = _run_counted(tx, "memory/upsert_edges", collection, edges=batch)
        tally.created(edge_type, made)


def _replace_hub_edges(
    tx: ManagedTransaction,
    collection: str,
    memory_id: str,
    rows: Sequence[dict[str, Any]],
    tally: Tally,
) -> None:
    """Make ``rows`` the memory's hub edges (and upsert its memory edges among
    them); hubs left without edges go. Counted in ``tally``."""
    (dropped,) = _run(tx, "memory/drop_hub_edges", collection, id=memory_id)
    for edge_type in dropped["types"]:
        tally.edges(edge_type, -1)
    _upsert_edges(tx, collection, rows, tally)
    if dropped["hubs"]:
        for row in _run(tx, "memory/prune_hubs", collection, hubs=dropped["hubs"]):
            tally.hubs(row["kind"], -int(row["n"]))


def _by_type(rows: Sequence[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """``rows`` grouped by their ``type``, each group in the order given."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["type"], []).append(row)
    return list(groups.items())


def _reinforce(
    tx: ManagedTransaction, collection: str, updates: Sequence[EdgeUpdate], tally: Tally
) -> None:
    """Run :meth:`Neo4jStore.reinforce_edges`'s statements in ``tx``, counting the
    edges and hubs they create in ``tally``."""
    rows = convert.lock_order(row for u in updates if (row := convert.update_row(u)) is not None)
    # Consecutive updates alike in `create` go in one statement (one per edge
    # type when they may create: see _upsert_edges); the runs go in order, so the
    # locks are taken in lock order across them and an edge named twice is
    # updated in the order given.
    for create, run in itertools.groupby(rows, key=lambda r: r["create"]):
        batch = list(run)
        if not create:
            _run(tx, "learn/strengthen_edges", collection, updates=batch)
            continue
        for edge_type, typed in _by_type(batch):
            made = _run_counted(tx, "learn/reinforce_edges", collection, updates=typed)
            tally.created(edge_type, made)


def _run(
    tx: ManagedTransaction, which: str, collection: str | None = None, /, **params: Any
) -> list[Record]:
    """Run the statement ``which`` in ``tx`` (with ``$collection`` when given) and
    read all its records."""
    if collection is not None:
        params["collection"] = collection
    return list(tx.run(statement(which), params))


def _one_list(rows: Sequence[Record], key: str) -> list[Any]:
    """The list ``key`` of a statement that answers in one row; empty when it
    answered none (EXPLAIN, a stand-in driver)."""
    return list(rows[0][key]) if rows else []


def _run_counted(tx: ManagedTransaction, which: str, collection: str, /, **params: Any) -> Any:
    """Run the statement ``which`` in ``tx`` for its effect: the server's counts of
    what it created and deleted (``SummaryCounters``)."""
    params["collection"] = collection
    return tx.run(statement(which), params).consume().counters


def _records(
    name: str, params: dict[str, Any], collection: str | None = None
) -> Callable[[ManagedTransaction], list[Record]]:
    """A transaction function running one statement."""

    def work(tx: ManagedTransaction) -> list[Record]:
        return _run(tx, name, collection, **params)

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
    (row,) = _run(tx, "schema/read_schema_version", name=SCHEMA_OWNER)
    version = row["version"]
    return int(version) if version is not None else None


def _some(ids: Sequence[str], shown: int = 5) -> str:
    """A short list of ids for a message."""
    head = ", ".join(repr(i) for i in ids[:shown])
    return head if len(ids) <= shown else f"{head} and {len(ids) - shown} more"
