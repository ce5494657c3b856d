"""Neo4j Browser fetches the guide and the style from the API."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_the_guide_and_style_are_served_to_any_origin_without_a_key(client: TestClient) -> None:
    guide = client.get("/browser/guide.html")
    assert guide.status_code == 200
    assert guide.headers["content-type"].startswith("text/html")
    assert guide.headers["access-control-allow-origin"] == "*"
    assert '<article class="guide' in guide.text
    style = client.get("/browser/hippocampus.grass")
    assert style.status_code == 200
    assert "node.Memory" in style.text
    assert "/browser/guide.html" not in client.get("/openapi.json").text


def test_browsers_preflight_for_the_guide_and_style_is_allowed(client: TestClient) -> None:
    # What Neo4j Browser 5.24 sends before `:play`: its fetch carries cache-control
    # and pragma, and Sentry's tracing headers while its telemetry is on (the
    # default), so the browser asks first.
    for path in ("/browser/guide.html", "/browser/hippocampus.grass"):
        answer = client.options(
            path,
            headers={
                "Origin": "http://localhost:7474",
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "baggage,cache-control,pragma,sentry-trace",
            },
        )
        assert answer.status_code == 200, path
        assert answer.headers["access-control-allow-origin"] == "*"
        assert answer.headers["access-control-allow-methods"] == "GET"
        allowed = {h.strip() for h in answer.headers["access-control-allow-headers"].split(",")}
        assert {"baggage", "cache-control", "pragma", "sentry-trace"} <= allowed
        assert answer.headers["vary"] == "Access-Control-Request-Headers"
        assert answer.content == b""


def test_a_preflight_naming_no_headers_is_allowed_browsers_own(client: TestClient) -> None:
    answer = client.options(
        "/browser/guide.html",
        headers={"Origin": "http://localhost:7474", "Access-Control-Request-Method": "GET"},
    )
    allowed = {h.strip() for h in answer.headers["access-control-allow-headers"].split(",")}
    assert {"baggage", "cache-control", "pragma", "sentry-trace"} <= allowed


def test_the_guides_style_command_names_the_server_that_served_it(client: TestClient) -> None:
    guide = client.get("/browser/guide.html", headers={"Host": "localhost:9123"}).text
    assert ":style http://localhost:9123/browser/hippocampus.grass" in guide
    assert "localhost:8000" not in guide
    # The Host header is the caller's to write: it reaches the page only as text.
    hostile = client.get("/browser/guide.html", headers={"Host": 'x"><b>'}).text
    assert "<b>" not in hostile
