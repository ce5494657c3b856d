"""Copy a collection from one store to another, over the store contract alone.

Any two :class:`~hippocampus.store.GraphStore` implementations will do (embedded
to Neo4j and back, or a collection to a new name in the same store). Copied, in
this order: memories with their vectors and passage vectors (each memory whole: tier, retrieval
metadata such as merged duplicates, quality score and review state), then every
edge (weights, counters and dates as they are; conflicts included), then hub
name vectors, then the event log (the events it holds: those its retention
dropped are counted in the source's totals only), then the state documents the
caller names, by key or by a key prefix (``list_state_keys``: conversations,
surfacings).
The decay passes already applied are not: the first pass in the target runs
even if the source ran one for the same period.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import TypeVar

from pydantic import BaseModel

from hippocampus.errors import ConflictError
from hippocampus.model import Memory
from hippocampus.store.records import MemoryRecord
from hippocampus.store.roles import GraphStore

_T = TypeVar("_T")

BATCH = 500


class CopyReport(BaseModel):
    """What :func:`copy_collection` wrote into the target."""

    memories: int = 0
    vectors: int = 0
    passages: int = 0
    edges: int = 0
    hub_vectors: int = 0
    events: int = 0
    states: int = 0


def copy_collection(
    source: GraphStore,
    target: GraphStore,
    collection: str,
    *,
    into: str | None = None,
    batch_size: int = BATCH,
    progress: Callable[[int], None] | None = None,
    states: Sequence[str] = (),
    state_prefixes: Sequence[str] = (),
) -> CopyReport:
    """Copy ``collection`` of ``source`` into ``target`` (as ``into``, by default the
    same name): memories, vectors, edges, hub vectors and events, nothing lost,
    and the state documents under ``states`` (others are not copied: see the
    module's docstring).

    Each batch is written in one call, all or nothing; a copy that stops half way
    leaves the batches written so far (copy into a fresh collection again).

    Args:
        source: the store read.
        target: the store written.
        collection: the collection copied.
        into: its name in the target.
        batch_size: memories (and edges, events) per write.
        progress: called with the number of memories in each batch written.
        states: keys of state documents to copy (those the source has), such as
            a learned model.
        state_prefixes: state documents whose keys start with one of these are
            copied too (a conversation's state, a surfacing record).

    Raises:
        ConflictError: the target collection already holds memories.
    """
    name = into or collection
    if next(iter(target.iter_memories(name)), None) is not None:
        raise ConflictError(
            f"{name!r} already holds memories in the target store; copy into an empty collection",
            field="collection",
        )
    report = CopyReport()
    for memories in _batches(source.iter_memories(collection), batch_size):
        ids = [m.id for m in memories]
        vectors = source.get_vectors(collection, ids)
        passages = source.get_passages(collection, ids)
        records = [
            MemoryRecord(
                memory=_moved(memory, name),
                vector=vectors.get(memory.id),
                passages=passages.get(memory.id) if memory.id in vectors else None,
            )
            for memory in memories
        ]
        target.add_memories(name, records)
        report.memories += len(records)
        report.vectors += sum(1 for r in records if r.vector is not None)
        report.passages += sum(r.passages.shape[0] for r in records if r.passages is not None)
        if progress is not None:
            progress(len(records))
    for edges in _batches(source.iter_edges(collection), batch_size):
        target.upsert_edges(name, edges)
        report.edges += len(edges)
    for hubs in _batches(source.iter_hub_vectors(collection), batch_size):
        target.set_hub_vectors(name, hubs)
        report.hub_vectors += len(hubs)
    for events in _batches(source.iter_events(collection), batch_size):
        target.append_events(name, events)
        report.events += len(events)
    keys = list(states)
    for prefix in state_prefixes:
        keys.extend(source.list_state_keys(collection, prefix))
    for chunk in _batches(dict.fromkeys(keys), batch_size):
        documents = source.get_states(collection, chunk)
        if documents:
            target.put_states(name, documents)
            report.states += len(documents)
    return report


def _moved(memory: Memory, collection: str) -> Memory:
    if memory.collection == collection:
        return memory
    return memory.model_copy(update={"collection": collection})


def _batches(items: Iterable[_T], size: int) -> Iterator[list[_T]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch
