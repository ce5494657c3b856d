"""The stores themselves, for the ``hippo`` commands that work on them rather
than through the engine: creating the Neo4j schema, and copying a collection
from one store to the other."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from hippocampus.config import HippoSettings
from hippocampus.service import PORTABLE_STATE, PORTABLE_STATE_PREFIXES
from hippocampus.store.copy import CopyReport, copy_collection
from hippocampus.store.neo4j import Neo4jStore
from hippocampus.stores import StoreKind, open_store


def vector_dimensions(settings: HippoSettings) -> int:
    """The width of the Neo4j vector index: as configured, else the embedder's."""
    if settings.neo4j.vector_dimensions:
        return settings.neo4j.vector_dimensions
    from hippocampus.embed import make_embedder

    embedder = make_embedder(
        settings.embedder,
        model_path=settings.model_path,
        batch_size=settings.embed_batch_size,
        precision=settings.embed_precision,
    )
    return embedder.dim


def setup_neo4j(settings: HippoSettings, dimensions: int, *, timeout_s: float) -> None:
    """Create the Neo4j schema (constraints, vector and full-text indexes) and wait
    until every index is online."""
    store = open_store(settings, kind="neo4j", dimensions=dimensions)
    assert isinstance(store, Neo4jStore)
    with contextlib.closing(store):
        store.setup(timeout_s=timeout_s)


def migrate(
    settings: HippoSettings,
    collection: str,
    *,
    source: StoreKind,
    target: StoreKind,
    into: str,
    progress: Callable[[int], None] | None = None,
) -> CopyReport:
    """Copy ``collection`` from the ``source`` store to the ``target`` store (as
    ``into``): memories, vectors, edges, hub vectors, events and the learned state
    an engine carries with them."""
    with contextlib.ExitStack() as stack:
        origin = stack.enter_context(contextlib.closing(open_store(settings, kind=source)))
        destination = origin
        if target != source:
            destination = stack.enter_context(
                contextlib.closing(open_store(settings, kind=target))
            )
        for store in {id(origin): origin, id(destination): destination}.values():
            store.check()
        return copy_collection(
            origin,
            destination,
            collection,
            into=into,
            progress=progress,
            states=PORTABLE_STATE,
            state_prefixes=PORTABLE_STATE_PREFIXES,
        )
