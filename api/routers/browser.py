"""Neo4j Browser's guide and style sheet for this graph, for ``:play`` and ``:style``.

Files from ``cypher/browser/``: no data, so no API key. Neo4j Browser fetches
them from the page, so they allow any origin; the server's hostname must be on
Neo4j's ``browser.remote_content_hostname_whitelist`` (``localhost`` is by default).
The guide's ``:style`` command names the style sheet of the server that served it.

Browser 5 sends its fetch with headers of its own (``cache-control`` and
``pragma``; ``sentry-trace`` and ``baggage`` while its telemetry is on), which
makes it a CORS request the browser must first ask about (an ``OPTIONS``
preflight): each file answers that too, allowing ``GET`` with whichever headers
the preflight names. The files are public and no credentials are allowed, so no
header can make the answer say more than a plain ``GET`` would.
"""

from __future__ import annotations

import functools
import html
import importlib.resources

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, PlainTextResponse

router = APIRouter(prefix="/browser", tags=["browser"], include_in_schema=False)

_CORS = {"Access-Control-Allow-Origin": "*"}
_PREFLIGHT = {
    **_CORS,
    "Access-Control-Allow-Methods": "GET",
    "Access-Control-Max-Age": "600",
}
_HEADERS = "cache-control, pragma, sentry-trace, baggage"
"""Allowed when a preflight names none: what Browser 5.24 to 5.26 send."""


@functools.cache
def _file(name: str) -> str:
    guide = importlib.resources.files("hippocampus.cypher").joinpath("browser", name)
    return guide.read_text("utf-8")


_STYLE_URL = "http://localhost:8000/browser/hippocampus.grass"
"""Where the guide's ``:style`` command finds the style sheet, as the file says."""


@router.get("/guide.html")
def guide(request: Request) -> HTMLResponse:
    """The guide of saved queries: ``:play http://localhost:8000/browser/guide.html``."""
    # The file assumes the default port; a server on another one (or another
    # host) would send Browser to a style sheet that is not there.
    # The URL is built from the request's Host header: escaped, it stays text.
    here = html.escape(str(request.url_for("style")))
    return HTMLResponse(_file("guide.html").replace(_STYLE_URL, here), headers=_CORS)


@router.get("/hippocampus.grass")
def style() -> PlainTextResponse:
    """The style sheet: ``:style http://localhost:8000/browser/hippocampus.grass``."""
    return PlainTextResponse(_file("hippocampus.grass"), headers=_CORS)


@router.options("/guide.html")
@router.options("/hippocampus.grass")
def preflight(request: Request) -> Response:
    """The CORS preflight Browser sends before fetching either file."""
    # A fixed list fails the day Browser adds a header (its Sentry tracing headers
    # did): the headers asked for are allowed, as the file is public anyway.
    asked = request.headers.get("access-control-request-headers", "").strip()
    headers = {
        **_PREFLIGHT,
        "Access-Control-Allow-Headers": asked or _HEADERS,
        # The answer depends on what was asked: a cache must not reuse it for another.
        "Vary": "Access-Control-Request-Headers",
    }
    return Response(status_code=200, headers=headers)
