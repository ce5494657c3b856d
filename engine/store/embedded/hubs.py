"""The embedded store's hubs (:class:`~hippocampus.store.roles.HubRole`): matched by
name and searched by name embedding in the in-memory graph; name embeddings stored
in SQLite."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from hippocampus.errors import InvalidInputError
from hippocampus.model import HubKind
from hippocampus.model.association import HubMatch
from hippocampus.store.checks import check_vector
from hippocampus.store.embedded import graph_sql
from hippocampus.store.embedded.base import EmbeddedBase
from hippocampus.store.records import Vector

_HUB_KINDS = frozenset(kind.value for kind in HubKind)


class EmbeddedHubs(EmbeddedBase):
    """Hubs and their name embeddings, from the in-memory graph and SQLite."""

    def match_hubs(self, collection: str, names: Sequence[str]) -> list[HubMatch]:
        """Hubs of any kind named exactly (no case folding) one of ``names``, with
        similarity 1.0 and their degree; in the order of ``names``, then of kinds
        (Domain, Trigger, Concept)."""
        return [
            HubMatch(kind=kind, name=name, similarity=1.0, degree=degree)
            for kind, name, degree in self._graph(collection).hub_degrees(names)
        ]

    def search_hubs(
        self, collection: str, vector: Vector, *, model: str, k: int, min_similarity: float
    ) -> list[HubMatch]:
        """Up to ``k`` hubs whose name embedding by ``model`` has cosine similarity of
        at least ``min_similarity`` with ``vector``; best first, ties by kind and
        name. A vector whose dimension differs from the model's finds nothing."""
        found = self._graph(collection).search_hub_vectors(
            np.asarray(vector, dtype=np.float32), model, k, min_similarity
        )
        return [
            HubMatch(kind=kind, name=name, similarity=similarity, degree=degree)
            for kind, name, similarity, degree in found
        ]

    def hubs_without_vectors(
        self, collection: str, model: str, limit: int
    ) -> list[tuple[str, str]]:
        """``(kind, name)`` of up to ``limit`` hubs with no name embedding from
        ``model``, by kind then name."""
        if limit <= 0:
            return []
        with self._reading("list hubs without vectors") as conn:
            return graph_sql.hubs_without_vectors(conn, collection, model, limit)

    def set_hub_vectors(
        self, collection: str, items: Sequence[tuple[str, str, Vector, str]]
    ) -> None:
        """Store ``(kind, name, vector, model)`` name embeddings of existing hubs;
        others are skipped. A hub holds one vector: one of another model is
        replaced. A model has one dimension per collection, that of its latest
        vector: its vectors of another size are dropped (and listed again by
        :meth:`hubs_without_vectors`).

        Raises:
            InvalidInputError: an unknown hub kind, an empty model name, or a vector
                that is not a finite one-dimensional array.
        """
        checked: list[tuple[str, str, Vector, str]] = []
        for kind, name, vector, model in items:
            if kind not in _HUB_KINDS:
                raise InvalidInputError(f"{kind!r} is not a hub kind", field="kind")
            if not model:
                raise InvalidInputError("a vector needs the name of its model", field="model")
            checked.append((kind, name, check_vector(vector, f"{kind} {name}"), model))
        if not checked:
            return
        with self._write_lock:
            graph = self._graph(collection)
            known = [item for item in checked if graph.has_hub(item[0], item[1])]
            dims: dict[str, int | None] = {}
            rows = []
            for kind, name, vector, model in known:
                current = dims.get(model, graph.hub_vectors.dim_of(model))
                dims[model] = vector.shape[0]
                resized = current is not None and current != vector.shape[0]
                rows.append((kind, name, vector.tobytes(), model, resized))
            if not rows:
                return
            with self._transaction("store hub vectors") as conn:
                graph_sql.set_hub_vectors(conn, collection, rows)
            for kind, name, vector, model in known:
                graph.put_hub_vector(kind, name, vector, model)

    def iter_hub_vectors(self, collection: str) -> Iterator[tuple[str, str, Vector, str]]:
        """``(kind, name, vector, model)`` of every hub that has a name embedding, by
        kind then name; vectors as given."""
        with self._reading("read hub vectors") as conn:
            rows = conn.execute(
                "SELECT kind, name, vector, vector_model FROM hubs"
                " WHERE collection = ? AND vector IS NOT NULL ORDER BY kind, name",
                (collection,),
            ).fetchall()
        for kind, name, blob, model in rows:
            yield kind, name, np.frombuffer(blob, dtype=np.float32).copy(), model
