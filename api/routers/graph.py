"""The memory graph around a node, for drawing."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from hippocampus.api.deps import HEAVY, CollectionDep, ServiceDep
from hippocampus.api.schemas import ERROR_RESPONSES, GraphOut

router = APIRouter(prefix="/v1/collections/{collection}", tags=["graph"], responses=ERROR_RESPONSES)


@router.get("/graph", response_model=GraphOut, dependencies=[HEAVY])
def graph(
    collection: CollectionDep,
    service: ServiceDep,
    center: Annotated[
        str,
        Query(
            min_length=1,
            max_length=300,
            description="A memory id, or a hub as Kind:name (e.g. Concept:connection pool).",
        ),
    ],
    depth: Annotated[int, Query(ge=1, le=3)] = 1,
    max_nodes: Annotated[int, Query(ge=1, le=2000)] = 200,
) -> GraphOut:
    """Nodes and edges within `depth` hops of `center`, breadth first."""
    return GraphOut.from_engine(
        service.subgraph(collection, center, depth=depth, max_nodes=max_nodes)
    )
