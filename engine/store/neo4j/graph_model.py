"""The graph the Neo4j store writes: labels, relationship types, property keys.

Derived from the pydantic models and enums of :mod:`hippocampus.model`, plus the few
keys only the store keeps (listed in :data:`STORE_PROPERTY_KEYS` with what each
holds). The Cypher lint checks every statement against :func:`lint_schema`, so a
misspelled label, relationship type or property fails the build.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from hippocampus.model import HUB_EDGE, MEMORY_EDGES, Edge, EdgeType, Event, HubKind, Memory
from hippocampus.model.association import MEMORY_NODE
from hippocampus.model.memory import RetrievalMeta

MEMORY_LABEL = MEMORY_NODE
HUB_LABELS: tuple[str, ...] = tuple(kind.value for kind in HubKind)
EVENT_LABEL = Event.__name__
DECAY_PASS_LABEL = "DecayPass"
"""One node per decay pass applied to a collection: passes are idempotent per period."""
SCHEMA_VERSION_LABEL = "SchemaVersion"
"""One node naming the version of the schema :meth:`Neo4jStore.setup` last applied."""
STATE_LABEL = "State"
"""One node per state document of a collection (``GraphStore.get_states``), by key."""
EVENT_LOG_LABEL = "EventLog"
"""One node per collection holding the number its next event gets."""
PASSAGE_LABEL = "Passage"
"""One node per passage of a long memory after its first, with its vector."""
COMPACTED_EVENTS_LABEL = "CompactedEvents"
"""One node per collection and event type counting the events the retention
dropped from the log (the log's totals count them still)."""
LEASE_LABEL = "Lease"
"""One node per lease (``GraphStore.take_lease``): who holds it, until when."""
TURN_ORDER_LABEL = "TurnOrder"
"""One node per conversation of a collection (by ``turn_of``): the lock that
writers of its turns' NEXT edges take, one after another."""
COUNT_LABEL = "Count"
"""Counter nodes of a collection, by key and shard (:mod:`hippocampus.store.neo4j.counts`)."""
TERM_COUNT_LABEL = "TermCount"
"""Document frequencies of a collection, by term and shard (the same module)."""
PART_OF = "PART_OF"
"""From a passage to its memory."""

LABELS: tuple[str, ...] = (
    MEMORY_LABEL,
    *HUB_LABELS,
    EVENT_LABEL,
    DECAY_PASS_LABEL,
    SCHEMA_VERSION_LABEL,
    STATE_LABEL,
    EVENT_LOG_LABEL,
    PASSAGE_LABEL,
    COMPACTED_EVENTS_LABEL,
    LEASE_LABEL,
    TURN_ORDER_LABEL,
    COUNT_LABEL,
    TERM_COUNT_LABEL,
)
RELATIONSHIP_TYPES: tuple[str, ...] = tuple(edge_type.value for edge_type in EdgeType)
STORE_RELATIONSHIP_TYPES: tuple[str, ...] = (PART_OF,)
"""Relationship types only the store keeps (no engine edge type)."""
NODE_KINDS: frozenset[str] = frozenset({MEMORY_LABEL, *HUB_LABELS})
"""Node kinds an anchor or a path step may name."""

STORE_PROPERTY_KEYS: dict[str, str] = {
    "doc": "Memory: the memory as JSON, read back whole (the other properties are copies)",
    "embedding": "Memory and hub nodes: the vector, a list of floats",
    "name": "hub nodes: the hub's name; SchemaVersion: whose schema it is; Lease: the lease's",
    "used_at": "edges: the last co-occurrence, else the creation (what decay compares)",
    "turn_of": "Memory: the conversation it is a turn of (its first conversation id);"
    " TurnOrder: the conversation it orders",
    "relinks": "TurnOrder: how many writes have relinked the conversation's turns",
    "pruning": "hub nodes: set and removed at once, to lock a hub before pruning it",
    "locking": "Memory: set and removed at once, to lock a memory before reading it",
    "decay_period": "edges: the period of the last decay pass that lowered the weight",
    "hub": "hub edges: the hub's key (its collection, U+001F, its name), for its order",
    "rank": "hub edges: the weight negated: the hub's strongest edges first",
    "mid": "hub edges: the memory's id, the order's tie-break",
    "conversation_id": "Event: the payload's conversation_id, when it has one",
    "appended_at": "Event: when its batch was appended",
    "seq": "Event: its number in the collection's log, in commit order",
    "next": "EventLog: the number the collection's next event gets",
    "batch": "Event (schema version 1): the append call it came in",
    "position": "Event (schema version 1): its place in that batch",
    "period": "DecayPass: the period the pass was for",
    "unused_before": "DecayPass: its cutoff",
    "decayed": "DecayPass: how many edges lost weight",
    "version": "SchemaVersion: the schema version",
    "key": "State: the document's key, unique within its collection; Count: what it counts",
    "shard": "Count and TermCount: which of a counter's nodes it is",
    "terms": "Memory: its content's terms, tagged with its collection, for full-text search",
    "term": "TermCount: the term whose memories it counts",
    "value": "State: the document as JSON text (Neo4j has no map properties)",
    "memory_id": "Passage: the id of the memory it is part of",
    "seed_due": "Memory: when it falls due for resurfacing by the seed scheduler (microseconds)",
    "seed_span": "Memory: the length of that interval (microseconds)",
    "fsrs_due": "Memory: when it falls due by the FSRS-style scheduler (microseconds)",
    "fsrs_span": "Memory: the length of that interval (microseconds)",
    "n": "Passage: its place in the memory (1: the second passage; the first is the memory's);"
    " CompactedEvents: how many events of its type were dropped; Count, TermCount: the count",
    "model": "Passage: the model of its embedding (the memory's embedding_model)",
    "holder": "Lease: who holds it (or held it last)",
    "expires_at": "Lease: when its holder's term runs out",
    "asked": "Lease: how many times it was asked for (each ask takes its lock)",
}


def _fields(model: type[BaseModel], *, leave_out: frozenset[str] = frozenset()) -> list[str]:
    return [name for name in model.model_fields if name not in leave_out]


def memory_property_keys() -> list[str]:
    """Properties of a Memory node besides ``doc`` and ``embedding``: the memory's
    fields, with ``retrieval`` flattened into its own fields."""
    return _fields(Memory, leave_out=frozenset({"retrieval"})) + _fields(RetrievalMeta)


def edge_property_keys() -> list[str]:
    """Properties of a relationship: an edge's fields less its ends, and ``used_at``."""
    return [*_fields(Edge, leave_out=frozenset({"source", "type", "target"})), "used_at"]


def property_keys() -> list[str]:
    """Every property key the store reads or writes, sorted."""
    keys = {
        *memory_property_keys(),
        *edge_property_keys(),
        *_fields(Event),
        "collection",
        *STORE_PROPERTY_KEYS,
    }
    return sorted(keys)


def graph_schema() -> list[dict[str, str]]:
    """Which relationship type joins which labels, as ``{from, to, relType}``."""
    pairs = [
        {"from": MEMORY_LABEL, "to": kind.value, "relType": edge_type.value}
        for kind, edge_type in HUB_EDGE.items()
    ]
    pairs += [
        {"from": MEMORY_LABEL, "to": MEMORY_LABEL, "relType": edge_type.value}
        for edge_type in sorted(MEMORY_EDGES)
    ]
    pairs.append({"from": PASSAGE_LABEL, "to": MEMORY_LABEL, "relType": PART_OF})
    return pairs


def lint_schema() -> dict[str, Any]:
    """The database schema the Cypher lint checks statements against (the
    ``DbSchema`` of ``@neo4j-cypher/language-support``, without its procedure
    and function catalog, which the lint adds)."""
    return {
        "labels": list(LABELS),
        "relationshipTypes": [*RELATIONSHIP_TYPES, *STORE_RELATIONSHIP_TYPES],
        "propertyKeys": property_keys(),
        "graphSchema": graph_schema(),
        "defaultLanguage": "CYPHER 5",
    }
