"""Search over records for an application's assistant: ids only, its SQL has the rest."""

from __future__ import annotations

from fastapi import APIRouter

from api.auth import AccessDep
from api.deps import ServiceDep
from api.errors import AmbiguousCollectionError
from api.schemas import ERROR_RESPONSES, ErrorOut, RagSearchIn, RagSearchOut

router = APIRouter(
    prefix="/ai",
    tags=["records"],
    responses={
        **ERROR_RESPONSES,
        403: {"model": ErrorOut, "description": "The key is not bound to exactly one collection"},
    },
)


@router.post("/rag-search", response_model=RagSearchOut)
def rag_search(body: RagSearchIn, access: AccessDep, service: ServiceDep) -> RagSearchOut:
    """The records most similar to `query`, best first, as ids only (no text):
    `workItem:123` is returned as `123`. Searches the one collection the API key
    is bound to; records less similar than the configured floor are left out."""
    collections = access.collections
    if collections is None or len(collections) != 1:
        raise AmbiguousCollectionError(
            "/ai/rag-search searches the one collection its API key is bound to; "
            "this key is not bound to exactly one"
        )
    (collection,) = collections
    return RagSearchOut.from_ids(service.search_records(collection, body.query, limit=body.limit))
