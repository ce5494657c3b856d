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
    # What Neo4j Browser 5.26 sends before `:play`: its fetch carries cache-control
    # and pragma, so the browser asks first.
    for path in ("/browser/guide.html", "/browser/hippocampus.grass"):
        answer = client.options(
            path,
            headers={
                "Origin": "http://localhost:7474",
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "cache-control,pragma",
            },
        )
        assert answer.status_code == 200, path
        assert answer.headers["access-control-allow-origin"] == "*"
        assert answer.headers["access-control-allow-methods"] == "GET"
        allowed = {h.strip() for h in answer.headers["access-control-allow-headers"].split(",")}
        assert {"cache-control", "pragma"} <= allowed
        assert answer.content == b""
