"""bench/load.py holds a run to its targets: the most clients against 1 client."""

from __future__ import annotations

from typing import Any

from bench.load import targets


def level(clients: int, rps: float, **routes: tuple[float, float]) -> dict[str, Any]:
    """A level's result; ``routes`` maps a route to its (p50, p95) ms."""
    table: dict[str, Any] = {"all": {"rps": rps, "p50_ms": 0.0, "p95_ms": 0.0}}
    for route, (p50, p95) in routes.items():
        table[route] = {"rps": 1.0, "p50_ms": p50, "p95_ms": p95}
    return {"clients": clients, "seconds": 15.0, "routes": table}


def test_a_run_within_every_target_meets_them_all() -> None:
    checks = targets(
        [
            level(1, 90.0, message=(23.0, 27.0), engage=(9.0, 11.0)),
            level(4, 85.0, message=(40.0, 90.0), engage=(20.0, 40.0)),
            level(16, 91.0, message=(45.0, 229.0), engage=(25.0, 89.0)),
        ]
    )
    assert [c["met"] for c in checks] == [True, True, True]
    assert [c["limit"] for c in checks] == [90.0, 230.0, 90.0]


def test_each_target_missed_is_named() -> None:
    checks = targets(
        [
            level(1, 90.0, message=(23.0, 27.0), engage=(9.0, 11.0)),
            level(16, 89.9, message=(45.0, 231.0), engage=(25.0, 80.0)),
        ]
    )
    missed = [c["what"] for c in checks if not c["met"]]
    assert missed == [
        "req/s at 16 clients >= at 1",
        "message p95 at 16 clients <= 10x its 1-client p50",
    ]


def test_without_a_1_client_level_there_is_nothing_to_hold_a_run_to() -> None:
    assert targets([level(4, 80.0), level(16, 90.0)]) == []
    assert targets([level(1, 80.0)]) == []
