"""The embedded store's vectors (:class:`~hippocampus.store.roles.VectorRole`):
searched in the in-memory index, stored and read back in SQLite, with passages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np

from hippocampus.errors import InvalidInputError
from hippocampus.model import Memory, RecallFilters
from hippocampus.store.checks import check_passages, check_vector
from hippocampus.store.embedded import tables
from hippocampus.store.embedded.base import EmbeddedBase
from hippocampus.store.records import Vector

_SELECT_PENDING = """
SELECT doc FROM memories
WHERE collection = ?
  AND (vector IS NULL OR vector_model IS NOT ? OR length(vector) != ?)
ORDER BY created_at, rowid
LIMIT ?
"""


class EmbeddedVectors(EmbeddedBase):
    """Vector search over the in-memory index; vectors and passages in SQLite."""

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
        memory scores the best similarity of its vector and its passages' (the
        filters apply to the memory).

        Filters: any-of within ``domains``, ``categories`` and ``tags``, the lists
        AND-ed; ``tiers`` (empty: every tier); ``exclude_conversation_id`` drops
        memories whose ``retrieval.conversation_ids`` hold it. A query whose
        dimension differs from the model's vectors finds nothing.
        """
        self._check_open()
        return self._index(collection).search(
            vector, model=model, k=k, filters=filters, passages=passages
        )

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
        """:meth:`search_vectors` for each row of ``vectors`` (one result list per
        row, in order), sharing one pass over the index where the filters allow."""
        self._check_open()
        return self._index(collection).search_many(
            vectors, model=model, k=k, filters=filters, passages=passages
        )

    def set_vectors(
        self,
        collection: str,
        items: Sequence[tuple[str, Vector, str]],
        *,
        at: datetime | None = None,
        passages: Mapping[str, Vector] | None = None,
    ) -> None:
        """Store ``(memory_id, vector, model)`` for existing memories (re-embedding),
        stamped ``embedding_generated_at = at``, each with its passages
        ``passages[memory_id]`` (none when absent: stored passages go). Ids that no
        longer exist are skipped.

        Raises:
            InvalidInputError: a vector that is not a finite one-dimensional array,
                passages that are not a finite 2-D array of the vector's dimension,
                or an empty model name.
        """
        if not items:
            return
        checked: list[tuple[str, Vector, str]] = []
        rows_of: dict[str, Vector] = {}
        for memory_id, vector, model in items:
            if not model:
                raise InvalidInputError("a vector needs the name of its model", field="model")
            checked.append((memory_id, check_vector(vector, memory_id), model))
            rows = check_passages((passages or {}).get(memory_id), checked[-1][1], memory_id)
            if rows is not None:
                rows_of[memory_id] = rows
        with self._write_lock:
            index = self._index(collection)
            # The index mirrors the table under the write lock: it knows which ids exist.
            known = [item for item in checked if item[0] in index]
            if not known:
                return
            with self._transaction("store vectors") as conn:
                stamp = at.isoformat() if at is not None else None
                conn.executemany(
                    "UPDATE memories SET vector = ?, vector_model = ?,"
                    " doc = json_set(doc, '$.embedding_model', ?, '$.embedding_generated_at', ?)"
                    " WHERE collection = ? AND id = ?",
                    [(v.tobytes(), m, m, stamp, collection, i) for i, v, m in known],
                )
                tables.delete_passages(conn, collection, [i for i, _, _ in known])
                tables.write_passages(
                    conn,
                    collection,
                    [
                        (collection, i, n, m, row.tobytes())
                        for i, _, m in known
                        if i in rows_of
                        for n, row in enumerate(rows_of[i], start=1)
                    ],
                )
                rebuild = tables.record_dims(conn, index, [(m, v.shape[0]) for i, v, m in known])
            if rebuild:
                self._indexes[collection] = self._build_index(collection)
                index.close(save=False)
            else:
                index.set_vectors(known, rows_of)

    def graph_state(self, collection: str) -> dict[str, tuple[int, int]]:
        """Per model whose vectors have a graph for approximate search: ``(vectors
        in the graph, vectors waiting for it)``. Beyond the contract."""
        return self._index(collection).graph_state()

    def wait_for_graphs(self, collection: str, timeout_s: float | None = None) -> bool:
        """Block until every vector of the collection that waits for a graph is in
        it; ``False`` on timeout. Beyond the contract (benchmarks, tests)."""
        return self._index(collection).wait_for_graphs(timeout_s)

    def get_vectors(self, collection: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors of the given memories (those that have one), as given to
        the store (not normalized)."""
        found: dict[str, Vector] = {}
        with self._reading("read vectors") as conn:
            for chunk in tables.chunks(list(dict.fromkeys(ids))):
                marks = ", ".join("?" * len(chunk))
                for memory_id, blob in conn.execute(
                    f"SELECT id, vector FROM memories WHERE collection = ? AND id IN ({marks})"
                    " AND vector IS NOT NULL",
                    (collection, *chunk),
                ):
                    found[memory_id] = np.frombuffer(blob, dtype=np.float32).copy()
        return found

    def similarities(
        self, collection: str, ids: Sequence[str], vector: Vector, *, model: str
    ) -> dict[str, float]:
        """The cosine similarity to ``vector`` of the given memories' own vectors of
        ``model``, from the in-memory index (the rows dense search reads)."""
        self._check_open()
        return self._index(collection).similarities(ids, vector, model=model)

    def crowding(self, collection: str, ids: Sequence[str], *, model: str) -> dict[str, float]:
        """How crowded the given memories' neighbourhoods are, from the in-memory
        index (its sample is evenly spaced rows of the model's vectors, drawn again
        after any of them changes)."""
        self._check_open()
        return self._index(collection).crowding(ids, model=model)

    def get_passages(self, collection: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored passage vectors (2-D, in order, as given) of the given memories
        that have any."""
        found: dict[str, list[bytes]] = {}
        with self._reading("read passage vectors") as conn:
            for chunk in tables.chunks(list(dict.fromkeys(ids))):
                marks = ", ".join("?" * len(chunk))
                for memory_id, blob in conn.execute(
                    f"SELECT memory_id, vector FROM passages WHERE collection = ?"
                    f" AND memory_id IN ({marks}) ORDER BY memory_id, n",
                    (collection, *chunk),
                ):
                    found.setdefault(memory_id, []).append(blob)
        return {
            memory_id: np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
            for memory_id, blobs in found.items()
        }

    def pending_embeddings(self, collection: str, model: str, limit: int) -> list[Memory]:
        """Memories with no vector, a vector from another model, or one of ``model``
        whose dimension is not that of its newest vector; oldest first."""
        if limit <= 0:
            return []
        dim = self._index(collection).dim_of(model)
        with self._reading("list pending embeddings") as conn:
            rows = conn.execute(
                _SELECT_PENDING,
                (collection, model, dim * 4 if dim is not None else None, limit),
            ).fetchall()
        return [Memory.model_validate_json(row[0]) for row in rows]

    def count_pending_embeddings(self, collection: str, model: str) -> int:
        """How many memories :meth:`pending_embeddings` would list with no limit: those
        the index holds no vector of ``model`` for."""
        index = self._index(collection)
        return len(index) - index.vector_count(model)
