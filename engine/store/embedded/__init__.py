"""The embedded store: SQLite (WAL) plus an in-memory vector index, zero setup."""

from hippocampus.store.embedded.store import EmbeddedStore

__all__ = ["EmbeddedStore"]
