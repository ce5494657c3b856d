"""Neo4j Browser's guide and style sheet for this graph, for ``:play`` and ``:style``.

Static files from ``cypher/browser/``: no data, so no API key. Neo4j Browser fetches
them from the page, so they allow any origin; the server's hostname must be on
Neo4j's ``browser.remote_content_hostname_allowlist`` (``localhost`` is by default).

Browser 5 sends its fetch with ``cache-control`` and ``pragma`` headers, which
makes it a CORS request the browser must first ask about (an ``OPTIONS``
preflight): each file answers that too, allowing ``GET`` with those headers.
"""

from __future__ import annotations

import functools
import importlib.resources

from fastapi import APIRouter, Response
from fastapi.responses import HTMLResponse, PlainTextResponse

router = APIRouter(prefix="/browser", tags=["browser"], include_in_schema=False)

_CORS = {"Access-Control-Allow-Origin": "*"}
_PREFLIGHT = {
    **_CORS,
    "Access-Control-Allow-Methods": "GET",
    "Access-Control-Allow-Headers": "cache-control, pragma",
    "Access-Control-Max-Age": "600",
}


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


@router.options("/guide.html")
@router.options("/hippocampus.grass")
def preflight() -> Response:
    """The CORS preflight Browser sends before fetching either file."""
    return Response(status_code=200, headers=_PREFLIGHT)
