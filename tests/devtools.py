"""Headless Chromium for the tests that need a real browser (the graph explorer,
Neo4j Browser): found on PATH, and driven over the DevTools protocol."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HEADLESS = (
    "--headless",
    "--no-sandbox",  # tests may run as root (CI containers)
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    # No traffic of Chromium's own: a test sees only what its page asks for.
    "--disable-background-networking",
    "--disable-component-update",
)
"""The flags every test's Chromium runs with."""


def find_chromium() -> str | None:
    """Chromium's executable on PATH (Debian names it ``chromium``), or None."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


class DevTools:
    """Headless Chromium driven over the DevTools protocol on a pipe
    (``--remote-debugging-pipe``: commands in on its fd 3, answers out on its fd 4,
    each a JSON text ended by a NUL), so a test can act on a page as a user would
    without a browser-automation package."""

    def __init__(self, executable: str, tmp_path: Path) -> None:
        commands_r, self._commands = _pipe()
        self._answers, answers_w = _pipe()
        self._log = tmp_path / "chromium.log"
        with self._log.open("wb") as log:
            # bash moves the child's ends to fds 3 and 4; ours are above 10, clear of them.
            self._process = subprocess.Popen(
                [
                    "bash",
                    "-c",
                    f'exec "$0" "$@" 3<&{commands_r} 4>&{answers_w} {commands_r}<&- {answers_w}>&-',
                    executable,
                    *HEADLESS,
                    "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}",
                    "--window-size=1280,800",
                    "--remote-debugging-pipe",
                    "about:blank",
                ],
                pass_fds=(commands_r, answers_w),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        os.close(commands_r)
        os.close(answers_w)
        self._buffer = b""
        self._last_id = 0
        self._session: str | None = None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call("Browser.close", timeout=10)
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._commands)
        os.close(self._answers)

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60) -> Any:
        """Send one command (to the open page, once there is one) and return its result."""
        self._last_id += 1
        message: dict[str, Any] = {"id": self._last_id, "method": method, "params": params or {}}
        if self._session is not None and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self._session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._commands, data) :]
        deadline = time.monotonic() + timeout
        while True:
            answer = self._receive(deadline, method)
            if answer.get("id") == self._last_id:  # anything else is an event: not needed
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def _receive(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            readable, _, _ = select.select([self._answers], [], [], max(0.0, left))
            if not readable:
                raise TimeoutError(f"no answer to {waiting_for}: {self._log.read_text()[-2000:]}")
            chunk = os.read(self._answers, 1 << 16)
            if not chunk:
                raise RuntimeError(f"Chromium closed the pipe: {self._log.read_text()[-2000:]}")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        answer: dict[str, Any] = json.loads(message)
        return answer

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", {"url": url})["targetId"]
        attached = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        self._session = attached["sessionId"]

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        done = self.call(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
        )
        if "exceptionDetails" in done:
            raise RuntimeError(f"{expression}: {done['exceptionDetails']}")
        return done["result"].get("value")

    def insert_text(self, text: str) -> None:
        """Type ``text`` into the focused element, as a keyboard would (input events)."""
        self.call("Input.insertText", {"text": text})

    def screenshot(self, path: Path) -> bytes:
        """Save what the page shows now as a PNG at ``path``; returns its bytes."""
        data = base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])
        path.write_bytes(data)
        return data

    def wait_until(self, expression: str, timeout: float = 60) -> None:
        """Poll ``expression`` in the page until it is true; fail after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.evaluate(expression) is True:
                    return
            except RuntimeError:
                pass  # the page is still loading: its context may come and go
            if time.monotonic() > deadline:
                raise TimeoutError(f"the page never met {expression}")
            time.sleep(0.05)


def _pipe() -> tuple[int, int]:
    """A pipe whose ends are numbered 10 or more (and close on exec unless passed)."""
    ends = []
    for end in os.pipe():
        ends.append(fcntl.fcntl(end, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(end)
    return ends[0], ends[1]


@contextmanager
def devtools(executable: str, tmp_path: Path) -> Iterator[DevTools]:
    """A :class:`DevTools` on a fresh profile under ``tmp_path``, closed on exit."""
    browser = DevTools(executable, tmp_path)
    try:
        yield browser
    finally:
        browser.close()
