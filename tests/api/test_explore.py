"""The graph explorer page, in a real browser: headless Chromium (Debian's
``chromium`` package) loads /explore from a running server, and what it drew must
be what the API answers, before and after a node is clicked. Skipped, with the
reason, where no Chromium is installed; with ``EXPLORER_REQUIRED=1`` (CI, which
installs one) that fails instead, so a failed install cannot pass unnoticed.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hippocampus.api.routers.explore import LIBRARY
from tests.api.browser import browse, chromium
from tests.api.helpers import ALPHA, ALPHA_KEY
from tests.api.live import live_server
from tests.devtools import DevTools, devtools

BASE = "/v1/collections/team:alpha"
MEMORIES: list[dict[str, Any]] = [
    {
        "content": "Redis connection pool exhausted at checkout: raise the pool size",
        "category": "bug_fix",
        "concepts": ["redis", "connection pool"],
        "domains": ["payments"],
        "importance": 0.9,
    },
    {
        "content": "Use a wait timeout on the redis pool so requests fail fast",
        "category": "decision",
        "concepts": ["redis", "timeout"],
        "domains": ["payments"],
    },
    {
        "content": "Do not use a wait timeout on the redis pool: it hides leaks",
        "category": "decision",
        "concepts": ["redis", "timeout"],
    },
    {
        "content": "Postgres migrations lock the orders table; run them at night",
        "category": "pattern",
        "concepts": ["postgres", "migration"],
        "domains": ["payments"],
    },
    # A contradiction: the second is linked to the first by CONFLICTS_WITH.
    {
        "content": "The checkout_v2 feature flag is enabled in production",
        "category": "decision",
        "concepts": ["checkout", "feature flag"],
    },
    {
        "content": "The checkout_v2 feature flag is not enabled in production",
        "category": "decision",
        "concepts": ["checkout", "feature flag"],
    },
]
ENABLED, NOT_ENABLED = 4, 5
USED_TOGETHER = (0, NOT_ENABLED)
"""Memories used together: an ASSOCIATED edge between them."""


def drawn(dom: str) -> dict[str, Any]:
    assert 'data-state="ready"' in dom, dom[:2000]
    found = re.search(r'<script type="application/json" id="drawn-model">(.*?)</script>', dom, re.S)
    assert found, dom[:2000]
    model: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return model


def seed(url: str) -> list[str]:
    ids = []
    for body in MEMORIES:
        r = httpx.post(f"{url}{BASE}/memories", json=body, headers=ALPHA)
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    assert r.json()["conflicts_with"] == [ids[ENABLED]]
    r = httpx.post(
        f"{url}{BASE}/memories/used-together",
        json={"ids": [ids[i] for i in USED_TOGETHER]},
        headers=ALPHA,
    )
    assert r.status_code == 200 and len(r.json()["edges"]) == 1, r.text
    return ids


def graph_of(url: str, center: str) -> tuple[set[str], set[tuple[str, str, str]]]:
    """The nodes and edges /graph answers around ``center``, as the page asks for them."""
    r = httpx.get(
        f"{url}{BASE}/graph",
        params={"center": center, "depth": 1, "max_nodes": 150},
        headers=ALPHA,
    )
    assert r.status_code == 200, r.text
    graph = r.json()
    return {n["id"] for n in graph["nodes"]}, {
        (e["source"], e["type"], e["target"]) for e in graph["edges"]
    }


READY = "document.body !== null && document.body.dataset.state === 'ready'"
MODEL = "JSON.stringify(window.hippoExplorer.model)"


def drawn_now(page: DevTools) -> tuple[set[str], set[tuple[str, str, str]]]:
    model = json.loads(page.evaluate(MODEL))
    return set(model["nodes"]), {(s, t, d) for s, t, d in model["edges"]}


def test_the_page_draws_what_the_graph_api_answers(app: FastAPI, tmp_path: Path) -> None:
    chromium()
    assert LIBRARY.is_file(), "the explorer's library is missing: run make explorer"
    with live_server(app) as url:
        seed(url)
        center = "Concept:redis"
        page = f"{url}/explore?collection=team:alpha&center={center}#key={ALPHA_KEY}"
        model = drawn(browse(page, tmp_path, "--dump-dom"))
        graph = httpx.get(
            f"{url}{BASE}/graph",
            params={"center": center, "depth": 1, "max_nodes": 150},
            headers=ALPHA,
        ).json()
        assert sorted(model["nodes"]) == sorted(n["id"] for n in graph["nodes"])
        assert sorted(map(tuple, model["edges"])) == sorted(
            (e["source"], e["type"], e["target"]) for e in graph["edges"]
        )
        assert len(model["nodes"]) >= 4 and model["edges"]

        shot = tmp_path / "explorer.png"
        browse(page, tmp_path, f"--screenshot={shot}")
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) > 20_000  # a drawn graph, not a blank page


def test_memory_to_memory_edges_are_drawn_and_a_click_expands_a_node(
    app: FastAPI, tmp_path: Path
) -> None:
    with live_server(app) as url:
        ids = seed(url)
        center = f"Memory:{ids[NOT_ENABLED]}"
        partner = f"Memory:{ids[USED_TOGETHER[0]]}"
        with devtools(chromium(), tmp_path) as page:
            page.open(f"{url}/explore?collection=team:alpha&center={center}#key={ALPHA_KEY}")
            page.wait_until(READY)
            nodes, edges = drawn_now(page)
            assert (nodes, edges) == graph_of(url, center)
            assert (center, "CONFLICTS_WITH", f"Memory:{ids[ENABLED]}") in edges
            assert (center, "ASSOCIATED", partner) in edges

            # A click on the partner expands it: what /graph answers around it is added.
            tap = f"hippoExplorer.cy.$id({json.dumps(partner)}).emit('tap')"
            assert page.evaluate(f"{tap}, document.body.dataset.state") == "busy"
            page.wait_until(READY)
            around_nodes, around_edges = graph_of(url, partner)
            assert "Concept:redis" in around_nodes - nodes
            assert drawn_now(page) == (nodes | around_nodes, edges | around_edges)


def test_a_recall_on_the_page_lists_what_the_api_ranks(app: FastAPI, tmp_path: Path) -> None:
    chromium()
    with live_server(app) as url:
        seed(url)
        page = f"{url}/explore?collection=team:alpha&q=redis%20pool%20timeout#key={ALPHA_KEY}"
        dom = browse(page, tmp_path, "--dump-dom")
        model = drawn(dom)
        listed = re.search(r'id="results" [^>]*data-results="([^"]*)"', dom)
        assert listed, dom[:2000]
        ids = json.loads(html.unescape(listed.group(1)))
        answer = httpx.post(
            f"{url}{BASE}/recall",
            json={"query": "redis pool timeout", "limit": 10, "explain": True},
            headers=ALPHA,
        ).json()
        assert ids == [h["id"] for h in answer["results"]] and ids
        # The top result is drawn, with its neighbourhood and the paths behind it.
        assert f"Memory:{ids[0]}" in model["nodes"]
        for path in answer["results"][0]["paths"]:
            assert f"{path['anchor']['kind']}:{path['anchor']['name']}" in model["nodes"]


def test_without_chromium_the_browser_tests_skip_unless_required(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("EXPLORER_REQUIRED", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Chromium on PATH"):
        chromium()
    monkeypatch.setenv("EXPLORER_REQUIRED", "1")
    with pytest.raises((pytest.skip.Exception, pytest.fail.Exception)) as outcome:
        chromium()
    assert outcome.type is pytest.fail.Exception, "skipped although required"
    assert "EXPLORER_REQUIRED=1 but no Chromium" in str(outcome.value)


def test_the_page_is_static_and_its_library_is_served_locally(client: TestClient) -> None:
    page = client.get("/explore")
    assert page.status_code == 200
    assert "/explore/vendor/cytoscape.min.js" in page.text
    assert "https://" not in page.text  # no CDN: works offline
    assert client.get("/explore/vendor/cytoscape.min.js").status_code == 200
    assert (
        client.get("/explore/static/explore.js")
        .headers["content-type"]
        .startswith("text/javascript")
    )
    assert client.get("/explore/static/..%2Fmcp.py").status_code == 404
    assert client.get("/explore/static/index.html").status_code == 404
