"""The CI workflow that runs the Neo4j store on a real server, checked for what
GitHub's workflow schema (``make workflow-check``) cannot see: a workflow that
cannot run here must be right on its first run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.contract.backends import NEO4J_IMAGE

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "neo4j.yml"
PINNED = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")


def _workflow() -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return loaded


def _job() -> dict[str, Any]:
    (job,) = _workflow()["jobs"].values()
    assert isinstance(job, dict)
    return job


def _runs() -> str:
    return "\n".join(step.get("run", "") for step in _job()["steps"])


def test_every_action_is_pinned_to_a_commit() -> None:
    uses = [step["uses"] for step in _job()["steps"] if "uses" in step]
    assert uses and all(PINNED.match(u) for u in uses), uses


def test_the_service_is_the_pinned_neo4j_and_is_health_checked() -> None:
    service = _job()["services"]["neo4j"]
    assert service["image"] == NEO4J_IMAGE
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    assert compose["services"]["neo4j"]["image"] == NEO4J_IMAGE
    assert "--health-cmd" in service["options"] and "--health-retries" in service["options"]
    assert "7687:7687" in service["ports"]
    assert "Wait until Neo4j answers" in " ".join(s.get("name", "") for s in _job()["steps"])


def test_the_password_agrees_everywhere_it_is_spelled() -> None:
    # A service's env cannot read the workflow's env: the password is written
    # out in the service, its health check and the tests' settings.
    env = _workflow()["env"]
    service = _job()["services"]["neo4j"]
    password = env["NEO4J_PASSWORD"]
    assert len(password) >= 8  # Neo4j 5.26 refuses shorter ones at start
    assert service["env"]["NEO4J_AUTH"] == f"neo4j/{password}"
    assert f"-p {password} " in service["options"]
    assert env["HIPPO_NEO4J__PASSWORD"] == password
    assert env["NEO4J_URI"] == env["HIPPO_NEO4J__URI"] == "bolt://localhost:7687"
    assert env["NEO4J_REQUIRED"] == "1"  # an unreachable server fails, never skips


def test_the_job_runs_the_suite_the_e2e_test_and_the_benchmark_on_neo4j() -> None:
    runs = _runs()
    assert "make install" in runs
    assert "hippo setup" in runs
    assert "pytest tests/contract" in runs
    assert "tests/e2e/test_concurrency.py" in runs and "-k neo4j" in runs
    assert "bench/recall.py --store neo4j --n 20000" in runs
    for path in ("tests/contract", "tests/e2e/test_concurrency.py", "bench/recall.py"):
        assert (ROOT / path).exists(), path
    bench = next(s for s in _job()["steps"] if "bench/recall.py" in s.get("run", ""))
    assert bench["shell"] == "bash"  # with pipefail: `| tee` must not hide a failure
