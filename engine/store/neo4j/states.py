"""The Neo4j store's state documents: JSON documents by key, per collection."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hippocampus.store.neo4j import convert
from hippocampus.store.neo4j.connection import Neo4jConnection, one_statement


class Neo4jStates(Neo4jConnection):
    """State documents."""

    def get_states(self, collection: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """State documents by key; absent keys are left out."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        rows = self._read(
            "read state", one_statement("memory/get_states", {"keys": wanted}, collection)
        )
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
            self._write(
                "write state", one_statement("memory/put_states", {"items": rows}, collection)
            )

    def list_state_keys(self, collection: str, prefix: str = "") -> list[str]:
        """Keys of state documents starting with ``prefix``, sorted."""
        rows = self._read(
            "list state", one_statement("memory/list_state_keys", {"prefix": prefix}, collection)
        )
        return [row["key"] for row in rows]
