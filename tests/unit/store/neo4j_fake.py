"""A stand-in for the Neo4j driver, for what the store does around its Cypher:
transactions, error mapping, schema setup, result conversion.

It answers each statement (recognised by its text) with rows a test scripts, and
keeps managed-transaction semantics: the statements of a transaction function are
committed together when it returns, and dropped when it raises. Like Neo4j, it
refuses a statement run without a value for every ``$parameter`` it names.
"""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocampus.store.neo4j.statements import statement

Rows = list[dict[str, Any]]
Answer = Rows | Callable[[dict[str, Any]], Rows]


def _statement_names() -> dict[str, str]:
    root = Path(str(importlib.resources.files("hippocampus.cypher")))
    names = {}
    for path in root.rglob("*.cypher"):
        name = f"{path.parent.name}/{path.stem}"
        if path.parent.name != "browser":
            names[statement(name)] = name
    return names


_NAMES = _statement_names()
_PARAMETER = re.compile(r"\$([A-Za-z_]\w*)")


def counted_vectors(model: str, n: int = 1_000) -> Rows:
    """``memory/read_counts`` rows of a collection of ``n`` active insights with
    vectors of ``model``: what lets a dense search go to the vector index."""
    return [{"key": f'["memories","insight","active","{model}"]', "n": n}]


def _parameters(text: str) -> set[str]:
    """The ``$parameters`` a statement names outside its comments."""
    code = "\n".join(line.split("//", 1)[0] for line in text.splitlines())
    return set(_PARAMETER.findall(code))


@dataclass
class FakeCounters:
    """What a statement created and deleted, as the server counts it: nothing."""

    nodes_created: int = 0
    nodes_deleted: int = 0
    relationships_created: int = 0
    relationships_deleted: int = 0


@dataclass
class FakeSummary:
    """What ``consume()`` gives: the plan (``EXPLAIN``) or profile (``PROFILE``)
    scripted for the statement, if any, and its counters."""

    plan: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None
    counters: FakeCounters = field(default_factory=FakeCounters)


class FakeResult(list[dict[str, Any]]):
    summary = FakeSummary()

    def consume(self) -> FakeSummary:
        return self.summary


@dataclass
class FakeDriver:
    """Scripted answers per statement name; ``failure`` makes every call raise it
    (``fail_on`` narrows that to one statement, and ``fail_times``, when set, to
    that many runs of it: the next ones succeed)."""

    answers: dict[str, Answer] = field(default_factory=dict)
    failure: BaseException | None = None
    fail_on: str | None = None
    fail_times: int | None = None
    plans: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Plans by statement name, answered to ``EXPLAIN``/``PROFILE`` runs (which
    are not recorded as runs)."""
    committed: list[list[tuple[str, dict[str, Any]]]] = field(default_factory=list)
    closed: int = 0
    sessions: list[dict[str, Any]] = field(default_factory=list)
    """The configuration of every session opened, in order."""

    def session(self, *, database: str, bookmark_manager: Any = None) -> FakeSession:
        self.sessions.append({"database": database, "bookmark_manager": bookmark_manager})
        if self.failure is not None and self.fail_on is None:
            raise self.failure
        return FakeSession(self)

    def verify_connectivity(self) -> None:
        if self.failure is not None:
            raise self.failure

    def close(self) -> None:
        self.closed += 1

    def ran(self) -> list[str]:
        """Names of the committed statements, in order."""
        return [name for tx in self.committed for name, _ in tx]

    def params_of(self, name: str) -> dict[str, Any]:
        for tx in self.committed:
            for ran, params in tx:
                if ran == name:
                    return params
        raise KeyError(name)


class FakeSession:
    def __init__(self, driver: FakeDriver) -> None:
        self._driver = driver

    def __enter__(self) -> FakeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def execute_read(self, work: Callable[..., Any]) -> Any:
        return self._transaction(work)

    def execute_write(self, work: Callable[..., Any]) -> Any:
        return self._transaction(work)

    def _transaction(self, work: Callable[..., Any]) -> Any:
        tx = FakeTransaction(self._driver)
        result = work(tx)  # raises: nothing is committed
        self._driver.committed.append(tx.pending)
        return result


class FakeTransaction:
    def __init__(self, driver: FakeDriver) -> None:
        self._driver = driver
        self.pending: list[tuple[str, dict[str, Any]]] = []

    def run(self, query: str, parameters: dict[str, Any] | None = None) -> FakeResult:
        for mode in ("EXPLAIN ", "PROFILE "):
            if query.startswith(mode):
                plan = self._driver.plans.get(_NAMES[query[len(mode) :]], {})
                planned = FakeResult()
                planned.summary = (
                    FakeSummary(plan=plan) if mode == "EXPLAIN " else FakeSummary(profile=plan)
                )
                return planned
        name = _NAMES[query]
        params = dict(parameters or {})
        missing = _parameters(query) - set(params)
        assert not missing, f"{name} run without ${', $'.join(sorted(missing))}"
        driver = self._driver
        if driver.failure is not None and driver.fail_on == name:
            if driver.fail_times is None:
                raise driver.failure
            if driver.fail_times > 0:
                driver.fail_times -= 1
                raise driver.failure
        self.pending.append((name, params))
        answer = self._driver.answers.get(name, [])
        rows = answer(params) if callable(answer) else answer
        return FakeResult(rows)
