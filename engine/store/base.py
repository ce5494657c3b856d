"""The store contract every backend implements.

Small and grouped by object (memories, vectors, edges, events, collections),
with the collection on every call: no call ever crosses collections. Nothing
above ``engine/store/`` knows which implementation it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from hippocampus.errors import InvalidInputError
from hippocampus.model import Edge, EdgeType, Event, Memory, RecallFilters
from hippocampus.model.association import Anchor, EdgeUpdate, ExpandParams, Expansion, HubMatch
from hippocampus.schedule import IndexedSchedule

Vector = npt.NDArray[np.float32]

EdgeEnds = tuple[str, str, str, float]
"""An edge's ``(source, type, target, weight)``: :meth:`GraphStore.iter_edge_ends`."""


PASSAGE_MARGIN = 0.15
"""How much better than its memory's own vector a later passage must match the
query to count: dense search scores a memory ``max(vector's similarity, best
passage's similarity - PASSAGE_MARGIN)``. A long memory has many passages, and
the best of many matches a query well by chance more often than one does: on
beam-100k's long assistant messages the plain maximum cost dense R@10 eight
points (short turns were crowded out), the margin nothing, and a passage that
answers the query clearly still lifts its memory."""


CROWDING_NEIGHBOURS = 50
"""How many nearest neighbours measure how crowded a memory's neighbourhood is
(:meth:`GraphStore.crowding`)."""
CROWDING_SAMPLE = 512
"""How many of a collection's vectors, spread evenly over it, stand for the whole
collection when crowding is measured: a recall compares its candidates with
these, never with every memory."""


@dataclass(frozen=True)
class VectorSample:
    """Stored vectors of one model spread evenly over a collection (what
    :meth:`GraphStore.crowding` measures against): the memories' ids, their vectors at unit
    length (one row each, in the order of ``ids``), and how many memories of the
    collection have a vector of that model (``total``; the sample is all of them
    when it is as long; a store that does not count them estimates it)."""

    ids: list[str]
    vectors: npt.NDArray[np.float32]
    total: int
    position: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "position", {mid: i for i, mid in enumerate(self.ids)})


def crowding_of(
    ids: Sequence[str], units: npt.NDArray[np.float32], sample: VectorSample, neighbours: int
) -> dict[str, float]:
    """The crowding of memories ``ids`` (their unit vectors the rows of ``units``):
    the mean similarity of each one's ``neighbours`` nearest other memories,
    estimated from ``sample``. When the sample holds s of the collection's n
    vectors, a memory's nearest ``round(neighbours × s / n)`` of the sample (at
    least one) stand for its nearest ``neighbours``. A memory is never its own
    neighbour; nothing is measured against a sample of fewer than two vectors."""
    size = len(sample.ids)
    if size < 2 or not ids or units.shape[1] != sample.vectors.shape[1]:
        return {}
    # Pair by pair in this thread, not by a BLAS matrix product: that hands the
    # work to BLAS's threads, which then spin on the cores the rest of the
    # recall needs (see engine.store.embedded.index.similarities).
    sims = np.vecdot(units[:, None, :], sample.vectors[None, :, :])
    for row, mid in enumerate(ids):
        column = sample.position.get(mid)
        if column is not None:
            sims[row, column] = -np.inf
    k = min(max(1, round(neighbours * size / max(sample.total, size))), size - 1)
    nearest = np.partition(sims, size - k, axis=1)[:, size - k :]
    return dict(zip(ids, nearest.mean(axis=1).tolist(), strict=True))


def passage_score(similarity: float, best_passage: float) -> float:
    """A memory's dense score from its vector's similarity and its best later
    passage's (see :data:`PASSAGE_MARGIN`)."""
    return max(similarity, best_passage - PASSAGE_MARGIN)


@dataclass(frozen=True)
class MemoryRecord:
    """A memory as written: the memory, its vector (``None`` when it has none yet:
    ``memory.embedding_model`` is then ``None`` too) and its outgoing edges.

    ``drop_vector`` is for :meth:`GraphStore.replace_memory` only: the stored
    vector goes too (it described content that changed and no new vector could be
    made), so the memory is pending re-embedding. It cannot come with a vector.

    ``passages`` are the vectors of a long memory's passages after its first (the
    first passage's vector is ``vector``): 2-D, one row per passage in order, of
    the same model and dimension as ``vector``, which they need. Dense search
    scores a memory by the best of ``vector`` and its passages. They are written
    with ``vector`` and replaced with it: a record with a vector and no passages
    leaves the memory none.

    ``keep_learned`` and ``keep_tier`` are for :meth:`GraphStore.replace_memory`
    too: an edit made from an earlier read keeps what learning recorded in the
    stored memory meanwhile (:func:`~hippocampus.model.memory.with_learning_of`; with
    ``keep_tier`` as well, its tier and ``promoted_at``), taken inside the write's
    transaction, so an edit never undoes a concurrent learning update.
    """

    memory: Memory
    vector: Vector | None = None
    edges: Sequence[Edge] = field(default_factory=tuple)
    drop_vector: bool = False
    passages: Vector | None = None
    keep_learned: bool = False
    keep_tier: bool = False


@dataclass(frozen=True)
class Learned:
    """What one learning update writes (see :meth:`GraphStore.learn`), all in one
    transaction.

    Attributes:
        memories: memories with changed metadata (confidence, counts, review,
            tier, the conversations a merged repeat came from, ...). Their content,
            vector and hub edges are as read: a learning update changes what was
            learned about a memory, never what it says. A memory whose place
            among its conversation's turns changes is relinked there.
        states: state documents to write, by key.
        reinforce: edge reinforcements (:meth:`GraphStore.reinforce_edges`).
        events: appended to the collection's event log.
    """

    memories: Sequence[Memory] = ()
    states: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    reinforce: Sequence[EdgeUpdate] = ()
    events: Sequence[Event] = ()


LearnChange = Callable[[Mapping[str, Memory], Mapping[str, dict[str, Any]]], Learned]
"""A learning update: given the memories and state documents it named, as stored
now (absent ones left out), what to write. It may run more than once (a store
runs a transaction that lost a race again) and must depend on nothing but its
arguments; it raises to write nothing."""


class StoreStats(BaseModel):
    """Counts a store can give cheaply for one collection."""

    memories: int = 0
    by_category: dict[str, int] = Field(default_factory=dict)
    by_tier: dict[str, int] = Field(default_factory=dict)
    pending_embeddings: int = 0
    hubs: dict[str, int] = Field(default_factory=dict)
    edges: dict[str, int] = Field(default_factory=dict)
    events: int = 0
    """Events ever appended, those compacted away included (as ``events_by_type``)."""
    events_by_type: dict[str, int] = Field(default_factory=dict)
    events_retained: int = 0
    """Events the log still holds (what :meth:`GraphStore.iter_events` yields)."""
    quality_scored: int = 0
    quality_sum: float = 0.0
    """Memories with a quality score, and the sum of their scores (kept as a
    running total where the store can)."""


@runtime_checkable
class GraphStore(Protocol):
    """Durable storage of memories, their vectors, edges and the event log."""

    parallel_reads: bool
    """Whether two reads started at once finish sooner than one after the other:
    true for a database server (the reads wait on the network and run on its
    cores), false for a store that reads on the caller's own CPU. A recall then
    does the reads that do not wait on each other side by side (the text search
    beside the vector search, and more: :func:`hippocampus.retrieve.pipeline.retrieve`)."""

    # -- memories ---------------------------------------------------------------

    def add_memories(self, collection: str, records: Sequence[MemoryRecord]) -> None:
        """Insert new memories with their vectors and edges, all or nothing.

        Hub nodes named by the edges are created when absent. When this returns
        the write is durable.

        Raises:
            ConflictError: a memory with one of these ids already exists in the
                collection (nothing is written).
        """
        ...

    def get_memories(self, collection: str, ids: Sequence[str]) -> dict[str, Memory]:
        """The memories among ``ids`` that exist in the collection, by id."""
        ...

    def replace_memory(self, collection: str, record: MemoryRecord, *, replace_edges: bool) -> None:
        """Overwrite an existing memory. The vector is replaced when
        ``record.vector`` is given, removed with ``record.drop_vector`` (the memory
        then has no ``embedding_model`` and is listed by :meth:`pending_embeddings`
        until :meth:`set_vectors` gives it one) and kept otherwise; with
        ``replace_edges`` the memory's hub edges (IN_DOMAIN, HAS_TRIGGER, ABOUT)
        become ``record.edges``.

        Raises:
            NotFoundError: no such memory in the collection.
            InvalidInputError: ``record.drop_vector`` with a vector.
        """
        ...

    def delete_memory(self, collection: str, memory_id: str) -> bool:
        """Remove a memory with every edge that touches it. ``False`` if absent."""
        ...

    def iter_memories(self, collection: str) -> Iterator[Memory]:
        """Every memory of the collection, oldest first."""
        ...

    def find_by_hash(self, collection: str, content_hash: str) -> list[str]:
        """Ids of memories whose normalized content hashes to ``content_hash``."""
        ...

    def due_memories(
        self, collection: str, *, schedule: IndexedSchedule, now: datetime, limit: int
    ) -> list[Memory]:
        """Active memories due for spaced repetition at ``now``, from the due dates
        the store keeps with every memory (:func:`hippocampus.schedule.due_keys`,
        stored by every write) under ``schedule`` (the built-in scheduler of that
        name, standard parameters): those due at or before ``now``, the most
        valuable first (``DueKeys.value``), then the most overdue (urgency
        ``1 + (now - due) / span``), then by id; the first ``limit``. Served by
        an index on the due dates, never a scan of the collection's documents.

        Raises:
            InvalidInputError: an unknown schedule.
        """
        ...

    def neighbour_turns(
        self, collection: str, ids: Sequence[str], *, before: int, after: int
    ) -> dict[str, tuple[list[str], list[str]]]:
        """The conversation order around memories.

        A memory with conversation ids is a turn of its first one
        (``Memory.turn_of``); a conversation's turns are ordered by
        ``(occurred_at, id)`` and linked in that order by ``NEXT`` edges, which
        every write keeps in step (a turn inserted out of order is spliced in; a
        turn deleted, or moved by a new ``occurred_at``, is stepped over).

        Returns:
            For each of ``ids`` that is a turn: the ids of up to ``before`` turns
            just before it and up to ``after`` just after it, each list in the
            order they happened. Ids that are no turn (or absent) are left out.
        """
        ...

    # -- vectors ----------------------------------------------------------------

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
        by ``model`` and that pass ``filters``; best first. With ``passages`` a
        memory that has passages (:attr:`MemoryRecord.passages`) scores the best
        similarity of its vector and its passages; without, its vector's."""
        ...

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
        """:meth:`search_vectors` for each row of a 2-D ``vectors``: one list per row,
        in order. A store may answer them in one pass (remembering a batch checks
        every new memory against the stored ones)."""
        ...

    def set_vectors(
        self,
        collection: str,
        items: Sequence[tuple[str, Vector, str]],
        *,
        at: datetime | None = None,
        passages: Mapping[str, Vector] | None = None,
    ) -> None:
        """Store ``(memory_id, vector, model)`` for existing memories (re-embedding).
        Ids that no longer exist are skipped. Each memory's ``embedding_generated_at``
        becomes ``at`` (``None``: not known).

        Each item replaces the memory's whole embedding: its passages become
        ``passages[memory_id]`` (2-D, as :attr:`MemoryRecord.passages`), or none
        when it is not there.
        """
        ...

    def get_vectors(self, collection: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors of the given memories (those that have one)."""
        ...

    def similarities(
        self, collection: str, ids: Sequence[str], vector: Vector, *, model: str
    ) -> dict[str, float]:
        """The cosine similarity to ``vector`` of each given memory's own stored
        vector of ``model`` (its passages aside), as dense search scores it; those
        without a vector of ``model`` (or of ``vector``'s dimension) are left out,
        and a zero or non-finite ``vector`` finds none. Where the vectors are
        (a server) the similarities are computed, and only they come back."""
        ...

    def crowding(self, collection: str, ids: Sequence[str], *, model: str) -> dict[str, float]:
        """How crowded each given memory's neighbourhood is: the mean similarity of
        its :data:`CROWDING_NEIGHBOURS` nearest other memories of the collection
        (vectors of ``model``), measured against an even sample of the collection
        (:func:`crowding_of`). Memories without a vector of ``model`` are left out.
        A store may measure against a sample up to a minute old."""
        ...

    def get_passages(self, collection: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored passage vectors (:attr:`MemoryRecord.passages`, 2-D, in order) of
        the given memories that have any."""
        ...

    def pending_embeddings(self, collection: str, model: str, limit: int) -> list[Memory]:
        """Memories with no vector, or a vector from another model, oldest first."""
        ...

    def count_pending_embeddings(self, collection: str, model: str) -> int:
        """How many memories :meth:`pending_embeddings` would list with no limit."""
        ...

    # -- lexical ----------------------------------------------------------------

    def search_text(
        self, collection: str, query: str, *, k: int, filters: RecallFilters
    ) -> list[tuple[str, float]]:
        """Top ``k`` memories by lexical relevance of their content to ``query``
        (BM25 in the embedded store, the full-text index in Neo4j), among those
        that pass ``filters``; best first, scores > 0 only."""
        ...

    def text_neighbours(self, collection: str, text: str, *, k: int) -> list[str]:
        """Up to ``k`` memories of any tier sharing words with ``text``, likeliest
        first by the store's own full-text relevance: candidates for a duplicate
        check, which compares the texts themselves. Cheaper than
        :meth:`search_text` where scoring exactly costs (Neo4j: Lucene's order,
        no term counts read); the embedded store ranks them by its BM25."""
        ...

    # -- hubs -------------------------------------------------------------------

    def match_hubs(self, collection: str, names: Sequence[str]) -> list[HubMatch]:
        """Hub nodes of any kind whose name is one of ``names`` (similarity 1.0),
        with their degree (memories linked)."""
        ...

    def search_hubs(
        self, collection: str, vector: Vector, *, model: str, k: int, min_similarity: float
    ) -> list[HubMatch]:
        """Hub nodes whose name embedding (by ``model``) is most similar to
        ``vector``, at least ``min_similarity``; best first."""
        ...

    def hubs_without_vectors(
        self, collection: str, model: str, limit: int
    ) -> list[tuple[str, str]]:
        """``(kind, name)`` of hub nodes with no name embedding from ``model``."""
        ...

    def set_hub_vectors(
        self, collection: str, items: Sequence[tuple[str, str, Vector, str]]
    ) -> None:
        """Store ``(kind, name, vector, model)`` name embeddings of existing hubs."""
        ...

    def iter_hub_vectors(self, collection: str) -> Iterator[tuple[str, str, Vector, str]]:
        """``(kind, name, vector, model)`` of every hub that has a name embedding, by
        kind then name."""
        ...

    # -- graph ------------------------------------------------------------------

    def expand(
        self,
        collection: str,
        anchors: Sequence[Anchor],
        *,
        params: ExpandParams,
        filters: RecallFilters,
        paths: bool = True,
    ) -> list[Expansion]:
        """Walk weighted edges from the anchors (see :class:`ExpandParams`) and
        return the memories reached that pass ``filters``, strongest first. A
        memory anchor itself is not returned through its own anchor. With
        ``paths=False`` the expansions carry no paths (``anchors`` still counts
        them): a recall that explains nothing need not build them."""
        ...

    def reinforce_edges(self, collection: str, updates: Sequence[EdgeUpdate]) -> None:
        """Apply reinforcements set-based, in one transaction. Updates whose
        memories do not exist are skipped; hub nodes are created when absent."""
        ...

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
        """One decay pass: every edge of the ``types`` (``None``: of every type)
        whose ``last_co_occurred`` (or, never reinforced, its creation) is before
        ``unused_before`` loses ``step``, never below ``floor``. Idempotent per
        ``period``: a second pass with a period already applied to this
        collection changes nothing and returns 0.

        Returns:
            How many edges were decayed.
        """
        ...

    def iter_edges(self, collection: str) -> Iterator[Edge]:
        """Every edge of the collection (each ASSOCIATED edge once)."""
        ...

    def iter_edge_ends(self, collection: str) -> Iterator[EdgeEnds]:
        """``(source, type, target, weight)`` of every edge of the collection, as
        :meth:`iter_edges` gives them (each ASSOCIATED edge once, ordered by
        source, type, target), without building an :class:`Edge` of each: what
        whole-graph figures read (graph health), where a million edges made into
        objects cost more than the figures."""
        ...

    # -- edges ------------------------------------------------------------------

    def edges_of(self, collection: str, memory_id: str) -> list[Edge]:
        """Edges leaving the memory, and ASSOCIATED edges reaching it."""
        ...

    def upsert_edges(self, collection: str, edges: Sequence[Edge]) -> None:
        """Create or overwrite edges (weights and counters as given). Hub nodes are
        created when absent; edges whose memory does not exist are skipped."""
        ...

    # -- events -----------------------------------------------------------------

    def append_events(self, collection: str, events: Sequence[Event]) -> None:
        """Append to the collection's event log."""
        ...

    def iter_events(self, collection: str) -> Iterator[Event]:
        """The collection's event log, in the order it was appended."""
        ...

    def compact_events(
        self, collection: str, *, before: datetime | None = None, keep: int | None = None
    ) -> int:
        """Drop events the log need not keep: those appended before ``before`` (by
        the store's clock, whatever time the event itself names), and beyond the
        newest ``keep`` (in the order they were appended) the older ones. ``None``
        leaves a bound off. The totals :meth:`stats` reports (``events``,
        ``events_by_type``) do not change: they count every event appended,
        dropped or not; ``events_retained`` counts those still held.

        Returns:
            How many events were dropped.

        Raises:
            InvalidInputError: a negative ``keep``.
        """
        ...

    # -- state ----------------------------------------------------------------------

    def get_states(self, collection: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Small JSON documents the engine keeps beside the graph (conversation
        state, surfacings, learned models, the bookkeeping of maintenance
        passes), by key; absent keys are left out. Kept in the store so that
        several API processes share them."""
        ...

    def put_states(self, collection: str, items: Mapping[str, dict[str, Any]]) -> None:
        """Write state documents (replacing those with the same keys) in one
        transaction."""
        ...

    def list_state_keys(self, collection: str, prefix: str = "") -> list[str]:
        """Keys of the collection's state documents that start with ``prefix``
        (all of them with none), sorted. Lets a collection's learned state (its
        conversations and surfacings, one document each) be listed and moved."""
        ...

    # -- learning -----------------------------------------------------------------

    def learn(
        self,
        collection: str,
        *,
        memory_ids: Sequence[str] = (),
        state_keys: Sequence[str] = (),
        change: LearnChange,
    ) -> Learned:
        """Apply one learning update atomically: lock the memories and state
        documents named against every other writer (other threads and other
        processes sharing the store), read them as they are now, and write what
        ``change`` makes of them (:class:`Learned`) in one transaction, before
        any other update of them reads them.

        So counts, confidence, review state, surfacing records and learned models
        never lose an update to a concurrent one, in any number of processes:
        each update is applied to the state the one before it left. The rules
        themselves stay in Python, written once (:mod:`hippocampus.learn`,
        :mod:`hippocampus.surface.rules`); the store makes each application of them
        serial. Edge reinforcements are set-based increments, bounded by their
        caps, as :meth:`reinforce_edges` applies them.

        Returns:
            What was written.

        Raises:
            whatever ``change`` raised (nothing is written).
            InvalidInputError: ``change`` returned a memory that was not named
                or not found, or changed a memory's content.
        """
        ...

    # -- collections ------------------------------------------------------------

    def list_collections(self) -> list[str]:
        """Collections holding at least one memory."""
        ...

    def warm(self) -> int:
        """Make every collection ready to serve before its first request: a store
        that builds in-process indexes on first use builds them all now (a server
        runs this in the background as it starts); one that keeps none does
        nothing.

        Returns:
            How many collections it made ready.
        """
        ...

    def stats(self, collection: str) -> StoreStats: ...

    # -- leases -----------------------------------------------------------------

    def take_lease(self, name: str, holder: str, ttl_s: float) -> bool:
        """Take the lease ``name`` for ``holder`` for ``ttl_s`` seconds when no one
        holds it, its term has run out, or ``holder`` holds it already (its term
        then starts again). Atomic against every process sharing the store: of
        holders asking at once, one gets it. A lease is the store's, not a
        collection's: it lets one of several API processes run a job for the
        whole store (the maintenance round) while the others skip it.

        Returns:
            Whether ``holder`` holds the lease now.

        Raises:
            InvalidInputError: an empty name or holder, or a negative term.
        """
        ...

    def check(self) -> None:
        """Raise StoreUnavailableError if the store cannot serve right now."""
        ...

    def close(self) -> None:
        """Release files, locks and connections. Idempotent."""
        ...


def check_learned(collection: str, read: Mapping[str, Memory], learned: Learned) -> None:
    """What a :data:`LearnChange` returned, checked alike by every store against
    the memories it was given.

    Raises:
        InvalidInputError: see :meth:`GraphStore.learn`.
    """
    for memory in learned.memories:
        was = read.get(memory.id)
        if was is None or memory.collection != collection:
            raise InvalidInputError(
                f"memory {memory.id!r} was not read for this update", field="memory_ids"
            )
        if (memory.content_hash, memory.content) != (was.content_hash, was.content):
            raise InvalidInputError(
                f"memory {memory.id!r}: a learning update cannot change its content",
                field="memories",
            )


def check_decay_pass(period: str, step: float, floor: float) -> None:
    """The arguments of :meth:`GraphStore.decay_edges`, checked alike by every store.

    Raises:
        InvalidInputError: an empty period, a negative step, or a floor outside
            [0, 1].
    """
    if not period:
        raise InvalidInputError("a decay pass needs a period", field="period")
    if step < 0.0:
        raise InvalidInputError("the decay step must not be negative", field="step")
    if not 0.0 <= floor <= 1.0:
        raise InvalidInputError("the decay floor must lie in [0, 1]", field="floor")


def check_lease(name: str, holder: str, ttl_s: float) -> None:
    """The arguments of :meth:`GraphStore.take_lease`, checked alike by every store.

    Raises:
        InvalidInputError: an empty name or holder, or a negative term.
    """
    if not name:
        raise InvalidInputError("a lease needs a name", field="name")
    if not holder:
        raise InvalidInputError("a lease needs a holder", field="holder")
    if not ttl_s >= 0.0:
        raise InvalidInputError("a lease's term must not be negative", field="ttl_s")
