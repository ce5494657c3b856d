"""The MCP server: the engine's tools for agents, over stdio or streamable HTTP.

Built on the official ``mcp`` SDK (:class:`MCPServer`). ``hippo mcp`` serves it on
stdio for a client that starts the process; the REST API mounts it at ``/mcp``
(streamable HTTP, stateless, JSON responses), behind the same API keys as REST:
a call names its collection, and a collection the caller's key is not bound to is
answered exactly like one that does not exist.

Each tool returns a short text for the model to read and, as structured content,
the REST API's response body for the same request (never a vector). Bad input
and engine refusals come back as tool errors (``is_error``) with the reason.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AwareDatetime, BaseModel, Field, ValidationError
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from hippocampus.api.auth import Access, KeyRing, authorize, bearer_scheme
from hippocampus.api.deps import unwritten_collection_warnings
from hippocampus.api.errors import NOT_FOUND_MESSAGE, ApiError, error_response
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

INSTRUCTIONS = (
    "Hippocampus is a long-term memory shared with people and other agents. Before "
    "working on a problem, `recall` what is already known about it; when you learn "
    "something worth keeping (a fix, a decision, a pattern), `remember` it. In a "
    "conversation, send each message to `observe_message`: it offers 0-3 stored "
    "insights the conversation is about to need; tell `engage` how each was received "
    "so the memory learns what helps. Every tool takes a `collection` (e.g. "
    "org:acme); it may be left out when the server has a default."
)

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


def _memory_line(rank: int, memory: MemoryOut, score: float | None = None) -> str:
    scored = f" score {score:.3f}" if score is not None else ""
    newer = f" superseded by {', '.join(memory.superseded_by)};" if memory.superseded_by else ""
    return (
        f"{rank}. [{memory.category}]{scored} id={memory.id} "
        f"(confidence {memory.retrieval.confidence:.2f}):{newer} {_cut(memory.content)}"
    )


def _fail(e: HippoError) -> ToolError:
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


def create_mcp_server(
    service_of: ServiceOf,
    access_of: AccessOf,
    *,
    default_collection: str | None = None,
) -> MCPServer:
    """The MCP server over an engine.

    Args:
        service_of: returns the engine to serve (called on every tool call, so the
            API's lifespan may build it after the server is made).
        access_of: what the caller may touch, from the request's headers.
        default_collection: the collection used when a call names none.

    Returns:
        The server; run it on stdio (``run("stdio")``) or mount it with
        :func:`mount_streamable_http`.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    mcp: MCPServer = MCPServer(name="hippocampus", instructions=INSTRUCTIONS, version="0.1.0")
    # The SDK configures the root logger when a server is made; logging belongs to
    # whoever runs the app (``hippo serve`` sets it up, a host application has its own).
    root.handlers[:] = handlers
    root.setLevel(level)

    def scope(ctx: Context, collection: str | None) -> tuple[Hippocampus, str]:
        access = access_of(ctx.headers)
        name = collection or default_collection
        if name is None and access.collections is not None and len(access.collections) == 1:
            (name,) = access.collections
        if name is None:
            raise ToolError(
                "invalid_input: name a collection (e.g. org:acme): this server has no default"
            )
        service = service_of()
        try:
            service.check_collection(name)
        except HippoError as e:
            raise _fail(e) from e
        if not access.allows(name):
            raise ToolError(f"not_found: {NOT_FOUND_MESSAGE}")
        return service, name

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False)

    @mcp.tool(
        description="Store knowledge worth keeping (a bug fix, a decision, a pattern, an "
        "insight): one memory by its `content` (with `category`, `tags`, `importance`, "
        "`occurred_at`, `speaker` if known), or several as `memories`. Each gets an id; "
        "content already stored is merged, not duplicated; low-quality text is rejected "
        "with reasons.",
        annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False),
    )
    def remember(
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
        service, name = scope(ctx, collection)
        try:
            outcomes = service.remember_many(name, [m.to_engine() for m in items])
        except HippoError as e:
            raise _fail(e) from e
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

    @mcp.tool(
        description="Search memory: the stored memories most relevant to a question or "
        "problem, best first, each with its id and score. Use it before solving something "
        "that may have been solved before. With explain, each result says which graph "
        "paths (shared concepts, triggers) led to it.",
        annotations=read_only,
    )
    def recall(
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
        service, name = scope(ctx, collection)
        try:
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
        except ValidationError as e:
            raise _invalid(e) from e
        except HippoError as e:
            raise _fail(e) from e
        body = RecallOut.from_engine(result, detail=detail)
        body.warnings += unwritten_collection_warnings(
            service, access_of(ctx.headers), name, len(body.results)
        )
        hits = [RecallHitOut.from_engine(h) for h in result.hits]
        lines = [_memory_line(i, hit.memory, hit.score) for i, hit in enumerate(hits, start=1)]
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

    @mcp.tool(
        description="Memories associated with a set of concepts through the learned graph "
        "(not by text similarity): what tends to go with, say, ['redis', 'timeout'].",
        annotations=read_only,
    )
    def associate(
        context: Annotated[list[str], Field(min_length=1, max_length=50)],
        ctx: Context,
        collection: Collection = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
    ) -> CallToolResult:
        service, name = scope(ctx, collection)
        try:
            found = service.associate(name, context, limit=limit)
        except HippoError as e:
            raise _fail(e) from e
        body = AssociateOut(
            results=[AssociationOut.from_engine(a) for a in found.results],
            warnings=[
                *found.warnings,
                *unwritten_collection_warnings(
                    service, access_of(ctx.headers), name, len(found.results)
                ),
            ],
        )
        lines = [
            _memory_line(i, a.memory, a.strength) + f" [{a.anchors} of the concepts reach it]"
            for i, a in enumerate(body.results, start=1)
        ]
        lines += [f"warning: {w}" for w in body.warnings]
        return _result("\n".join(lines) or "Nothing associated with these concepts.", body)

    @mcp.tool(
        description="Follow a conversation: send each message as it is said. Returns 0-3 "
        "stored insights worth offering now (each with a surfacing_id to report back "
        "through `engage`), or why nothing was offered. Give `at` (when the message was "
        "said) when replaying a conversation, so the pace of the conversation is right.",
    )
    def observe_message(
        conversation_id: Annotated[str, Field(min_length=1, max_length=200)],
        text: Annotated[str, Field(min_length=1, max_length=8000)],
        ctx: Context,
        collection: Collection = None,
        role: Annotated[str, Field(min_length=1, max_length=64)] = "user",
        at: AwareDatetime | None = None,
        conversation_type: ConversationType | None = None,
    ) -> CallToolResult:
        service, name = scope(ctx, collection)
        try:
            outcome = service.message(
                name, conversation_id, text, role=role, at=at, conversation_type=conversation_type
            )
        except HippoError as e:
            raise _fail(e) from e
        body = MessageOut.from_engine(outcome)
        body.warnings += unwritten_collection_warnings(
            service, access_of(ctx.headers), name, outcome.candidates
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

    @mcp.tool(
        description="Report how an offered insight was received, once per surfacing_id: "
        "used or helpful raise the memory's confidence, ignored lowers it a little, "
        "dismissed lowers it more and marks it irrelevant for what the conversation is about.",
        annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False),
    )
    def engage(
        surfacing_id: Annotated[str, Field(min_length=1, max_length=200)],
        engagement: Literal["used", "helpful", "ignored", "dismissed"],
        ctx: Context,
        collection: Collection = None,
    ) -> CallToolResult:
        service, name = scope(ctx, collection)
        try:
            body = EngagementOut.from_engine(service.engage(name, surfacing_id, engagement))
        except HippoError as e:
            raise _fail(e) from e
        return _result(
            f"recorded {engagement} for {body.memory.id}: confidence now "
            f"{body.memory.retrieval.confidence:.2f}",
            body,
        )

    @mcp.tool(
        description="Say whether a memory (from recall or associate) helped. Helpful "
        "strengthens its links to the context concepts; not helpful weakens it.",
        annotations=ToolAnnotations(destructive_hint=False),
    )
    def feedback(
        memory_id: Annotated[str, Field(min_length=1, max_length=200)],
        helpful: bool,
        ctx: Context,
        collection: Collection = None,
        context: Annotated[list[str], Field(max_length=50)] | None = None,
    ) -> CallToolResult:
        service, name = scope(ctx, collection)
        try:
            memory = service.feedback(name, memory_id, helpful=helpful, context=context or [])
        except HippoError as e:
            raise _fail(e) from e
        body = MemoryOut.from_engine(memory)
        return _result(f"{memory.id}: confidence now {memory.retrieval.confidence:.2f}", body)

    @mcp.tool(
        description="Delete a memory and all its links, for good. Only when it is wrong "
        "or must not be kept; prefer feedback for a memory that merely did not help.",
        annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True),
    )
    def forget(
        memory_id: Annotated[str, Field(min_length=1, max_length=200)],
        ctx: Context,
        collection: Collection = None,
    ) -> CallToolResult:
        service, name = scope(ctx, collection)
        try:
            service.forget(name, memory_id)
        except HippoError as e:
            raise _fail(e) from e
        return _result(f"forgot {memory_id}", {"forgotten": memory_id})

    @mcp.tool(
        description="Valuable memories that are fading (spaced repetition): worth "
        "bringing up again before they are lost. Most valuable first.",
        annotations=read_only,
    )
    def resurface(
        ctx: Context,
        collection: Collection = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
    ) -> CallToolResult:
        service, name = scope(ctx, collection)
        try:
            due = service.resurface(name, limit=limit)
        except HippoError as e:
            raise _fail(e) from e
        body = ResurfaceOut(
            scheduler=service.scheduler.name,
            results=[DueOut(urgency=u, memory=MemoryOut.from_engine(m)) for m, u in due],
            warnings=unwritten_collection_warnings(service, access_of(ctx.headers), name, len(due)),
        )
        lines = [
            _memory_line(i, d.memory) + f" (urgency {d.urgency:.2f})"
            for i, d in enumerate(body.results, start=1)
        ] or ["Nothing is due."]
        lines += [f"warning: {w}" for w in body.warnings]
        return _result("\n".join(lines), body)

    @mcp.tool(
        description="What a collection holds: memories by category and tier, graph size, "
        "memories waiting for a vector.",
        annotations=read_only,
    )
    def stats(ctx: Context, collection: Collection = None) -> CallToolResult:
        service, name = scope(ctx, collection)
        try:
            s = service.stats(name)
        except HippoError as e:
            raise _fail(e) from e
        warnings = unwritten_collection_warnings(service, access_of(ctx.headers), name, s.memories)
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

    @mcp.resource(
        "hippo://collections/{collection}/summary",
        name="collection_summary",
        description="What a collection holds: memories by category and tier, the graph's "
        "size, and the most valuable memories (confidence × importance).",
        mime_type="text/plain",
    )
    def collection_summary(collection: str, ctx: Context) -> str:
        access = access_of(ctx.headers)
        service = service_of()
        try:
            service.check_collection(collection)
            if not access.allows(collection):
                raise NotFoundError(NOT_FOUND_MESSAGE)
            s = service.stats(collection)
            best = service.most_valuable(collection, 5)
        except HippoError as e:
            raise ResourceError(str(_fail(e))) from e
        categories = ", ".join(f"{k} {v}" for k, v in sorted(dict(s.by_category).items()))
        tiers = ", ".join(f"{k} {v}" for k, v in sorted(dict(s.by_tier).items()))
        lines = [
            f"{collection}: {s.memories} memories ({categories or 'none'}; {tiers or 'no tiers'}), "
            f"{s.hubs} hubs, {s.edges} edges, {s.pending_embeddings} waiting for a vector.",
            "Most valuable:" if best else "Nothing stored yet.",
            *(_memory_line(i, MemoryOut.from_engine(m)) for i, m in enumerate(best, start=1)),
        ]
        return "\n".join(lines)

    @mcp.prompt(
        description="Start a task with what memory already knows about it.",
    )
    def with_memory(task: str, collection: str) -> str:
        return (
            f"Before working on this task, call the `recall` tool with collection "
            f"{collection!r} and the task as the query, and use what it finds. When you "
            f"are done, `remember` anything worth keeping.\n\nTask: {task}"
        )

    return mcp


def keyring_access(keyring: KeyRing) -> AccessOf:
    """The access of an HTTP call, from its ``Authorization`` header.

    The ASGI wrapper of :func:`mount_streamable_http` has already refused calls
    without a valid key (or remote calls to a server with no keys), so here a
    missing key means the loopback, keyless case.
    """

    def access_of(headers: Mapping[str, str] | None) -> Access:
        if not keyring.configured:
            return Access(None)
        header = (headers or {}).get("authorization", "")
        scheme, _, token = header.partition(" ")
        access = keyring.lookup(token.strip()) if scheme.lower() == "bearer" else None
        if access is None:
            raise ToolError("unauthorized: an API key is required")
        return access

    return access_of


def full_access(headers: Mapping[str, str] | None) -> Access:
    """stdio: the process was started by its user, on the data it may open."""
    return Access(None)


class StreamableHttpEndpoint:
    """``/mcp`` in the REST API: the server over streamable HTTP, keys checked first.

    Stateless with JSON responses, so any API process can answer any call (the
    REST API keeps no session state either). The SDK's session manager runs only
    inside :meth:`running`, which the app's lifespan enters.
    """

    def __init__(self, server: MCPServer, keyring: KeyRing) -> None:
        self._server = server
        self._keyring = keyring
        self._handler: StreamableHTTPASGIApp | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Start the session manager (once per app start)."""
        security = (
            # With no keys the server serves this machine only; refuse pages on other
            # origins that reach it through DNS rebinding.
            TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            )
            if not self._keyring.configured
            else TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        self._server.streamable_http_app(
            stateless_http=True, json_response=True, transport_security=security
        )
        manager = self._server.session_manager
        async with manager.run():
            self._handler = StreamableHTTPASGIApp(manager)
            try:
                yield
            finally:
                self._handler = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            await authorize(request, await bearer_scheme(request))
        except ApiError as e:
            response = error_response(e.status_code, e.code, e.message, headers=e.headers)
            await response(scope, receive, send)
            return
        if self._handler is None:
            response = error_response(
                503, "not_ready", "the MCP endpoint is not running: the server is starting"
            )
            await response(scope, receive, send)
            return
        await self._handler(scope, receive, send)
