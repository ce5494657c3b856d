"""Neo4j Browser's guide and style sheet for this graph, for ``:play`` and ``:style``.

Static files from ``cypher/browser/``: no data, so no API key. Neo4j Browser fetches
them from the page, so they allow any origin; the server's hostname must be on
Neo4j's ``browser.remote_content_hostname_allowlist`` (``localhost`` is by default).
"""

from __future__ import annotations

import functools
import importlib.resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, PlainTextResponse

router = APIRouter(prefix="/browser", tags=["browser"], include_in_schema=False)

_CORS = {"Access-Control-Allow-Origin": "*"}


@functools.cache
def _file(name: str) -> str:
    return importlib.resources.files("cypher").joinpath("browser", name).read_text("utf-8")


@router.get("/guide.html")
def guide() -> HTMLResponse:
    """The guide of saved queries: ``:play http://localhost:8000/browser/guide.html``."""
    return HTMLResponse(_file("guide.html"), headers=_CORS)


@router.get("/hippocampus.grass")
def style() -> PlainTextResponse:
    """The style sheet: ``:style http://localhost:8000/browser/hippocampus.grass``."""
    return PlainTextResponse(_file("hippocampus.grass"), headers=_CORS)
