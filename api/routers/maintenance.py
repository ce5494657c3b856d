"""Maintenance passes the server also runs on a schedule."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import CollectionDep, ServiceDep
from api.schemas import ERROR_RESPONSES, DecayOut

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
