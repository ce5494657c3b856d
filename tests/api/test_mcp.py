"""The MCP server, driven by the SDK's own client: over stdio (``hippo mcp`` as a
subprocess) and over streamable HTTP (``/mcp`` of a running API, behind its keys)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from tests.api.helpers import ALPHA_KEY, BETA_KEY, find_leaks
from tests.api.live import live_server

FIX = "Redis connection pool exhausted at checkout: raise the pool size and add a wait timeout"
OTHER = "The office plants need water on Mondays, and the ferns twice a week in summer"
T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
TOOLS = {
    "remember",
    "recall",
    "associate",
    "observe_message",
    "engage",
    "feedback",
    "forget",
    "resurface",
    "stats",
}


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return result.structured_content


async def round_trip(client: Client, collection: str | None) -> None:
    """remember → recall → messages → engagement, and the errors on the way."""
    where = {"collection": collection} if collection else {}
    tools = {t.name for t in (await client.list_tools()).tools}
    assert tools >= TOOLS
    stored = structured(
        await client.call_tool(
            "remember",
            {
                "memories": [{"content": FIX, "category": "bug_fix"}, {"content": OTHER}],
                **where,
            },
        )
    )
    fix_id = stored["results"][0]["id"]
    assert stored["results"][0]["created"] and fix_id
    # One memory by its content, as over REST, with its fields beside it.
    one = structured(
        await client.call_tool(
            "remember",
            {
                "content": "Deploys to the EU region wait for the change freeze to lift",
                "category": "decision",
                "speaker": "Maya",
                "occurred_at": "2024-05-01T14:03:00Z",
                **where,
            },
        )
    )
    (single,) = one["results"]
    assert single["created"] and single["speaker"] == "Maya"
    assert single["occurred_at"].startswith("2024-05-01T14:03")
    both = await client.call_tool(
        "remember", {"content": OTHER, "memories": [{"content": OTHER}], **where}
    )
    assert both.is_error and "not both" in text_of(both)
    neither = await client.call_tool("remember", {"category": "decision", **where})
    assert neither.is_error and "give `content`" in text_of(neither)
    bad = await client.call_tool("remember", {"content": OTHER, "importance": 7, **where})
    assert bad.is_error and "importance" in text_of(bad)

    found = await client.call_tool("recall", {"query": "redis pool exhausted", "limit": 3, **where})
    assert structured(found)["results"][0]["id"] == fix_id
    assert fix_id in text_of(found)
    assert not find_leaks(found.structured_content)

    offered: dict[str, str] = {}
    so_far = ""
    for minute, text in enumerate(
        [
            "checkout is failing with errors since the sale started",
            "the redis connection pool looks exhausted at checkout",
        ]
    ):
        result = await client.call_tool(
            "observe_message",
            {
                "conversation_id": "chat-1",
                "text": text,
                "at": (T0 + timedelta(minutes=2 * minute)).isoformat(),
                **where,
            },
        )
        said = structured(result)
        so_far += " " + text
        offered |= {i["memory"]["id"]: i["surfacing_id"] for i in said["insights"]}
        for insight in said["insights"]:
            # Each says why, in the words that were said, and whether it was foreseen.
            assert insight["foreseen"] is False and insight["foreseen_topics"] == []
            assert insight["matched_topics"]
            assert all(w in so_far for t in insight["matched_topics"] for w in t.split())
            assert all(f'"{t}"' in insight["reason"] for t in insight["matched_topics"])
            assert f"why: {insight['reason']}" in text_of(result)
    assert fix_id in offered

    used = structured(
        await client.call_tool(
            "engage", {"surfacing_id": offered[fix_id], "engagement": "used", **where}
        )
    )
    assert used["memory"]["retrieval"]["usage_count"] == 1
    again = await client.call_tool(
        "engage", {"surfacing_id": offered[fix_id], "engagement": "used", **where}
    )
    assert again.is_error and "conflict" in text_of(again)

    # Bad arguments are a tool error the model can read, and the server goes on.
    bad = await client.call_tool("recall", {"query": "x", "limit": 0, **where})
    assert bad.is_error and "limit" in text_of(bad)
    missing = await client.call_tool("engage", {"surfacing_id": "nope", **where})
    assert missing.is_error and "engagement" in text_of(missing)
    unknown = await client.call_tool("engage", {"surfacing_id": "nope", "engagement": "used"})
    assert unknown.is_error
    assert structured(await client.call_tool("stats", where))["memories"] == 3
    own = collection or "team:alpha"
    summary = await client.read_resource(f"hippo://collections/{own}/summary")
    text = "\n".join(getattr(c, "text", "") for c in summary.contents)
    assert f"{own}: 3 memories" in text and fix_id in text


def run(main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main)


def test_round_trip_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "hippocampus.api.cli",
            "mcp",
            "--data-dir",
            str(tmp_path / "data"),
            "--embedder",
            "hashing",
            "--collection",
            "team:alpha",
        ],
        cwd=str(Path(__file__).resolve().parents[2]),
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            # The collection given to `hippo mcp` is the default.
            await round_trip(client, None)

    run(main)


@asynccontextmanager
async def http_client(url: str, key: str) -> AsyncIterator[Client]:
    # The HTTP client is ours to close: the transport leaves a given one open.
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as hc,
        Client(streamable_http_client(f"{url}/mcp", http_client=hc)) as client,
    ):
        yield client


def test_round_trip_over_http_with_keys(app: FastAPI) -> None:
    with live_server(app) as url:

        async def main() -> None:
            async with http_client(url, ALPHA_KEY) as alpha:
                # The alpha key is bound to team:alpha only: that is its default.
                await round_trip(alpha, None)
            async with http_client(url, BETA_KEY) as beta:
                refused = await beta.call_tool(
                    "recall", {"query": "redis pool", "collection": "team:alpha"}
                )
                assert refused.is_error and "not_found" in text_of(refused)
                assert FIX not in text_of(refused)
                refused = await beta.call_tool(
                    "remember", {"memories": [{"content": FIX}], "collection": "team:alpha"}
                )
                assert refused.is_error
                stats = await beta.call_tool("stats", {})
                own = structured(stats)
                assert own["collection"] == "team:beta" and own["memories"] == 0
                # Nothing was ever written to team:beta, and the answer says so.
                assert "holds no memories" in own["warnings"][0]
                assert "warning: collection 'team:beta'" in text_of(stats)
                with pytest.raises(MCPError):
                    await beta.read_resource("hippo://collections/team:alpha/summary")

        run(main)
        # Without a key the endpoint answers as REST does, before any MCP.
        r = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert r.status_code == 401
        assert r.json()["error"]["code"] == "unauthorized"
        r = httpx.post(
            f"{url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Authorization": "Bearer not-a-key"},
        )
        assert r.status_code == 401
