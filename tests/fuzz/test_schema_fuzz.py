"""Every operation of the OpenAPI schema, fuzzed: valid and invalid requests from
the schema, hostile bodies, queries, keys, paths, content types and methods, sent
to the real app over the real embedded store. Every answer must be below 500, in
the one error shape when it is an error, free of vectors and exception text, and
a rejected request must write nothing.

Derandomized and bounded: the same requests every run. ``bench/fuzz.py`` runs
thousands.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from schemathesis.schemas import APIOperation

from hippocampus.api.app import create_app
from hippocampus.extract import SpacyConceptExtractor
from tests.api.helpers import ALPHA, make_settings
from tests.fuzz.harness import (
    RAW_BODIES,
    FuzzTarget,
    Request,
    check_response,
    error_shape_problems,
    load_operations,
    requests,
    route_of,
)

EXAMPLES_PER_ROUTE = 30

_SETTINGS = settings(
    max_examples=EXAMPLES_PER_ROUTE,
    derandomize=True,
    database=None,
    deadline=None,
    # One app and store serve every example on purpose; generation is slow for
    # the larger bodies, and that is fine.
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


def _routes() -> list[str]:
    schema = create_app(make_settings(Path("unused"))).openapi()
    return [f"{method.upper()} {path}" for path, ops in schema["paths"].items() for method in ops]


ROUTES = _routes()


@pytest.fixture(scope="module")
def target(
    tmp_path_factory: pytest.TempPathFactory, spacy_extractor: SpacyConceptExtractor
) -> Iterator[FuzzTarget]:
    fuzzed = FuzzTarget(tmp_path_factory.mktemp("fuzz") / "data", spacy_extractor)
    yield fuzzed
    fuzzed.close()


@pytest.fixture(scope="module")
def operations(target: FuzzTarget) -> dict[str, APIOperation]:
    return {route_of(op): op for op in load_operations(target.app)}


def test_every_route_is_fuzzed(operations: dict[str, APIOperation]) -> None:
    assert sorted(operations) == sorted(ROUTES)
    assert len(ROUTES) >= 23


@pytest.mark.parametrize("route", ROUTES)
def test_fuzzed_requests_get_well_formed_answers(
    target: FuzzTarget, operations: dict[str, APIOperation], route: str
) -> None:
    operation = operations[route]
    statuses: set[int] = set()

    @_SETTINGS
    @given(requests(operation, target.fixtures))
    def check(request: Request) -> None:
        outcome = target.send(request)
        statuses.add(outcome.status)
        assert not outcome.problems, f"{request.describe()}\n" + "\n".join(outcome.problems)

    check()
    # The requests reached past validation, and some were refused.
    assert any(200 <= s < 300 for s in statuses), statuses
    assert any(400 <= s < 500 for s in statuses) or route in ("GET /healthz", "GET /readyz")


@pytest.mark.parametrize("raw", RAW_BODIES, ids=lambda raw: repr(raw[:20]))
def test_malformed_bodies_on_every_body_route_are_refused_in_the_error_shape(
    target: FuzzTarget, operations: dict[str, APIOperation], raw: bytes
) -> None:
    body_routes = [op for op in operations.values() if op.body]
    assert len(body_routes) >= 9
    for operation in body_routes:
        path = operation.path
        for name, value in {
            "collection": "team:alpha",
            "memory_id": target.fixtures.memories["team:alpha"],
            "resource_id": "workItem:100",
            "conversation_id": "alpha-chat",
            "surfacing_id": target.fixtures.surfacings["team:alpha"],
        }.items():
            path = path.replace("{" + name + "}", value)
        headers = {k: v.encode() for k, v in ALPHA.items()}
        headers["Content-Type"] = b"application/json"
        request = Request(route_of(operation), operation.method.upper(), path, headers, raw)
        outcome = target.send(request)
        assert 400 <= outcome.status < 500, request.describe()
        assert not outcome.problems, f"{request.describe()}\n" + "\n".join(outcome.problems)


# -- the checks themselves fail when they should -----------------------------------


def _response(status: int, body: object, method: str = "POST") -> httpx.Response:
    request = httpx.Request(method, "http://testserver/v1/collections/team:alpha/recall")
    return httpx.Response(status, json=body, request=request)


def test_check_flags_server_errors_wrong_shapes_leaks_traces_and_rejected_writes() -> None:
    good_error = {"error": {"code": "not_found", "message": "not found"}}
    assert check_response(_response(404, good_error), written=False) == []
    assert check_response(_response(200, {"results": []}), written=True) == []

    assert "server error 500" in check_response(_response(500, good_error), written=False)[0]
    assert check_response(_response(422, {"detail": "bad"}), written=False)
    assert check_response(_response(404, good_error), written=True) == [
        "rejected with 404, yet something was written to the store"
    ]
    leak = {"memory": {"embedding": [0.1] * 3}}
    assert "vector leaked" in check_response(_response(200, leak), written=False)[0]
    trace = {"error": {"code": "x", "message": 'Traceback (most recent call last): File "/a"'}}
    assert check_response(_response(400, trace), written=False)
    text = httpx.Response(
        404, text="Not Found", request=httpx.Request("GET", "http://testserver/x")
    )
    assert check_response(text, written=False) == ["404 error is not JSON: 'Not Found'"]


@pytest.mark.parametrize(
    "body",
    [
        None,
        [],
        {"error": "x"},
        {"error": {"code": "x"}},
        {"error": {"code": "", "message": "m"}},
        {"error": {"code": "x", "message": "m", "detail": "d"}},
        {"error": {"code": "x", "message": "m", "field": 3}},
        {"error": {"code": "x", "message": "m"}, "extra": 1},
    ],
)
def test_error_shape_check_refuses_every_other_shape(body: object) -> None:
    assert error_shape_problems(body)
