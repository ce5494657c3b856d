"""Search over records for an application's assistant: ids only, its SQL has the rest."""

from __future__ import annotations

from fastapi import APIRouter, Request

from hippocampus.api.auth import AccessDep
from hippocampus.api.deps import HEAVY, ServiceDep
from hippocampus.api.errors import NOT_FOUND_MESSAGE, AmbiguousCollectionError
from hippocampus.api.schemas import ERROR_RESPONSES, ErrorOut, RagSearchIn, RagSearchOut
from hippocampus.errors import NotFoundError

router = APIRouter(
    prefix="/ai",
    tags=["records"],
    responses={
        **ERROR_RESPONSES,
        403: {
            "model": ErrorOut,
            "description": "No collection named, and the key is not bound to exactly one "
            "(or no keys are configured)",
        },
    },
)


@router.post("/rag-search", response_model=RagSearchOut, dependencies=[HEAVY])
def rag_search(
    body: RagSearchIn, access: AccessDep, service: ServiceDep, request: Request
) -> RagSearchOut:
    """The records most similar to `query`, best first, as ids only (no text):
    `workItem:123` is returned as `123`. Searches the one collection the API key
    is bound to, or the `collection` named in the body (needed with no keys
    configured, or a key bound to several); records less similar than the
    configured floor are left out."""
    collections = access.collections
    if body.collection is not None:
        collection = service.check_collection(body.collection)
        if not access.allows(collection):
            raise NotFoundError(NOT_FOUND_MESSAGE)
    elif collections is not None and len(collections) == 1:
        (collection,) = collections
    else:
        reason = (
            "no API keys are configured"
            if not request.app.state.keyring.configured
            else "this key is bound to more than one collection"
        )
        raise AmbiguousCollectionError(
            f'name the collection to search in the body ("collection": "org:acme"): {reason}'
        )
    return RagSearchOut.from_ids(service.search_records(collection, body.query, limit=body.limit))
