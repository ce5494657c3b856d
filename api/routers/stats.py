"""Counts and graph figures of a collection."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import CollectionDep, ServiceDep
from api.schemas import ERROR_RESPONSES, StatsOut

router = APIRouter(prefix="/v1/collections/{collection}", tags=["stats"], responses=ERROR_RESPONSES)


@router.get("/stats", response_model=StatsOut)
def stats(collection: CollectionDep, service: ServiceDep) -> StatsOut:
    """Memories by category and tier, pending embeddings, hubs, edges, events."""
    return StatsOut.from_engine(service.stats(collection))
