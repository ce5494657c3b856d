"""Every error has the one JSON shape; bad input is a 422 naming the field."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from fastapi.testclient import TestClient

from hippocampus.api.app import create_app
from hippocampus.embed import HashingEmbedder
from hippocampus.errors import EmbeddingError
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
from tests.api.helpers import ALPHA, AuditingClient, make_settings

URL = "/v1/collections/team:alpha/memories"


def assert_error(body: dict[str, Any], code: str, field: str | None = None) -> None:
    assert set(body) == {"error"}
    error = body["error"]
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    if field is None:
        assert "field" not in error
    else:
        assert error["field"] == field
    assert set(error) <= {"code", "message", "field"}


def stored(client: TestClient) -> int:
    r = client.get("/v1/collections/team:alpha/stats", headers=ALPHA)
    count: int = r.json()["memories"]
    return count


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "content"),
        ({"category": "insight"}, "content"),
        ({"content": ""}, "content"),
        ({"content": "x" * 32_001}, "content"),
        ({"content": 42}, "content"),
        ({"content": "ok", "importance": "high"}, "importance"),
        ({"content": "ok", "importance": 1.5}, "importance"),
        ({"content": "ok", "tags": "not-a-list"}, "tags"),
        ({"content": "ok", "tags": [f"t{i}" for i in range(51)]}, "tags"),
        ({"content": "ok", "colour": "blue"}, "colour"),
        (
            {"memories": [{"content": "a"}, {"content": "b"}, {"contents": "c"}]},
            "memories.2.content",
        ),
        ({"memories": "not-a-list"}, "memories"),
    ],
)
def test_bad_memory_body_is_422_naming_the_field_and_stores_nothing(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    r = client.post(URL, json=body, headers=ALPHA)
    assert r.status_code == 422, r.text
    assert_error(r.json(), "validation_error", field)
    assert stored(client) == 0


def test_oversized_content_message_names_the_field_and_the_limit(client: TestClient) -> None:
    r = client.post(URL, json={"content": "x" * 32_001}, headers=ALPHA)
    assert r.json()["error"]["message"] == (
        "body.content: String should have at most 32000 characters"
    )


def test_blank_content_is_422_from_the_engine_naming_content(client: TestClient) -> None:
    r = client.post(URL, json={"content": " \n\t "}, headers=ALPHA)
    assert r.status_code == 422
    assert_error(r.json(), "invalid_input", "content")


def test_nan_importance_is_422_naming_importance(client: TestClient) -> None:
    r = client.post(
        URL,
        content=b'{"content": "ok", "importance": NaN}',
        headers={**ALPHA, "Content-Type": "application/json"},
    )
    assert r.status_code == 422
    assert_error(r.json(), "validation_error", "importance")


def test_oversized_batch_is_422_naming_memories_and_stores_nothing(client: TestClient) -> None:
    batch = [{"content": f"memory number {i}"} for i in range(1001)]
    r = client.post(URL, json={"memories": batch}, headers=ALPHA)
    assert r.status_code == 422
    assert_error(r.json(), "validation_error", "memories")
    assert stored(client) == 0


def test_content_and_memories_together_is_422_saying_to_choose(client: TestClient) -> None:
    r = client.post(URL, json={"content": "one", "memories": [{"content": "two"}]}, headers=ALPHA)
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["field"] == "content"
    assert "either `content`" in error["message"] and "not both" in error["message"]
    assert client.get(f"{URL}/does-not-exist", headers=ALPHA).status_code == 404


@pytest.mark.parametrize(
    ("media", "body"),
    [("text/plain", b"hello"), ("application/x-www-form-urlencoded", b"content=hello")],
)
def test_a_body_that_is_not_json_is_415_naming_its_content_type(
    client: TestClient, media: str, body: bytes
) -> None:
    r = client.post(URL, content=body, headers={**ALPHA, "Content-Type": f"{media}; charset=utf-8"})
    assert r.status_code == 415
    assert_error(r.json(), "unsupported_media_type")
    assert media in r.json()["error"]["message"]
    assert "application/json" in r.json()["error"]["message"]


def test_malformed_json_is_422_without_a_field(client: TestClient) -> None:
    r = client.post(
        URL, content=b'{"content": ', headers={**ALPHA, "Content-Type": "application/json"}
    )
    assert r.status_code == 422
    assert_error(r.json(), "validation_error")


@pytest.mark.parametrize(
    "body",
    [
        b'{"content": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"content": "ok", "importance": ' + b"9" * 5000 + b"}",
    ],
    ids=["nested-too-deeply", "integer-too-long"],
)
def test_json_the_parser_gives_up_on_is_422_like_other_malformed_json(
    client: TestClient, body: bytes
) -> None:
    r = client.post(URL, content=body, headers={**ALPHA, "Content-Type": "application/json"})
    assert r.status_code == 422
    assert_error(r.json(), "validation_error")
    assert stored(client) == 0


@pytest.mark.parametrize("name", ["-starts-with-dash", "has space", "x" * 129, "semi;colon"])
def test_bad_collection_name_is_422_naming_collection(client: TestClient, name: str) -> None:
    r = client.post(
        f"/v1/collections/{name}/memories",
        json={"content": "ok"},
        headers={"Authorization": "Bearer admin-key-0003"},
    )
    assert r.status_code == 422
    assert_error(r.json(), "invalid_input", "collection")


@pytest.mark.parametrize("encoded", ["team:alpha%0A", "team:alpha%0a"])
def test_collection_name_with_a_trailing_newline_is_422_and_makes_no_collection(
    client: TestClient, service: Hippocampus, encoded: str
) -> None:
    r = client.post(
        f"/v1/collections/{encoded}/memories",
        json={"content": "a note for a collection whose name ends in a newline"},
        headers={"Authorization": "Bearer admin-key-0003"},
    )
    assert r.status_code == 422
    assert_error(r.json(), "invalid_input", "collection")
    assert service.collections() == []


@pytest.mark.parametrize(
    ("method", "url", "body", "field"),
    [
        (
            "POST",
            "/v1/collections/team:alpha/conversations/chat%0A/messages",
            {"text": "the checkout page is slow"},
            "conversation_id",
        ),
        (
            "POST",
            "/v1/collections/team:alpha/conversations/chat%E2%80%8B/messages",
            {"text": "the checkout page is slow"},
            "conversation_id",
        ),
        (
            "GET",
            "/v1/collections/team:alpha/conversations/chat%0A",
            None,
            "conversation_id",
        ),
        (
            "POST",
            "/v1/collections/team:alpha/surfacings/s1%0A/engagement",
            {"engagement": "used"},
            "surfacing_id",
        ),
        (
            "PUT",
            "/v1/collections/team:alpha/resources/workItem:1%0A",
            {"title": "Checkout is slow", "status": "OPEN"},
            "resource_id",
        ),
    ],
)
def test_id_with_a_trailing_newline_or_zero_width_character_is_422(
    client: TestClient, method: str, url: str, body: dict[str, Any] | None, field: str
) -> None:
    r = client.request(method, url, json=body, headers=ALPHA)
    assert r.status_code == 422, r.text
    assert_error(r.json(), "invalid_input", field)
    assert stored(client) == 0


def test_unknown_route_is_404_in_the_error_shape(client: TestClient) -> None:
    r = client.get("/v1/nowhere", headers=ALPHA)
    assert r.status_code == 404
    assert_error(r.json(), "not_found")


def test_wrong_method_is_405_in_the_error_shape(client: TestClient) -> None:
    r = client.put(f"{URL}/some-id", json={}, headers=ALPHA)
    assert r.status_code == 405
    assert_error(r.json(), "method_not_allowed")
    # Starlette names the methods of the first route on the path, not all of them.
    assert r.headers["allow"]


def test_body_over_the_limit_is_413_before_parsing(tmp_path: Path, service: Hippocampus) -> None:
    settings = make_settings(tmp_path / "data", limits={"max_body_bytes": 1000})
    with TestClient(create_app(settings, service=service)) as client:
        r = client.post(
            URL, content=b"x" * 1001, headers={**ALPHA, "Content-Type": "application/json"}
        )
        assert r.status_code == 413
        assert_error(r.json(), "body_too_large")


def test_chunked_body_over_the_limit_is_413(tmp_path: Path, service: Hippocampus) -> None:
    settings = make_settings(tmp_path / "data", limits={"max_body_bytes": 1000})

    def chunks() -> Iterator[bytes]:
        for _ in range(20):
            yield b"x" * 100

    with TestClient(create_app(settings, service=service)) as client:
        r = client.post(
            URL, content=chunks(), headers={**ALPHA, "Content-Type": "application/json"}
        )
        assert r.status_code == 413
        assert_error(r.json(), "body_too_large")


def test_chunked_body_under_the_limit_is_served(tmp_path: Path, service: Hippocampus) -> None:
    settings = make_settings(tmp_path / "data", limits={"max_body_bytes": 1000})
    payload = json.dumps({"content": "sent in chunks"}).encode()

    def chunks() -> Iterator[bytes]:
        yield payload[:5]
        yield payload[5:]

    with TestClient(create_app(settings, service=service)) as client:
        r = client.post(
            URL, content=chunks(), headers={**ALPHA, "Content-Type": "application/json"}
        )
        assert r.status_code == 201, r.text


class _FailingEmbedder(HashingEmbedder):
    """Embeds memories, then fails on queries, the way a broken model server would."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error
        self.fail = False

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.fail:
            raise self.error
        return super().encode(texts)


def _client_with(
    tmp_path: Path, embedder: _FailingEmbedder, extractor: SpacyConceptExtractor
) -> tuple[TestClient, Hippocampus]:
    svc = Hippocampus(EmbeddedStore(tmp_path / "fail-data"), embedder, extractor)
    app = create_app(make_settings(tmp_path / "fail-data"), service=svc)
    return AuditingClient(app, raise_server_exceptions=False), svc


def test_embedder_failure_degrades_recall_to_text_and_graph_with_a_warning(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    embedder = _FailingEmbedder(EmbeddingError("model server 10.0.0.7:9000 refused"))
    client, svc = _client_with(tmp_path, embedder, spacy_extractor)
    try:
        client.post(
            "/v1/collections/team:alpha/memories",
            json={"content": "Payment gateway timeouts during checkout"},
            headers=ALPHA,
        )
        embedder.fail = True
        r = client.post(
            "/v1/collections/team:alpha/recall", json={"query": "gateway timeouts"}, headers=ALPHA
        )
        assert r.status_code == 200
        body = r.json()
        assert body["warnings"] and body["results"]
        assert body["results"][0]["similarity"] is None
        assert "10.0.0.7" not in r.text
    finally:
        svc.close()


def test_unexpected_error_is_500_without_stack_or_detail(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, svc = _client_with(tmp_path, _FailingEmbedder(RuntimeError()), spacy_extractor)

    def broken(texts: Sequence[str]) -> list[Any]:
        raise RuntimeError("secret internal detail")

    try:
        # An embedder that breaks only degrades recall: break the extractor instead.
        monkeypatch.setattr(svc.extractor, "extract_many", broken)
        r = client.post("/v1/collections/team:alpha/recall", json={"query": "x"}, headers=ALPHA)
        assert r.status_code == 500
        assert_error(r.json(), "internal_error")
        assert "secret" not in r.text
        assert "Traceback" not in r.text
    finally:
        svc.close()


def test_embedder_failure_on_remember_still_stores_the_memory(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    embedder = _FailingEmbedder(EmbeddingError("model down"))
    client, svc = _client_with(tmp_path, embedder, spacy_extractor)
    try:
        embedder.fail = True
        r = client.post(URL, json={"content": "kept without a vector"}, headers=ALPHA)
        assert r.status_code == 201
        assert r.json()["embedded"] is False
        assert r.json()["reasons"]
        memory = client.get(f"{URL}/{r.json()['id']}", headers=ALPHA).json()
        assert memory["embedding_model"] is None
    finally:
        svc.close()
