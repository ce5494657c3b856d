"""Query plans of the Neo4j store's statements, as a server makes them.

:class:`PlanningDriver` wraps a driver: every statement a store runs through it
is first sent again with ``EXPLAIN`` (or ``PROFILE``) in front, and the plan
the server answers is kept with the statement's name. The store cannot tell:
it runs as usual. Used by ``test_plans.py`` (a server only) and checked
against the stand-in driver by the unit tests.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocampus.store.neo4j import Neo4jStore
from hippocampus.store.neo4j.statements import statement


def _statement_names() -> dict[str, str]:
    root = Path(str(importlib.resources.files("hippocampus.cypher")))
    return {
        statement(f"{path.parent.name}/{path.stem}"): f"{path.parent.name}/{path.stem}"
        for path in root.rglob("*.cypher")
        if path.parent.name != "browser"
    }


_NAMES = _statement_names()
SCANS = ("NodeByLabelScan", "AllNodesScan")
"""Operators that read every node of a label (or of the database)."""


def operators(plan: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every operator of a plan tree, root first."""
    yield plan
    for child in plan.get("children") or ():
        yield from operators(child)


def operator_name(node: Mapping[str, Any]) -> str:
    """``NodeIndexSeek`` of ``NodeIndexSeek@neo4j``."""
    return str(node.get("operatorType", "")).split("@", 1)[0]


def db_hits(plan: Mapping[str, Any]) -> int:
    """The database hits of a profiled plan, summed over its operators."""
    total = 0
    for node in operators(plan):
        hits = node.get("dbHits")
        if hits is None:
            hits = (node.get("args") or {}).get("DbHits", 0)
        total += int(hits)
    return total


@dataclass
class Planned:
    """A statement run through a :class:`PlanningDriver`: its name, parameters
    and the plan (``EXPLAIN``) or profile (``PROFILE``) the server gave."""

    name: str
    params: dict[str, Any]
    plan: Mapping[str, Any]


@dataclass
class PlanningDriver:
    """A driver that has the server plan every statement before running it.

    Args:
        driver: the driver to wrap (not closed by this one).
        mode: ``EXPLAIN`` (plan only, nothing runs twice) or ``PROFILE`` (the
            statement runs twice; for reads).
        only: plan only the statements of these names (all when empty).
    """

    driver: Any
    mode: str = "EXPLAIN"
    only: frozenset[str] = frozenset()
    planned: list[Planned] = field(default_factory=list)

    def session(self, **config: Any) -> _Session:
        return _Session(self.driver.session(**config), self)

    def verify_connectivity(self) -> None:
        self.driver.verify_connectivity()

    def close(self) -> None:
        """The wrapped driver belongs to its owner: nothing to close here."""

    def plans_of(self, name: str) -> list[Mapping[str, Any]]:
        return [p.plan for p in self.planned if p.name == name]


class _Session:
    def __init__(self, session: Any, owner: PlanningDriver) -> None:
        self._session = session
        self._owner = owner

    def __enter__(self) -> _Session:
        self._session.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._session.__exit__(*exc)

    def execute_read(self, work: Callable[..., Any]) -> Any:
        return self._session.execute_read(lambda tx: work(_Transaction(tx, self._owner)))

    def execute_write(self, work: Callable[..., Any]) -> Any:
        return self._session.execute_write(lambda tx: work(_Transaction(tx, self._owner)))


class _Transaction:
    def __init__(self, tx: Any, owner: PlanningDriver) -> None:
        self._tx = tx
        self._owner = owner

    def run(self, query: str, parameters: dict[str, Any] | None = None) -> Any:
        name = _NAMES.get(query, "?")
        owner = self._owner
        if not owner.only or name in owner.only:
            summary = self._tx.run(f"{owner.mode} {query}", parameters).consume()
            plan = summary.profile if owner.mode == "PROFILE" else summary.plan
            owner.planned.append(Planned(name, dict(parameters or {}), plan or {}))
        return self._tx.run(query, parameters)


def planning(
    store: Neo4jStore, mode: str = "EXPLAIN", only: frozenset[str] = frozenset()
) -> tuple[PlanningDriver, Neo4jStore]:
    """A store on ``store``'s own driver, wrapped in a :class:`PlanningDriver`; the
    planning store never closes that driver."""
    driver = PlanningDriver(store._driver, mode=mode, only=only)
    planned = Neo4jStore(
        driver,  # type: ignore[arg-type]
        database=store._database,
        dimensions=store.dimensions,
    )
    return driver, planned


def forget_plans(store: Neo4jStore) -> None:
    """Resample the indexes and drop the server's cached plans, so the next
    statements are planned for the data as it is now. A plan cached by an earlier
    test on a tiny collection may sort a hub's edges rather than read them in
    order, and Neo4j replans it only once its statistics have moved and a replan
    interval has passed; cleared caches alone replan on statistics that may not
    yet count what the test just wrote (a full run once planned the walked hub's
    read at 8,462 db hits that way, against 434)."""
    store._driver.execute_query("CALL db.prepareForReplanning()", database_=store._database)
