"""PUT/DELETE /v1/collections/{c}/resources/{id} and POST /ai/rag-search: an
application indexing its work items (the seed's test scenarios)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from hippocampus.api.app import create_app
from hippocampus.service import Hippocampus
from tests.api.helpers import (
    ALPHA,
    BETA,
    AuditingClient,
    CountingEmbedder,
    make_settings,
    remember,
)

ORG = "org:acme"
OTHER_ORG = "org:globex"
ACME_KEY = "acme-key-00001"
GLOBEX_KEY = "globex-key-0002"
TWO_ORGS_KEY = "two-orgs-key-03"
ACME = {"Authorization": f"Bearer {ACME_KEY}"}
GLOBEX = {"Authorization": f"Bearer {GLOBEX_KEY}"}
TWO_ORGS = {"Authorization": f"Bearer {TWO_ORGS_KEY}"}
KEYS = f"{ACME_KEY}={ORG};{GLOBEX_KEY}={OTHER_ORG};{TWO_ORGS_KEY}={ORG},{OTHER_ORG}"

MOBILE_BUG: dict[str, Any] = {
    "title": "Customer says app is slow on mobile",
    "description": (
        "Customer reported that the mobile app takes 5+ seconds to load the dashboard. "
        "This is affecting user retention."
    ),
    "category": "Bug Reports",
    "status": "OPEN",
    "priority": "HIGH",
    "custom_fields": {"Severity": "Critical", "Platform": "iOS", "Story points": 5},
}
LOGIN_BUG: dict[str, Any] = {
    "title": "Login fails on iOS after the password reset",
    "description": "Users on iPhone cannot sign in; the mobile login screen spins forever.",
    "category": "Bug Reports",
    "status": "IN_PROGRESS",
}
INVOICE_TASK: dict[str, Any] = {
    "title": "Quarterly invoice export for the finance team",
    "description": "Finance wants the CSV of paid invoices with tax columns every quarter.",
    "category": "Tasks",
    "status": "OPEN",
}


def _client(tmp_path: Path, service: Hippocampus) -> TestClient:
    return AuditingClient(create_app(make_settings(tmp_path / "data", KEYS), service=service))


def _put(client: TestClient, item_id: int, body: dict[str, Any], org: str = ORG) -> Any:
    headers = ACME if org == ORG else GLOBEX
    return client.put(
        f"/v1/collections/{org}/resources/workItem:{item_id}", json=body, headers=headers
    )


def _search(client: TestClient, query: str, headers: dict[str, str], limit: int = 5) -> Any:
    return client.post("/ai/rag-search", json={"query": query, "limit": limit}, headers=headers)


def test_first_record_creates_the_collection_and_indexes_the_document(
    tmp_path: Path, service: Hippocampus, embedder: CountingEmbedder
) -> None:
    assert ORG not in service.collections()
    with _client(tmp_path, service) as client:
        r = _put(client, 123, MOBILE_BUG)
        assert r.status_code == 201
        body = r.json()
        assert body["action"] == "created" and body["reindexed"] is True
        assert body["id"] == "workItem:123"
        assert body["document"] == (
            "Work Item: Customer says app is slow on mobile\n\n"
            "Description:\nCustomer reported that the mobile app takes 5+ seconds to load the "
            "dashboard. This is affecting user retention.\n\n"
            "Category:\nBug Reports\n\nStatus:\nOPEN\n\nPriority:\nHIGH\n\n"
            "Custom Fields:\n- Platform: iOS\n- Severity: Critical"
        )
        assert ORG in service.collections()
        assert embedder.texts.count(body["document"]) == 1
        memory = service.get(ORG, "workItem:123")
        assert memory.category == "work_item" and memory.source == "resource"
        # The same record again: same bytes, nothing embedded.
        before = len(embedder.texts)
        again = _put(client, 123, MOBILE_BUG).json()
        assert again["action"] == "unchanged" and again["document"] == body["document"]
        assert len(embedder.texts) == before


def test_a_description_change_reindexes(
    tmp_path: Path, service: Hippocampus, embedder: CountingEmbedder
) -> None:
    with _client(tmp_path, service) as client:
        _put(client, 123, MOBILE_BUG)
        before = len(embedder.texts)
        r = _put(client, 123, {**MOBILE_BUG, "description": "New description of the slowness"})
        assert r.status_code == 200
        assert r.json()["action"] == "updated" and r.json()["reindexed"] is True
        assert "New description of the slowness" in embedder.texts[before]
        assert "New description" in service.get(ORG, "workItem:123").content


def test_status_priority_and_ignored_field_changes_do_not_reindex(
    tmp_path: Path, service: Hippocampus, embedder: CountingEmbedder
) -> None:
    with _client(tmp_path, service) as client:
        _put(client, 123, MOBILE_BUG)
        document = service.get(ORG, "workItem:123").content
        before = len(embedder.texts)
        for change in (
            {"status": "IN_PROGRESS"},
            {"priority": "LOW"},
            {"custom_fields": {**MOBILE_BUG["custom_fields"], "Story points": 8}},
            {"custom_fields": {**MOBILE_BUG["custom_fields"], "Assignee": "dana"}},
        ):
            r = _put(client, 123, {**MOBILE_BUG, **change})
            assert r.status_code == 200
            body = r.json()
            assert body["action"] == "unchanged" and body["reindexed"] is False
            assert any("not re-indexed" in reason for reason in body["reasons"])
        assert len(embedder.texts) == before  # the embedder was never called
        assert service.get(ORG, "workItem:123").content == document


def test_search_returns_ids_only_and_leaves_irrelevant_records_out(
    tmp_path: Path, service: Hippocampus
) -> None:
    with _client(tmp_path, service) as client:
        _put(client, 123, MOBILE_BUG)
        _put(client, 45, LOGIN_BUG)
        _put(client, 77, INVOICE_TASK)
        r = _search(client, "login issues on mobile", ACME)
        assert r.status_code == 200
        body = r.json()
        assert set(body) == {"success", "work_item_ids"}
        assert body["success"] is True
        assert body["work_item_ids"][0] == 45
        assert 77 not in body["work_item_ids"]
        assert all(isinstance(i, int) for i in body["work_item_ids"])
        assert "login" not in r.text.lower()  # no text comes back


def test_an_archived_record_is_deleted_and_gone_from_search(
    tmp_path: Path, service: Hippocampus
) -> None:
    with _client(tmp_path, service) as client:
        _put(client, 45, LOGIN_BUG)
        assert _search(client, "login fails on iOS", ACME).json()["work_item_ids"] == [45]
        r = _put(client, 45, {**LOGIN_BUG, "status": "ARCHIVED"})
        assert r.json() == {
            "id": "workItem:45",
            "action": "deleted",
            "reindexed": False,
            "embedded": None,
            "document": None,
            "reasons": [],
        }
        assert _search(client, "login fails on iOS", ACME).json()["work_item_ids"] == []
        assert _put(client, 45, {**LOGIN_BUG, "status": "archived"}).json()["action"] == "absent"


def test_delete_removes_a_record_and_a_missing_one_is_404(
    tmp_path: Path, service: Hippocampus
) -> None:
    with _client(tmp_path, service) as client:
        _put(client, 45, LOGIN_BUG)
        url = f"/v1/collections/{ORG}/resources/workItem:45"
        assert client.delete(url, headers=ACME).status_code == 204
        assert client.delete(url, headers=ACME).status_code == 404
        assert _search(client, "login fails on iOS", ACME).json()["work_item_ids"] == []


def test_another_organisations_key_sees_nothing(tmp_path: Path, service: Hippocampus) -> None:
    with _client(tmp_path, service) as client:
        _put(client, 45, LOGIN_BUG)
        assert _search(client, "login fails on iOS", GLOBEX).json() == {
            "success": True,
            "work_item_ids": [],
        }
        r = client.put(
            f"/v1/collections/{ORG}/resources/workItem:46", json=LOGIN_BUG, headers=GLOBEX
        )
        assert r.status_code == 404
        r = client.delete(f"/v1/collections/{ORG}/resources/workItem:45", headers=GLOBEX)
        assert r.status_code == 404
        assert service.get(ORG, "workItem:45")


def test_search_needs_a_key_bound_to_exactly_one_collection(
    tmp_path: Path, service: Hippocampus
) -> None:
    with _client(tmp_path, service) as client:
        r = client.post("/ai/rag-search", json={"query": "login"})
        assert r.status_code == 401
        assert r.json()["error"]["code"] == "unauthorized"
        r = _search(client, "login", {"Authorization": "Bearer not-a-real-key"})
        assert r.status_code == 401
        r = _search(client, "login", TWO_ORGS)
        assert r.status_code == 403
        assert r.json()["error"]["code"] == "collection_ambiguous"
        assert '"collection"' in r.json()["error"]["message"]
        assert "more than one collection" in r.json()["error"]["message"]


def test_search_takes_the_collection_in_the_body_where_the_key_does_not_say(
    tmp_path: Path, service: Hippocampus
) -> None:
    with _client(tmp_path, service) as client:
        assert _put(client, 123, MOBILE_BUG).status_code == 201
        query = {"query": "app is slow on mobile", "collection": ORG}
        r = client.post("/ai/rag-search", json=query, headers=TWO_ORGS)
        assert r.status_code == 200 and r.json()["work_item_ids"] == [123]
        # A collection the key is not bound to is not there, as everywhere.
        r = client.post("/ai/rag-search", json=query, headers=GLOBEX)
        assert r.status_code == 404
        r = client.post("/ai/rag-search", json={**query, "collection": "bad name!"}, headers=ACME)
        assert r.status_code == 422 and r.json()["error"]["field"] == "collection"


def test_search_on_a_local_server_without_keys_names_the_collection(
    tmp_path: Path, service: Hippocampus
) -> None:
    app = create_app(make_settings(tmp_path / "data", api_keys=""), service=service)
    with AuditingClient(app) as client:
        put = client.put(f"/v1/collections/{ORG}/resources/workItem:123", json=MOBILE_BUG)
        assert put.status_code == 201, put.text
        r = client.post("/ai/rag-search", json={"query": "app is slow on mobile"})
        assert r.status_code == 403
        message = r.json()["error"]["message"]
        assert "no API keys are configured" in message and '"collection"' in message
        r = client.post(
            "/ai/rag-search", json={"query": "app is slow on mobile", "collection": ORG}
        )
        assert r.status_code == 200 and r.json()["work_item_ids"] == [123]


def test_bad_records_get_422_naming_the_field_and_write_nothing(
    tmp_path: Path, service: Hippocampus
) -> None:
    with _client(tmp_path, service) as client:
        url = f"/v1/collections/{ORG}/resources"
        cases = [
            ({**LOGIN_BUG, "title": ""}, "workItem:1", "title"),
            ({**LOGIN_BUG, "title": "\u200b"}, "workItem:1", "title"),
            ({k: v for k, v in LOGIN_BUG.items() if k != "status"}, "workItem:1", "status"),
            (
                {**LOGIN_BUG, "custom_fields": {"Notes": "x" * 1001}},
                "workItem:1",
                "custom_fields.Notes",
            ),
            (
                {**LOGIN_BUG, "custom_fields": {"Mixed": ["a", {"b": 1}]}},
                "workItem:1",
                "custom_fields.Mixed",
            ),
            ({**LOGIN_BUG, "colour": "red"}, "workItem:1", "colour"),
            (LOGIN_BUG, "work\u200bItem:1", "resource_id"),
        ]
        for body, rid, field in cases:
            r = client.put(f"{url}/{rid}", json=body, headers=ACME)
            assert r.status_code == 422, (body, r.text)
            assert r.json()["error"]["field"] == field
        assert service.stats(ORG).memories == 0


def test_records_skip_the_gate_and_are_never_merged(tmp_path: Path, service: Hippocampus) -> None:
    with _client(tmp_path, service) as client:
        short = {"title": "Fix", "status": "OPEN"}
        assert _put(client, 1, short).json()["action"] == "created"
        assert _put(client, 2, short).json()["action"] == "created"
        assert service.stats(ORG).memories == 2


def test_keys_of_the_memory_api_work_for_records_too(client: TestClient) -> None:
    r = client.put("/v1/collections/team:alpha/resources/ticket-9", json=LOGIN_BUG, headers=ALPHA)
    assert r.status_code == 201
    r = client.put("/v1/collections/team:alpha/resources/ticket-9", json=LOGIN_BUG, headers=BETA)
    assert r.status_code == 404
    found = client.post("/ai/rag-search", json={"query": "login fails on iOS"}, headers=ALPHA)
    assert found.json()["work_item_ids"] == ["ticket-9"]


def test_a_record_never_overwrites_a_memory_of_the_same_id(client: TestClient) -> None:
    remember(client, "Payment gateway timeouts during checkout", id="ticket-9")
    r = client.put("/v1/collections/team:alpha/resources/ticket-9", json=LOGIN_BUG, headers=ALPHA)
    assert r.status_code == 409 and r.json()["error"]["field"] == "resource_id"
    archived = {**LOGIN_BUG, "status": "ARCHIVED"}
    r = client.put("/v1/collections/team:alpha/resources/ticket-9", json=archived, headers=ALPHA)
    assert r.status_code == 409
    memory = client.get("/v1/collections/team:alpha/memories/ticket-9", headers=ALPHA).json()
    assert memory["content"] == "Payment gateway timeouts during checkout"
