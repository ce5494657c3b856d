"""Helpers shared by the API tests: keys, a counting embedder, a client that
checks every response for leaked vectors.

A plain module (not conftest) so tests can import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
from fastapi.testclient import TestClient

from hippocampus.config import HippoSettings
from hippocampus.embed import HashingEmbedder
from hippocampus.extract.quality import QualityConfig

ALPHA_KEY = "alpha-key-0001"
BETA_KEY = "beta-key-00002"
ADMIN_KEY = "admin-key-0003"
API_KEYS = f"{ALPHA_KEY}=team:alpha;{BETA_KEY}=team:beta;{ADMIN_KEY}=*"

OPERATOR = "operator"
TRUSTED_OPERATOR = QualityConfig(source_trust={OPERATOR: 1.0})
"""The quality gate as configured for the API tests: the defaults, with one source
(the operator's deliberate notes) trusted to store texts however short."""

ALPHA = {"Authorization": f"Bearer {ALPHA_KEY}"}
BETA = {"Authorization": f"Bearer {BETA_KEY}"}
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.texts.extend(texts)
        return super().encode(texts)


def find_leaks(value: Any, path: str = "$") -> list[str]:
    """Where a JSON value holds an ``embedding`` key or anything shaped like a vector."""
    leaks: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("embedding", "vector", "vectors", "embeddings"):
                leaks.append(f"{path}.{key}")
            leaks.extend(find_leaks(item, f"{path}.{key}"))
    elif isinstance(value, list):
        numbers = [v for v in value if isinstance(v, float)]
        if len(numbers) >= 16:
            leaks.append(f"{path} (a list of {len(numbers)} floats)")
        for i, item in enumerate(value):
            leaks.extend(find_leaks(item, f"{path}[{i}]"))
    return leaks


class AuditingClient(TestClient):
    """A TestClient that fails the test when any response leaks a vector."""

    def request(self, *args: Any, **kwargs: Any) -> httpx.Response:  # type: ignore[override]
        response = super().request(*args, **kwargs)
        if response.content and response.headers.get("content-type", "").startswith(
            "application/json"
        ):
            leaks = find_leaks(response.json())
            assert not leaks, f"{response.request.url} leaked {leaks}"
        return response


def make_settings(data_dir: Path, api_keys: str = API_KEYS, **extra: Any) -> HippoSettings:
    return HippoSettings(data_dir=data_dir, embedder="hashing", api_keys=api_keys, **extra)


def remember(
    client: TestClient, content: str, collection: str = "team:alpha", **fields: Any
) -> dict[str, Any]:
    """Remember one memory as the alpha key (or the admin key elsewhere); its result."""
    headers = ALPHA if collection == "team:alpha" else ADMIN
    r = client.post(
        f"/v1/collections/{collection}/memories",
        json={"content": content, **fields},
        headers=headers,
    )
    assert r.status_code == 201, r.text
    result: dict[str, Any] = r.json()
    return result
