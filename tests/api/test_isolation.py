"""Tenant isolation and key handling on every route the app serves.

The routes are read from the app itself, so a route added later is tried too: a
route without an entry here for its ids or body fails these tests until it gets
one, and a route without authentication must be listed in ``PUBLIC``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hippocampus.service import Hippocampus
from hippocampus.store.embedded.store import DB_FILE
from tests.api.helpers import (
    ADMIN,
    ADMIN_KEY,
    ALPHA,
    ALPHA_KEY,
    BETA,
    BETA_KEY,
    OPERATOR,
    remember,
)

ALPHA_COLLECTION = "team:alpha"
BETA_COLLECTION = "team:beta"
SECRET = "zephyrquartz"
"""A word that only alpha's data holds: it must never reach another key."""

PUBLIC = frozenset(
    {
        "/healthz",
        "/readyz",
        "/openapi.json",
        "/docs",
        "/docs/static/{name}",
        "/redoc",
        "/browser/guide.html",
        "/browser/hippocampus.grass",
        "/explore",
        "/explore/static/explore.js",
        "/explore/static/explore.css",
        "/explore/vendor/cytoscape.min.js",
    }
)
"""Routes served without a key: they hold no data of any collection."""

BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/v1/collections/{collection}/memories"): {
        "content": "Queue consumers must be idempotent because deliveries repeat",
        "source": OPERATOR,
    },
    ("PATCH", "/v1/collections/{collection}/memories/{memory_id}"): {"importance": 0.9},
    ("PUT", "/v1/collections/{collection}/resources/{resource_id}"): {
        "title": "Checkout outage follow-up",
        "status": "OPEN",
    },
    ("POST", "/v1/collections/{collection}/recall"): {"query": "redis pool exhausted"},
    ("POST", "/v1/collections/{collection}/associate"): {"context": ["redis", "pool"]},
    ("POST", "/ai/rag-search"): {"query": "checkout outage"},
    ("POST", "/v1/collections/{collection}/conversations/{conversation_id}/messages"): {
        "text": "the redis connection pool looks exhausted at checkout"
    },
    ("POST", "/v1/collections/{collection}/surfacings/{surfacing_id}/engagement"): {
        "engagement": "used"
    },
    ("POST", "/v1/collections/{collection}/memories/{memory_id}/feedback"): {
        "helpful": True,
        "context": ["redis"],
    },
    ("POST", "/v1/collections/{collection}/memories/used-together"): {
        "ids": ["{memory_id}", "{memory_id}"],
        "context": ["redis"],
    },
}
"""A valid body for each route that takes one, so that what answers is the access
check, not validation. ``{memory_id}`` in a body is filled like the path's."""

BODY_NAMES_AN_OBJECT = {("POST", "/v1/collections/{collection}/memories/used-together")}
"""Routes whose body, not their path, names the objects they touch."""

UPSERTS = frozenset(
    {
        ("PUT", "/v1/collections/{collection}/resources/{resource_id}"),
        ("POST", "/v1/collections/{collection}/conversations/{conversation_id}/messages"),
    }
)
"""Routes that create what their id names in the caller's own collection."""

VALID_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@\-]{0,127}")
"""A collection name as the API documents it, written out here rather than imported
so that a regression in the engine's own pattern shows."""

REQUIRED_QUERY: dict[str, str] = {"/v1/collections/{collection}/graph": "center"}
"""Query parameters without which a route answers 422; filled with an id."""

_T0 = "2026-04-01T09:0{}:00+00:00"
_FIX = (
    f"Redis connection pool exhausted at checkout ({SECRET}): raise the pool size "
    "and add a wait timeout"
)

# Authorization headers that carry no valid key, whatever the route.
MALFORMED_AUTHORIZATION: tuple[bytes | None, ...] = (
    None,
    b"",
    b" ",
    b"Bearer",
    b"Bearer ",
    b"Bearer    ",
    ALPHA_KEY.encode(),
    b"Basic " + ALPHA_KEY.encode(),
    b"Token " + ALPHA_KEY.encode(),
    b"Bearer" + ALPHA_KEY.encode(),
    b"Bearer " + ALPHA_KEY.encode() + b"x",
    b"Bearer " + ALPHA_KEY.encode()[:-1],
    b"Bearer " + ALPHA_KEY.upper().encode(),
    b"Bearer " + ALPHA_KEY.encode() + b" " + BETA_KEY.encode(),
    b"Bearer " + ALPHA_KEY.encode() + b"," + BETA_KEY.encode(),
    b"Bearer \x00" + ALPHA_KEY.encode(),
    b"Bearer " + b"k" * 10_240,
    b"Bearer " + ALPHA_KEY.encode() * 700,
    b"Bearer " + "clé-ünïcødé-0001".encode(),
    b"Bearer " + "clé-ünïcødé-0001".encode("latin-1"),
    b"Bearer \xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8",
    "Bearer alpha\u2011key\u20110001".encode(),
)

COLLECTION_TRICKS: tuple[str, ...] = (
    "..",
    "%2e%2e",
    "%2E%2E",
    ".",
    "..%2f" + ALPHA_COLLECTION,
    "%2e%2e%2f" + ALPHA_COLLECTION,
    BETA_COLLECTION + "%2f..%2f" + ALPHA_COLLECTION,
    BETA_COLLECTION + "%2F" + ALPHA_COLLECTION,
    BETA_COLLECTION + "%5c" + ALPHA_COLLECTION,
    ALPHA_COLLECTION + "%00",
    ALPHA_COLLECTION + "%0a",
    ALPHA_COLLECTION + "%0d%0a",
    ALPHA_COLLECTION + "%20",
    "%20" + ALPHA_COLLECTION,
    ALPHA_COLLECTION + "%09",
    ALPHA_COLLECTION + "%252f",
    "team%3Aalpha",
    "TEAM:ALPHA",
    "%00",
    "*",
    "%2a",
    "team:*",
    "team:%E2%80%AEahpla",
    "%C0%AE%C0%AE",
    "x" * 129,
    "a" * 10_000,
)
"""Collection names, as they go on the wire, that aim at alpha's collection (or at
none) from another one."""

ID_TRICKS: tuple[str, ...] = (
    "..",
    "%2e%2e",
    "..%2f..%2f" + ALPHA_COLLECTION,
    "%2e%2e%2f%2e%2e%2f" + ALPHA_COLLECTION,
    "%00",
    "id%00",
    "id%0a",
    "%2f",
    "%5c..%5c",
    "*",
    "%25",
    "'%20OR%201=1--",
    "x" * 201,
    "a" * 10_000,
)
"""Ids, as they go on the wire, that aim at another tenant's objects or past the id
syntax."""


# -- fixtures ------------------------------------------------------------------


def _say(client: TestClient, collection: str, chat: str, text: str, minute: int) -> list[str]:
    r = client.post(
        f"/v1/collections/{collection}/conversations/{chat}/messages",
        json={"text": text, "at": _T0.format(minute)},
        headers=ADMIN,
    )
    assert r.status_code == 200, r.text
    return [i["surfacing_id"] for i in r.json()["insights"]]


@pytest.fixture
def alpha_ids(client: TestClient) -> dict[str, str]:
    """Alpha's memory, conversation with a surfacing, and record, all holding SECRET;
    and a memory of beta's own."""
    memory = remember(client, _FIX, category="bug_fix")["id"]
    remember(client, f"Postmortems for {SECRET} incidents go to the reliability channel")
    surfaced = _say(client, ALPHA_COLLECTION, "alpha-chat", "checkout is failing with errors", 0)
    surfaced += _say(
        client, ALPHA_COLLECTION, "alpha-chat", "the redis connection pool looks exhausted", 2
    )
    assert surfaced, "the seeded conversation surfaced nothing"
    r = client.put(
        f"/v1/collections/{ALPHA_COLLECTION}/resources/workItem%3A7",
        json={"title": f"{SECRET} checkout outage", "status": "OPEN"},
        headers=ALPHA,
    )
    assert r.status_code == 201, r.text
    r = client.post(
        f"/v1/collections/{BETA_COLLECTION}/memories",
        json={"content": "Beta keeps its own notes about queues", "source": OPERATOR},
        headers=BETA,
    )
    assert r.status_code == 201, r.text
    return {
        "memory_id": memory,
        "conversation_id": "alpha-chat",
        "surfacing_id": surfaced[0],
        "resource_id": "workItem:7",
        "name": "swagger-ui.css",  # a library file of /docs
    }


def routes(app: FastAPI) -> list[tuple[str, str]]:
    """``(method, path)`` of every route the app serves, HEAD left out; the upserts
    last, so that they create nothing the other routes would then find."""
    return sorted(_routes(app), key=lambda route: route in UPSERTS)


def _routes(app: FastAPI) -> Iterator[tuple[str, str]]:
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # FastAPI before route contexts: the routes are flat
        contexts: list[Any] = list(app.routes)
    else:
        contexts = list(iter_route_contexts(app.routes))
    seen = set()
    for context in contexts:
        for method in sorted(getattr(context, "methods", None) or ()):
            if method != "HEAD" and (method, context.path) not in seen:
                seen.add((method, context.path))
                yield method, context.path


def fill(
    path: str, collection: str, ids: dict[str, str], *, raw: dict[str, str] | None = None
) -> str:
    """The path with its parameters filled: ``raw`` values as they are, the others
    quoted."""
    values = {
        "collection": quote(collection, safe=""),
        **{k: quote(v, safe="") for k, v in ids.items()},
        **(raw or {}),
    }
    out = path
    while "{" in out:
        name = out[out.index("{") + 1 : out.index("}")]
        if name not in values:
            pytest.fail(f"{path}: no value for {{{name}}}; add one to alpha_ids")
        out = out.replace("{" + name + "}", values[name])
    return out


def call(
    client: TestClient,
    method: str,
    path: str,
    url: str,
    ids: dict[str, str],
    authorization: bytes | None,
) -> Any:
    headers: dict[str, bytes] = {}
    if authorization is not None:
        headers["Authorization"] = authorization
    body = BODIES.get((method, path))
    if (
        method in ("POST", "PUT", "PATCH")
        and body is None
        and _takes_body(client.app, method, path)
    ):
        pytest.fail(f"{method} {path}: no body in BODIES")
    if body is not None and "{memory_id}" in json.dumps(body):
        body = json.loads(json.dumps(body).replace("{memory_id}", ids["memory_id"]))
    query = REQUIRED_QUERY.get(path)
    if query is not None:
        url += f"?{query}={quote(ids['memory_id'], safe='')}"
    return client.request(method, url, json=body, headers=headers)


def _takes_body(app: Any, method: str, path: str) -> bool:
    operation = app.openapi()["paths"].get(path, {}).get(method.lower(), {})
    return "requestBody" in operation


def collection_rows(data_dir: Path, collection: str) -> dict[str, str]:
    """A digest of each table's rows of one collection, read straight from SQLite."""
    digests = {}
    with sqlite3.connect(f"file:{data_dir / DB_FILE}?mode=ro", uri=True) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
            if "collection" not in columns:
                continue
            order = ", ".join(str(i) for i in range(1, len(columns) + 1))
            rows = db.execute(
                f"SELECT * FROM {table} WHERE collection = ? ORDER BY {order}", (collection,)
            ).fetchall()
            digests[table] = hashlib.sha256(repr(rows).encode()).hexdigest()
    return digests


def no_secret(r: Any) -> None:
    assert SECRET not in r.text, f"{r.request.method} {r.request.url} leaked alpha's data"


def bearer(key: str) -> bytes:
    return f"Bearer {key}".encode()


# -- another tenant's key --------------------------------------------------------


def test_another_tenants_key_gets_the_plain_404_on_every_collection_route(
    client: TestClient, alpha_ids: dict[str, str], tmp_path: Path
) -> None:
    before = collection_rows(tmp_path / "data", ALPHA_COLLECTION)
    reference = client.get(
        f"/v1/collections/{ALPHA_COLLECTION}/memories/does-not-exist", headers=ALPHA
    )
    assert reference.status_code == 404
    tried = 0
    for method, path in routes(client.app):  # type: ignore[arg-type]
        if "{collection}" not in path:
            continue
        url = fill(path, ALPHA_COLLECTION, alpha_ids)
        r = call(client, method, path, url, alpha_ids, bearer(BETA_KEY))
        assert (r.status_code, r.content) == (404, reference.content), (method, path, r.text)
        tried += 1
    assert tried >= 19  # the enumeration found the routes
    assert collection_rows(tmp_path / "data", ALPHA_COLLECTION) == before


def test_own_collection_with_another_tenants_ids_finds_nothing_of_theirs(
    client: TestClient, alpha_ids: dict[str, str], tmp_path: Path
) -> None:
    before = collection_rows(tmp_path / "data", ALPHA_COLLECTION)
    for method, path in routes(client.app):  # type: ignore[arg-type]
        if "{collection}" not in path:
            continue
        url = fill(path, BETA_COLLECTION, alpha_ids)
        r = call(client, method, path, url, alpha_ids, bearer(BETA_KEY))
        no_secret(r)
        names_an_object = (
            path in REQUIRED_QUERY
            or (method, path) in BODY_NAMES_AN_OBJECT
            or any("{" + n + "}" in path for n in alpha_ids)
        )
        if names_an_object and (method, path) not in UPSERTS:
            assert r.status_code == 404, (method, path, r.text)
        else:
            assert r.status_code < 300, (method, path, r.text)
    assert collection_rows(tmp_path / "data", ALPHA_COLLECTION) == before


def test_routes_outside_collections_show_a_key_only_its_own_collections(
    client: TestClient, alpha_ids: dict[str, str], tmp_path: Path
) -> None:
    before = collection_rows(tmp_path / "data", ALPHA_COLLECTION)
    for method, path in routes(client.app):  # type: ignore[arg-type]
        if "{" in path:
            continue
        r = call(client, method, path, path, alpha_ids, bearer(BETA_KEY))
        assert r.status_code == 200, (method, path, r.text)
        no_secret(r)
        assert ALPHA_COLLECTION not in r.text or path in PUBLIC, (method, path)
        assert "workItem:7" not in r.text, (method, path)
    rag = client.post("/ai/rag-search", json={"query": "checkout outage"}, headers=BETA)
    assert rag.json()["work_item_ids"] == []
    assert client.post("/ai/rag-search", json={"query": "checkout outage"}, headers=ALPHA).json()[
        "work_item_ids"
    ] == [7]
    assert collection_rows(tmp_path / "data", ALPHA_COLLECTION) == before


# -- path tricks -----------------------------------------------------------------


def test_collection_name_tricks_never_reach_another_collection(
    client: TestClient, alpha_ids: dict[str, str], tmp_path: Path
) -> None:
    before = collection_rows(tmp_path / "data", ALPHA_COLLECTION)
    for trick in COLLECTION_TRICKS:
        for method, path in routes(client.app):  # type: ignore[arg-type]
            if "{collection}" not in path:
                continue
            url = fill(path, BETA_COLLECTION, alpha_ids, raw={"collection": trick})
            r = call(client, method, path, url, alpha_ids, bearer(BETA_KEY))
            assert r.status_code in (404, 405, 422), (method, url[:200], r.text)
            no_secret(r)
            if not VALID_NAME.fullmatch(unquote(trick)):
                # A key for every collection may not make one of a name that is not valid.
                r = call(client, method, path, url, alpha_ids, bearer(ADMIN_KEY))
                assert r.status_code in (404, 405, 422), (method, url[:200], r.text)
    assert collection_rows(tmp_path / "data", ALPHA_COLLECTION) == before
    service = client.app.state.service  # type: ignore[attr-defined]
    assert isinstance(service, Hippocampus)
    made = set(service.collections()) - {ALPHA_COLLECTION, BETA_COLLECTION}
    assert all(VALID_NAME.fullmatch(name) for name in made), made


def test_id_tricks_never_reach_another_tenants_objects(
    client: TestClient, alpha_ids: dict[str, str], tmp_path: Path
) -> None:
    before = collection_rows(tmp_path / "data", ALPHA_COLLECTION)
    for trick in ID_TRICKS:
        for method, path in routes(client.app):  # type: ignore[arg-type]
            names = [name for name in alpha_ids if "{" + name + "}" in path]
            if not names or path in PUBLIC:  # a public route holds no one's objects
                continue
            url = fill(path, BETA_COLLECTION, alpha_ids, raw=dict.fromkeys(names, trick))
            r = call(client, method, path, url, alpha_ids, bearer(BETA_KEY))
            no_secret(r)
            if (method, path) in UPSERTS:
                # An id that is valid names the caller's own new object.
                assert r.status_code in (200, 201, 404, 405, 422), (method, url[:200], r.text)
            else:
                assert r.status_code in (404, 405, 422), (method, url[:200], r.text)
    assert collection_rows(tmp_path / "data", ALPHA_COLLECTION) == before


# -- keys --------------------------------------------------------------------------


def test_every_route_but_the_public_ones_needs_a_key(client: TestClient) -> None:
    ids = {
        "memory_id": "m1",
        "conversation_id": "c1",
        "surfacing_id": "s1",
        "resource_id": "r1",
        "name": "swagger-ui.css",
    }
    for method, path in routes(client.app):  # type: ignore[arg-type]
        url = fill(path, ALPHA_COLLECTION, ids)
        r = call(client, method, path, url, ids, None)
        if path in PUBLIC:
            assert r.status_code == 200, (method, path, r.text)
        else:
            assert r.status_code == 401, (method, path, r.text)


def test_malformed_keys_get_401_on_every_route(client: TestClient) -> None:
    ids = {"memory_id": "m1", "conversation_id": "c1", "surfacing_id": "s1", "resource_id": "r1"}
    for authorization in MALFORMED_AUTHORIZATION:
        for method, path in routes(client.app):  # type: ignore[arg-type]
            if path in PUBLIC:
                continue
            url = fill(path, ALPHA_COLLECTION, ids)
            r = call(client, method, path, url, ids, authorization)
            assert r.status_code == 401, (authorization, method, path, r.text)
            assert r.headers["www-authenticate"] == "Bearer"
            assert set(r.json()) == {"error"} and r.json()["error"]["code"] == "unauthorized"
            assert ALPHA_KEY not in r.text and "k" * 100 not in r.text
    service = client.app.state.service  # type: ignore[attr-defined]
    assert isinstance(service, Hippocampus)
    assert service.collections() == []


def test_keys_never_appear_in_logs_or_answers_on_any_route(
    client: TestClient, alpha_ids: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    keys = (ALPHA_KEY, BETA_KEY, ADMIN_KEY, "wrong-key-0000", "k" * 10_240)
    answers = []
    for method, path in routes(client.app):  # type: ignore[arg-type]
        url = fill(path, ALPHA_COLLECTION, alpha_ids)
        for key in keys:
            answers.append(call(client, method, path, url, alpha_ids, bearer(key)))
    assert {r.status_code for r in answers} >= {200, 401, 404}
    for r in answers:
        for key in keys:
            assert key not in r.text and key not in str(r.headers)
    logged = caplog.text + "".join(str(record.__dict__) for record in caplog.records)
    for key in keys:
        assert key not in logged
