"""Two API processes on one Neo4j: ``hippo serve --workers 2``, concurrent clients
split between the processes, and not one learning increment lost.

Eight client threads send bench/workload.py's mix (remember and forget, recall,
messages, engagement, feedback on a few hot memories, used-together, decay), as
tests/e2e/test_concurrency.py does against one process. Here each client's
keep-alive connection is held by one worker, half the clients on each: the hot
memories' ``usage_count`` and their edges' ``co_occurrences`` are raised by both
processes at once. After a decay pass through each worker (which writes what its
recalls taught, batched in that process), every counter must equal what the
clients were acknowledged.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

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
    preload,
    start_crew,
    verify,
)
from tests.e2e.live_neo4j import live_neo4j, scratch_collection

pytestmark = pytest.mark.slow

WORKERS = 2
SEEDED = 30
HOT = 4
CLIENTS = 8
STEPS = 60
JOIN_TIMEOUT_S = 300.0
PIN_TRIES = 200
"""Fresh connections a client may open to reach its worker (each is taken by
whichever worker accepts first)."""


class PinnedClient(Client):
    """A workload client whose connection is held by the worker ``pid``; after
    each step it asks ``/healthz`` on that same connection who answered, and
    counts the step for that process in ``served``."""

    def __init__(
        self,
        url: str,
        collection: str,
        ledger: Ledger,
        latencies: Latencies,
        *,
        pid: int,
        served: Counter[int],
        lock: threading.Lock,
        **kwargs: Any,
    ) -> None:
        super().__init__(url, collection, ledger, latencies, **kwargs)
        self.served, self.lock = served, lock
        for _ in range(PIN_TRIES):
            if self._answering() == pid:
                return
            self.http.close()
            self.http = httpx.Client(base_url=self.http.base_url, timeout=self.http.timeout)
        raise AssertionError(f"no connection reached worker {pid} in {PIN_TRIES} tries")

    def _answering(self) -> int:
        r = self.http.get("/healthz")
        r.raise_for_status()
        pid: int = r.json()["pid"]
        return pid

    def step(self) -> str:
        route = super().step()
        pid = self._answering()
        with self.lock:
            self.served[pid] += 1
        return route


def test_two_workers_on_one_neo4j_lose_no_learning_increment(tmp_path: Path) -> None:
    neo4j = live_neo4j()
    with (
        scratch_collection(neo4j, "workers") as collection,
        Server(
            tmp_path / "data", tmp_path / "server.log", neo4j.server_settings(), workers=WORKERS
        ) as server,
    ):
        server.start(timeout_s=180.0)
        pids = sorted(server.worker_pids())
        assert len(pids) == WORKERS and server.pid not in pids

        ledger, latencies = Ledger(), Latencies()
        preloaded = notes(SEEDED)
        preload(server.url, collection, preloaded, ledger)
        hot = [m.id for m in preloaded[:HOT]]
        next_note = counter(start=SEEDED)
        served: Counter[int] = Counter()
        lock = threading.Lock()
        crew = start_crew(
            CLIENTS,
            lambda n: PinnedClient(
                server.url,
                collection,
                ledger,
                latencies,
                name=f"client{n}",
                seed=n,
                hot=hot,
                next_note=next_note,
                mix=Mix(scratch_cap=4 * CLIENTS),
                pid=pids[n % WORKERS],
                served=served,
                lock=lock,
            ),
            steps=STEPS,
        )
        stuck = crew.join(timeout=JOIN_TIMEOUT_S)
        assert not stuck, f"clients stuck:\n{server.output()}"
        assert not crew.crashed, crew.crashed
        assert not ledger.errors, f"{ledger.errors}:\n{server.output()}"
        sent, failed = latencies.take()
        assert not failed, f"failed requests {dict(failed)}:\n{server.output()}"
        for route in ("remember", "forget", "recall", "message", "engage", "feedback", "use"):
            assert sent.get(route), f"no {route} request was sent"
        assert ledger.usage and ledger.about and ledger.pairs and ledger.forgotten
        # Both processes answered whole clients' worth of the workload, each on the
        # connection its clients kept from the first step to the last.
        per_worker = CLIENTS // WORKERS * STEPS
        assert served == dict.fromkeys(pids, per_worker), served

        # Recall learning is batched in each process: a decay pass through each
        # worker writes it. Then every counter is exact.
        for pid in pids:
            with PinnedClient(
                server.url,
                collection,
                Ledger(),
                Latencies(),
                name=f"decay{pid}",
                seed=0,
                hot=hot,
                next_note=next_note,
                pid=pid,
                served=Counter(),
                lock=lock,
            ) as worker:
                r = worker.http.post(f"/v1/collections/{collection}/maintenance/decay", timeout=60)
                assert r.status_code == 200, r.text
        verdict = verify(server.url, collection, ledger, pairs=True)
        assert verdict.problems == [], verdict.problems
