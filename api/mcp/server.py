"""The MCP server: :class:`~hippocampus.api.mcp.tools.MemoryTools` registered on
the SDK's :class:`MCPServer`, with the collection summary resource and the
``with_memory`` prompt; and ``/mcp``, the server over streamable HTTP in the
REST API, behind its keys."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from hippocampus.api.auth import Access, KeyRing, authorize, bearer_scheme
from hippocampus.api.errors import NOT_FOUND_MESSAGE, ApiError, error_response
from hippocampus.api.mcp.tools import (
    AccessOf,
    MemoryTools,
    ServiceOf,
    fail,
    memory_line,
)
from hippocampus.api.schemas import MemoryOut
from hippocampus.errors import HippoError, NotFoundError

INSTRUCTIONS = (
    "Hippocampus is a long-term memory shared with people and other agents. Before "
    "working on a problem, `recall` what is already known about it; when you learn "
    "something worth keeping (a fix, a decision, a pattern), `remember` it. In a "
    "conversation, send each message to `observe_message`: it offers 0-3 stored "
    "insights the conversation is about to need; tell `engage` how each was received "
    "so the memory learns what helps. Every tool takes a `collection` (e.g. "
    "org:acme); it may be left out when the server has a default."
)


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
        The server; run it on stdio (``run("stdio")``) or serve it over HTTP with
        :class:`StreamableHttpEndpoint`.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    mcp: MCPServer = MCPServer(name="hippocampus", instructions=INSTRUCTIONS, version="0.1.0")
    # The SDK configures the root logger when a server is made; logging belongs to
    # whoever runs the app (``hippo serve`` sets it up, a host application has its own).
    root.handlers[:] = handlers
    root.setLevel(level)
    for method, marks in MemoryTools(service_of, access_of, default_collection).registered():
        mcp.tool(description=marks["description"], annotations=marks["annotations"])(method)
    _add_summary_and_prompt(mcp, service_of, access_of)
    return mcp


def _add_summary_and_prompt(mcp: MCPServer, service_of: ServiceOf, access_of: AccessOf) -> None:
    """The resource saying what a collection holds, and the prompt that starts a
    task with a recall."""

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
            raise ResourceError(str(fail(e))) from e
        categories = ", ".join(f"{k} {v}" for k, v in sorted(dict(s.by_category).items()))
        tiers = ", ".join(f"{k} {v}" for k, v in sorted(dict(s.by_tier).items()))
        lines = [
            f"{collection}: {s.memories} memories ({categories or 'none'}; {tiers or 'no tiers'}), "
            f"{s.hubs} hubs, {s.edges} edges, {s.pending_embeddings} waiting for a vector.",
            "Most valuable:" if best else "Nothing stored yet.",
            *(memory_line(i, MemoryOut.from_engine(m)) for i, m in enumerate(best, start=1)),
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


def keyring_access(keyring: KeyRing) -> AccessOf:
    """The access of an HTTP call, from its ``Authorization`` header.

    The endpoint (:class:`StreamableHttpEndpoint`) has already refused calls
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
