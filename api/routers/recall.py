"""Ask for memories: similarity search within a collection."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import CollectionDep, ServiceDep
from api.schemas import ERROR_RESPONSES, RecallIn, RecallOut

router = APIRouter(
    prefix="/v1/collections/{collection}", tags=["recall"], responses=ERROR_RESPONSES
)


@router.post("/recall", response_model=RecallOut)
def recall(body: RecallIn, collection: CollectionDep, service: ServiceDep) -> RecallOut:
    """Memories most relevant to `query`, best first. Archived memories are
    searched only with `filters.include_archived`; quarantined ones never."""
    result = service.recall(
        collection,
        body.query,
        limit=body.limit,
        filters=body.to_filters(),
        min_score=body.min_score,
    )
    return RecallOut.from_engine(result)
