"""One real server, many clients at once: nothing lost, nothing doubled, no deadlock.

Eight client threads send a mixed workload (bench/workload.py) to one server
process on loopback: remember and forget, recall, conversation messages,
engagement with what the messages surfaced, helpful feedback on a few hot
memories (so that concurrent requests change the same ones) and decay passes.
Every acknowledged effect goes to a ledger kept by the clients. Afterwards
the server must hold exactly that: each acknowledged memory once, with its
content; each acknowledged forget gone; every id unique; ``usage_count`` of
every memory, and ``co_occurrences`` of the feedback-context and co-retrieval
edges, equal to what the clients counted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.server import REPO, Server
from bench.workload import (
    Client,
    Latencies,
    Ledger,
    Mix,
    counter,
    notes,
    preload,
    start_crew,
    verify,
)

COLLECTION = "concurrency"
SEEDED = 30
HOT = 4
CLIENTS = 8
STEPS = 60
JOIN_TIMEOUT_S = 240.0

pytestmark = pytest.mark.slow

STORES = ("embedded", "neo4j") if os.environ.get("NEO4J_URI") else ("embedded",)
"""The server runs on the embedded store, and on the Neo4j that ``NEO4J_URI``
(``NEO4J_USER``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE``) names when set, its
schema set up first (``hippo setup``, idempotent) as an operator would."""


def _store_settings(store: str) -> dict[str, str]:
    if store == "embedded":
        return {}
    return {
        "HIPPO_STORE": "neo4j",
        "HIPPO_NEO4J__URI": os.environ["NEO4J_URI"],
        "HIPPO_NEO4J__USER": os.environ.get("NEO4J_USER", "neo4j"),
        "HIPPO_NEO4J__PASSWORD": os.environ.get("NEO4J_PASSWORD", ""),
        "HIPPO_NEO4J__DATABASE": os.environ.get("NEO4J_DATABASE", "neo4j"),
    }


def _set_up(settings: dict[str, str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPPO_")}
    env.update(settings, HIPPO_EMBEDDER="hashing")
    done = subprocess.run(
        [sys.executable, "-m", "hippocampus.api.cli", "setup"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(params=STORES)
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    settings = _store_settings(request.param)
    if request.param == "neo4j":
        _set_up(settings)
    with Server(tmp_path / "data", tmp_path / "server.log", settings=settings) as srv:
        srv.start()
        yield srv


def test_concurrent_clients_lose_and_double_nothing(server: Server) -> None:
    # A collection of its own: a Neo4j may hold earlier runs' collections.
    collection = f"{COLLECTION}-{uuid.uuid4().hex[:8]}"
    ledger = Ledger()
    latencies = Latencies()
    preloaded = notes(SEEDED)
    preload(server.url, collection, preloaded, ledger)
    next_note = counter(start=SEEDED)
    hot = [m.id for m in preloaded[:HOT]]
    crew = start_crew(
        CLIENTS,
        lambda n: Client(
            server.url,
            collection,
            ledger,
            latencies,
            name=f"client{n}",
            seed=n,
            hot=hot,
            next_note=next_note,
            mix=Mix(scratch_cap=4 * CLIENTS),
        ),
        steps=STEPS,
    )
    stuck = crew.join(timeout=JOIN_TIMEOUT_S)
    assert not stuck, f"clients stuck:\n{server.output()}"
    assert not crew.crashed, crew.crashed
    assert not ledger.errors, ledger.errors
    sent, failed = latencies.take()
    assert not failed, f"failed requests {latencies.failures}:\n{server.output()}"
    # Every kind of write really ran concurrently, so the checks below mean something.
    for route in ("remember", "forget", "recall", "message", "engage", "feedback"):
        assert sent.get(route), f"no {route} request was sent"
    assert ledger.usage and ledger.about and ledger.pairs and ledger.forgotten

    # The server still answers; its batched retrieval learning is written by a decay pass.
    assert httpx.get(f"{server.url}/healthz", timeout=10.0).status_code == 200
    r = httpx.post(f"{server.url}/v1/collections/{collection}/maintenance/decay", timeout=60.0)
    assert r.status_code == 200, r.text
    assert verify(server.url, collection, ledger, pairs=True).problems == []
