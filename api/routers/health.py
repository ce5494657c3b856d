"""Liveness and readiness probes. They need no API key: they say nothing about data."""

from __future__ import annotations

import os

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from hippocampus.api.deps import ServiceDep
from hippocampus.api.errors import not_ready_response
from hippocampus.api.schemas import ErrorOut, HealthOut, ReadyOut

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthOut)
def healthz() -> HealthOut:
    """The process is alive."""
    return HealthOut(pid=os.getpid())


@router.get(
    "/readyz",
    response_model=ReadyOut,
    responses={503: {"model": ErrorOut, "description": "The store cannot serve right now"}},
)
def readyz(service: ServiceDep) -> ReadyOut | JSONResponse:
    """The store can serve requests now (503 when it cannot, or refuses writes).
    A failing embedder leaves the server ready, and is listed in ``degraded``."""
    degraded: list[str] = []
    embedder = service.embedder_health()
    if not embedder.healthy:
        degraded.append(
            f"embedder: {embedder.reason}; memories are stored for re-embedding and "
            "recall uses text and graph"
        )
    ready = ReadyOut(
        ready=True,
        store=service.store_kind,
        embedder=service.embedder.name,
        extractor=service.extractor.name,
        degraded=degraded,
    )
    try:
        service.check_store()
    except Exception as e:
        return not_ready_response(e, ready.model_copy(update={"ready": False}).model_dump())
    return ready
