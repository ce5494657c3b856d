"""Counts and graph figures of a collection."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import CollectionDep, ServiceDep
from api.schemas import ERROR_RESPONSES, StatsOut

router = APIRouter(prefix="/v1/collections/{collection}", tags=["stats"], responses=ERROR_RESPONSES)


@router.get("/stats", response_model=StatsOut)
def stats(collection: CollectionDep, service: ServiceDep, graph: bool = True) -> StatsOut:
    """Memories by category and tier, pending embeddings, hubs, edges, events, and
    (unless `graph=false`) graph health: nodes, edges by type, mean degree,
    clustering coefficient, components, weight histogram; proactive surfacing
    (precision, dismissal rates, recall-before-search, lead time) and recall
    latency."""
    health = service.graph_health(collection) if graph else None
    return StatsOut.from_engine(
        service.stats(collection),
        health,
        service.surfacing_metrics(collection),
        service.latency(collection),
    )
