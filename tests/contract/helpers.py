"""Builders for the contract suite: memories, vectors and edges, through the store
protocol only."""

from __future__ import annotations

import math
import uuid
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from hippocampus.model import Edge, EdgeType, Memory, RecallFilters, RetrievalMeta, Tier
from hippocampus.model import content_hash as hash_of
from hippocampus.model.association import MEMORY_NODE, Anchor, ExpandParams, Expansion, GraphPath
from hippocampus.store import GraphStore, MemoryRecord, Vector

DIM = 384
"""The vector dimension of the contract suite (the default model's): the one the
Neo4j vector index is set up with."""
MODEL = "contract-model"
T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
ALL_TIERS = RecallFilters(tiers=list(Tier))
D = 0.85  # ExpandParams' default damping
PIVOT = 20.0  # ExpandParams' default hub_degree_pivot

ABOUT, IN_DOMAIN, HAS_TRIGGER = EdgeType.ABOUT, EdgeType.IN_DOMAIN, EdgeType.HAS_TRIGGER
ASSOCIATED = EdgeType.ASSOCIATED


def memory(
    memory_id: str,
    collection: str,
    *,
    minutes: int = 0,
    content: str | None = None,
    model: str | None = MODEL,
    tier: Tier = Tier.ACTIVE,
    category: str = "insight",
    tags: Sequence[str] = (),
    domains: Sequence[str] = (),
    conversations: Sequence[str] = (),
) -> Memory:
    text = content if content is not None else f"memory {memory_id}"
    at = T0 + timedelta(minutes=minutes)
    return Memory(
        id=memory_id,
        collection=collection,
        content=text,
        category=category,
        tier=tier,
        tags=list(tags),
        created_at=at,
        updated_at=at,
        content_hash=hash_of(text),
        embedding_model=model,
        retrieval=RetrievalMeta(domains=list(domains), conversation_ids=list(conversations)),
    )


def vec(seed: int | str, dim: int = DIM) -> Vector:
    if isinstance(seed, str):
        seed = zlib.crc32(seed.encode())
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def unit(v: Vector) -> Vector:
    out: Vector = (v / np.linalg.norm(v)).astype(np.float32)
    return out


def edge(source: str, edge_type: EdgeType, target: str, weight: float = 0.5) -> Edge:
    return Edge(source=source, type=edge_type, target=target, weight=weight)


def record(m: Memory, edges: Sequence[Edge] = (), vector: Vector | None = None) -> MemoryRecord:
    if vector is None and m.embedding_model is not None:
        vector = vec(m.id)
    return MemoryRecord(memory=m, vector=vector, edges=tuple(edges))


def add(
    store: GraphStore,
    collection: str,
    memories: Sequence[Memory | str],
    edges: Sequence[Edge] = (),
) -> None:
    """Add memories (ids or Memory objects), each with the edges leaving it."""
    records = []
    for m in memories:
        mem = memory(m, collection) if isinstance(m, str) else m
        records.append(record(mem, [e for e in edges if e.source == mem.id]))
    store.add_memories(collection, records)


def concept(name: str, strength: float = 1.0) -> Anchor:
    return Anchor(kind="Concept", name=name, strength=strength)


def seed(memory_id: str, strength: float = 1.0) -> Anchor:
    return Anchor(kind=MEMORY_NODE, name=memory_id, strength=strength)


def expand(
    store: GraphStore,
    collection: str,
    anchors: Sequence[Anchor],
    filters: RecallFilters = ALL_TIERS,
    **params: object,
) -> dict[str, Expansion]:
    found = store.expand(
        collection, anchors, params=ExpandParams.model_validate(params), filters=filters
    )
    return {e.memory_id: e for e in found}


def steps(path: GraphPath) -> list[tuple[str, float, str, str]]:
    return [(s.type.value, s.weight, s.kind, s.name) for s in path.steps]


def factor(degree: int) -> float:
    """The hub degree penalty, 1 / (1 + ln(1 + degree / pivot))."""
    return 1.0 / (1.0 + math.log(1.0 + degree / PIVOT))


def ids(hits: Sequence[tuple[str, float]]) -> list[str]:
    return [i for i, _ in hits]


def named(dropped: list[str], prefix: str) -> str:
    """A fresh collection name, put on the ``dropped`` fixture's list."""
    name = f"contract-{prefix}-{uuid.uuid4().hex[:8]}"
    dropped.append(name)
    return name
