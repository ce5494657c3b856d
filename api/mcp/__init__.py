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

from hippocampus.api.mcp.server import (
    INSTRUCTIONS,
    StreamableHttpEndpoint,
    create_mcp_server,
    full_access,
    keyring_access,
)
from hippocampus.api.mcp.tools import AccessOf, MemoryTools, ServiceOf

__all__ = [
    "INSTRUCTIONS",
    "AccessOf",
    "MemoryTools",
    "ServiceOf",
    "StreamableHttpEndpoint",
    "create_mcp_server",
    "full_access",
    "keyring_access",
]
