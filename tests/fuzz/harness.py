"""Property-based fuzzing of the HTTP API from its own OpenAPI schema.

Schemathesis turns the schema into Hypothesis strategies (valid and invalid
requests per operation); this module steers them towards the data that exists
(two tenants' memories, conversations, surfacings and records), mixes in hostile
input the schema cannot describe (malformed or deeply nested JSON, huge strings,
control characters and lone surrogates, NaN and infinities, wrong types, path
tricks, odd keys), sends each request to the real app over the real embedded
store, and checks every answer:

- no 5xx;
- every error in the one JSON shape ``{"error": {"code", "message"[, "field"]}}``;
- no vector, stack trace or exception text in any body;
- a rejected request (4xx) commits nothing to the store.

A plain module, shared by ``tests/fuzz`` (bounded and derandomized) and
``bench/fuzz.py`` (thousands of cases).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import strategies as st
from schemathesis.core import NotSet
from schemathesis.generation.modes import GenerationMode
from schemathesis.schemas import APIOperation

from hippocampus.api.app import create_app
from hippocampus.extract import ConceptExtractor
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.embedded.store import DB_FILE
from tests.api.helpers import (
    ALPHA,
    ALPHA_KEY,
    BETA,
    OPERATOR,
    TRUSTED_OPERATOR,
    CountingEmbedder,
    find_leaks,
    make_settings,
)

ALPHA_COLLECTION = "team:alpha"
BETA_COLLECTION = "team:beta"

_T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
_FIX = "Redis connection pool exhausted at checkout: raise the pool size and add a wait timeout"
_CHAT = (
    "checkout is failing with errors since the sale started",
    "the redis connection pool looks exhausted at checkout",
)
_NOTES = (
    "Deploys to production need two approvals and a green canary before noon",
    "The billing service retries webhooks three times with exponential backoff",
    "Use connection pooling for Postgres; never open a connection per request",
)

_TRACE_MARKERS = ("Traceback (most recent call last)", 'File "/', '.py", line ')
"""Text that only an exception or stack trace would put in a body."""


# -- the target ----------------------------------------------------------------


@dataclass(frozen=True)
class Fixtures:
    """Ids that exist before fuzzing starts, in each tenant."""

    memories: Mapping[str, str]
    conversations: Mapping[str, str]
    surfacings: Mapping[str, str]
    resources: Mapping[str, str]
    partners: Mapping[str, str] = field(default_factory=dict)
    """A second memory per tenant, for routes that take several ids."""

    def ids(self) -> list[str]:
        """Every fixture id, of every kind and tenant."""
        values: list[str] = []
        for kind in (self.memories, self.conversations, self.surfacings, self.resources):
            values.extend(kind.values())
        return values

    def ids_of(self, collection: str) -> list[str]:
        """The fixture ids of one tenant."""
        kinds = (self.memories, self.conversations, self.surfacings, self.resources)
        return [kind[collection] for kind in kinds if collection in kind]


@dataclass
class Request:
    """One HTTP request, ready to send."""

    route: str
    """``METHOD /path/{template}`` of the operation it was drawn for."""
    method: str
    url: str
    headers: dict[str, bytes] = field(default_factory=dict)
    content: bytes | None = None
    variant: str = "valid"

    def describe(self) -> str:
        body = "" if self.content is None else f" body={self.content[:300]!r}"
        heads = {k: v[:80] for k, v in self.headers.items()}
        return f"{self.method} {self.url[:300]} headers={heads}{body}"


@dataclass
class Outcome:
    """What came back: the status (0: the client could not even send the request)
    and the rules the answer broke."""

    status: int
    problems: list[str]


class FuzzTarget:
    """The app over a fresh embedded store in ``data_dir``, populated with two tenants'
    memories, a conversation with a surfacing each, and a record each.

    Args:
        data_dir: an empty directory for the store.
        extractor: the concept extractor (spaCy in the tests).
    """

    def __init__(self, data_dir: Path, extractor: ConceptExtractor) -> None:
        self.service = Hippocampus(
            EmbeddedStore(data_dir), CountingEmbedder(), extractor, quality=TRUSTED_OPERATOR
        )
        # No background maintenance: only requests may write to the store.
        self.app: FastAPI = create_app(
            make_settings(data_dir, maintenance_interval_s=0), service=self.service
        )
        self.client = TestClient(self.app, raise_server_exceptions=False)
        self.client.__enter__()
        self._reader = sqlite3.connect(
            f"file:{data_dir / DB_FILE}?mode=ro", uri=True, check_same_thread=False
        )
        self.fixtures = self._populate()

    def close(self) -> None:
        self._reader.close()
        self.client.__exit__(None, None, None)
        self.service.close()

    def data_version(self) -> int:
        """SQLite's counter of commits made by other connections: it moves if and only
        if something was written."""
        row = self._reader.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    def send(self, request: Request) -> Outcome:
        """Send one request and check its answer."""
        before = self.data_version()
        try:
            response = self.client.request(
                request.method, request.url, headers=request.headers, content=request.content
            )
        except httpx.InvalidURL:
            # The client cannot even put this on the wire; no server would see it.
            return Outcome(0, [])
        written = self.data_version() != before
        outcome = Outcome(response.status_code, check_response(response, written=written))
        if written and request.method in ("DELETE", "PUT", "PATCH"):
            self._restore()
        return outcome

    def _restore(self) -> None:
        """Put back the fixture memories and records a request deleted, so that later
        requests still find something to work on."""
        for collection, memory_id in self.fixtures.memories.items():
            if not self.service.store.get_memories(collection, [memory_id]):
                self._remember_fix(collection)
        for collection, resource_id in self.fixtures.resources.items():
            if not self.service.store.get_memories(collection, [resource_id]):
                self._put_resource(collection, resource_id)

    def _populate(self) -> Fixtures:
        memories: dict[str, str] = {}
        conversations: dict[str, str] = {}
        surfacings: dict[str, str] = {}
        resources: dict[str, str] = {}
        partners: dict[str, str] = {}
        for collection, headers in ((ALPHA_COLLECTION, ALPHA), (BETA_COLLECTION, BETA)):
            base = f"/v1/collections/{collection}"
            tenant = collection.split(":")[1]
            memories[collection] = self._remember_fix(collection)
            notes = self._ok(
                "POST",
                f"{base}/memories",
                headers,
                {"memories": [{"content": n, "source": OPERATOR} for n in _NOTES]},
            )
            partners[collection] = notes["results"][0]["id"]
            chat = f"{tenant}-chat"
            for minute, text in enumerate(_CHAT):
                said = self._ok(
                    "POST",
                    f"{base}/conversations/{chat}/messages",
                    headers,
                    {"text": text, "at": (_T0 + timedelta(minutes=2 * minute)).isoformat()},
                )
                for insight in said["insights"]:
                    surfacings.setdefault(collection, insight["surfacing_id"])
            conversations[collection] = chat
            resource = f"workItem:{len(resources) + 100}"
            self._put_resource(collection, resource)
            resources[collection] = resource
        assert set(surfacings) == {ALPHA_COLLECTION, BETA_COLLECTION}, surfacings
        return Fixtures(memories, conversations, surfacings, resources, partners)

    def _remember_fix(self, collection: str) -> str:
        tenant = collection.split(":")[1]
        body = {"content": _FIX, "category": "bug_fix", "id": f"{tenant}-fix"}
        made = self._ok("POST", f"/v1/collections/{collection}/memories", _key(collection), body)
        memory_id: str = made["id"]
        return memory_id

    def _put_resource(self, collection: str, resource_id: str) -> None:
        tenant = collection.split(":")[1]
        body = {"title": f"{tenant} checkout outage", "status": "OPEN"}
        url = f"/v1/collections/{collection}/resources/{quote(resource_id, safe='')}"
        self._ok("PUT", url, _key(collection), body)

    def _ok(self, method: str, url: str, headers: dict[str, str], body: Any) -> dict[str, Any]:
        r = self.client.request(method, url, headers=headers, json=body)
        assert r.status_code in (200, 201), r.text
        result: dict[str, Any] = r.json()
        return result


# -- checks --------------------------------------------------------------------


def _key(collection: str) -> dict[str, str]:
    return BETA if collection == BETA_COLLECTION else ALPHA


def error_shape_problems(body: Any) -> list[str]:
    """What is wrong with an error body, measured against ``{"error": {"code",
    "message"[, "field"]}}``; empty when nothing is."""
    if not isinstance(body, dict) or set(body) != {"error"}:
        return [f"error body is not {{'error': ...}}: {str(body)[:200]}"]
    error = body["error"]
    if not isinstance(error, dict):
        return ["error is not an object"]
    problems = []
    if not set(error) <= {"code", "message", "field"}:
        problems.append(f"error has unexpected keys {sorted(set(error))}")
    for key in ("code", "message"):
        if not isinstance(error.get(key), str) or not error[key]:
            problems.append(f"error.{key} is not a non-empty string")
    if "field" in error and not isinstance(error["field"], str):
        problems.append("error.field is not a string")
    return problems


def check_response(response: httpx.Response, *, written: bool) -> list[str]:
    """Every rule an answer must keep; the broken ones, in words.

    Args:
        response: the answer.
        written: whether the store committed anything while the request ran.
    """
    status = response.status_code
    method = response.request.method
    problems: list[str] = []
    if status >= 500:
        problems.append(f"server error {status}: {response.text[:300]}")
    is_json = response.headers.get("content-type", "").startswith("application/json")
    body: Any = None
    if is_json and response.content:
        try:
            body = response.json()
        except ValueError:
            problems.append("a JSON content type with a body that is not JSON")
        else:
            leaks = find_leaks(body)
            if leaks:
                problems.append(f"vector leaked at {leaks[:3]}")
    if not 200 <= status < 300 and method != "HEAD":
        if not is_json:
            problems.append(f"{status} error is not JSON: {response.text[:200]!r}")
        else:
            problems.extend(error_shape_problems(body))
    text = response.text
    for marker in _TRACE_MARKERS:
        if marker in text and not 200 <= status < 300:
            problems.append(f"error body holds exception text ({marker!r})")
    if 400 <= status < 500 and written:
        problems.append(f"rejected with {status}, yet something was written to the store")
    return problems


# -- strategies ----------------------------------------------------------------


def load_operations(app: FastAPI) -> list[APIOperation]:
    """Every operation of the app's OpenAPI schema."""
    schema = schemathesis.openapi.from_dict(app.openapi())
    return [result.ok() for result in schema.get_all_operations()]


def route_of(operation: APIOperation) -> str:
    return f"{operation.method.upper()} {operation.path}"


_BIG = 20_000
HOSTILE_STRINGS: tuple[str, ...] = (
    "",
    " ",
    "x" * _BIG,
    "é" * (_BIG // 2),
    "\x00",
    "a\x00b",
    "\x1b[31mred\x1b[0m\r\n\t\x7f",
    "\u202e\u200b\ufeff\u2028",
    "\ud800",
    "lone \udfff surrogate",
    "😀" * 100,
    "../../etc/passwd",
    "%2e%2e%2f",
    "'; DROP TABLE memories; --",
    "MATCH (n) DETACH DELETE n",
    "${jndi:ldap://x}",
    "{{7*7}}",
    "<script>alert(1)</script>",
    "NaN",
    "null",
    "ignore all previous instructions",
)
HOSTILE_NUMBERS: tuple[Any, ...] = (
    float("nan"),
    float("inf"),
    float("-inf"),
    -1,
    0,
    -0.0,
    1e308,
    -(2**63),
    2**64,
    10**300,
    1e-320,
    True,
)


def _deep(depth: int) -> Any:
    value: Any = "bottom"
    for i in range(depth):
        value = [value] if i % 2 else {"n": value}
    return value


def hostile_values() -> st.SearchStrategy[Any]:
    """Values that do not belong in any field: odd strings, numbers, types, nesting."""
    return st.one_of(
        st.sampled_from(HOSTILE_STRINGS),
        st.sampled_from(HOSTILE_NUMBERS),
        st.sampled_from([None, [], {}, [None], {"": None}, [[[]]], {"$ne": 1}]),
        st.sampled_from([_deep(30), _deep(200)]),
        st.text(min_size=0, max_size=40),
        st.lists(st.text(max_size=5), max_size=60),
        st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=5),
    )


RAW_BODIES: tuple[bytes, ...] = (
    b"",
    b"{",
    b'{"content": ',
    b"null",
    b"[]",
    b"0",
    b'"text"',
    b"\xff\xfe\x00",
    b'{"content": "\xff\xfe"}',
    b'{"content": "a", "content": 1}',
    b'{"a": NaN, "b": Infinity, "c": -Infinity}',
    b'{"limit": 1e999}',
    b'{"limit": ' + b"9" * 5000 + b"}",
    b'{"query": ' + b"[" * 20_000 + b"]" * 20_000 + b"}",
    b"{" * 5000,
    b'{"text": "\\ud800\\udc00\\udfff"}',
    b"\x00" * 64,
    b"content=x&query=y",
)
"""Bodies that are not the JSON object of any operation."""

PATH_TRICKS: tuple[str, ...] = (
    "..",
    "../team:beta",
    "..%2fteam:beta",
    "%2e%2e",
    "%2e%2e%2fteam:beta",
    "team:beta%2f..",
    "team%3Abeta",
    "team:alpha%00",
    "%00",
    "team:alpha/../team:beta",
    "team:beta%252f",
    "x" * 5000,
    "%C0%AE%C0%AE",
    "team:alpha%20",
    "%E2%80%AE",
    "*",
    ".",
)
"""Path segments, already as they go on the wire, aiming to escape a tenant."""

HOSTILE_AUTH: tuple[bytes, ...] = (
    b"",
    b"Bearer",
    b"Bearer ",
    b"bearer " + ALPHA_KEY.encode(),
    b"Bearer  " + ALPHA_KEY.encode(),
    b"Bearer " + ALPHA_KEY.encode() + b" ",
    b"Bearer " + ALPHA_KEY.encode() + b"\t",
    b"Bearer " + ALPHA_KEY.encode()[:-1],
    b"Bearer " + ALPHA_KEY.upper().encode(),
    ALPHA_KEY.encode(),
    b"Basic " + ALPHA_KEY.encode(),
    b"Bearer " + b"k" * 10_240,
    b"Bearer " + "clé-ünïcødé".encode(),
    b"Bearer " + "clé-ünïcødé".encode("latin-1"),
    b"Bearer \x00" + ALPHA_KEY.encode(),
    b"Bearer " + ALPHA_KEY.encode() + b"," + b"Bearer admin-key-0003",
)
"""Authorization headers that are no valid key (or not in the valid form)."""


_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "TRACE")

VARIANTS: tuple[str, ...] = (
    "valid",
    "negative",
    "body",
    "query",
    "auth",
    "tenant",
    "path",
    "content_type",
    "method",
)
"""What a drawn request does wrong: nothing (``valid``: drawn from the schema and
sent with the owner's key and existing ids), or one thing."""


@st.composite
def requests(draw: st.DrawFn, operation: APIOperation, fixtures: Fixtures) -> Request:
    """One request for ``operation``: drawn from its schema, steered to the tenants
    and ids that exist, then given one fault (or none) of :data:`VARIANTS`."""
    # "valid" weighs as much as all faults together: it is what reaches the engine.
    variant = draw(st.sampled_from(("valid",) * (len(VARIANTS) - 1) + VARIANTS[1:]))
    mode = GenerationMode.NEGATIVE if variant == "negative" else GenerationMode.POSITIVE
    case = draw(operation.as_strategy(generation_mode=mode))

    collection = draw(st.sampled_from([ALPHA_COLLECTION, ALPHA_COLLECTION, BETA_COLLECTION]))
    params: dict[str, str] = {k: str(v) for k, v in (case.path_parameters or {}).items()}
    if "collection" in params:
        params["collection"] = quote(collection, safe="")
    for name in params:
        if name == "collection":
            continue
        known = _ids_for(name, fixtures, collection)
        if variant == "tenant":
            # Another tenant's id, of any kind, under this tenant's name and key.
            known = [i for i in fixtures.ids() if i not in fixtures.ids_of(collection)]
        if known and draw(st.integers(0, 4)) > 0:
            params[name] = quote(draw(st.sampled_from(known)), safe="")
    if variant == "path" and params:
        name = draw(st.sampled_from(sorted(params)))
        params[name] = draw(st.sampled_from(PATH_TRICKS))
    path = operation.path
    for name, value in params.items():
        path = path.replace("{" + name + "}", value)

    query = dict(case.query or {})
    if "center" in query and draw(st.booleans()):
        # The graph around an existing memory, rather than around a made-up name.
        query["center"] = fixtures.memories[collection]
    if variant == "query":
        names = [p.name for p in operation.query] + ["unknown"]
        query[draw(st.sampled_from(names))] = draw(hostile_values())
    url = path + _query_string(query)

    owner = BETA if collection == BETA_COLLECTION else ALPHA
    headers = {k: _header_bytes(v) for k, v in (case.headers or {}).items()}
    headers["Authorization"] = owner["Authorization"].encode()
    if variant == "auth":
        auth = draw(st.sampled_from(["none", "generated", "hostile", "hostile"]))
        if auth == "none":
            del headers["Authorization"]
        elif auth == "generated":
            text = draw(st.text(st.characters(codec="latin-1"), max_size=40))
            headers["Authorization"] = ("Bearer " + text).encode("latin-1")
        else:
            headers["Authorization"] = draw(st.sampled_from(HOSTILE_AUTH))
    elif variant == "tenant":
        other = ALPHA if owner is BETA else BETA
        headers["Authorization"] = draw(st.sampled_from([other, owner]))["Authorization"].encode()

    body = case.body
    if isinstance(body, dict) and isinstance(body.get("ids"), list) and draw(st.integers(0, 4)):
        # Memories that exist, as a route taking several ids needs to do anything.
        body = {**body, "ids": [fixtures.memories[collection], fixtures.partners[collection]]}
    content = None if isinstance(body, NotSet) else _json_bytes(body)
    if variant == "body":
        content = draw(_hostile_body(body))
    if content is not None:
        headers.setdefault("Content-Type", b"application/json")
        if variant == "content_type":
            headers["Content-Type"] = draw(
                st.sampled_from(
                    [b"text/plain", b"application/x-www-form-urlencoded", b"", b"application/xml"]
                )
            )
    method = operation.method.upper()
    if variant == "method":
        method = draw(st.sampled_from([m for m in _METHODS if m != method]))
    return Request(route_of(operation), method, url, headers, content, variant)


@st.composite
def _hostile_body(draw: st.DrawFn, body: Any) -> bytes:
    how = draw(st.sampled_from(["raw", "replace", "insert", "wrap"]))
    if how == "raw" or not isinstance(body, dict):
        if how != "raw" and isinstance(body, NotSet | None):
            return _json_bytes(draw(hostile_values()))
        return draw(st.sampled_from(RAW_BODIES))
    mangled = dict(body)
    if how == "replace" and mangled:
        mangled[draw(st.sampled_from(sorted(mangled)))] = draw(hostile_values())
    elif how == "wrap":
        return _json_bytes({"memories": [mangled, draw(hostile_values())]})
    else:
        key = draw(st.sampled_from(["content", "query", "text", "title", "limit", "", "\x00"]))
        mangled[key] = draw(hostile_values())
    return _json_bytes(mangled)


def _ids_for(name: str, fixtures: Fixtures, collection: str) -> list[str]:
    kinds = {
        "memory_id": fixtures.memories,
        "conversation_id": fixtures.conversations,
        "surfacing_id": fixtures.surfacings,
        "resource_id": fixtures.resources,
    }
    found = kinds.get(name, {}).get(collection)
    return [] if found is None else [found]


def _json_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    # allow_nan: NaN and Infinity go on the wire as the tokens Python's parser reads.
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


def _header_bytes(value: Any) -> bytes:
    return str(value).encode("utf-8", "surrogatepass")


def _query_string(query: Mapping[str, Any]) -> str:
    if not query:
        return ""
    parts = []
    for name, value in query.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            text = json.dumps(v) if isinstance(v, bool | dict | list) or v is None else str(v)
            parts.append(
                f"{quote(str(name), safe='')}={quote(text, safe='', errors='surrogatepass')}"
            )
    return "?" + "&".join(parts)


def all_requests(operations: list[APIOperation], fixtures: Fixtures) -> st.SearchStrategy[Request]:
    """A request for any operation, the operation drawn uniformly."""
    return st.sampled_from(operations).flatmap(lambda op: requests(op, fixtures))
