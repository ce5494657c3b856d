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
