"""Maintenance passes; the server runs them on a schedule too."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from hippocampus.api.deps import HEAVY, CollectionDep, ServiceDep
from hippocampus.api.schemas import (
    ERROR_RESPONSES,
    DecayOut,
    ReindexOut,
    TiersOut,
    TrainingRunOut,
)

router = APIRouter(
    prefix="/v1/collections/{collection}/maintenance",
    tags=["maintenance"],
    responses=ERROR_RESPONSES,
)


@router.post("/decay", response_model=DecayOut)
def decay(collection: CollectionDep, service: ServiceDep) -> DecayOut:
    """One temporal decay pass: edges unused for six months lose 0.05 (floor 0.1).
    Idempotent per day: a second pass the same day changes nothing."""
    return DecayOut(collection=collection, decayed=service.decay(collection))


@router.post("/tiers", response_model=TiersOut)
def tiers(collection: CollectionDep, service: ServiceDep) -> TiersOut:
    """One pass of the tier policy: memories idle for 180 days and used at most once
    are archived; repeatedly dismissed ones, or ones whose quality collapsed, are
    quarantined; archived ones used again come back. Retrains the quality model
    when 500 more memories have feedback. The server runs it once a day."""
    return TiersOut.from_engine(service.apply_tiers(collection))


@router.post("/reindex", response_model=ReindexOut, dependencies=[HEAVY])
def reindex(
    collection: CollectionDep,
    service: ServiceDep,
    limit: Annotated[int, Query(ge=1, le=100_000)] = 1000,
) -> ReindexOut:
    """Embed up to `limit` memories that have no vector from the current model (none
    yet, or another model's); `remaining` says how many still wait. Resumable:
    call again until `remaining` is 0. The server also works through them."""
    done = service.reindex(collection, limit=limit)
    return ReindexOut(
        collection=collection,
        model=service.embedder.name,
        reindexed=done,
        remaining=service.pending_count(collection),
    )


@router.post("/quality", response_model=TrainingRunOut)
def retrain_quality(collection: CollectionDep, service: ServiceDep) -> TrainingRunOut:
    """Retrain the quality model now from the memories with feedback. The new model
    is kept only if it predicts held-out feedback at least as well as the old."""
    return TrainingRunOut.from_engine(service.retrain_quality(collection))
