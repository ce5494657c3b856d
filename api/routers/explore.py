"""The graph explorer page: static files only; the page reads the public API
(``/graph``, ``/recall``, ``/memories/{id}``) with the key its user gives it.

Its one library, cytoscape, is installed from npm by the committed lockfile
(``make explorer``, which ``make run`` and ``make test`` run) into
``api/explore/node_modules`` and served from there: no CDN, so it works offline.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse

from hippocampus.errors import NotFoundError

router = APIRouter(prefix="/explore", tags=["explore"], include_in_schema=False)

HERE = Path(__file__).resolve().parent.parent / "explore"
LIBRARY = HERE / "node_modules" / "cytoscape" / "dist" / "cytoscape.min.js"
_MISSING = (
    "<!doctype html><title>Hippocampus explorer</title><h1>The explorer is not installed</h1>"
    "<p>Its graph library comes from npm: run <code>make explorer</code> (or "
    "<code>cd api/explore &amp;&amp; npm ci</code>) and reload.</p>"
)
_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}


@router.get("", response_class=HTMLResponse)
def page() -> HTMLResponse:
    """The explorer page (503 with the install step when its library is missing)."""
    if not LIBRARY.is_file():
        return HTMLResponse(_MISSING, status_code=503)
    return HTMLResponse((HERE / "index.html").read_text("utf-8"), headers=_HEADERS)


@router.get("/static/explore.js")
def script() -> FileResponse:
    """The page's script."""
    return FileResponse(HERE / "explore.js", media_type="text/javascript", headers=_HEADERS)


@router.get("/static/explore.css")
def style() -> FileResponse:
    """The page's style sheet."""
    return FileResponse(HERE / "explore.css", media_type="text/css", headers=_HEADERS)


@router.get("/vendor/cytoscape.min.js")
def library() -> FileResponse:
    """cytoscape, as npm installed it."""
    if not LIBRARY.is_file():
        raise NotFoundError("the explorer's library is not installed: run make explorer")
    return FileResponse(LIBRARY, media_type="text/javascript", headers=_HEADERS)
