"""One contract suite for every store: each test runs against each backend.

- ``embedded``: always, in a temp dir per test.
- ``neo4j``: when ``NEO4J_URI`` (with ``NEO4J_USER``, ``NEO4J_PASSWORD``, and
  optionally ``NEO4J_DATABASE``) reaches a server within 2 seconds; else, when
  the ``testcontainers`` package is installed and a Docker engine answers, in a
  ``neo4j:5.26`` container started for the session. With ``NEO4J_REQUIRED=1``
  (CI), a Neo4j that cannot be reached fails the run instead of skipping.

Without either, the Neo4j variants are not generated and one test,
``test_neo4j_is_reachable``, is skipped with the reason (also printed in the
report header). Each test works in collections of its own (``collection``,
``other``), dropped from Neo4j when it ends; no test wipes the database.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hippocampus.store import GraphStore
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.neo4j import Neo4jStore
from tests.contract.backends import NEO4J_IMAGE, STORES, neo4j_plan
from tests.contract.helpers import DIM

_PROBE_S = 2.0
_RETRY_S = 30.0


def _connect(uri: str, user: str, password: str, database: str) -> Neo4jStore:
    store = Neo4jStore.connect(
        uri,
        user=user,
        password=password,
        database=database,
        dimensions=DIM,
        # The probe: a connection opens in 2 s or the server counts as away. A
        # transaction under contention (the concurrency tests) is retried as
        # long as a server's default would.
        max_retry_s=_RETRY_S,
        timeout_s=_PROBE_S,
    )
    try:
        store.verify_connectivity()
        store.setup(timeout_s=120.0)
    except Exception:
        store.close()
        raise
    return store


@pytest.fixture(scope="session")
def neo4j_store() -> Iterator[Neo4jStore]:
    """The Neo4j store for the session, schema set up; skips when none is reachable."""
    how, detail = neo4j_plan()
    required = os.environ.get("NEO4J_REQUIRED") == "1"
    if how is None:
        if required:
            pytest.fail(f"NEO4J_REQUIRED=1 but {detail}")
        pytest.skip(detail)
    with contextlib.ExitStack() as stack:
        if how == "uri":
            params = (
                os.environ["NEO4J_URI"],
                os.environ.get("NEO4J_USER", "neo4j"),
                os.environ.get("NEO4J_PASSWORD", ""),
                os.environ.get("NEO4J_DATABASE", "neo4j"),
            )
        else:
            from testcontainers.neo4j import Neo4jContainer

            container = stack.enter_context(Neo4jContainer(NEO4J_IMAGE))
            params = (
                container.get_connection_url(),
                container.username,
                container.password,
                "neo4j",
            )
        try:
            store = _connect(*params)
        except Exception as e:
            if required:
                pytest.fail(f"NEO4J_REQUIRED=1 but {params[0]} is not usable ({e})")
            pytest.skip(f"Neo4j contract tests skipped: {params[0]} is not reachable ({e})")
        stack.callback(store.close)
        yield store


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GraphStore]:
    """Each store of :data:`STORES` in turn, behind the contract only."""
    if request.param == "embedded":
        embedded = EmbeddedStore(tmp_path / "embedded")
        yield embedded
        embedded.close()
    else:
        yield request.getfixturevalue("neo4j_store")


@pytest.fixture
def new_collection(store: GraphStore) -> Iterator[Callable[[], str]]:
    """Makes fresh collection names; each is dropped from Neo4j after the test."""
    made: list[str] = []

    def make() -> str:
        name = f"contract-{uuid.uuid4().hex[:12]}"
        made.append(name)
        return name

    yield make
    if isinstance(store, Neo4jStore):
        for name in made:
            store.drop_collection(name)


@pytest.fixture
def dropped(neo4j_store: Neo4jStore) -> Iterator[list[str]]:
    """Neo4j collections to drop when the test ends (see :func:`helpers.named`)."""
    made: list[str] = []
    yield made
    for name in made:
        neo4j_store.drop_collection(name)


@pytest.fixture
def collection(new_collection: Callable[[], str]) -> str:
    return new_collection()


@pytest.fixture
def other(new_collection: Callable[[], str]) -> str:
    """A second collection, for isolation checks."""
    return new_collection()


def pytest_collection_modifyitems(config: pytest.Config, items: list[Any]) -> None:
    # Neo4j runs stay together after the embedded ones: the container (if any)
    # starts once, late, and a failing server shows as one block of skips.
    items.sort(key=lambda item: "[neo4j" in item.nodeid)
