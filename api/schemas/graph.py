"""Edges and drawn subgraphs: ``/graph``, and the edges learning leaves."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from hippocampus.model import MEMORY_NODE, Edge, target_kind
from hippocampus.service import Subgraph


class EdgeOut(BaseModel):
    source: str
    type: str
    target: str
    weight: float
    co_occurrences: int
    last_co_occurred: datetime | None
    kind: str | None

    @classmethod
    def from_engine(cls, e: Edge) -> EdgeOut:
        return cls(
            source=e.source,
            type=e.type.value,
            target=e.target,
            weight=e.weight,
            co_occurrences=e.co_occurrences,
            last_co_occurred=e.last_co_occurred,
            kind=e.kind,
        )


class GraphEdgeOut(EdgeOut):
    """An edge of a drawn subgraph: both ends in the nodes' ``Kind:name`` form."""

    source: str = Field(examples=["Memory:88c2d1e0"])
    target: str = Field(examples=["Concept:postgres"])

    @classmethod
    def from_engine(cls, e: Edge) -> GraphEdgeOut:
        # The engine's edges carry bare ends; a bare name is ambiguous (a Concept
        # and a Trigger may share it), so the drawing gets the node ids.
        return cls(
            **{
                **dict(EdgeOut.from_engine(e)),
                "source": f"{MEMORY_NODE}:{e.source}",
                "target": f"{target_kind(e.type)}:{e.target}",
            }
        )


class GraphNodeOut(BaseModel):
    id: str = Field(examples=["Concept:connection pool"])
    kind: str
    label: str
    confidence: float | None


class GraphOut(BaseModel):
    center: str
    nodes: list[GraphNodeOut]
    edges: list[GraphEdgeOut] = Field(
        description="Each end is the id of a node in `nodes` (`Kind:name`)."
    )

    @classmethod
    def from_engine(cls, g: Subgraph) -> GraphOut:
        return cls(
            center=g.center,
            nodes=[GraphNodeOut.model_validate(n.model_dump()) for n in g.nodes],
            edges=[GraphEdgeOut.from_engine(e) for e in g.edges],
        )
