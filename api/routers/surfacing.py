"""Proactive surfacing: conversation messages in, insights out, engagement back;
direct feedback; memories due for spaced repetition."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from hippocampus.api.auth import AccessDep
from hippocampus.api.deps import (
    CONVERSATION_TURN,
    HEAVY,
    CollectionDep,
    ServiceDep,
    unwritten_collection_warnings,
)
from hippocampus.api.schemas import (
    ERROR_RESPONSES,
    ConversationOut,
    DueOut,
    EdgeOut,
    EngagementIn,
    EngagementOut,
    ErrorOut,
    FeedbackIn,
    MemoryOut,
    MessageIn,
    MessageOut,
    ResurfaceOut,
    UsedTogetherIn,
    UsedTogetherOut,
)

router = APIRouter(
    prefix="/v1/collections/{collection}", tags=["surfacing"], responses=ERROR_RESPONSES
)

Id = Annotated[str, Path(min_length=1, max_length=200)]


@router.post(
    "/conversations/{conversation_id}/messages",
    response_model=MessageOut,
    dependencies=[CONVERSATION_TURN],
)
def message(
    conversation_id: Id,
    body: MessageIn,
    collection: CollectionDep,
    service: ServiceDep,
    access: AccessDep,
) -> MessageOut:
    """Take one message of a conversation in and return 0-3 insights to offer now,
    each with its surfacing id, confidence and the gates it passed, and the
    conversation's state (type, domain, momentum, recent and predicted topics).
    A collection that holds no memories has nothing to offer and says so in
    `warnings`."""
    outcome = service.message(
        collection,
        conversation_id,
        body.text,
        role=body.role,
        at=body.at,
        conversation_type=body.conversation_type,
    )
    out = MessageOut.from_engine(outcome)
    out.warnings += unwritten_collection_warnings(service, access, collection, outcome.candidates)
    return out


@router.get("/conversations/{conversation_id}", response_model=ConversationOut)
def conversation(
    conversation_id: Id, collection: CollectionDep, service: ServiceDep
) -> ConversationOut:
    """A conversation's state."""
    view = service.conversation(collection, conversation_id)
    return ConversationOut.model_validate(view.model_dump())


@router.post(
    "/surfacings/{surfacing_id}/engagement",
    response_model=EngagementOut,
    responses={409: {"model": ErrorOut, "description": "Engagement already recorded"}},
)
def engagement(
    surfacing_id: Id, body: EngagementIn, collection: CollectionDep, service: ServiceDep
) -> EngagementOut:
    """How an offered insight was received: used, helpful, ignored or dismissed.
    Updates the memory (confidence, usage, dismissals), its edges to the
    conversation's concepts, and what surfacing has learned. Once per surfacing
    (409 after that)."""
    return EngagementOut.from_engine(service.engage(collection, surfacing_id, body.engagement))


@router.post("/memories/{memory_id}/feedback", response_model=MemoryOut)
def feedback(
    memory_id: Id, body: FeedbackIn, collection: CollectionDep, service: ServiceDep
) -> MemoryOut:
    """Direct feedback: helpful (as the "helpful" engagement, strengthening edges
    to the context's concepts) or not (as "dismissed")."""
    memory = service.feedback(collection, memory_id, helpful=body.helpful, context=body.context)
    return MemoryOut.from_engine(memory)


@router.post("/memories/used-together", response_model=UsedTogetherOut)
def used_together(
    body: UsedTogetherIn, collection: CollectionDep, service: ServiceDep
) -> UsedTogetherOut:
    """Memories used together (real use): each pair's ASSOCIATED edge gains 0.1 up
    to 1.0 (created at 0.3), and each memory's edges to the context's concepts
    too. A bare recall moves no edge's weight; this does."""
    edges = service.record_use(collection, body.ids, context=body.context)
    return UsedTogetherOut(edges=[EdgeOut.from_engine(e) for e in edges])


@router.get("/resurface", response_model=ResurfaceOut, dependencies=[HEAVY])
def resurface(
    collection: CollectionDep,
    service: ServiceDep,
    access: AccessDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> ResurfaceOut:
    """Memories due for spaced repetition, most valuable (confidence × importance)
    first. A collection that holds no memories says so in `warnings`."""
    due = service.resurface(collection, limit=limit)
    return ResurfaceOut(
        scheduler=service.scheduler.name,
        results=[DueOut(urgency=u, memory=MemoryOut.from_engine(m)) for m, u in due],
        warnings=unwritten_collection_warnings(service, access, collection, len(due)),
    )
