"""The app factory: lifespan, logging at start, OpenAPI, and no vector in any response."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hippocampus.api.app import create_app
from hippocampus.errors import StoreUnavailableError
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
from tests.api.helpers import ALPHA, AuditingClient, find_leaks, make_settings, remember


def test_lifespan_builds_the_service_from_settings_and_closes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hippocampus.api.app")
    app = create_app(make_settings(tmp_path / "own"))
    with TestClient(app) as client:
        service = app.state.service
        assert isinstance(service, Hippocampus)
        r = client.post(
            "/v1/collections/team:alpha/memories", json={"content": "built here"}, headers=ALPHA
        )
        assert r.status_code == 201
    assert "embedder hashing-v1-384" in caplog.text
    assert "extractor spacy:" in caplog.text
    assert "only loopback" not in caplog.text
    # Closed at shutdown: the data directory's lock is released.
    with pytest.raises(StoreUnavailableError):
        service.store.check()
    EmbeddedStore(tmp_path / "own").close()


def test_start_without_keys_warns_that_only_loopback_is_served(
    tmp_path: Path, service: Hippocampus, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hippocampus.api.app")
    app = create_app(make_settings(tmp_path / "data", api_keys=""), service=service)
    with TestClient(app):
        pass
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("only loopback clients are served" in r.getMessage() for r in warnings)


def test_injected_service_is_left_open_at_shutdown(app: FastAPI, service: Hippocampus) -> None:
    with TestClient(app):
        pass
    service.store.check()  # raises if the app had closed it


def test_openapi_is_served_at_docs_with_the_title(client: TestClient) -> None:
    assert client.get("/docs").status_code == 200
    spec = client.get("/openapi.json").json()
    assert spec["info"]["title"] == "Hippocampus"
    paths = set(spec["paths"])
    assert {
        "/v1/collections/{collection}/memories",
        "/v1/collections/{collection}/memories/{memory_id}",
        "/v1/collections/{collection}/recall",
        "/v1/collections/{collection}/stats",
        "/healthz",
        "/readyz",
    } <= paths
    assert "embedding" not in spec["components"]["schemas"]["MemoryOut"]["properties"]


def test_openapi_lists_the_conflict_and_unavailable_answers(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    engagement = paths["/v1/collections/{collection}/surfacings/{surfacing_id}/engagement"]
    assert "409" in engagement["post"]["responses"]
    assert "409" in paths["/v1/collections/{collection}/memories"]["post"]["responses"]
    for path in ("/v1/collections/{collection}/recall", "/v1/collections/{collection}/memories"):
        assert "503" in paths[path]["post"]["responses"], path


def test_no_response_on_any_route_contains_an_embedding(client: TestClient) -> None:
    # The AuditingClient checks each response as it comes; this walks every route.
    made = remember(client, "Vector leak guard: nothing shaped like an embedding goes out")
    url = f"/v1/collections/team:alpha/memories/{made['id']}"
    bodies = [
        client.post(
            "/v1/collections/team:alpha/memories",
            json={"memories": [{"content": "one more"}, {"content": "and another"}]},
            headers=ALPHA,
        ).json(),
        client.get(url, headers=ALPHA).json(),
        client.patch(url, json={"content": "changed text, re-embedded"}, headers=ALPHA).json(),
        client.post(
            "/v1/collections/team:alpha/recall", json={"query": "leak guard"}, headers=ALPHA
        ).json(),
        client.get("/v1/collections/team:alpha/stats", headers=ALPHA).json(),
        client.get("/readyz").json(),
    ]
    for body in bodies:
        assert find_leaks(body) == []
        assert '"embedding"' not in str(body).replace("'", '"')
    assert client.delete(url, headers=ALPHA).status_code == 204


def test_find_leaks_spots_a_vector() -> None:
    assert find_leaks({"memory": {"embedding": [0.1] * 3}}) == ["$.memory.embedding"]
    assert find_leaks({"x": [0.5] * 384}) == ["$.x (a list of 384 floats)"]
    assert find_leaks({"ok": [1, 2, 3], "scores": [0.9, 0.8]}) == []


def test_auditing_client_is_what_the_tests_use(client: TestClient) -> None:
    assert isinstance(client, AuditingClient)


def test_a_starting_server_builds_the_indexes_before_the_first_request(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    with TestClient(create_app(settings)) as client:
        remember(client, "Pin the driver version: 5.2 broke pooling")
    with TestClient(create_app(settings)) as client:
        store = client.app.state.service.store  # type: ignore[attr-defined]
        assert isinstance(store, EmbeddedStore)
        # Built in the background as the server starts: wait for it (bounded).
        for _ in range(500):
            if "team:alpha" in store._indexes:
                break
            threading.Event().wait(0.01)
        assert "team:alpha" in store._indexes


def test_a_request_hands_only_its_endpoint_to_a_worker_thread(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Authentication and the collection and service lookups run in the event loop:
    each hop to a worker thread and back costs more than they do, and under load
    waits for the interpreter lock besides."""
    remember(client, "the redis pool ran dry under load, so we raised its size", source="operator")
    handed: list[str] = []
    real = anyio.to_thread.run_sync

    async def counting(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        call = func.keywords.get("function", func.func) if isinstance(func, partial) else func
        handed.append(getattr(call, "__name__", repr(call)))
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    r = client.post("/v1/collections/team:alpha/recall", json={"query": "redis"}, headers=ALPHA)
    assert r.status_code == 200
    assert "recall" in handed
    assert not {"authorize", "get_collection", "get_service"} & set(handed)
