"""Records an application indexes by its own ids (work items, tickets)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response, status

from hippocampus.api.deps import HEAVY, CollectionDep, ServiceDep
from hippocampus.api.schemas import ERROR_RESPONSES, ResourceIn, ResourceOut

router = APIRouter(
    prefix="/v1/collections/{collection}/resources",
    tags=["resources"],
    responses=ERROR_RESPONSES,
)

ResourceId = Annotated[
    str,
    Path(
        min_length=1,
        max_length=200,
        description="The application's id for the record, e.g. workItem:123.",
        examples=["workItem:123"],
    ),
]


@router.put(
    "/{resource_id}",
    response_model=ResourceOut,
    responses={201: {"model": ResourceOut, "description": "Indexed for the first time"}},
    dependencies=[HEAVY],
)
def put_resource(
    resource_id: ResourceId,
    body: ResourceIn,
    collection: CollectionDep,
    service: ServiceDep,
    response: Response,
) -> ResourceOut:
    """Index a record as a deterministic document (same record, same bytes).

    It is embedded again only when its title, description, category or a
    meaningful custom field changed: a status-only or priority-only change, or
    a change to numbers, ids, dates or assignees, re-embeds nothing. Status
    `ARCHIVED` removes it. The collection exists from its first record on.
    """
    outcome = service.put_resource(collection, resource_id, body.to_engine())
    if outcome.action == "created":
        response.status_code = status.HTTP_201_CREATED
    return ResourceOut.from_engine(outcome)


@router.delete("/{resource_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response)
def delete_resource(
    resource_id: ResourceId, collection: CollectionDep, service: ServiceDep
) -> None:
    """Remove a record from the index."""
    service.delete_resource(collection, resource_id)
