"""Ask for memories: similarity search within a collection."""

from __future__ import annotations

from fastapi import APIRouter

from hippocampus.api.auth import AccessDep
from hippocampus.api.deps import HEAVY, CollectionDep, ServiceDep, unwritten_collection_warnings
from hippocampus.api.schemas import (
    ERROR_RESPONSES,
    AssociateIn,
    AssociateOut,
    AssociationOut,
    RecallIn,
    RecallOut,
)
from hippocampus.retrieve import DEFAULT_RECIPE

router = APIRouter(
    prefix="/v1/collections/{collection}", tags=["recall"], responses=ERROR_RESPONSES
)


@router.post("/recall", response_model=RecallOut, dependencies=[HEAVY])
def recall(
    body: RecallIn, collection: CollectionDep, service: ServiceDep, access: AccessDep
) -> RecallOut:
    """Memories most relevant to `query`, best first: dense and lexical search and
    associative expansion, fused by `recipe`. Archived memories are searched only
    with `filters.include_archived`; quarantined ones never. With `explain`, each
    result carries the graph paths that reached it. With `conversation_id`, the
    results already offered in that conversation are reported in
    `surfaced_before` and counted for recall-before-search. With
    `format: "summary"`, `summary` holds the results as a "Related knowledge
    already captured" block (category, title, score, and the number of memories
    in the collection), of the results at least `summary_min_score` similar to
    the query (default 0.7, the seed's). Results are compact unless `detail` is
    "full". A collection that holds no memories answers no results and says so in
    `warnings`."""
    result = service.recall(
        collection,
        body.query,
        limit=body.limit,
        filters=body.to_filters(),
        min_score=body.min_score,
        explain=body.explain,
        recipe=body.recipe if body.recipe is not None else DEFAULT_RECIPE,
        conversation_id=body.conversation_id,
        as_of=body.as_of,
    )
    summary = (
        service.context_summary(collection, result, min_score=body.summary_min_score)
        if body.format == "summary"
        else None
    )
    out = RecallOut.from_engine(result, summary, body.detail)
    out.warnings += unwritten_collection_warnings(service, access, collection, len(out.results))
    return out


@router.post("/associate", response_model=AssociateOut, dependencies=[HEAVY])
def associate(
    body: AssociateIn, collection: CollectionDep, service: ServiceDep, access: AccessDep
) -> AssociateOut:
    """Memories associated with a set of concepts, through weighted edges: those
    that hold a hub (or tag) a concept names, however common, strongest first (a
    hub's strength divided among its memories, as recall's walk divides it), and
    those reached through them by paths from two of the concepts or one path of
    `min_path_strength`. Concepts are read as memories are (`Migrations` finds
    the `migration` trigger); one that names nothing is reported in `warnings`,
    as is reading a collection that holds no memories (not an error)."""
    found = service.associate(
        collection,
        body.context,
        min_path_strength=body.min_path_strength,
        max_depth=body.max_depth,
        limit=body.limit,
        sort=body.sort,
    )
    return AssociateOut(
        results=[AssociationOut.from_engine(a) for a in found.results],
        # A collection never written first: why nothing is found, before what
        # each concept failed to name there.
        warnings=[
            *unwritten_collection_warnings(service, access, collection, len(found.results)),
            *found.warnings,
        ],
    )
