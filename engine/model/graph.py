"""The graph around memories: hub nodes and weighted, typed edges."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class HubKind(StrEnum):
    """Labels of the hub nodes a memory links to."""

    DOMAIN = "Domain"
    TRIGGER = "Trigger"
    CONCEPT = "Concept"


class EdgeType(StrEnum):
    """Relationship types, named as in Neo4j."""

    IN_DOMAIN = "IN_DOMAIN"
    HAS_TRIGGER = "HAS_TRIGGER"
    ABOUT = "ABOUT"
    ASSOCIATED = "ASSOCIATED"
    CONFLICTS_WITH = "CONFLICTS_WITH"
    SUPERSEDES = "SUPERSEDES"
    SYNTHESIZED_FROM = "SYNTHESIZED_FROM"
    NEXT = "NEXT"


HUB_EDGE: dict[HubKind, EdgeType] = {
    HubKind.DOMAIN: EdgeType.IN_DOMAIN,
    HubKind.TRIGGER: EdgeType.HAS_TRIGGER,
    HubKind.CONCEPT: EdgeType.ABOUT,
}
"""The edge type from a memory to each kind of hub node."""

HUB_OF_EDGE: dict[EdgeType, HubKind] = {edge_type: kind for kind, edge_type in HUB_EDGE.items()}
"""The kind of hub node each hub edge type points at."""


def target_kind(edge_type: EdgeType) -> str:
    """The label of the node an edge of this type points at: a hub kind, or
    ``Memory`` for memory-to-memory edges."""
    kind = HUB_OF_EDGE.get(edge_type)
    return kind.value if kind is not None else "Memory"


MEMORY_EDGES = frozenset(
    {
        EdgeType.ASSOCIATED,
        EdgeType.CONFLICTS_WITH,
        EdgeType.SUPERSEDES,
        EdgeType.SYNTHESIZED_FROM,
        EdgeType.NEXT,
    }
)
"""Edge types whose target is another memory rather than a hub node."""

STRUCTURAL_EDGES = frozenset({EdgeType.NEXT})
"""Edge types that record structure, not learned association: the stores keep them
in step with the memories (``NEXT`` links one conversation's turns in the order they
happened), and neither reinforcement nor temporal decay touches them."""

SEQUENCE_WEIGHT = 1.0
"""The weight of every ``NEXT`` edge."""

SEQUENCE_KIND = "sequence"
"""The ``kind`` of every ``NEXT`` edge."""


class Edge(BaseModel):
    """A weighted edge from a memory to a hub node (target = the hub's name) or to
    another memory (target = its id). ``created_at`` dates an edge never used since,
    for temporal decay; ``kind`` tells ASSOCIATED edges apart (``co_retrieval`` or
    ``temporal``). ``NEXT`` goes from a conversation turn to the turn that
    followed it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    type: EdgeType
    target: str
    weight: float = Field(default=0.3, ge=0.0, le=1.0)
    co_occurrences: int = Field(default=0, ge=0)
    last_co_occurred: datetime | None = None
    created_at: datetime | None = None
    kind: str | None = None

    @property
    def to_memory(self) -> bool:
        return self.type in MEMORY_EDGES
