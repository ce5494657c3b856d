"""The MCP tools, one method each on :class:`MemoryTools`.

Each tool checks the caller's collection, calls the engine and answers a short
text for the model with, as structured content, the REST API's body for the
same request. The one decorator :func:`tool` marks a method as a tool (its
description and hints) and turns the engine's refusals and bad arguments into
tool errors the model can read, so no tool handles them itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Concatenate, Literal, ParamSpec, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AwareDatetime, BaseModel, Field, ValidationError

from hippocampus.api.auth import Access
from hippocampus.api.deps import unwritten_collection_warnings
from hippocampus.api.errors import NOT_FOUND_MESSAGE
from hippocampus.api.schemas import (
    AssociateOut,
    AssociationOut,
    ConversationType,
    DueOut,
    EngagementOut,
    MemoryIn,
    MemoryOut,
    MessageOut,
    RecallFiltersIn,
    RecallHitOut,
    RecallIn,
    RecallOut,
    RememberBatchOut,
    ResurfaceOut,
)
from hippocampus.errors import ConflictError, HippoError, InvalidInputError, NotFoundError
from hippocampus.retrieve import DEFAULT_RECIPE
from hippocampus.service import Hippocampus

_SNIPPET = 160

ServiceOf = Callable[[], Hippocampus]
"""How a tool reaches the engine: the app's, once it has started."""

AccessOf = Callable[[Mapping[str, str] | None], Access]
"""What a call may touch, from its HTTP headers (``None`` on stdio)."""


Collection = Annotated[
    str | None,
    Field(
        description="The collection to work in (e.g. org:acme). May be left out when the "
        "server has a default collection (or the API key is bound to exactly one).",
        max_length=128,
    ),
]


class RecallFilters(BaseModel):
    """Optional restrictions for recall."""

    domains: list[str] = Field(default_factory=list, description="Only these domains.")
    categories: list[str] = Field(
        default_factory=list, description="Only these categories (bug_fix, decision, …)."
    )
    tags: list[str] = Field(default_factory=list, description="Only memories with these tags.")
    include_archived: bool = Field(default=False, description="Search archived memories too.")


def _cut(text: str, width: int = _SNIPPET) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _result(text: str, body: BaseModel | dict[str, Any]) -> CallToolResult:
    structured = body.model_dump(mode="json") if isinstance(body, BaseModel) else body
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


def memory_line(rank: int, memory: MemoryOut, score: float | None = None) -> str:
    scored = f" score {score:.3f}" if score is not None else ""
    newer = f" superseded by {', '.join(memory.superseded_by)};" if memory.superseded_by else ""
    return (
        f"{rank}. [{memory.category}]{scored} id={memory.id} "
        f"(confidence {memory.retrieval.confidence:.2f}):{newer} {_cut(memory.content)}"
    )


def fail(e: HippoError) -> ToolError:
    if not isinstance(e, InvalidInputError | NotFoundError | ConflictError):
        # As over REST: a store's or model's own words stay in the server's log.
        return ToolError(f"{e.code}: the engine is unavailable right now; try again shortly")
    where = f" ({e.field})" if e.field and e.field not in e.message else ""
    return ToolError(f"{e.code}: {e.message}{where}")


def _one_or_many(memories: list[MemoryIn] | None, one: dict[str, Any]) -> list[MemoryIn]:
    """``remember``'s memories: the list given, or the one memory its fields name
    (as POST /memories takes either)."""
    if memories is not None and one:
        raise ToolError(
            "invalid_input: give one memory's `content` (and its fields) or `memories`, "
            "not both"
        )
    if memories is not None:
        return memories
    if "content" not in one:
        raise ToolError(
            "invalid_input: content: give `content` (one memory) or `memories` (several)"
        )
    try:
        return [MemoryIn.model_validate(one)]
    except ValidationError as e:
        raise _invalid(e) from e


def _invalid(e: ValidationError) -> ToolError:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return ToolError(f"invalid_input: {where}: {err['msg']}" if where else str(err["msg"]))


P = ParamSpec("P")
R = TypeVar("R")
TOOL = "_mcp_tool"
"""The attribute :func:`tool` leaves on a method: its registration."""


def tool(
    *, description: str, annotations: ToolAnnotations | None = None
) -> Callable[[Callable[Concatenate[Any, P], R]], Callable[Concatenate[Any, P], R]]:
    """Mark a method of :class:`MemoryTools` as an MCP tool, and translate what it
    raises: the engine's refusals (:class:`HippoError`) and invalid arguments
    (:class:`ValidationError`) become tool errors naming the problem."""

    def mark(method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], R]:
        @functools.wraps(method)
        def translated(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return method(self, *args, **kwargs)
            except ValidationError as e:
                raise _invalid(e) from e
            except HippoError as e:
                raise fail(e) from e

        setattr(translated, TOOL, {"description": description, "annotations": annotations})
        return translated

    return mark


read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False)


class MemoryTools:
    """The tools over an engine, for the callers :data:`AccessOf` describes.

    Args:
        service_of: returns the engine to serve (called on every tool call, so the
            API's lifespan may build it after the server is made).
        access_of: what the caller may touch, from the request's headers.
        default_collection: the collection used when a call names none.
    """

    def __init__(
        self, service_of: ServiceOf, access_of: AccessOf, default_collection: str | None
    ) -> None:
        self._service_of = service_of
        self._access_of = access_of
        self._default = default_collection

    def registered(self) -> list[tuple[Callable[..., CallToolResult], dict[str, Any]]]:
        """Each tool (a bound method) with what :func:`tool` says of it, in the
        order the class defines them (the order a client lists them in)."""
        found = []
        for name, member in vars(type(self)).items():
            marks = getattr(member, TOOL, None)
            if marks is not None:
                found.append((getattr(self, name), marks))
        return found

    def _scope(self, ctx: Context, collection: str | None) -> tuple[Hippocampus, str]:
        """The engine and the collection a call works in; refused as not found when
        the caller may not touch it."""
        access = self._access_of(ctx.headers)
        name = collection or self._default
        if name is None and access.collections is not None and len(access.collections) == 1:
            (name,) = access.collections
        if name is None:
            raise ToolError(
                "invalid_input: name a collection (e.g. org:acme): this server has no default"
            )
        service = self._service_of()
        try:
            service.check_collection(name)
        except HippoError as e:
            raise fail(e) from e
        if not access.allows(name):
            raise ToolError(f"not_found: {NOT_FOUND_MESSAGE}")
        return service, name

    @tool(
        description="Store knowledge worth keeping (a bug fix, a decision, a pattern, an "
        "insight): one memory by its `content` (with `category`, `tags`, `importance`, "
        "`occurred_at`, `speaker` if known), or several as `memories`. Each gets an id; "
        "content already stored is merged, not duplicated; low-quality text is rejected "
        "with reasons.",
        annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False),
    )
    def remember(
        self,
        ctx: Context,
        content: Annotated[
            str | None, Field(description="One memory's content (instead of `memories`).")
        ] = None,
        category: Annotated[
            str | None, Field(description="bug_fix, decision, pattern, insight, … (one memory).")
        ] = None,
        tags: list[str] | None = None,
        importance: Annotated[float | None, Field(description="0-1 (one memory).")] = None,
        source: str | None = None,
        occurred_at: Annotated[
            AwareDatetime | None, Field(description="When it happened (one memory).")
        ] = None,
        speaker: str | None = None,
        conversation_id: str | None = None,
        memories: Annotated[
            list[MemoryIn] | None,
            Field(
                min_length=1,
                max_length=100,
                description="Several memories, instead of one `content`: each needs "
                "`content`; `category`, `tags` and `importance` 0-1 are optional.",
            ),
        ] = None,
        collection: Collection = None,
    ) -> CallToolResult:
        one = {
            "content": content,
            "category": category,
            "tags": tags,
            "importance": importance,
            "source": source,
            "occurred_at": occurred_at,
            "speaker": speaker,
            "conversation_id": conversation_id,
        }
        items = _one_or_many(memories, {k: v for k, v in one.items() if v is not None})
        service, name = self._scope(ctx, collection)
        outcomes = service.remember_many(name, [m.to_engine() for m in items])
        body = RememberBatchOut.from_engine(outcomes)
        lines = []
        for i, r in enumerate(body.results, start=1):
            if r.rejected:
                why = "; ".join(r.reasons)
                lines.append(f"{i}. rejected (quality {r.quality or 0:.2f}): {why}")
            elif r.duplicate_of is not None:
                lines.append(f"{i}. already known: merged into {r.duplicate_of}")
            else:
                pending = "" if r.embedded else " (waiting for a vector: run hippo reindex)"
                older = f"; supersedes {', '.join(r.supersedes)}" if r.supersedes else ""
                lines.append(f"{i}. stored id={r.id}{pending}{older}")
        return _result("\n".join(lines), body)

    @tool(
        description="Search memory: the stored memories most relevant to a question or "
        "problem, best first, each with its id and score. Use it before solving something "
        "that may have been solved before. With explain, each result says which graph "
        "paths (shared concepts, triggers) led to it.",
        annotations=read_only,
    )
    def recall(
        self,
        query: Annotated[str, Field(min_length=1, max_length=2000)],
        ctx: Context,
        collection: Collection = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
        recipe: Annotated[
            str | None,
            Field(
                description="How to rank: ASSOCIATIVE (default), DENSE, BM25, HYBRID, "
                "HYBRID_GRAPH, WEIGHTED or SEED_COMPOSITE."
            ),
        ] = None,
        filters: RecallFilters | None = None,
        explain: bool = False,
        detail: Annotated[
            Literal["compact", "full"],
            Field(description="full: each memory's whole retrieval block too."),
        ] = "compact",
    ) -> CallToolResult:
        service, name = self._scope(ctx, collection)
        request = RecallIn(
            query=query,
            limit=limit,
            recipe=recipe,
            explain=explain,
            filters=RecallFiltersIn.model_validate((filters or RecallFilters()).model_dump()),
        )
        result = service.recall(
            name,
            request.query,
            limit=request.limit,
            filters=request.to_filters(),
            explain=request.explain,
            recipe=request.recipe or DEFAULT_RECIPE,
        )
        body = RecallOut.from_engine(result, detail=detail)
        body.warnings += unwritten_collection_warnings(
            service, self._access_of(ctx.headers), name, len(body.results)
        )
        hits = [RecallHitOut.from_engine(h) for h in result.hits]
        lines = [memory_line(i, hit.memory, hit.score) for i, hit in enumerate(hits, start=1)]
        if explain:
            for i, hit in enumerate(hits, start=1):
                for path in hit.paths or []:
                    walk = " -> ".join(
                        [f"{path.anchor.kind}:{path.anchor.name}"]
                        + [f"{s.type} {s.kind}:{_cut(s.name, 40)}" for s in path.steps]
                    )
                    lines.append(f"   #{i} via {walk} ({path.strength:.3f})")
        for t in body.times:
            start = t.start.date().isoformat() if t.start else "..."
            end = t.end.date().isoformat() if t.end else "..."
            moved = [f"#{i}" for i, hit in enumerate(hits, start=1) if hit.time]
            lines.append(
                f"time: {t.phrase!r} read as [{start}, {end})"
                + (f"; preferred {', '.join(moved)}" if moved else "")
            )
        lines += [f"warning: {w}" for w in body.warnings]
        return _result("\n".join(lines) or "No memories found.", body)

    @tool(
        description="Memories associated with a set of concepts through the learned graph "
        "(not by text similarity): what tends to go with, say, ['redis', 'timeout'].",
        annotations=read_only,
    )
    def associate(
        self,
        context: Annotated[list[str], Field(min_length=1, max_length=50)],
        ctx: Context,
        collection: Collection = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
    ) -> CallToolResult:
        service, name = self._scope(ctx, collection)
        found = service.associate(name, context, limit=limit)
        body = AssociateOut(
            results=[AssociationOut.from_engine(a) for a in found.results],
            warnings=[
                *found.warnings,
                *unwritten_collection_warnings(
                    service, self._access_of(ctx.headers), name, len(found.results)
                ),
            ],
        )
        lines = [
            memory_line(i, a.memory, a.strength) + f" [{a.anchors} of the concepts reach it]"
            for i, a in enumerate(body.results, start=1)
        ]
        lines += [f"warning: {w}" for w in body.warnings]
        return _result("\n".join(lines) or "Nothing associated with these concepts.", body)

    @tool(
        description="Follow a conversation: send each message as it is said. Returns 0-3 "
        "stored insights worth offering now (each with a surfacing_id to report back "
        "through `engage`), or why nothing was offered. Give `at` (when the message was "
        "said) when replaying a conversation, so the pace of the conversation is right.",
    )
    def observe_message(
        self,
        conversation_id: Annotated[str, Field(min_length=1, max_length=200)],
        text: Annotated[str, Field(min_length=1, max_length=8000)],
        ctx: Context,
        collection: Collection = None,
        role: Annotated[str, Field(min_length=1, max_length=64)] = "user",
        at: AwareDatetime | None = None,
        conversation_type: ConversationType | None = None,
    ) -> CallToolResult:
        service, name = self._scope(ctx, collection)
        outcome = service.message(
            name, conversation_id, text, role=role, at=at, conversation_type=conversation_type
        )
        body = MessageOut.from_engine(outcome)
        body.warnings += unwritten_collection_warnings(
            service, self._access_of(ctx.headers), name, outcome.candidates
        )
        lines = [
            f"{i}. surfacing_id={s.surfacing_id} (confidence {s.confidence:.2f}"
            f"{', foreseen' if s.foreseen else ''}) [{s.memory.category}] "
            f"{_cut(s.memory.content)}\n   why: {s.reason}"
            for i, s in enumerate(body.insights, start=1)
        ]
        state = body.conversation
        if not lines:
            lines.append(f"Nothing to offer now{f': {body.held_back}' if body.held_back else ''}.")
        lines.append(f"conversation: {state.type}, {state.messages} messages")
        lines += [f"warning: {w}" for w in body.warnings]
        return _result("\n".join(lines), body)

    @tool(
        description="Report how an offered insight was received, once per surfacing_id: "
        "used or helpful raise the memory's confidence, ignored lowers it a little, "
        "dismissed lowers it more and marks it irrelevant for what the conversation is about.",
        annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False),
    )
    def engage(
        self,
        surfacing_id: Annotated[str, Field(min_length=1, max_length=200)],
        engagement: Literal["used", "helpful", "ignored", "dismissed"],
        ctx: Context,
        collection: Collection = None,
    ) -> CallToolResult:
        service, name = self._scope(ctx, collection)
        body = EngagementOut.from_engine(service.engage(name, surfacing_id, engagement))
        return _result(
            f"recorded {engagement} for {body.memory.id}: confidence now "
            f"{body.memory.retrieval.confidence:.2f}",
            body,
        )

    @tool(
        description="Say whether a memory (from recall or associate) helped. Helpful "
        "strengthens its links to the context concepts; not helpful weakens it.",
        annotations=ToolAnnotations(destructive_hint=False),
    )
    def feedback(
        self,
        memory_id: Annotated[str, Field(min_length=1, max_length=200)],
        helpful: bool,
        ctx: Context,
        collection: Collection = None,
        context: Annotated[list[str], Field(max_length=50)] | None = None,
    ) -> CallToolResult:
        service, name = self._scope(ctx, collection)
        memory = service.feedback(name, memory_id, helpful=helpful, context=context or [])
        body = MemoryOut.from_engine(memory)
        return _result(f"{memory.id}: confidence now {memory.retrieval.confidence:.2f}", body)

    @tool(
        description="Delete a memory and all its links, for good. Only when it is wrong "
        "or must not be kept; prefer feedback for a memory that merely did not help.",
        annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True),
    )
    def forget(
        self,
        memory_id: Annotated[str, Field(min_length=1, max_length=200)],
        ctx: Context,
        collection: Collection = None,
    ) -> CallToolResult:
        service, name = self._scope(ctx, collection)
        service.forget(name, memory_id)
        return _result(f"forgot {memory_id}", {"forgotten": memory_id})

    @tool(
        description="Valuable memories that are fading (spaced repetition): worth "
        "bringing up again before they are lost. Most valuable first.",
        annotations=read_only,
    )
    def resurface(
        self,
        ctx: Context,
        collection: Collection = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
    ) -> CallToolResult:
        service, name = self._scope(ctx, collection)
        due = service.resurface(name, limit=limit)
        body = ResurfaceOut(
            scheduler=service.scheduler.name,
            results=[DueOut(urgency=u, memory=MemoryOut.from_engine(m)) for m, u in due],
            warnings=unwritten_collection_warnings(
                service, self._access_of(ctx.headers), name, len(due)
            ),
        )
        lines = [
            memory_line(i, d.memory) + f" (urgency {d.urgency:.2f})"
            for i, d in enumerate(body.results, start=1)
        ] or ["Nothing is due."]
        lines += [f"warning: {w}" for w in body.warnings]
        return _result("\n".join(lines), body)

    @tool(
        description="What a collection holds: memories by category and tier, graph size, "
        "memories waiting for a vector.",
        annotations=read_only,
    )
    def stats(self, ctx: Context, collection: Collection = None) -> CallToolResult:
        service, name = self._scope(ctx, collection)
        s = service.stats(name)
        access = self._access_of(ctx.headers)
        warnings = unwritten_collection_warnings(service, access, name, s.memories)
        by_category = dict(s.by_category)
        body = {
            "collection": s.collection,
            "memories": s.memories,
            "by_category": by_category,
            "by_tier": {str(k): v for k, v in s.by_tier.items()},
            "pending_embeddings": s.pending_embeddings,
            "hubs": s.hubs,
            "edges": s.edges,
            "warnings": warnings,
        }
        categories = ", ".join(f"{k} {v}" for k, v in sorted(by_category.items()))
        lines = [
            f"{name}: {s.memories} memories ({categories or 'none'}), {s.edges} edges, "
            f"{s.pending_embeddings} waiting for a vector",
            *(f"warning: {w}" for w in warnings),
        ]
        return _result("\n".join(lines), body)

