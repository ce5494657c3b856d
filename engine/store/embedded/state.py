"""The embedded store's state documents (:class:`~hippocampus.store.roles.StateRole`):
small JSON documents by key, in SQLite."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hippocampus.store.embedded import tables
from hippocampus.store.embedded.base import EmbeddedBase


class EmbeddedState(EmbeddedBase):
    """State documents by key, in SQLite."""

    def get_states(self, collection: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """State documents by key; absent keys are left out."""
        with self._reading("read state") as conn:
            return tables.read_states(conn, collection, list(dict.fromkeys(keys)))

    def put_states(self, collection: str, items: Mapping[str, dict[str, Any]]) -> None:
        """Write state documents in one transaction, replacing same-key ones."""
        if not items:
            return
        rows = tables.state_rows(collection, items)
        with self._write_lock, self._transaction("write state") as conn:
            conn.executemany(tables.UPSERT_STATE, rows)

    def list_state_keys(self, collection: str, prefix: str = "") -> list[str]:
        """Keys of state documents starting with ``prefix``, sorted."""
        with self._reading("list state") as conn:
            rows = conn.execute(
                "SELECT key FROM states WHERE collection = ? AND substr(key, 1, ?) = ?"
                " ORDER BY key",
                (collection, len(prefix), prefix),
            ).fetchall()
        return [key for (key,) in rows]
