"""The API over an embedded store whose disk fills up or turns read-only: every
write gets a clear 503 in the one error shape (no SQL, no path), reads go on,
/readyz says why it is not ready, and once writes are possible again nothing is
corrupted (integrity check, in-memory indexes equal to ones rebuilt from the
tables) and the same write succeeds.

Failures are injected into the store's write connection: SQLite's own
``query_only`` for a read-only database (SQLITE_READONLY at the first write),
and a connection whose COMMIT fails with SQLITE_FULL's message for a full disk
(the worst moment: every statement ran). A real full database
(``max_page_count``) is in the store's own tests below."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from hippocampus.api.app import create_app
from hippocampus.errors import StoreFullError, StoreReadOnlyError
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.model import NewMemory, RecallFilters
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.embedded.store import DB_FILE
from tests.api.helpers import (
    ALPHA,
    TRUSTED_OPERATOR,
    AuditingClient,
    CountingEmbedder,
    make_settings,
)

BASE = "/v1/collections/team:alpha"
C = "team:alpha"
NEW = "Disable HTTP keep-alive behind the old load balancer to stop resets"


class _FullDisk:
    """The store's write connection with a disk that is full at COMMIT."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.strip().upper() == "COMMIT":
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class _Failure:
    """Turns one kind of write failure on and off in a store."""

    def __init__(self, store: EmbeddedStore, kind: str) -> None:
        self.store = store
        self.kind = kind
        self._writer: Any = None

    def on(self) -> None:
        self._writer = self.store._writer
        if self.kind == "full":
            self.store._writer = _FullDisk(self._writer)  # type: ignore[assignment]
        else:
            self._writer.execute("PRAGMA query_only = ON")

    def off(self) -> None:
        if self.kind == "full":
            self.store._writer = self._writer
        else:
            self._writer.execute("PRAGMA query_only = OFF")


@pytest.fixture
def service(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    svc = Hippocampus(
        EmbeddedStore(tmp_path / "data"),
        CountingEmbedder(),
        spacy_extractor,
        quality=TRUSTED_OPERATOR,
    )
    yield svc
    svc.close()


@pytest.fixture
def client(tmp_path: Path, service: Hippocampus) -> Iterator[TestClient]:
    settings = make_settings(tmp_path / "data", maintenance_interval_s=0)
    with AuditingClient(create_app(settings, service=service)) as c:
        yield c


def _seed(client: TestClient) -> list[str]:
    ids = []
    for text in (
        "Connection pool exhausted under load after the driver upgrade",
        "Retry storms follow a cache node restart; add jitter to the backoff",
        "Pin the payments SDK to 4.2: 4.3 drops idempotency keys",
    ):
        r = client.post(f"{BASE}/memories", json={"content": text}, headers=ALPHA)
        assert r.status_code == 201
        ids.append(r.json()["id"])
    r = client.put(
        f"{BASE}/resources/ticket-1",
        json={"title": "Checkout times out", "description": "Pool exhausted", "status": "OPEN"},
        headers=ALPHA,
    )
    assert r.status_code == 201
    client.post(f"{BASE}/recall", json={"query": "connection pool"}, headers=ALPHA)
    return ids


def assert_consistent(store: EmbeddedStore, tmp_path: Path) -> None:
    """SQLite's integrity check passes, no edge outlives its memory, and the live
    store (indexes kept up write by write) answers as one rebuilt from the tables."""
    with sqlite3.connect(store.data_dir / DB_FILE) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        orphans = conn.execute(
            "SELECT count(*) FROM edges e WHERE NOT EXISTS (SELECT 1 FROM memories m"
            " WHERE m.collection = e.collection AND m.id = e.source)"
        ).fetchone()[0]
        assert orphans == 0
        copy_dir = tmp_path / f"rebuilt-{len(list(tmp_path.iterdir()))}"
        copy_dir.mkdir()
        with sqlite3.connect(copy_dir / DB_FILE) as copy:
            conn.backup(copy)
    rebuilt = EmbeddedStore(copy_dir)
    try:
        for c in store.list_collections():
            assert rebuilt.stats(c) == store.stats(c)
            live = {m.id: m for m in store.iter_memories(c)}
            assert {m.id: m for m in rebuilt.iter_memories(c)} == live
            every = RecallFilters(tiers=["active", "archived", "quarantined"])
            vectors = store.get_vectors(c, list(live))
            for memory in live.values():
                assert rebuilt.search_text(c, memory.content, k=5, filters=every) == (
                    store.search_text(c, memory.content, k=5, filters=every)
                )
                assert rebuilt.edges_of(c, memory.id) == store.edges_of(c, memory.id)
                if memory.id in vectors and memory.embedding_model:
                    found = store.search_vectors(
                        c, vectors[memory.id], model=memory.embedding_model, k=5, filters=every
                    )
                    assert found[0][0] == memory.id
                    again = rebuilt.search_vectors(
                        c, vectors[memory.id], model=memory.embedding_model, k=5, filters=every
                    )
                    # Near-ties may order differently; the scores may not differ.
                    assert again[0][0] == memory.id
                    assert [s for _, s in again] == pytest.approx([s for _, s in found])
            assert store.count_pending_embeddings(c, "hashing-v1-384") == (
                rebuilt.count_pending_embeddings(c, "hashing-v1-384")
            )
    finally:
        rebuilt.close()


@pytest.mark.parametrize(
    ("kind", "code", "words"),
    [("full", "store_full", "disk is full"), ("read_only", "store_read_only", "read-only")],
)
def test_writes_get_a_clear_503_reads_go_on_and_nothing_is_corrupted(
    client: TestClient,
    service: Hippocampus,
    tmp_path: Path,
    kind: str,
    code: str,
    words: str,
) -> None:
    ids = _seed(client)
    service.flush_learning()
    store = service.store
    assert isinstance(store, EmbeddedStore)
    before = store.stats(C)
    failure = _Failure(store, kind)
    failure.on()
    writes: list[tuple[str, str, Any]] = [
        ("POST", f"{BASE}/memories", {"content": NEW}),
        ("POST", f"{BASE}/memories", {"memories": [{"content": NEW}, {"content": NEW + "!"}]}),
        ("PATCH", f"{BASE}/memories/{ids[0]}", {"content": NEW + " (edited)"}),
        ("PATCH", f"{BASE}/memories/{ids[0]}", {"importance": 0.9}),
        ("DELETE", f"{BASE}/memories/{ids[1]}", None),
        ("POST", f"{BASE}/memories/{ids[2]}/feedback", {"helpful": True}),
        ("PUT", f"{BASE}/resources/ticket-2", {"title": "Login fails", "status": "OPEN"}),
        ("DELETE", f"{BASE}/resources/ticket-1", None),
        ("POST", f"{BASE}/conversations/c-1/messages", {"text": "the pool is exhausted"}),
        ("POST", f"{BASE}/maintenance/tiers", None),
        ("POST", f"{BASE}/maintenance/quality", None),
    ]
    for method, path, body in writes:
        r = client.request(method, path, json=body, headers=ALPHA)
        assert r.status_code == 503, (method, path, r.text)
        assert r.headers["Retry-After"]
        error = r.json()["error"]
        assert set(r.json()) == {"error"} and error["code"] == code
        assert words in error["message"] and "reads still work" in error["message"]
        for leak in ("sqlite", "INSERT", "UPDATE", "COMMIT", DB_FILE, str(tmp_path)):
            assert leak not in r.text, (path, leak)

    # Reads go on.
    assert client.get(f"{BASE}/memories/{ids[0]}", headers=ALPHA).status_code == 200
    recall = client.post(f"{BASE}/recall", json={"query": "connection pool"}, headers=ALPHA)
    assert recall.status_code == 200 and recall.json()["results"]
    assert client.get(f"{BASE}/stats", headers=ALPHA).status_code == 200
    rag = client.post("/ai/rag-search", json={"query": "checkout"}, headers=ALPHA)
    assert rag.status_code == 200
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["ready"] is False and ready.json()["error"]["code"] == code
    assert str(tmp_path) not in ready.text

    assert store.stats(C) == before  # nothing half-written, in memory or on disk
    failure.off()
    assert client.get("/readyz").status_code == 200  # cleared by the probe write
    assert_consistent(store, tmp_path)
    for method, path, body in writes:
        r = client.request(method, path, json=body, headers=ALPHA)
        assert r.status_code < 300, (method, path, r.text)
    assert_consistent(store, tmp_path)


def test_a_full_database_refuses_a_write_and_takes_it_once_there_is_room(
    service: Hippocampus, tmp_path: Path
) -> None:
    """A real SQLITE_FULL: the database may not grow past its current pages."""
    store = service.store
    assert isinstance(store, EmbeddedStore)
    service.remember(C, NewMemory(content="Connection pool exhausted under load"))
    writer = store._writer
    assert writer is not None
    pages = writer.execute("PRAGMA page_count").fetchone()[0]
    writer.execute(f"PRAGMA max_page_count = {pages}")
    before = store.stats(C)
    batch = [NewMemory(content=f"Incident {i}: " + "queue backlog grows " * 40) for i in range(20)]
    with pytest.raises(StoreFullError):
        service.remember_many(C, batch)
    assert store.stats(C) == before
    with pytest.raises(StoreFullError):
        store.check()
    writer.execute("PRAGMA max_page_count = 1073741823")
    store.check()
    outcomes = service.remember_many(C, batch)
    assert all(o.created for o in outcomes)
    assert_consistent(store, tmp_path)


def test_a_read_only_data_dir_makes_the_store_unready(
    client: TestClient, service: Hippocampus
) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root: file modes do not stop root from writing")
    store = service.store
    assert isinstance(store, EmbeddedStore)
    db = store.data_dir / DB_FILE
    os.chmod(db, 0o444)
    try:
        r = client.get("/readyz")
        assert r.status_code == 503 and r.json()["error"]["code"] == "store_read_only"
    finally:
        os.chmod(db, 0o644)
    assert client.get("/readyz").status_code == 200


def test_a_read_only_error_names_no_path(service: Hippocampus) -> None:
    store = service.store
    assert isinstance(store, EmbeddedStore)
    failure = _Failure(store, "read_only")
    failure.on()
    try:
        with pytest.raises(StoreReadOnlyError):
            service.remember(C, NewMemory(content=NEW))
    finally:
        failure.off()
    assert service.remember(C, NewMemory(content=NEW)).created
