"""The Neo4j store: the :class:`~hippocampus.store.GraphStore` contract over the
official driver, every statement a file under ``cypher/``.

Graph model (every edge holds
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

:class:`Neo4jStore` is the union of one class per role of the contract
(:mod:`hippocampus.store.roles`), each in its own module and each on
:class:`~hippocampus.store.neo4j.connection.Neo4jConnection`, which holds the
driver and runs every call's transaction: :mod:`.memories`, :mod:`.turns`,
:mod:`.vectors`, :mod:`.crowding`, :mod:`.text`, :mod:`.hubs`, :mod:`.graph`,
:mod:`.learning`, :mod:`.events`, :mod:`.states`, :mod:`.admin` and
:mod:`.schema`.
"""

from __future__ import annotations

import logging
from types import TracebackType

from neo4j import Driver, GraphDatabase, NotificationDisabledClassification
from neo4j.exceptions import ConfigurationError

from hippocampus.errors import ConfigError
from hippocampus.store.neo4j.admin import Neo4jAdmin
from hippocampus.store.neo4j.crowding import Neo4jCrowding
from hippocampus.store.neo4j.events import Neo4jEvents
from hippocampus.store.neo4j.graph import Neo4jGraph
from hippocampus.store.neo4j.hubs import Neo4jHubs
from hippocampus.store.neo4j.learning import Neo4jLearning
from hippocampus.store.neo4j.memories import Neo4jMemories
from hippocampus.store.neo4j.schema import Neo4jSchema
from hippocampus.store.neo4j.states import Neo4jStates
from hippocampus.store.neo4j.text import Neo4jText
from hippocampus.store.neo4j.turns import Neo4jTurns
from hippocampus.store.neo4j.vectors import Neo4jVectors

logger = logging.getLogger(__name__)

DEFAULT_DIMENSIONS = 384


class Neo4jStore(
    Neo4jMemories,
    Neo4jTurns,
    Neo4jVectors,
    Neo4jCrowding,
    Neo4jText,
    Neo4jHubs,
    Neo4jGraph,
    Neo4jLearning,
    Neo4jEvents,
    Neo4jStates,
    Neo4jAdmin,
    Neo4jSchema,
):
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
      :func:`~hippocampus.store.neo4j.vectors._first_width`); when too few of
      them belong to the collection and pass the filters, it asks for four times
      as many, up to 10,000, before it searches the collection exhaustively. It
      searches exhaustively at once when the query has another dimension, or
      when the collection's counters say that the filter's categories and tiers
      leave too few memories for the index to find.
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

    def __init__(
        self, driver: Driver, *, database: str = "neo4j", dimensions: int = DEFAULT_DIMENSIONS
    ) -> None:
        if dimensions < 1:
            raise ConfigError("the vector dimension must be positive")
        super().__init__(driver, database=database, dimensions=dimensions)
        self._init_crowding()

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
