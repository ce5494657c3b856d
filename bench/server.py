"""A real ``hippo serve`` in a subprocess, for the end-to-end tests and the
load, crash-loop and soak benches.

The server runs ``python -m api.cli serve`` from this checkout on a free loopback
port and a given data dir, with its output appended to a log file. Only the
``HIPPO_`` variables given here reach it (the caller's are dropped), and the
deterministic hashing embedder is the default so a start takes seconds.
"""

from __future__ import annotations

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
    """``hippo serve`` on ``data_dir``; ``settings`` are extra ``HIPPO_*`` variables.

    Each :meth:`start` picks a fresh port: a killed server's port may linger in
    TIME_WAIT.
    """

    data_dir: Path
    log: Path
    settings: Mapping[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

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

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start on a fresh port and wait until ``/healthz`` answers 200.

        Raises:
            ServerError: it exited, or was not healthy within ``timeout_s``.
        """
        self.port = free_port()
        self.proc = self.spawn()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.proc = None
                raise ServerError(f"server exited with {code}:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.kill()
        raise ServerError(f"server did not become healthy in {timeout_s} s:\n{self.output()}")

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        """Send ``sig`` and wait for the exit; returns the exit code (negative: the
        signal that ended it)."""
        if self.proc is None:
            raise ServerError("the server is not running")
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=30)
        self.proc = None
        return code

    def kill(self) -> None:
        """SIGKILL the server if it runs; a no-op otherwise."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait(timeout=30)
        self.proc = None

    def output(self) -> str:
        """The end of the server's log."""
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]
        except FileNotFoundError:
            return ""

    def __enter__(self) -> Server:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.kill()
