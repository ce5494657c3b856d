"""Long content over REST: up to the content cap it is stored and found by any
part of it; over the cap it is refused naming the field."""

from __future__ import annotations

from fastapi.testclient import TestClient

from hippocampus.config import Limits
from tests.api.helpers import ALPHA

URL = "/v1/collections/team:alpha/memories"
TAIL = "In the end the lighthouse keeper counted seventeen walrus calves at the basalt quarry."


def _long(chars: int) -> str:
    sentence = "The release train verifies every artifact before the rollout starts. "
    return (sentence * (chars // len(sentence) + 1))[: chars - len(TAIL) - 2] + "\n\n" + TAIL


def test_content_over_the_cap_is_422_naming_content(client: TestClient) -> None:
    cap = Limits().max_content_chars
    assert cap == 32_000

    r = client.post(URL, json={"content": "x " * (cap // 2) + "y"}, headers=ALPHA)

    assert r.status_code == 422
    assert r.json()["error"]["field"] == "content"


def test_long_content_is_found_by_its_last_passage(client: TestClient) -> None:
    content = _long(20_000)
    r = client.post(URL, json={"content": content, "source": "human"}, headers=ALPHA)
    assert r.status_code == 201, r.text
    memory_id = r.json()["id"]

    r = client.post(
        "/v1/collections/team:alpha/recall",
        json={"query": "walrus calves basalt quarry lighthouse keeper", "recipe": "DENSE"},
        headers=ALPHA,
    )

    assert r.status_code == 200
    assert r.json()["results"][0]["id"] == memory_id
