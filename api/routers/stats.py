"""Counts and graph figures of a collection."""

from __future__ import annotations

from fastapi import APIRouter

from api.auth import AccessDep
from api.deps import HEAVY, CollectionDep, ServiceDep, unwritten_collection_warnings
from api.schemas import ERROR_RESPONSES, StatsOut

router = APIRouter(prefix="/v1/collections/{collection}", tags=["stats"], responses=ERROR_RESPONSES)


@router.get("/stats", response_model=StatsOut, dependencies=[HEAVY])
def stats(
    collection: CollectionDep, service: ServiceDep, access: AccessDep, graph: bool = True
) -> StatsOut:
    """Memories by category and tier, pending embeddings, hubs, edges, events, and
    (unless `graph=false`) graph health: nodes, edges by type, mean degree,
    clustering coefficient, components, weight histogram; proactive surfacing
    (precision, dismissal rates, recall-before-search, lead time) and recall
    latency. A collection that holds no memories says so in `warnings`."""
    counts = service.stats(collection)
    health = service.graph_health(collection) if graph else None
    out = StatsOut.from_engine(
        counts, health, service.surfacing_metrics(collection), service.latency(collection)
    )
    out.warnings += unwritten_collection_warnings(service, access, collection, counts.memories)
    return out
