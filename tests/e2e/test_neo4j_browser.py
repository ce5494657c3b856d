"""Neo4j Browser, for real: headless Chromium opens the Browser that the live
Neo4j serves (``$NEO4J_HTTP/browser/``), connects over Bolt with the password as
a user would, plays our guide from a running ``hippo serve``
(``:play http://localhost:PORT/browser/guide.html``), runs its first query, loads
the style sheet with the guide's own ``:style`` command, and runs the guide's
first graph query: the graph drawn must be the collection's, in our colours and
captions.

Skipped, with the reason, where no Chromium is installed or no live Neo4j is
named; with ``EXPLORER_REQUIRED=1`` and ``NEO4J_REQUIRED=1`` (CI, which installs
Chromium and starts a Neo4j) a missing Chromium fails instead.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.server import Server
from tests.devtools import DevTools, devtools, find_chromium
from tests.e2e.live_neo4j import LiveNeo4j, live_neo4j, scratch_collection

pytestmark = pytest.mark.slow

STEP_TIMEOUT_S = 120.0
"""How long one step may take to show on the page (a loaded machine is slow)."""

MEMORIES: list[dict[str, Any]] = [
    {
        "content": "Redis connection pool exhausted at checkout: raise the pool size",
        "category": "bug_fix",
        "concepts": ["redis", "connection pool"],
        "domains": ["payments"],
    },
    {
        "content": "Use a wait timeout on the redis pool so requests fail fast",
        "category": "decision",
        "concepts": ["redis", "timeout"],
        "domains": ["payments"],
    },
]

# What hippocampus.grass says for these; Browser's defaults differ in each.
MEMORY_FILL, MEMORY_BORDER = "#4C8EDA", "#2870C2"
ASSOCIATED_COLOUR = "#2870C2"


def chromium() -> str:
    found = find_chromium()
    if found:
        return found
    reason = (
        "no Chromium on PATH (Debian: apt-get install chromium): the Neo4j Browser test did not run"
    )
    if os.environ.get("EXPLORER_REQUIRED") == "1" and os.environ.get("NEO4J_REQUIRED") == "1":
        pytest.fail(f"EXPLORER_REQUIRED=1 and NEO4J_REQUIRED=1 but {reason}")
    pytest.skip(reason)


def browser_neo4j() -> LiveNeo4j:
    neo4j = live_neo4j()
    if neo4j.http is None:
        reason = (
            "NEO4J_HTTP is not set (tools/neo4j-server/neo4j.sh prints it): no address "
            "for Neo4j Browser"
        )
        if os.environ.get("EXPLORER_REQUIRED") == "1" and os.environ.get("NEO4J_REQUIRED") == "1":
            pytest.fail(f"EXPLORER_REQUIRED=1 and NEO4J_REQUIRED=1 but {reason}")
        pytest.skip(reason)
    return neo4j


# -- the page -------------------------------------------------------------------------

FRAMES = "[...document.querySelectorAll('[data-testid=\"frame\"]')]"


def _frame(command: str) -> str:
    """JavaScript: the newest result frame whose command contains ``command``."""
    return (
        f"{FRAMES}.find(f => (f.querySelector('[data-testid=\"frameCommand\"]') || {{}})"
        f".innerText?.includes({json.dumps(command)}))"
    )


def _runnable(frame: str, text: str) -> str:
    """JavaScript: the play icon Browser puts on the guide's runnable block holding
    ``text`` (a click runs the block in a new frame, as a user's would)."""
    return (
        f"[...{frame}.querySelectorAll('pre.runnable')]"
        f".find(p => p.innerText.includes({json.dumps(text)}))?.querySelector('i')"
    )


def connect(page: DevTools, neo4j: LiveNeo4j) -> None:
    """Open Browser with its connect form filled in but the password, and connect."""
    bolt = neo4j.uri.split("://", 1)[1]
    page.open(f"{neo4j.http}/browser/?dbms=neo4j://{neo4j.user}@{bolt}&preselectAuthMethod=NATIVE")
    password = "document.querySelector('[data-testid=\"password\"]')"
    page.wait_until(f"{password} !== null", STEP_TIMEOUT_S)
    page.evaluate(f"{password}.focus()")
    page.insert_text(neo4j.password)
    page.evaluate("document.querySelector('[data-testid=\"connect\"]').click()")
    page.wait_until("document.body.innerText.includes('You are connected as user')", STEP_TIMEOUT_S)


def run(page: DevTools, command: str) -> None:
    """Type ``command`` into Browser's editor and press its run button."""
    page.evaluate("document.querySelector('#monaco-main-editor textarea').focus()")
    page.insert_text(command)
    page.evaluate("document.querySelector('[data-testid=\"editor-Run\"]').click()")


def click(page: DevTools, element: str) -> None:
    page.wait_until(f"!!({element})", STEP_TIMEOUT_S)
    page.evaluate(f"{element}.click()")


def drawn_graph(page: DevTools, frame: str) -> dict[str, list[dict[str, str]]]:
    """The nodes and relationships Browser drew in ``frame``'s SVG, as styled."""
    found: dict[str, list[dict[str, str]]] = json.loads(
        page.evaluate(
            f"""JSON.stringify({{
              nodes: [...{frame}.querySelectorAll('svg g.node')].map(g => ({{
                fill: g.querySelector('circle.b-outline').getAttribute('fill'),
                stroke: g.querySelector('circle.b-outline').getAttribute('stroke'),
                caption: [...g.querySelectorAll('text.caption')]
                  .map(t => t.textContent.trim()).join(' '),
              }})),
              relationships: [...{frame}.querySelectorAll('svg g.relationship')].map(g => ({{
                fill: g.querySelector('path.b-outline').getAttribute('fill'),
                caption: (g.querySelector('text') || {{}}).textContent || '',
              }})),
            }})"""
        )
    )
    return found


# -- the data -------------------------------------------------------------------------


def seed(url: str, collection: str) -> list[dict[str, Any]]:
    """Remember :data:`MEMORIES` and use them together (an ``ASSOCIATED`` edge);
    returns the memories as the API reads them back."""
    base = f"{url}/v1/collections/{collection}"
    with httpx.Client(timeout=60.0) as http:
        ids = []
        for body in MEMORIES:
            r = http.post(f"{base}/memories", json=body)
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
        r = http.post(f"{base}/memories/used-together", json={"ids": ids})
        assert r.status_code == 200 and len(r.json()["edges"]) == 1, r.text
        return [http.get(f"{base}/memories/{i}").json() for i in ids]


def caption(memory: dict[str, Any]) -> str:
    """The grass's Memory caption, ``{category} {confidence}``, as Browser writes it."""
    return f"{memory['category']} {memory['retrieval']['confidence']:g}"


def test_the_guide_plays_in_neo4j_browser_and_draws_in_our_style(tmp_path: Path) -> None:
    executable = chromium()
    neo4j = browser_neo4j()
    with (
        scratch_collection(neo4j, "browser") as collection,
        Server(tmp_path / "data", tmp_path / "server.log", neo4j.server_settings()) as server,
    ):
        server.start()
        memories = seed(server.url, collection)
        # localhost, not 127.0.0.1: Browser fetches guides and styles only from the
        # hosts on browser.remote_content_hostname_whitelist, localhost by default.
        api = f"http://localhost:{server.port}"
        with devtools(executable, tmp_path) as page:
            try:
                connect(page, neo4j)
                run(page, f":play {api}/browser/guide.html")
                guide = _frame(f":play {api}/")

                # Its first query lists the collections: ours, with its two memories.
                click(page, _runnable(guide, "The collections in this database"))
                table = _frame("The collections in this database")
                row = re.escape(json.dumps(collection)) + r"\s+2\b"
                page.wait_until(
                    f"new RegExp({json.dumps(row)}).test({table}?.innerText || '')",
                    STEP_TIMEOUT_S,
                )

                run(page, f":param collection => {json.dumps(collection)}")
                page.wait_until(
                    f"({_frame(':param collection')}?.innerText || '')"
                    ".includes('Successfully set your parameters')",
                    STEP_TIMEOUT_S,
                )

                # The guide's own :style command names the server that served it.
                style_command = f":style {api}/browser/hippocampus.grass"
                click(page, _runnable(guide, style_command))
                page.wait_until(
                    f"({_frame(style_command)}?.innerText || '').includes('node.Memory')",
                    STEP_TIMEOUT_S,
                )

                # The next slide's query draws the collection's learned association.
                click(page, f"{guide}.querySelector('[data-testid=\"nextSlide\"]')")
                click(page, _runnable(guide, "The strongest learned associations"))
                graph = _frame("The strongest learned associations")
                page.wait_until(
                    f"({graph}?.querySelectorAll('svg g.node') || []).length === 2 && "
                    f"{graph}.querySelectorAll('svg g.relationship').length === 1",
                    STEP_TIMEOUT_S,
                )
                drawn = drawn_graph(page, graph)
            finally:
                shot = page.screenshot(tmp_path / "neo4j-browser.png")

    assert sorted(n["caption"] for n in drawn["nodes"]) == sorted(map(caption, memories))
    assert {(n["fill"], n["stroke"]) for n in drawn["nodes"]} == {(MEMORY_FILL, MEMORY_BORDER)}
    assert drawn["relationships"] == [{"fill": ASSOCIATED_COLOUR, "caption": "0.3"}]
    assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(shot) > 20_000  # a drawn graph, not a blank page


def test_without_chromium_the_browser_test_skips_unless_ci_requires_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("EXPLORER_REQUIRED", "1")
    monkeypatch.delenv("NEO4J_REQUIRED", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Chromium on PATH"):
        chromium()
    monkeypatch.setenv("NEO4J_REQUIRED", "1")
    with pytest.raises((pytest.skip.Exception, pytest.fail.Exception)) as outcome:
        chromium()
    assert outcome.type is pytest.fail.Exception, "skipped although required"
    assert "EXPLORER_REQUIRED=1 and NEO4J_REQUIRED=1 but no Chromium" in str(outcome.value)
