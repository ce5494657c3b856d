"""The API's own documentation: ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc).

Their libraries are installed from npm by the committed lockfile (``make
api-docs``, which ``make run`` and ``make test`` run) into
``api/openapi/node_modules`` and served from there, as the explorer's is: no
CDN, so the pages work without a network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from hippocampus.errors import NotFoundError

router = APIRouter(include_in_schema=False)

HERE = Path(__file__).resolve().parent.parent / "openapi" / "node_modules"
SWAGGER = HERE / "swagger-ui-dist"
REDOC = HERE / "redoc" / "bundles" / "redoc.standalone.js"
_ASSETS: dict[str, tuple[Path, str]] = {
    "swagger-ui-bundle.js": (SWAGGER / "swagger-ui-bundle.js", "text/javascript"),
    "swagger-ui.css": (SWAGGER / "swagger-ui.css", "text/css"),
    "favicon-32x32.png": (SWAGGER / "favicon-32x32.png", "image/png"),
    "redoc.standalone.js": (REDOC, "text/javascript"),
}
Asset = Literal[
    "swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png", "redoc.standalone.js"
]
_STATIC = "/docs/static"
_MISSING = (
    "<!doctype html><title>Hippocampus API docs</title><h1>The API docs are not installed</h1>"
    "<p>Their libraries come from npm: run <code>make api-docs</code> (or "
    "<code>cd api/openapi &amp;&amp; npm ci --ignore-scripts</code>) and reload. The "
    "description itself is at <a href=\"/openapi.json\">/openapi.json</a>.</p>"
)


def _installed(*names: str) -> bool:
    return all(_ASSETS[name][0].is_file() for name in names)


@router.get("/docs", response_class=HTMLResponse)
def swagger(request: Request) -> HTMLResponse:
    """Swagger UI over the API's OpenAPI description (503 with the install step
    when its library is missing)."""
    if not _installed("swagger-ui-bundle.js", "swagger-ui.css"):
        return HTMLResponse(_MISSING, status_code=503)
    return get_swagger_ui_html(
        openapi_url=request.app.openapi_url,
        title=f"{request.app.title} API",
        swagger_js_url=f"{_STATIC}/swagger-ui-bundle.js",
        swagger_css_url=f"{_STATIC}/swagger-ui.css",
        swagger_favicon_url=f"{_STATIC}/favicon-32x32.png",
        oauth2_redirect_url=None,
        # No badge from the public validator: nothing leaves this server.
        swagger_ui_parameters={"validatorUrl": None},
    )


@router.get("/redoc", response_class=HTMLResponse)
def redoc(request: Request) -> HTMLResponse:
    """ReDoc over the API's OpenAPI description (503 with the install step when
    its library is missing)."""
    if not _installed("redoc.standalone.js"):
        return HTMLResponse(_MISSING, status_code=503)
    return get_redoc_html(
        openapi_url=request.app.openapi_url,
        title=f"{request.app.title} API",
        redoc_js_url=f"{_STATIC}/redoc.standalone.js",
        redoc_favicon_url=f"{_STATIC}/favicon-32x32.png",
        with_google_fonts=False,
    )


@router.get(_STATIC + "/{name}")
def asset(name: Asset) -> FileResponse:
    """A library file of the two pages, as npm installed it."""
    path, media_type = _ASSETS[name]
    if not path.is_file():
        raise NotFoundError("the API docs' libraries are not installed: run make api-docs")
    return FileResponse(path, media_type=media_type, headers={"Cache-Control": "no-cache"})
