"""The Neo4j store's hubs (domains, triggers, concepts): found by name or by
the vectors of their names."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from hippocampus.errors import InvalidInputError
from hippocampus.model.association import HubMatch
from hippocampus.store import checks
from hippocampus.store.neo4j import convert
from hippocampus.store.neo4j.connection import Neo4jConnection, one_statement
from hippocampus.store.neo4j.graph_model import HUB_LABELS
from hippocampus.store.records import Vector


class Neo4jHubs(Neo4jConnection):
    """Hubs, and the vectors of their names."""

    def match_hubs(self, collection: str, names: Sequence[str]) -> list[HubMatch]:
        """Hubs of any kind named exactly (no case folding) one of ``names``, with
        similarity 1.0 and their degree; in the order of ``names``, then of kinds
        (Domain, Trigger, Concept)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return []
        rows = self._read(
            "match hubs", one_statement("recall/match_hubs", {"names": wanted}, collection)
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
            one_statement(
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
            one_statement(
                "memory/hubs_without_vectors", {"model": model, "limit": limit}, collection
            ),
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
                one_statement(
                    "memory/set_hub_vectors", {"items": convert.hub_lock_order(rows)}, collection
                ),
            )

    def iter_hub_vectors(self, collection: str) -> Iterator[tuple[str, str, Vector, str]]:
        """``(kind, name, vector, model)`` of every hub that has a name embedding, by
        kind then name."""
        rows = self._read(
            "read hub vectors", one_statement("memory/iter_hub_vectors", {}, collection)
        )
        for row in rows:
            vector = convert.vector_of(row["embedding"])
            yield row["kind"], row["name"], vector, row["embedding_model"]
