"""Between engine models and the values the Neo4j statements take and return.

Pure functions: no driver calls. Datetimes go to Neo4j timezone-aware (a naive
one is taken as UTC, as the embedded store does), so every temporal property is
a ``DATETIME`` and compares with every other.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from hippocampus.errors import InvalidInputError
from hippocampus.lexical import tokenize
from hippocampus.model import (
    HUB_EDGE,
    MEMORY_EDGES,
    Edge,
    EdgeType,
    EdgeUpdate,
    Event,
    HubKind,
    Memory,
    RecallFilters,
    Tier,
    speaker_key,
)
from hippocampus.schedule import due_keys
from hippocampus.store.checks import utc
from hippocampus.store.records import Vector

_MAX_QUERY_TERMS = 256  # well under Lucene's 1024 clauses per query
_TAG_CHARS = 8
"""Hex digits of a collection's tag (:func:`tagged`): another collection with the
same tag only adds candidates the search then filters out."""
_HUB_TYPES = frozenset(t.value for t in HUB_EDGE.values())


def maybe_utc(moment: datetime | None) -> datetime | None:
    return utc(moment) if moment is not None else None


def native(value: Any) -> Any:
    """A value read from Neo4j as plain Python: temporal values become ``datetime``."""
    to_native = getattr(value, "to_native", None)
    return to_native() if callable(to_native) else value


def native_datetime(value: Any) -> datetime | None:
    moment = native(value)
    if moment is None:
        return None
    if not isinstance(moment, datetime):
        raise TypeError(f"expected a datetime from Neo4j, got {type(moment).__name__}")
    return moment


def vector_value(vector: Vector) -> list[float]:
    """A vector as the statements take it: a list of floats (float32 values,
    exactly), which they store as a float32 array (``db.create.setNodeVectorProperty``):
    written with ``SET``, a list of floats becomes 64-bit floats, twice the size."""
    values: list[float] = vector.astype(np.float64).tolist()
    return values


def vector_of(values: Sequence[float]) -> Vector:
    """A stored vector back as float32 (exact: the values came from float32).
    Read as float64 first: numpy converts a list of Python floats to float64
    more than twice as fast as to float32, and a recall converts a few hundred."""
    vector: Vector = np.array(values, dtype=np.float64).astype(np.float32)
    return vector


def memory_properties(
    memory: Memory, vector: Vector | None, *, with_vector: bool = True
) -> dict[str, Any]:
    """Every property of a Memory node. ``doc`` holds the memory whole (read back as
    is); the other properties are copies for queries, indexes and Neo4j Browser,
    and its due dates for resurfacing (:func:`due_properties`).
    ``embedding_model`` is the model of ``vector`` (``None`` without one); with
    ``with_vector`` false, neither it nor ``embedding`` is included."""
    r = memory.retrieval
    model = memory.embedding_model if vector is not None else None
    doc = memory.model_copy(update={"embedding_model": model}) if with_vector else memory
    props: dict[str, Any] = {
        "collection": memory.collection,
        "id": memory.id,
        "content": memory.content,
        "category": memory.category,
        "importance": memory.importance,
        "tier": Tier(memory.tier).value,
        "source": memory.source,
        "tags": list(memory.tags),
        "created_at": utc(memory.created_at),
        "updated_at": utc(memory.updated_at),
        "occurred_at": utc(memory.occurred_at),
        "speaker": memory.speaker,
        "turn_of": memory.turn_of,
        "content_hash": memory.content_hash,
        "domains": list(r.domains),
        "triggers": list(r.triggers),
        "concepts": list(r.concepts),
        "confidence": r.confidence,
        "usage_count": r.usage_count,
        "last_used": maybe_utc(r.last_used),
        "recent_dismissals": r.recent_dismissals,
        "irrelevant_contexts": list(r.irrelevant_contexts),
        "quality_score": r.quality_score,
        "usefulness": r.usefulness,
        "conversation_ids": list(r.conversation_ids),
        "synthesized_from": list(r.synthesized_from),
        "superseded_by": list(r.superseded_by),
        "doc": doc.model_dump_json(),
        "terms": text_terms(memory.collection, memory.content),
    }
    props.update(due_properties(memory))
    if with_vector:
        props["embedding"] = vector_value(vector) if vector is not None else None
        props["embedding_model"] = model
    return props


def due_properties(memory: Memory) -> dict[str, int]:
    """The due dates and spans (microseconds) a Memory node keeps for resurfacing
    (:func:`hippocampus.schedule.due_keys`; the value is ``confidence * importance``,
    which the node holds already): part of every write of a memory's
    properties, :func:`memory_properties`."""
    keys = due_keys(memory)
    return {
        "seed_due": keys.seed_due,
        "seed_span": keys.seed_span,
        "fsrs_due": keys.fsrs_due,
        "fsrs_span": keys.fsrs_span,
    }


def memory_of(doc: str, embedding_model: str | None) -> Memory:
    """A memory read back: its document, with the model of the vector the store
    holds (which re-embedding changes without rewriting the document)."""
    memory = Memory.model_validate_json(doc)
    if memory.embedding_model != embedding_model:
        memory = memory.model_copy(update={"embedding_model": embedding_model})
    return memory


def memories_of(rows: Iterable[Mapping[str, Any]]) -> list[Memory]:
    """The memories of rows read outside a lock (``doc`` and ``embedding_model``),
    less those deleted while being read: a node matched by its index and then
    deleted by a concurrent transaction reads back with null properties."""
    return [memory_of(r["doc"], r["embedding_model"]) for r in rows if r["doc"] is not None]


def vectors_of(rows: Iterable[Mapping[str, Any]]) -> dict[str, Vector]:
    """The vectors of rows read outside a lock (``id`` and ``embedding``) by id,
    less those of memories deleted while being read (see :func:`memories_of`)."""
    return {memory_id: vector for memory_id, _, vector in model_vectors_of(rows)}


def model_vectors_of(
    rows: Iterable[Mapping[str, Any]], model: str | None = None
) -> list[tuple[str, str | None, Vector]]:
    """``(id, model, vector)`` of rows read outside a lock (``id``, ``embedding``
    and, when read, ``embedding_model``; else the model is ``model``), less those
    of memories deleted while being read (see :func:`memories_of`)."""
    return [
        (r["id"], r.get("embedding_model") or model, vector_of(r["embedding"]))
        for r in rows
        if r.get("id") is not None and r.get("embedding") is not None
    ]


def edge_row(edge: Edge, created: datetime | None = None) -> dict[str, Any] | None:
    """The ``upsert_edges`` row of an edge, ASSOCIATED oriented from its smaller id;
    ``None`` for a memory edge from a memory to itself. ``created`` dates an edge
    given no ``created_at``."""
    source, target = edge.source, edge.target
    edge_type = EdgeType(edge.type)
    if edge_type in MEMORY_EDGES:
        if source == target:
            return None
        if edge_type is EdgeType.ASSOCIATED and target < source:
            source, target = target, source
    given = edge.created_at if edge.created_at is not None else created
    return {
        "source": source,
        "type": edge_type.value,
        "target": target,
        "weight": edge.weight,
        "co_occurrences": edge.co_occurrences,
        "last_co_occurred": maybe_utc(edge.last_co_occurred),
        "kind": edge.kind,
        "created_at": maybe_utc(given),
    }


def lock_order(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Edge rows (:func:`edge_row`, :func:`update_row`) in the order their statement
    should write them: by type (so by hub kind), target, then source. A statement
    MERGEs hubs and edges row by row, each taking its locks, so two writers of
    the same hubs in different orders can each hold what the other waits for (a
    deadlock: one is rolled back and retried). In one order they queue instead.
    Stable: rows of one edge keep the order given."""
    return sorted(rows, key=lambda row: (row["type"], row["target"], row["source"]))


def hub_lock_order(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows naming hubs by ``kind`` and ``name`` in the order :func:`lock_order`
    reaches the hubs: by the type of edge to their kind, then name."""
    return sorted(rows, key=lambda row: (HUB_EDGE[HubKind(row["kind"])].value, row["name"]))


def edge_rows(edges: Iterable[Edge], created: datetime | None = None) -> list[dict[str, Any]]:
    """Rows of ``edges`` for ``upsert_edges``, one per edge, in :func:`lock_order`: of an
    edge named twice the last wins, keeping the latest creation date given."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for edge in edges:
        row = edge_row(edge, created)
        if row is None:
            continue
        key = (row["source"], row["type"], row["target"])
        held = rows.pop(key, None)
        if held is not None and row["created_at"] is None:
            row["created_at"] = held["created_at"]
        rows[key] = row
    return lock_order(rows.values())


def record_edge_rows(memory: Memory, edges: Sequence[Edge]) -> list[dict[str, Any]]:
    """Rows of a record's edges, which must all leave its memory; an edge given no
    creation date is dated by its memory's."""
    for edge in edges:
        if edge.source != memory.id:
            raise InvalidInputError(
                f"an edge of memory {memory.id!r} leaves {edge.source!r}", field="edges"
            )
    return edge_rows(edges, memory.created_at)


def edge_of(source: str, row: Mapping[str, Any]) -> Edge:
    """An edge read back (a row of ``edges_of`` or an entry of ``iter_edges``)."""
    return Edge(
        source=source,
        type=EdgeType(row["type"]),
        target=row["target"],
        weight=row["weight"],
        co_occurrences=row["co_occurrences"] or 0,
        last_co_occurred=native_datetime(row["last_co_occurred"]),
        created_at=native_datetime(row["created_at"]),
        kind=row["kind"],
    )


def update_row(update: EdgeUpdate) -> dict[str, Any] | None:
    """The ``reinforce_edges`` row of an update, oriented as stored; ``None`` for a
    memory edge from a memory to itself."""
    source, target = update.source, update.target
    edge_type = EdgeType(update.type)
    if edge_type.value not in _HUB_TYPES:
        if source == target:
            return None
        if edge_type is EdgeType.ASSOCIATED and target < source:
            source, target = target, source
    return {
        "source": source,
        "type": edge_type.value,
        "target": target,
        "delta": update.delta,
        "cap": update.cap,
        "initial": update.initial,
        "at": utc(update.at),
        "kind": update.kind,
        "create": update.create,
    }


def event_row(event: Event) -> dict[str, Any]:
    """An event as ``append_events`` takes it: the payload as JSON text (Neo4j has no
    map properties), its ``conversation_id`` beside it for queries."""
    data = event.model_dump(mode="json")
    conversation = event.payload.get("conversation_id")
    return {
        "type": event.type,
        "at": utc(event.at),
        "memory_ids": list(event.memory_ids),
        "payload": json.dumps(data["payload"], separators=(",", ":"), ensure_ascii=False),
        "conversation_id": conversation if isinstance(conversation, str) else None,
    }


def event_of(row: Mapping[str, Any]) -> Event:
    at = native_datetime(row["at"])
    return Event(
        type=row["type"],
        at=at,
        memory_ids=list(row["memory_ids"] or []),
        payload=json.loads(row["payload"]) if row["payload"] else {},
    )


def state_value(key: str, document: Mapping[str, Any]) -> str:
    """A state document as its ``State`` node holds it: JSON text (Neo4j has no map
    properties), written as the embedded store writes it.

    Raises:
        InvalidInputError: the document is not plain JSON (a value JSON cannot
            hold, or a float that is not finite).
    """
    try:
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"state {key!r} is not a JSON document: {e}", field="items") from e


def state_of(value: str) -> dict[str, Any]:
    """A state document read back."""
    document: dict[str, Any] = json.loads(value)
    return document


def filter_params(filters: RecallFilters) -> dict[str, Any]:
    """The filter parameters every search statement takes."""
    return {
        "tiers": [Tier(t).value for t in filters.tiers],
        "categories": list(filters.categories),
        "domains": list(filters.domains),
        "tags": list(filters.tags),
        "exclude_conversation_id": filters.exclude_conversation_id,
        "occurred_after": maybe_utc(filters.occurred_after),
        "occurred_before": maybe_utc(filters.occurred_before),
        "speakers": [speaker_key(s) for s in filters.speakers],
    }


def tagged(collection: str, terms: Sequence[str]) -> list[str]:
    """Terms as the full-text index holds them: each behind a tag of its collection.

    Lucene scores a term by how many documents of the whole index hold it; a term
    tagged with its collection is held only by that collection's documents, so
    the index finds a collection's memories alone, and ranks them by the
    collection's own document frequencies (``recall/search_text`` explains the
    rest). The tag is hex and terms are letters and digits, so a tagged term is
    one whitespace-free word that Lucene's query syntax reads as itself.
    """
    tag = hashlib.sha256(collection.encode()).hexdigest()[:_TAG_CHARS]
    return [f"{tag}_{term}" for term in terms]


def text_terms(collection: str, content: str) -> list[str]:
    """A memory's ``terms`` property: its content's terms, :func:`tagged`."""
    return tagged(collection, tokenize(content))


def text_query(collection: str, text: str) -> tuple[list[str], list[str]]:
    """The distinct terms of a lexical query (:func:`tokenize`, first come first),
    at most :data:`_MAX_QUERY_TERMS`, and the same terms :func:`tagged`: the
    words of a full-text query that matches any of them."""
    terms = list(dict.fromkeys(tokenize(text)))[:_MAX_QUERY_TERMS]
    return terms, tagged(collection, terms)
