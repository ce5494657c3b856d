"""The Neo4j store's vectors: dense search of memories and their passages
through the vector indexes (widened, else exhaustive, when the filters leave too
few), storing and reading vectors, similarities, and memories pending
embedding."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from neo4j import ManagedTransaction

from hippocampus.dense import PASSAGE_MARGIN
from hippocampus.errors import InvalidInputError
from hippocampus.model import Memory, RecallFilters, Tier
from hippocampus.store import checks
from hippocampus.store.neo4j import convert, counts
from hippocampus.store.neo4j.connection import (
    Neo4jConnection,
    one_list,
    one_statement,
    run_statement,
)
from hippocampus.store.neo4j.counts import Tally
from hippocampus.store.neo4j.schema import PASSAGE_INDEX, VECTOR_INDEX
from hippocampus.store.neo4j.sizes import Sizes
from hippocampus.store.records import Vector

_SEARCH_OVERSAMPLE = 10
"""Passage searches ask for ``k`` times this many candidates first."""
_SHARE_OVERSAMPLE = 2
"""A first search of the memories' vector index asks for this many times the
candidates among which the collection's share of the index, filtered by
category and tier, should hold ``k`` (see :func:`_first_width`)."""
_MIN_CANDIDATES = 100
MAX_CANDIDATES = 10_000
_WIDEN = 4
"""How much wider each next index search is, when the filters left too few hits."""


class Neo4jVectors(Neo4jConnection):
    """Dense search, and the vectors of memories."""

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

        mark = self._recent.mark(collection)
        read: list[tuple[str, str | None, Vector]] = []

        def work(tx: ManagedTransaction) -> list[tuple[str, float]]:
            # One transaction for both searches: one snapshot, one round of
            # begin and commit the fewer.
            read.clear()  # the driver may run this function again
            hits = _memory_vector_hits(
                tx, collection, query, filters, params, self._dimensions, self._sizes, read
            )
            if not passages:
                return hits
            found = _passage_hits(tx, collection, query, params, self._dimensions)
            return _best_of(hits, found, k)

        found = self._read("search vectors", work)
        self._recent.keep(collection, mark, read)
        return found

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
                candidates = _first_width(tx, collection, filters, model, k, self._sizes)
            if candidates is not None:
                answered = run_statement(
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
                        tx,
                        collection,
                        "recall/search_vectors",
                        row,
                        k,
                        candidate_widths(candidates)[1:],
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
            rest = passage_values((passages or {}).get(memory_id), checked, memory_id)
            passage_items.append({"id": memory_id, "model": model, "passages": rest})
        if not rows:
            return

        ids = sorted({row["id"] for row in rows})

        def work(tx: ManagedTransaction) -> None:
            # Locked before they are read: a learning update of them waits, and
            # the counts move from what they hold.
            run_statement(tx, "memory/lock_memories", collection, ids=ids)
            found = {
                row["id"]: convert.memory_of(row["doc"], row["embedding_model"])
                for row in run_statement(tx, "memory/get_memories", collection, ids=ids)
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
            run_statement(tx, "memory/set_vectors", collection, items=rows)
            run_statement(tx, "memory/set_passages", collection, items=passage_items)
            tally.write(tx, collection)

        self._write("store vectors", work)
        self._memories_written(collection, ids)

    def get_vectors(self, collection: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors of the given memories (those that have one), as given:
        those read a moment ago (:mod:`.recent`) from memory."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        found = self._recent.take(collection, wanted, None)
        unread = [memory_id for memory_id in wanted if memory_id not in found]
        if unread:
            mark = self._recent.mark(collection)
            rows = self._read(
                "read vectors", one_statement("memory/get_vectors", {"ids": unread}, collection)
            )
            read = convert.model_vectors_of(one_list(rows, "vectors"))
            self._recent.keep(collection, mark, read)
            found.update((memory_id, vector) for memory_id, _, vector in read)
        return {memory_id: found[memory_id] for memory_id in wanted if memory_id in found}

    def similarities(
        self, collection: str, ids: Sequence[str], vector: Vector, *, model: str
    ) -> dict[str, float]:
        """The cosine similarity to ``vector`` of the given memories' own vectors of
        ``model``, computed by the server (``memory/similarities``). The vectors
        come too, for the recall's crowding to take (:mod:`.recent`)."""
        wanted = list(dict.fromkeys(ids))
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if not wanted or not _usable(query):
            return {}
        params = {"ids": wanted, "vector": convert.vector_value(query), "model": model}
        mark = self._recent.mark(collection)
        rows = self._read(
            "read similarities", one_statement("memory/similarities", params, collection)
        )
        hits = one_list(rows, "hits")
        self._recent.keep(collection, mark, convert.model_vectors_of(hits, model))
        return dict(_live_hits(hits))

    def get_passages(self, collection: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored passage vectors (2-D, in order, as given) of the given memories
        that have any."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = self._read(
            "read passage vectors",
            one_statement("memory/get_passages", {"ids": wanted}, collection),
        )
        return {
            row["id"]: np.array(row["passages"], dtype=np.float64).astype(np.float32)
            for row in rows
            if row["passages"]
        }

    def pending_embeddings(self, collection: str, model: str, limit: int) -> list[Memory]:
        """Memories with no vector, or a vector from another model, oldest first."""
        if limit <= 0:
            return []
        rows = self._read(
            "list pending embeddings",
            one_statement(
                "memory/pending_embeddings", {"model": model, "limit": limit}, collection
            ),
        )
        return convert.memories_of(rows)

    def count_pending_embeddings(self, collection: str, model: str) -> int:
        """How many memories :meth:`pending_embeddings` would list with no limit, from
        the collection's counters (:mod:`.counts`)."""
        kept = self._read("count pending embeddings", lambda tx: counts.read(tx, collection))
        return counts.pending(kept, model)


def _usable(query: Vector) -> bool:
    """Whether a query vector can be searched with: finite, not empty, not zero."""
    return bool(query.shape[0] and np.isfinite(query).all() and query.any())


def passage_values(value: Vector | None, vector: Vector, memory_id: str) -> list[list[float]]:
    """Passage vectors as written (:func:`~hippocampus.store.checks.check_passages`),
    one list of floats each."""
    rows = checks.check_passages(value, vector, memory_id)
    return [] if rows is None else [convert.vector_value(row) for row in rows]


def _memory_vector_hits(
    tx: ManagedTransaction,
    collection: str,
    query: Vector,
    filters: RecallFilters,
    params: dict[str, Any],
    dimensions: int,
    sizes: Sizes,
    read: list[tuple[str, str | None, Vector]] | None = None,
) -> list[tuple[str, float]]:
    """Top ``params["k"]`` memories by the cosine similarity of their own vector
    (made by ``params["model"]``) among those that pass ``filters``; best first:
    through the vector index when the index's dimension is the query's, else (or
    when the index cannot find them) by exhaustive scan.

    Filters: any-of within ``domains``, ``categories`` and ``tags``, the lists
    AND-ed; ``tiers``; ``exclude_conversation_id`` drops memories whose
    ``retrieval.conversation_ids`` hold it.

    ``read``: where the hits' vectors go, ``(id, model, vector)``, when the
    index found them (it hands them over with the hits).
    """
    k = int(params["k"])
    row = {**params, "vector": convert.vector_value(query)}
    first = (
        _first_width(tx, collection, filters, str(params["model"]), k, sizes)
        if query.shape[0] == dimensions
        else None
    )
    if first is not None:
        hits = _index_hits(
            tx, collection, "recall/search_vectors", row, k, candidate_widths(first), read
        )
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
        first = min(max(k * _SEARCH_OVERSAMPLE, _MIN_CANDIDATES), MAX_CANDIDATES)
        hits = _index_hits(
            tx, collection, "recall/search_passages", row, k, candidate_widths(first)
        )
        if hits is not None:
            return hits
    rows = run_statement(tx, "recall/search_passages_exact", collection, vector=value, **params)
    return _live_hits(rows)


def _first_width(
    tx: ManagedTransaction,
    collection: str,
    filters: RecallFilters,
    model: str,
    k: int,
    sizes: Sizes,
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
    fewer than ``k`` pass, or so few that even :data:`MAX_CANDIDATES`
    candidates would hold fewer than ``k``, or when the collection holds no
    more vectors of ``model`` than that first search would ask for: the exact
    scan, which reads only the collection's, answers those at once and for
    less, where the index would be searched wider and wider first.
    ``sizes``: the counters and the database's memories as the store last read
    them (at most :data:`~hippocampus.store.neo4j.sizes.MAX_AGE_S` old); a count
    behind the truth asks too few at first, and the search widens."""
    passing, vectors = counts.passing(
        sizes.counters(tx, collection),
        model=model,
        categories=filters.categories,
        tiers=[Tier(t).value for t in filters.tiers],
    )
    if passing < k:
        return None
    indexed = max(sizes.memories(tx), vectors)
    if passing * MAX_CANDIDATES < k * indexed:
        return None
    wanted = -(-_SHARE_OVERSAMPLE * k * indexed // passing)  # rounded up
    width = min(max(wanted, _MIN_CANDIDATES), MAX_CANDIDATES)
    return width if width < vectors else None


def _index_hits(
    tx: ManagedTransaction,
    collection: str,
    name: str,
    params: dict[str, Any],
    k: int,
    widths: Sequence[int],
    read: list[tuple[str, str | None, Vector]] | None = None,
) -> list[tuple[str, float]] | None:
    """The top ``k`` hits of the index search ``name`` (``recall/search_vectors``
    or ``recall/search_passages``), asked for each of ``widths`` candidates in
    turn (see :func:`candidate_widths`) while the filters leave fewer than ``k`` and the
    index has more; ``None`` when the widest search still falls short: only the
    exact scan can answer. ``read`` (``recall/search_vectors`` only): where the
    answering search's vectors go, ``(id, model, vector)``."""
    index = PASSAGE_INDEX if name == "recall/search_passages" else VECTOR_INDEX
    for candidates in widths:
        answered = run_statement(tx, name, collection, index=index, candidates=candidates, **params)
        if not answered:
            return []
        hits = _live_hits(answered[0]["hits"])
        if len(hits) >= k or answered[0]["seen"] < candidates:
            if read is not None:
                read.extend(convert.model_vectors_of(answered[0]["hits"], str(params["model"])))
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
    rows = run_statement(tx, "recall/search_vectors_exact", collection, **params)
    return _live_hits(rows)


def candidate_widths(first: int) -> list[int]:
    """How many candidates an index search asks for, try after try: ``first``,
    then :data:`_WIDEN` times as many each time, up to :data:`MAX_CANDIDATES`
    (nothing when ``first`` is past it)."""
    widths = []
    width = first
    while width <= MAX_CANDIDATES:
        widths.append(width)
        if width == MAX_CANDIDATES:
            break
        width = min(width * _WIDEN, MAX_CANDIDATES)
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
