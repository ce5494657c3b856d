"""``/docs`` and ``/redoc`` without a network: their libraries come from this
server (npm, by the committed lockfile), and headless Chromium, with every host
but this machine unreachable, renders both pages from the API's own OpenAPI
description. The browser half is skipped, saying why, where no Chromium is
installed (``EXPLORER_REQUIRED=1``, as in CI, makes that a failure)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hippocampus.api.routers.api_docs import REDOC, SWAGGER
from tests.api.browser import browse, chromium
from tests.api.live import live_server

# Every host name fails to resolve but the loopback address the test server uses.
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"


def _installed() -> None:
    assert (SWAGGER / "swagger-ui-bundle.js").is_file() and REDOC.is_file(), (
        "the API docs' libraries are missing: run make api-docs"
    )


def test_the_pages_load_their_libraries_from_this_server(client: TestClient) -> None:
    _installed()
    for page, library in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
        r = client.get(page)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        sources = re.findall(r'(?:src|href)="([^"]+)"', r.text)
        assert f"/docs/static/{library}" in sources
        assert all(s.startswith("/") for s in sources), sources  # nothing from elsewhere
        assert "/openapi.json" in r.text
    for name, kind in (
        ("swagger-ui-bundle.js", "text/javascript"),
        ("swagger-ui.css", "text/css"),
        ("favicon-32x32.png", "image/png"),
        ("redoc.standalone.js", "text/javascript"),
    ):
        r = client.get(f"/docs/static/{name}")
        assert r.status_code == 200 and r.headers["content-type"].startswith(kind), name
        assert len(r.content) > 500
    assert client.get("/docs/static/package.json").status_code == 422


def test_docs_and_redoc_render_with_the_network_off(app: FastAPI, tmp_path: Path) -> None:
    chromium()
    _installed()
    with live_server(app) as url:
        swagger = browse(f"{url}/docs", tmp_path, OFFLINE, "--dump-dom")
        # Swagger UI drew the description: its title and an operation of each router.
        assert 'class="swagger-ui"' in swagger
        assert "Hippocampus" in swagger and "opblock" in swagger
        assert "/v1/collections/{collection}/recall" in swagger
        shot = tmp_path / "docs.png"
        browse(f"{url}/docs", tmp_path, OFFLINE, f"--screenshot={shot}")
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # not a blank page

        redoc = browse(f"{url}/redoc", tmp_path, OFFLINE, "--dump-dom")
        assert "redoc-wrap" in redoc or "api-content" in redoc, redoc[:2000]
        assert "/v1/collections/{collection}/recall" in redoc
        shot = tmp_path / "redoc.png"
        browse(f"{url}/redoc", tmp_path, OFFLINE, f"--screenshot={shot}")
        assert len(shot.read_bytes()) > 20_000


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_a_missing_library_is_said_with_the_install_step(
    client: TestClient, page: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from hippocampus.api.routers import api_docs

    gone = {name: (tmp_path / name, kind) for name, (_, kind) in api_docs._ASSETS.items()}
    monkeypatch.setattr(api_docs, "_ASSETS", gone)
    r = client.get(page)
    assert r.status_code == 503 and "make api-docs" in r.text
    assert client.get("/docs/static/redoc.standalone.js").status_code == 404
