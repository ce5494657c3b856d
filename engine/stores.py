"""Open the store the settings name. Only entry points call this: library classes
take explicit arguments."""

from __future__ import annotations

from typing import Literal

from hippocampus.config import HippoSettings
from hippocampus.store.roles import GraphStore

StoreKind = Literal["embedded", "neo4j"]


def open_store(
    settings: HippoSettings, *, kind: StoreKind | None = None, dimensions: int | None = None
) -> GraphStore:
    """The store of ``kind`` (default: ``settings.store``), configured by ``settings``.

    Args:
        settings: the configuration.
        kind: which store; the configured one when absent.
        dimensions: the embedding model's vector dimension, for the Neo4j vector
            index; ``settings.neo4j.vector_dimensions`` wins when set, 384 when
            neither is given.

    Raises:
        ConfigError: settings the store cannot use.
        DataDirLockedError: another process owns the embedded data directory.
        StoreUnavailableError: the embedded data directory cannot be opened.
    """
    if (kind or settings.store) == "embedded":
        from hippocampus.store.embedded import EmbeddedStore

        return EmbeddedStore(
            settings.data_dir,
            synchronous=settings.sqlite_synchronous,
            approximate_from=settings.approximate_from,
            snapshot_from=settings.snapshot_from,
            text_candidates_from=settings.text_candidates_from,
        )
    from hippocampus.store.neo4j import Neo4jStore
    from hippocampus.store.neo4j.store import DEFAULT_DIMENSIONS

    neo4j = settings.neo4j
    return Neo4jStore.connect(
        neo4j.uri,
        user=neo4j.user,
        password=neo4j.password,
        database=neo4j.database,
        dimensions=neo4j.vector_dimensions or dimensions or DEFAULT_DIMENSIONS,
        max_retry_s=neo4j.max_retry_s,
        timeout_s=neo4j.timeout_s,
    )
