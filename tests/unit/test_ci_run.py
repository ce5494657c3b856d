"""``.ci/run``, the CI entry point: on CI the explorer's browser test and the
Neo4j half of the suites are required, so a Chromium that failed to install or
a Neo4j that did not start fails the run instead of being skipped."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_ci(tmp_path: Path, **env: str) -> str:
    # Stand-ins on PATH: a Chromium already installed (nothing to apt-get) and a
    # `make` that says what it was asked and what it was given.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in {
        "chromium": "exit 0",
        "make": (
            'echo "make $* EXPLORER_REQUIRED=${EXPLORER_REQUIRED:-}'
            ' NEO4J_REQUIRED=${NEO4J_REQUIRED:-}"'
        ),
    }.items():
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_on_ci_the_explorer_browser_test_and_neo4j_are_required(tmp_path: Path) -> None:
    assert run_ci(tmp_path, CI="true") == "make test EXPLORER_REQUIRED=1 NEO4J_REQUIRED=1"


def test_elsewhere_the_explorer_browser_test_may_skip(tmp_path: Path) -> None:
    assert run_ci(tmp_path) == "make test EXPLORER_REQUIRED= NEO4J_REQUIRED="
