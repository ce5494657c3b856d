"""Counts and graph figures of a collection."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from hippocampus.api.auth import AccessDep
from hippocampus.api.deps import HEAVY, CollectionDep, ServiceDep, unwritten_collection_warnings
from hippocampus.api.schemas import ERROR_RESPONSES, StatsOut

router = APIRouter(prefix="/v1/collections/{collection}", tags=["stats"], responses=ERROR_RESPONSES)


@router.get("/stats", response_model=StatsOut, dependencies=[HEAVY])
def stats(
    collection: CollectionDep,
    service: ServiceDep,
    access: AccessDep,
    graph: bool = True,
    graph_max_age_s: Annotated[
        float | None,
        Query(
            ge=0.0,
            description="Compute graph health again if what is kept is older than this "
            "(seconds); by default it is served as kept, with its age.",
        ),
    ] = None,
) -> StatsOut:
    """Memories by category and tier, pending embeddings, hubs, edges, events, and
    (unless `graph=false`) graph health: nodes, edges by type, mean degree as they
    are now; clustering coefficient, components and weight histogram as last
    computed (`computed_at`, `age_s`: maintenance computes them again every
    HIPPO_GRAPH_HEALTH_MAX_AGE_S; a collection of more than 200,000 edges with
    none kept yet has them computed apart from the request, and says so in
    `warnings`); proactive surfacing (precision, dismissal
    rates, recall-before-search, lead time), recall latency, and how well
    similarity has corroborated the words of recent recalls (a collection
    where it seldom does leans on words: `corroboration.lexical_lean`). A
    collection that holds no memories says so in `warnings`."""
    counts = service.stats(collection)
    health = (
        service.stats_graph_health(collection, counts=counts, max_age_s=graph_max_age_s)
        if graph
        else None
    )
    out = StatsOut.from_engine(
        counts,
        health,
        service.surfacing_metrics(collection),
        service.latency(collection),
        service.corroboration(collection),
    )
    if graph and health is None:
        out.warnings.append(
            f"graph health of {sum(counts.edges.values())} edges is being computed for the "
            "first time, apart from this request: it is shown once it is kept"
        )
    out.warnings += unwritten_collection_warnings(service, access, collection, counts.memories)
    return out
