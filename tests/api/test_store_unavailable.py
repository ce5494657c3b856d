"""The API over a Neo4j store that goes away and comes back: readiness turns false,
requests get 503 with the one JSON error shape (no driver detail), nothing is
half written, and service resumes by itself once Neo4j answers again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from neo4j.exceptions import ServiceUnavailable, SessionExpired

from hippocampus.api.app import create_app
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.service import Hippocampus
from hippocampus.store.neo4j import Neo4jStore
from hippocampus.store.neo4j.schema import SCHEMA_VERSION
from tests.api.helpers import ALPHA, AuditingClient, CountingEmbedder, make_settings
from tests.unit.store.neo4j_fake import FakeDriver

DETAIL = "Couldn't connect to neo4j-internal.example:7687"


@pytest.fixture
def driver() -> FakeDriver:
    return FakeDriver(answers={"schema/read_schema_version": [{"version": SCHEMA_VERSION}]})


@pytest.fixture
def neo4j_client(
    tmp_path: Path, driver: FakeDriver, spacy_extractor: SpacyConceptExtractor
) -> Iterator[TestClient]:
    store = Neo4jStore(driver, dimensions=384)  # type: ignore[arg-type]
    service = Hippocampus(store, CountingEmbedder(), spacy_extractor)
    settings = make_settings(tmp_path / "unused", store="neo4j", maintenance_interval_s=0)
    with AuditingClient(create_app(settings, service=service)) as client:
        yield client
    service.close()


def test_readyz_follows_neo4j_down_and_back_up(
    neo4j_client: TestClient, driver: FakeDriver
) -> None:
    assert neo4j_client.get("/readyz").json()["ready"] is True
    driver.failure = ServiceUnavailable(DETAIL)
    r = neo4j_client.get("/readyz")
    assert r.status_code == 503
    body = r.json()
    assert body["ready"] is False and body["store"] == "Neo4jStore"
    assert body["error"]["code"] == "store_unavailable"
    assert "neo4j-internal" not in r.text
    driver.failure = None
    assert neo4j_client.get("/readyz").status_code == 200


@pytest.mark.parametrize("failure", [ServiceUnavailable(DETAIL), SessionExpired(DETAIL)])
def test_requests_get_a_clear_503_while_neo4j_is_away(
    neo4j_client: TestClient, driver: FakeDriver, failure: Exception
) -> None:
    driver.failure = failure
    for method, path, body in (
        ("POST", "/v1/collections/team:alpha/recall", {"query": "connection pool"}),
        ("POST", "/v1/collections/team:alpha/memories", {"content": "Pin the driver to 5.28"}),
        ("GET", "/v1/collections/team:alpha/memories/some-id", None),
    ):
        r = neo4j_client.request(method, path, json=body, headers=ALPHA)
        assert r.status_code == 503, (path, r.text)
        assert r.headers["Retry-After"]
        error = r.json()["error"]
        assert error["code"] == "store_unavailable"
        assert "try again" in error["message"]
        assert "neo4j-internal" not in r.text
    assert driver.committed == []  # nothing half written


def test_a_write_lost_mid_transaction_leaves_nothing(
    neo4j_client: TestClient, driver: FakeDriver
) -> None:
    driver.failure = ServiceUnavailable(DETAIL)
    driver.fail_on = "memory/add_memories"
    r = neo4j_client.post(
        "/v1/collections/team:alpha/memories",
        json={"content": "Pool exhaustion after the 5.2 upgrade"},
        headers=ALPHA,
    )
    assert r.status_code == 503
    assert all(name != "memory/add_memories" for name in driver.ran())


def test_a_wrong_neo4j_password_says_so_instead_of_retry_later(
    neo4j_client: TestClient, driver: FakeDriver
) -> None:
    from neo4j.exceptions import AuthError

    driver.failure = AuthError(f"{DETAIL}: The client is unauthorized due to authentication")
    r = neo4j_client.post(
        "/v1/collections/team:alpha/recall", json={"query": "connection pool"}, headers=ALPHA
    )
    assert r.status_code == 500
    assert "Retry-After" not in r.headers
    error = r.json()["error"]
    assert error["code"] == "store_auth_failed"
    assert "credentials" in error["message"] and "try again" not in error["message"]
    assert "neo4j-internal" not in r.text
    ready = neo4j_client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["error"]["code"] == "store_auth_failed"
    assert "credentials" in ready.json()["error"]["message"]


def test_a_full_neo4j_disk_is_store_full(neo4j_client: TestClient, driver: FakeDriver) -> None:
    from neo4j.exceptions import Neo4jError

    driver.failure = Neo4jError._hydrate_neo4j(
        code="Neo.DatabaseError.Transaction.TransactionLogError",
        message="The database was unable to write transaction to log.",
    )
    driver.fail_on = "memory/add_memories"
    r = neo4j_client.post(
        "/v1/collections/team:alpha/memories",
        json={"content": "Pin the driver to 5.28 because 5.29 broke pooling"},
        headers=ALPHA,
    )
    assert r.status_code == 503, r.text
    assert r.json()["error"]["code"] == "store_full"
    assert driver.committed == [] or all(
        name != "memory/add_memories" for tx in driver.committed for name, _ in tx
    )


def test_a_delete_that_keeps_colliding_over_a_hub_is_503_not_500(
    neo4j_client: TestClient, driver: FakeDriver
) -> None:
    from neo4j.exceptions import Neo4jError

    driver.failure = Neo4jError._hydrate_neo4j(
        code="Neo.ClientError.Statement.EntityNotFound",
        message="Node 17 was deleted by a concurrent transaction",
    )
    driver.fail_on = "memory/delete_memory"
    r = neo4j_client.delete("/v1/collections/team:alpha/memories/m1", headers=ALPHA)
    assert r.status_code == 503, r.text
    assert r.json()["error"]["code"] == "store_unavailable"
    assert "concurrent" not in r.text  # the detail stays in the log
