"""An acknowledged write survives ``kill -9``: the real server in a subprocess.

A client streams a 5,000-memory import as many small batches from a few threads
and notes every id whose batch was acknowledged (a 2xx response received). The
server is SIGKILLed at about 40%, with requests in flight. It must then start
again on the same data dir (the dead process's lock must not block it) and serve
every acknowledged memory. A few more batches are written, the server is stopped
with SIGTERM and started once more: nothing may be lost on a plain restart either.

The kill lands early and the import is not finished, to keep the test near a
minute on two cores: extraction (spaCy) bounds ingest at a few hundred memories
per second, and the rest of the import would prove nothing new.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from bench.server import START_TIMEOUT_S, Server
from bench.workload import Note, notes

COLLECTION = "crash"
TOTAL = 5_000
BATCH = 10
CLIENTS = 4
RESUMED_BATCHES = 20

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with Server(tmp_path / "data", tmp_path / "server.log") as srv:
        yield srv


def _body(batch: Sequence[Note]) -> dict[str, object]:
    return {
        "memories": [
            {"id": m.id, "content": m.content, "category": m.category, "tags": ["incident"]}
            for m in batch
        ]
    }


@dataclass
class Importer:
    """Posts batches from several threads; records what was acknowledged."""

    url: str
    batches: list[list[Note]]
    lock: threading.Lock = field(default_factory=threading.Lock)
    next_batch: int = 0
    in_flight: int = 0
    acked: set[int] = field(default_factory=set)  # batch numbers
    errors: list[str] = field(default_factory=list)

    def acked_memories(self) -> int:
        return sum(len(self.batches[b]) for b in self.acked)

    def worker(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30.0) as client:
            while True:
                with self.lock:
                    number = self.next_batch
                    if number >= len(self.batches):
                        return
                    self.next_batch += 1
                    self.in_flight += 1
                try:
                    r = client.post(
                        f"/v1/collections/{COLLECTION}/memories", json=_body(self.batches[number])
                    )
                except httpx.TransportError:
                    return  # the server is gone: this batch was never acknowledged
                finally:
                    with self.lock:
                        self.in_flight -= 1
                with self.lock:
                    if r.is_success:
                        self.acked.add(number)
                    else:
                        self.errors.append(f"batch {number}: {r.status_code} {r.text[:200]}")
                        return


def _assert_all_present(url: str, expected: Sequence[Note]) -> None:
    def missing(chunk: Sequence[Note]) -> list[str]:
        lost: list[str] = []
        with httpx.Client(base_url=url, timeout=30.0) as client:
            for m in chunk:
                r = client.get(f"/v1/collections/{COLLECTION}/memories/{m.id}")
                if r.status_code != 200 or r.json()["content"] != m.content:
                    lost.append(f"{m.id}: {r.status_code}")
        return lost

    chunks = [expected[i::CLIENTS] for i in range(CLIENTS)]
    with ThreadPoolExecutor(CLIENTS) as pool:
        lost = [x for part in pool.map(missing, chunks) for x in part]
    assert not lost, f"{len(lost)} acknowledged memories lost, e.g. {lost[:5]}"


def _count(url: str) -> int:
    r = httpx.get(
        f"{url}/v1/collections/{COLLECTION}/stats", params={"graph": "false"}, timeout=30.0
    )
    assert r.status_code == 200, r.text
    count: int = r.json()["memories"]
    return count


def test_acknowledged_memories_survive_kill_9_and_a_restart(server: Server) -> None:
    items = notes(TOTAL)
    batches = [items[i : i + BATCH] for i in range(0, TOTAL, BATCH)]
    server.start()
    importer = Importer(server.url, batches)
    threads = [threading.Thread(target=importer.worker, daemon=True) for _ in range(CLIENTS)]
    for t in threads:
        t.start()

    # Kill once about 40% is acknowledged, at a moment when requests are in flight.
    # Holding the lock freezes the in-flight count while the signal is sent.
    target = TOTAL * 2 // 5
    deadline = time.monotonic() + 60
    while True:
        assert time.monotonic() < deadline, f"import stalled:\n{server.output()}"
        assert not importer.errors, importer.errors
        with importer.lock:
            if importer.acked_memories() >= target and importer.in_flight > 0:
                assert server.proc is not None
                server.proc.send_signal(signal.SIGKILL)
                in_flight_at_kill = importer.in_flight
                break
        time.sleep(0.005)
    for t in threads:
        t.join(timeout=60)
    assert server.proc is not None
    assert server.proc.wait(timeout=30) == -signal.SIGKILL
    server.proc = None
    assert in_flight_at_kill > 0
    acked = [m for b in sorted(importer.acked) for m in batches[b]]
    assert 0 < len(acked) < TOTAL, "the kill must land mid-import"
    assert not importer.errors, importer.errors

    # The dead process's lock must not keep the data dir closed.
    server.start()
    assert _count(server.url) >= len(acked)
    _assert_all_present(server.url, acked)

    # Writes after the recovery, starting with the batches that were in flight at
    # the kill: those may or may not have been stored, and stored ones come back
    # as duplicates, not errors.
    resumed = [b for b in range(len(batches)) if b not in importer.acked][:RESUMED_BATCHES]
    with httpx.Client(base_url=server.url, timeout=30.0) as client:
        for number in resumed:
            r = client.post(f"/v1/collections/{COLLECTION}/memories", json=_body(batches[number]))
            assert r.is_success, r.text
    stored = acked + [m for b in resumed for m in batches[b]]
    count = _count(server.url)
    assert count >= len(stored)

    # A plain restart keeps everything.
    assert server.stop(signal.SIGTERM) == 0, server.output()
    server.start()
    assert _count(server.url) == count
    _assert_all_present(server.url, stored)
    assert server.stop(signal.SIGTERM) == 0, server.output()


def test_a_second_server_on_the_same_data_dir_refuses_to_start(
    server: Server, tmp_path: Path
) -> None:
    server.start()
    second = Server(server.data_dir, tmp_path / "second.log")
    proc = second.spawn()
    try:
        code = proc.wait(timeout=START_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    output = second.output()
    assert code != 0, output
    assert "in use" in output, output
    assert str(server.data_dir) in output, output
    assert "Traceback" not in output, output
    # The first server is unharmed.
    assert httpx.get(f"{server.url}/healthz", timeout=5.0).status_code == 200
    assert server.stop(signal.SIGTERM) == 0
