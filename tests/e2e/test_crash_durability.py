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

import itertools
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
COLLECTION = "crash"
TOTAL = 5_000
BATCH = 10
CLIENTS = 4
RESUMED_BATCHES = 20
START_TIMEOUT_S = 60.0

pytestmark = pytest.mark.slow

_SERVICES = (
    "checkout", "billing", "search", "auth", "notifications", "inventory", "reporting",
    "export worker", "mobile backend", "pricing engine", "webhook dispatcher", "session store",
)  # fmt: skip
_SYMPTOMS = (
    "p99 latency passed two seconds", "requests timed out", "the queue backed up",
    "memory grew until the pods were OOM-killed", "error rates jumped to 12%",
    "webhooks were delivered twice", "users were logged out at random",
    "the nightly job ran for five hours", "dashboards showed stale numbers",
    "deploys hung at the health check",
)  # fmt: skip
_CAUSES = (
    "a missing index", "an N+1 query", "a retry storm without jitter", "an unbounded cache",
    "a daylight-saving bug", "a race between two workers", "a connection leak",
    "a stale DNS entry", "a lock held across a network call", "a forgotten feature flag",
)  # fmt: skip
_FIXES = (
    "added the index", "batched the lookups", "added backoff with jitter", "capped the cache",
    "stored timestamps in UTC", "made the job claim atomic", "closed connections in finally",
    "lowered the DNS TTL", "moved the call outside the lock", "removed the flag",
)  # fmt: skip


@dataclass(frozen=True)
class Item:
    id: str
    content: str
    category: str


def _items(n: int) -> list[Item]:
    """``n`` distinct incident notes (identical content would be de-duplicated)."""
    combos = list(itertools.product(_SERVICES, _SYMPTOMS, _CAUSES, _FIXES))
    random.Random(2024).shuffle(combos)
    return [
        Item(
            id=f"incident-{i:05d}",
            content=f"Incident in the {svc} service: {symptom}. The cause was {cause}; "
            f"the on-call engineer {fix} and wrote a regression test.",
            category=("bug_fix", "outcome", "insight")[i % 3],
        )
        for i, (svc, symptom, cause, fix) in enumerate(combos[:n])
    ]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Server:
    """``python -m api.cli serve`` on a data dir, its output in a log file."""

    data_dir: Path
    log: Path
    port: int = field(default_factory=_free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def spawn(self) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HIPPO_")}
        env["HIPPO_EMBEDDER"] = "hashing"
        env["HIPPO_LOG_LEVEL"] = "WARNING"
        with self.log.open("ab") as out:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "api.cli",
                    "serve",
                    "--port",
                    str(self.port),
                    "--data-dir",
                    str(self.data_dir),
                ],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def start(self) -> None:
        self.port = _free_port()
        self.proc = self.spawn()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        pytest.fail(f"server did not become healthy in {START_TIMEOUT_S} s:\n{self.output()}")

    def stop(self, sig: signal.Signals) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=30)
        self.proc = None
        return code

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path / "data", tmp_path / "server.log")
    yield srv
    if srv.proc is not None and srv.proc.poll() is None:
        srv.proc.kill()
        srv.proc.wait(timeout=30)


def _body(batch: Sequence[Item]) -> dict[str, object]:
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
    batches: list[list[Item]]
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


def _assert_all_present(url: str, expected: Sequence[Item]) -> None:
    def missing(chunk: Sequence[Item]) -> list[str]:
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
    r = httpx.get(f"{url}/v1/collections/{COLLECTION}/stats", timeout=30.0)
    assert r.status_code == 200, r.text
    count: int = r.json()["memories"]
    return count


def test_acknowledged_memories_survive_kill_9_and_a_restart(server: Server) -> None:
    items = _items(TOTAL)
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
