"""API keys, collection binding, and the loopback-only mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from hippocampus.api.app import create_app
from hippocampus.api.auth import KeyRing, is_loopback
from hippocampus.service import Hippocampus
from tests.api.helpers import ADMIN, ALPHA, BETA, OPERATOR, make_settings, remember

ALPHA_URL = "/v1/collections/team:alpha"
BETA_URL = "/v1/collections/team:beta"


def test_request_without_key_is_401_with_bearer_challenge(client: TestClient) -> None:
    r = client.get(f"{ALPHA_URL}/stats")
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer wrong-key-0000",
        "Bearer alpha-key-000",
        "Basic YWxwaGE6a2V5",
        "alpha-key-0001",
        "Bearer ",
    ],
)
def test_request_with_bad_key_is_401(client: TestClient, authorization: str) -> None:
    r = client.get(f"{ALPHA_URL}/stats", headers={"Authorization": authorization})
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"


def test_unauthenticated_request_learns_nothing_about_the_body_or_name(client: TestClient) -> None:
    r = client.post("/v1/collections/bad name/memories", json={"nope": 1})
    assert r.status_code == 401


def test_key_for_other_collection_gets_same_404_as_missing_memory(client: TestClient) -> None:
    made = remember(client, "Alpha's private incident notes")
    real_404 = client.get(f"{ALPHA_URL}/memories/does-not-exist", headers=ALPHA)
    foreign = client.get(f"{ALPHA_URL}/memories/{made['id']}", headers=BETA)
    assert real_404.status_code == foreign.status_code == 404
    assert foreign.content == real_404.content
    assert foreign.json() == real_404.json()


def test_key_for_other_collection_gets_404_on_every_route(client: TestClient) -> None:
    made = remember(client, "Alpha's roadmap for the next quarter")
    mid = made["id"]
    calls: list[tuple[str, str, dict[str, Any] | None]] = [
        ("GET", f"{ALPHA_URL}/memories/{mid}", None),
        ("PATCH", f"{ALPHA_URL}/memories/{mid}", {"importance": 0.1}),
        ("DELETE", f"{ALPHA_URL}/memories/{mid}", None),
        ("POST", f"{ALPHA_URL}/memories", {"content": "beta writing into alpha"}),
        ("POST", f"{ALPHA_URL}/recall", {"query": "roadmap"}),
        ("GET", f"{ALPHA_URL}/stats", None),
    ]
    reference = client.get(f"{ALPHA_URL}/memories/does-not-exist", headers=ALPHA).json()
    for method, url, body in calls:
        r = client.request(method, url, json=body, headers=BETA)
        assert r.status_code == 404, (method, url)
        assert r.json() == reference
    # Nothing was changed by the refused calls.
    memory = client.get(f"{ALPHA_URL}/memories/{mid}", headers=ALPHA).json()
    assert memory["importance"] == 0.5
    assert client.get(f"{ALPHA_URL}/stats", headers=ALPHA).json()["memories"] == 1


def test_second_collection_never_sees_the_firsts_memories(client: TestClient) -> None:
    made = remember(client, "Alpha's database password rotation procedure")
    mid = made["id"]
    # The beta key in its own collection, asking for alpha's memory by id.
    assert client.get(f"{BETA_URL}/memories/{mid}", headers=BETA).status_code == 404
    assert (
        client.patch(
            f"{BETA_URL}/memories/{mid}", json={"tier": "archived"}, headers=BETA
        ).status_code
        == 404
    )
    assert client.delete(f"{BETA_URL}/memories/{mid}", headers=BETA).status_code == 404
    recalled = client.post(
        f"{BETA_URL}/recall", json={"query": "database password rotation"}, headers=BETA
    )
    assert recalled.status_code == 200
    assert recalled.json()["results"] == []
    stats = client.get(f"{BETA_URL}/stats", headers=BETA).json()
    assert stats["memories"] == 0
    assert stats["by_category"] == {}
    # Alpha's memory is untouched.
    memory = client.get(f"{ALPHA_URL}/memories/{mid}", headers=ALPHA).json()
    assert memory["tier"] == "active"


def test_same_external_id_in_two_collections_are_two_memories(client: TestClient) -> None:
    remember(client, "alpha's version", id="shared-id")
    r = client.post(
        f"{BETA_URL}/memories", json={"content": "beta's version", "id": "shared-id"}, headers=BETA
    )
    assert r.status_code == 201
    assert client.get(f"{ALPHA_URL}/memories/shared-id", headers=ALPHA).json()["content"] == (
        "alpha's version"
    )
    assert client.get(f"{BETA_URL}/memories/shared-id", headers=BETA).json()["content"] == (
        "beta's version"
    )


def test_star_key_sees_every_collection(client: TestClient) -> None:
    alpha = remember(client, "Alpha memory for the admin")
    r = client.post(f"{BETA_URL}/memories", json={"content": "Beta memory"}, headers=BETA)
    beta_id = r.json()["id"]
    assert client.get(f"{ALPHA_URL}/memories/{alpha['id']}", headers=ADMIN).status_code == 200
    assert client.get(f"{BETA_URL}/memories/{beta_id}", headers=ADMIN).status_code == 200
    r = client.post(
        "/v1/collections/org:any/memories",
        json={"content": "new", "source": OPERATOR},
        headers=ADMIN,
    )
    assert r.status_code == 201


def test_without_keys_loopback_client_is_served(local_client: TestClient) -> None:
    r = local_client.post(f"{ALPHA_URL}/memories", json={"content": "local use"})
    assert r.status_code == 201


def test_without_keys_remote_client_gets_403(tmp_path: Path, service: Hippocampus) -> None:
    app = create_app(make_settings(tmp_path / "data", api_keys=""), service=service)
    with TestClient(app, client=("203.0.113.9", 40000)) as remote:
        r = remote.get(f"{ALPHA_URL}/stats")
        assert r.status_code == 403
        error = r.json()["error"]
        assert error["code"] == "loopback_only"
        assert "HIPPO_API_KEYS" in error["message"]
        # Probes stay open: they reveal nothing about data.
        assert remote.get("/healthz").status_code == 200


def test_with_keys_remote_client_with_valid_key_is_served(
    tmp_path: Path, service: Hippocampus
) -> None:
    app = create_app(make_settings(tmp_path / "data"), service=service)
    with TestClient(app, client=("203.0.113.9", 40000)) as remote:
        assert remote.get(f"{ALPHA_URL}/stats", headers=ALPHA).status_code == 200
        assert remote.get(f"{ALPHA_URL}/stats").status_code == 401


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("testclient", True),
        ("10.0.0.1", False),
        ("::ffff:10.0.0.1", False),
        ("203.0.113.9", False),
        ("example.com", False),
        (None, False),
    ],
)
def test_is_loopback(host: str | None, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_keyring_matches_only_configured_keys() -> None:
    ring = KeyRing({"key-one-0001": frozenset({"a"}), "key-two-0002": None})
    one = ring.lookup("key-one-0001")
    assert one is not None and one.allows("a") and not one.allows("b")
    two = ring.lookup("key-two-0002")
    assert two is not None and two.allows("anything")
    assert ring.lookup("key-one-000") is None
    assert ring.lookup("") is None
    assert not KeyRing({}).configured


def test_keys_never_appear_in_logs(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    client.get(f"{ALPHA_URL}/stats", headers=ALPHA)
    client.get(f"{ALPHA_URL}/stats", headers={"Authorization": "Bearer wrong-key-0000"})
    client.get(f"{ALPHA_URL}/stats", headers=BETA)
    assert "alpha-key-0001" not in caplog.text
    assert "wrong-key-0000" not in caplog.text
    assert "beta-key-00002" not in caplog.text
