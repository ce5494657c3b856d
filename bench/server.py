"""A real ``hippo serve`` in a subprocess, for the end-to-end tests and the
load, crash-loop and soak benches.

The server runs ``python -m api.cli serve`` from this checkout on a free loopback
port and a given data dir, with its output appended to a log file. Only the
``HIPPO_`` variables given here reach it (the caller's are dropped), and the
deterministic hashing embedder is the default so a start takes seconds. With
``workers`` above 1 (the Neo4j store only) it serves from that many processes,
which are stopped and killed together.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx

REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 60.0


class ServerError(RuntimeError):
    """The server would not start, or exited when it should not have; the message
    ends with the tail of its log."""


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Server:
    """``hippo serve`` on ``data_dir``; ``settings`` are extra ``HIPPO_*`` variables;
    ``workers``: ``serve --workers``.

    Each :meth:`start` picks a fresh port: a killed server's port may linger in
    TIME_WAIT.
    """

    data_dir: Path
    log: Path
    settings: Mapping[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    workers: int = 1

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise ServerError("the server is not running")
        return self.proc.pid

    def spawn(self) -> subprocess.Popen[bytes]:
        """Start the process and return it, without waiting for it to serve."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("HIPPO_")}
        env["HIPPO_EMBEDDER"] = "hashing"
        env["HIPPO_LOG_LEVEL"] = "WARNING"
        env.update(self.settings)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "hippocampus.api.cli",
                    "serve",
                    "--port",
                    str(self.port),
                    "--data-dir",
                    str(self.data_dir),
                    *(["--workers", str(self.workers)] if self.workers > 1 else []),
                ],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                # Workers are children of the serving process: a group of their own
                # lets a signal (a SIGKILL above all) reach every one of them.
                start_new_session=self.workers > 1,
            )

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start on a fresh port and wait until ``/healthz`` answers 200 (from every
        worker, with several).

        Raises:
            ServerError: it exited, or was not healthy within ``timeout_s``.
        """
        self.port = free_port()
        self.proc = self.spawn()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.kill()  # with workers, any that outlived it
                raise ServerError(f"server exited with {code}:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        else:
            self.kill()
            raise ServerError(f"server did not become healthy in {timeout_s} s:\n{self.output()}")
        if self.workers > 1:
            self.worker_pids(deadline - time.monotonic())

    def worker_pids(self, timeout_s: float = START_TIMEOUT_S) -> set[int]:
        """The process ids of the workers, once each has answered ``/healthz``.

        Each probe is a connection of its own, taken by whichever worker accepts
        first; the first worker up would otherwise take every client of a run.

        Raises:
            ServerError: fewer than ``workers`` answered within ``timeout_s``.
        """
        seen: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(seen) < self.workers:
            if time.monotonic() > deadline:
                self.kill()
                raise ServerError(
                    f"{len(seen)} of {self.workers} workers answered in {timeout_s:.0f} s:\n"
                    f"{self.output()}"
                )
            try:
                r = httpx.get(f"{self.url}/healthz", timeout=5.0)
            except httpx.TransportError:
                r = None
            if r is not None and r.status_code == 200 and r.json()["pid"] not in seen:
                seen.add(r.json()["pid"])
            else:
                time.sleep(0.02)
        return seen

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        """Send ``sig`` and wait for the exit; returns the exit code (negative: the
        signal that ended it)."""
        if self.proc is None:
            raise ServerError("the server is not running")
        self._signal(self.proc, sig)
        code = self.proc.wait(timeout=30)
        self.proc = None
        return code

    def kill(self) -> None:
        """SIGKILL the server if it runs; a no-op otherwise."""
        # With workers the group goes even when the serving process is gone: its
        # workers may outlive it.
        if self.proc is not None and (self.workers > 1 or self.proc.poll() is None):
            self._signal(self.proc, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=30)
        self.proc = None

    def _signal(self, proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        if self.workers > 1:
            # The serving process and its workers: killed alone, it would leave
            # them serving the port.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)

    def output(self) -> str:
        """The end of the server's log, and its first traceback if that came before."""
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        first = text.find("Traceback (most recent call last)")
        if 0 <= first < len(text) - 4000:
            return f"{text[first : first + 6000]}\n[...]\n{text[-4000:]}"
        return text[-4000:]

    def __enter__(self) -> Server:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.kill()
