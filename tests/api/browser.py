"""Headless Chromium for the API's pages (the explorer, /docs and /redoc):
Debian's ``chromium``. Where none is installed the browser tests skip, saying
why; with ``EXPLORER_REQUIRED=1`` (CI, which installs one) that fails instead,
so a failed install cannot pass unnoticed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.devtools import HEADLESS, find_chromium


def chromium() -> str:
    found = find_chromium()
    if found:
        return found
    reason = (
        "no Chromium on PATH (Debian: apt-get install chromium): a browser "
        "test did not run"
    )
    if os.environ.get("EXPLORER_REQUIRED") == "1":
        pytest.fail(f"EXPLORER_REQUIRED=1 but {reason}")
    pytest.skip(reason)


def browse(url: str, tmp_path: Path, *extra: str) -> str:
    """Run headless Chromium on ``url`` until the page's network and timers settle."""
    done = subprocess.run(
        [
            chromium(),
            *HEADLESS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1280,800",
            "--virtual-time-budget=20000",
            *extra,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
