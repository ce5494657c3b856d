"""The FastAPI application factory.

Nothing happens at import time: :func:`create_app` builds the app, and its
lifespan builds the engine (unless one is injected) when the server starts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI
from starlette.routing import Route

from hippocampus.api.admission import Admission
from hippocampus.api.auth import KeyRing
from hippocampus.api.errors import BodySizeLimitMiddleware, install_error_handlers
from hippocampus.api.maintenance import MaintenanceLoop
from hippocampus.api.mcp import StreamableHttpEndpoint, create_mcp_server, keyring_access
from hippocampus.api.routers import (
    api_docs,
    browser,
    explore,
    graph,
    health,
    maintenance,
    memories,
    metrics,
    rag,
    recall,
    resources,
    stats,
    surfacing,
    transfer,
)
from hippocampus.config import HippoSettings
from hippocampus.errors import HippoError
from hippocampus.service import Hippocampus

logger = logging.getLogger(__name__)

_DESCRIPTION = (
    "A graph-based associative memory engine. Every memory lives in a collection; "
    "send `Authorization: Bearer <key>` with a key bound to that collection."
)


_ROUTERS = (
    health.router,
    memories.router,
    resources.router,
    recall.router,
    rag.router,
    graph.router,
    stats.router,
    maintenance.router,
    transfer.router,
    surfacing.router,
    metrics.router,
    browser.router,
    explore.router,
    api_docs.router,
)


def create_app(
    settings: HippoSettings | None = None, *, service: Hippocampus | None = None
) -> FastAPI:
    """Build the API.

    Args:
        settings: the configuration; read from ``HIPPO_*`` variables when absent.
        service: an engine to serve. When absent, the lifespan builds one from
            ``settings`` at startup and closes it at shutdown; an injected engine
            belongs to the caller and is left open.

    Returns:
        The app, ready for uvicorn or a test client.
    """
    settings = settings if settings is not None else HippoSettings()
    keyring = KeyRing(settings.key_map())

    def current_service() -> Hippocampus:
        engine = getattr(app.state, "service", None)
        if not isinstance(engine, Hippocampus):
            raise RuntimeError("the app has no service: it was not started through its lifespan")
        return engine

    mcp_endpoint = StreamableHttpEndpoint(
        create_mcp_server(current_service, keyring_access(keyring)), keyring
    )
    app = FastAPI(
        title="Hippocampus",
        description=_DESCRIPTION,
        version="0.1.0",
        lifespan=_lifespan(settings, service, keyring, mcp_endpoint),
        # Served by api_docs with their libraries from npm, not a CDN: they work offline.
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.keyring = keyring
    app.state.admission = Admission(
        settings.admission.slots_for(settings.store), max_wait_s=settings.admission.max_wait_s
    )
    if service is not None:
        # Served without a lifespan too (a TestClient used outside `with`).
        app.state.service = service
    install_error_handlers(app)
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.limits.max_body_bytes)
    for router in _ROUTERS:
        app.include_router(router)
    # MCP over streamable HTTP, for agents: the same keys and collection rules.
    app.router.routes.append(Route("/mcp", mcp_endpoint))
    return app


def _lifespan(
    settings: HippoSettings,
    service: Hippocampus | None,
    keyring: KeyRing,
    mcp_endpoint: StreamableHttpEndpoint,
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's start and stop: the engine (built from ``settings`` unless one
    was given, and then left open), its warm-up, the maintenance loop and the
    MCP endpoint's session manager."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = service is None
        engine = Hippocampus.from_settings(settings) if service is None else service
        app.state.service = engine
        logger.info(
            "serving with embedder %s and extractor %s", engine.embedder.name, engine.extractor.name
        )
        if not keyring.configured:
            logger.warning(
                "no API keys configured (HIPPO_API_KEYS): only loopback clients are served"
            )
        # Each collection is made ready before its first request needs it.
        threading.Thread(target=_warm, args=(engine,), daemon=True).start()
        loop = MaintenanceLoop(engine, interval_s=settings.maintenance_interval_s)
        loop.start()
        try:
            async with mcp_endpoint.running():
                yield
        finally:
            loop.stop()
            if owned:
                engine.close()

    return lifespan


def _warm(engine: Hippocampus) -> None:
    started = time.perf_counter()
    try:
        built = engine.warm()
    except HippoError as e:  # the store went away or failed: requests will say so
        logger.warning("warming the indexes stopped: %s", e)
        return
    if built:
        logger.info(
            "indexes of %d collections built in %.1f s", built, time.perf_counter() - started
        )
