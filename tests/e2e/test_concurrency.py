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

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.server import Server
from bench.workload import (
    Client,
    Latencies,
    Ledger,
    Mix,
    counter,
    notes,
    seed_memories,
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


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with Server(tmp_path / "data", tmp_path / "server.log") as srv:
        srv.start()
        yield srv


def test_concurrent_clients_lose_and_double_nothing(server: Server) -> None:
    ledger = Ledger()
    latencies = Latencies()
    seeds = notes(SEEDED)
    seed_memories(server.url, COLLECTION, seeds, ledger)
    next_note = counter(start=SEEDED)
    hot = [m.id for m in seeds[:HOT]]
    crew = start_crew(
        CLIENTS,
        lambda n: Client(
            server.url,
            COLLECTION,
            ledger,
            latencies,
            name=f"client{n}",
            seed=n,
            hot=hot,
            next_note=next_note,
            mix=Mix(scratch_cap=4),
        ),
        steps=STEPS,
    )
    stuck = crew.join(timeout=JOIN_TIMEOUT_S)
    assert not stuck, f"clients stuck:\n{server.output()}"
    assert not crew.crashed, crew.crashed
    assert not ledger.errors, ledger.errors
    sent, failed = latencies.take()
    assert not failed, f"failed requests {dict(failed)}:\n{server.output()}"
    # Every kind of write really ran concurrently, so the checks below mean something.
    for route in ("remember", "forget", "recall", "message", "engage", "feedback"):
        assert sent.get(route), f"no {route} request was sent"
    assert ledger.usage and ledger.about and ledger.pairs and ledger.forgotten

    # The server still answers; its batched retrieval learning is written by a decay pass.
    assert httpx.get(f"{server.url}/healthz", timeout=10.0).status_code == 200
    r = httpx.post(f"{server.url}/v1/collections/{COLLECTION}/maintenance/decay", timeout=60.0)
    assert r.status_code == 200, r.text
    assert verify(server.url, COLLECTION, ledger, pairs=True).problems == []
