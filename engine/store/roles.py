"""The store contract every backend implements, cut by role.

Each role is a small protocol over one kind of object (memories, vectors,
text, hubs, the graph, learning, events, state, the store as a whole), with the
collection on every call: no call ever crosses collections. :class:`GraphStore`
is all of them; code that needs one role can name that role alone. Nothing
above ``engine/store/`` knows which implementation it holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from hippocampus.model import Edge, EdgeType, Event, Memory, RecallFilters
from hippocampus.model.association import Anchor, EdgeUpdate, ExpandParams, Expansion, HubMatch
from hippocampus.schedule import IndexedSchedule
from hippocampus.store.records import (
    EdgeEnds,
    LearnChange,
    Learned,
    MemoryRecord,
    StoreStats,
    Vector,
)


class MemoryRole(Protocol):
    """Memories: written, read, edited and deleted; found by hash, by due date
    and in conversation order."""

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


class VectorRole(Protocol):
    """Vectors: dense search, stored vectors and passages, crowding, and the
    memories still to embed."""

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
        """How crowded each given memory's neighbourhood is: the mean similarity
        of its :data:`~hippocampus.dense.CROWDING_NEIGHBOURS` nearest other
        memories of the collection (vectors of ``model``), measured against an
        even sample of the collection (:func:`~hippocampus.dense.crowding_of`).
        Memories without a vector of ``model`` are left out. A store may measure
        against a sample up to a minute old, and with vectors it read a moment
        ago for the same recall (dense search's, the similarities'): a recall
        asks for crowding after those, not beside them."""
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


class TextRole(Protocol):
    """Lexical search over the memories' content."""

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


class HubRole(Protocol):
    """Hubs (domains, triggers, concepts): matched by name, searched by their names' vectors."""

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


class GraphRole(Protocol):
    """The graph as recall walks it and as it is read and written edge by edge."""

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

    def edges_of(self, collection: str, memory_id: str) -> list[Edge]:
        """Edges leaving the memory, and ASSOCIATED edges reaching it."""
        ...

    def upsert_edges(self, collection: str, edges: Sequence[Edge]) -> None:
        """Create or overwrite edges (weights and counters as given). Hub nodes are
        created when absent; edges whose memory does not exist are skipped."""
        ...


class LearningRole(Protocol):
    """What learning writes: edges reinforced and decayed, and atomic learning updates."""

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


class EventRole(Protocol):
    """The collection's append-only event log."""

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


class StateRole(Protocol):
    """Small JSON documents kept beside the graph."""

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


class AdminRole(Protocol):
    """The store as a whole: its collections, readiness, counts, leases and lifetime."""

    def reads_side_by_side(self, collection: str) -> bool:
        """Whether two reads of ``collection`` started at once finish sooner than
        one after the other: true for a database server (the reads wait on the
        network and run on its cores) and for a store whose searches run in
        libraries that leave the interpreter free; false where reads run in
        Python on the caller's own CPU and would only take turns. A recall then
        does the reads that do not wait on each other side by side (the text
        search beside the vector search, and more:
        :func:`hippocampus.retrieve.pipeline.retrieve`)."""
        ...

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


@runtime_checkable
class GraphStore(
    MemoryRole,
    VectorRole,
    TextRole,
    HubRole,
    GraphRole,
    LearningRole,
    EventRole,
    StateRole,
    AdminRole,
    Protocol,
):
    """Durable storage of memories, their vectors, edges and the event log: every role."""
