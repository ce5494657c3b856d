"""Remember, read, edit and forget memories."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from hippocampus.api.deps import HEAVY, CollectionDep, ServiceDep
from hippocampus.api.schemas import (
    ERROR_RESPONSES,
    ErrorOut,
    MemoryBatchIn,
    MemoryDetailOut,
    MemoryEditOut,
    MemoryPatchIn,
    RememberBatchOut,
    RememberIn,
    RememberOut,
    TurnsOut,
)

router = APIRouter(
    prefix="/v1/collections/{collection}/memories",
    tags=["memories"],
    responses=ERROR_RESPONSES,
)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=RememberOut | RememberBatchOut,
    responses={
        200: {
            "description": "Nothing new was stored: the content was already there (merged "
            "into the stored memory), or the quality gate rejected it."
        },
        409: {"model": ErrorOut, "description": "A given id already exists"},
    },
    dependencies=[HEAVY],
)
def remember(
    body: RememberIn, collection: CollectionDep, service: ServiceDep, response: Response
) -> RememberOut | RememberBatchOut:
    """Remember one memory (`{content, ...}`) or a batch (`{memories: [...]}`).

    Invalid input stores nothing of a batch. Each result says what happened:
    content is sanitized first (`sanitized`, with the changes in `reasons`); the
    quality gate may reject it (`rejected`, `quality`, `reasons`); content already
    stored, or nearly so, is merged into that memory (`duplicate_of`); a memory
    that contradicts a stored one is kept and linked to it (`conflicts_with`), and
    the one that happened later supersedes the other (`supersedes`, `superseded_by`).
    The status is 201 when something new was stored, 200 when nothing was.
    """
    result: RememberOut | RememberBatchOut
    if isinstance(body, MemoryBatchIn):
        outcomes = service.remember_many(collection, body.to_engine())
        result = RememberBatchOut.from_engine(outcomes)
        created = any(o.created for o in outcomes)
    else:
        outcome = service.remember(collection, body.to_engine())
        result = RememberOut.from_engine(outcome)
        created = outcome.created
    if not created:
        response.status_code = status.HTTP_200_OK
    return result


@router.get("/{memory_id}", response_model=MemoryDetailOut)
def get_memory(memory_id: str, collection: CollectionDep, service: ServiceDep) -> MemoryDetailOut:
    """Read a memory with its retrieval metadata (never its vector), and its hubs:
    the domains, triggers and concepts it links to, with each edge's weight as
    learning left it."""
    memory = service.get(collection, memory_id)
    return MemoryDetailOut.from_engine_with_hubs(memory, service.hubs_of(collection, memory_id))


@router.get("/{memory_id}/turns", response_model=TurnsOut)
def get_turns(
    memory_id: str,
    collection: CollectionDep,
    service: ServiceDep,
    before: Annotated[int, Query(ge=0, le=50)] = 2,
    after: Annotated[int, Query(ge=0, le=50)] = 2,
) -> TurnsOut:
    """A memory and the turns of its conversation just before and after it, in the
    order they happened (`occurred_at`); none for a memory outside any
    conversation."""
    return TurnsOut.from_engine(service.turns(collection, memory_id, before=before, after=after))


@router.patch("/{memory_id}", response_model=MemoryEditOut, dependencies=[HEAVY])
def update_memory(
    memory_id: str, body: MemoryPatchIn, collection: CollectionDep, service: ServiceDep
) -> MemoryEditOut:
    """Edit a memory; absent fields stay. Changed content is re-embedded and
    re-extracted; unchanged content is not. If the embedder fails on the new
    content, the old vector is dropped and the memory waits for re-embedding
    (`embedded` false, with the reason), as when remembering. Changed content is
    judged against the other memories as a new memory is: those it contradicts
    are in `conflicts_with`, linked by CONFLICTS_WITH."""
    return MemoryEditOut.from_edit(service.edit(collection, memory_id, body.to_engine()))


@router.delete("/{memory_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response)
def forget_memory(memory_id: str, collection: CollectionDep, service: ServiceDep) -> None:
    """Forget a memory and every edge that touches it."""
    service.forget(collection, memory_id)
