"""A collection as JSONL: the backup ``hippo export`` writes and ``hippo import``
reads back."""

from __future__ import annotations

import itertools

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from hippocampus.api.deps import HEAVY, CollectionDep, ServiceDep
from hippocampus.api.schemas import ERROR_RESPONSES

router = APIRouter(
    prefix="/v1/collections/{collection}", tags=["backup"], responses=ERROR_RESPONSES
)

NDJSON = "application/x-ndjson"


@router.get(
    "/export",
    response_class=StreamingResponse,
    dependencies=[HEAVY],
    responses={
        200: {
            "description": "One JSON record per line: a header, every memory with its vector, "
            "every edge, then the learned state.",
            "content": {NDJSON: {}},
        }
    },
)
def export(collection: CollectionDep, service: ServiceDep) -> StreamingResponse:
    """The whole collection as JSON lines, streamed as it is read: memories with
    their vectors, tiers, provenance and counts, every edge (conflicts included)
    and what the collection has learned. `hippo import` restores it exactly."""
    lines = service.export_lines(collection)
    # The header first, here: a collection that cannot be read fails with its
    # error status, before any line is sent.
    first = next(lines)
    return StreamingResponse(itertools.chain([first], lines), media_type=NDJSON)
