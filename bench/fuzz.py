"""Schema fuzzing at length: thousands of requests drawn from the API's OpenAPI schema.

    .venv/bin/python bench/fuzz.py [--cases 5000] [--seed 1] [--json]

The requests, the app and the checks are those of ``tests/fuzz`` (see
``tests/fuzz/harness.py``): the real app over a fresh embedded store, the hashing
embedder and spaCy extraction, two populated tenants; valid requests and requests
with one fault each. Prints the cases per route by status class, the cases per
fault, and every broken rule with one request that broke it. With ``--json``,
one object: ``{"cases", "server_errors", "problems", "seconds"}``. Exits 1 when
any request got a 5xx or broke another rule.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from hippocampus.extract import SpacyConceptExtractor
from tests.fuzz.harness import VARIANTS, FuzzTarget, Request, load_operations, requests

_CLASSES = ("2xx", "3xx", "4xx", "5xx", "unsent")


def _status_class(status: int) -> str:
    return "unsent" if status == 0 else f"{status // 100}xx"


def run(cases: int, seed_value: int) -> dict[str, Any]:
    by_route: dict[str, Counter[str]] = defaultdict(Counter)
    by_variant: dict[str, Counter[str]] = defaultdict(Counter)
    problems: dict[str, list[str]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="hippo-fuzz-") as tmp:
        target = FuzzTarget(Path(tmp) / "data", SpacyConceptExtractor())
        try:
            operations = load_operations(target.app)
            strategy = st.sampled_from(operations).flatmap(lambda op: requests(op, target.fixtures))

            @seed(seed_value)
            @settings(
                max_examples=cases,
                database=None,
                deadline=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(strategy)
            def fuzz(request: Request) -> None:
                outcome = target.send(request)
                status = _status_class(outcome.status)
                by_route[request.route][status] += 1
                by_variant[request.variant][status] += 1
                for problem in outcome.problems:
                    # One example per kind of problem: its first line, numbers kept.
                    problems[problem.splitlines()[0][:160]].append(request.describe())

            start = time.perf_counter()
            fuzz()
            seconds = time.perf_counter() - start
        finally:
            target.close()
    server_errors = sum(c["5xx"] for c in by_route.values())
    return {
        "cases": sum(sum(c.values()) for c in by_route.values()),
        "server_errors": server_errors,
        "problems": sum(len(v) for v in problems.values()),
        "seconds": round(seconds, 1),
        "by_route": {route: dict(c) for route, c in sorted(by_route.items())},
        "by_variant": {v: dict(by_variant[v]) for v in VARIANTS if v in by_variant},
        "examples": {problem: found[0] for problem, found in problems.items()},
    }


def _table(title: str, rows: dict[str, dict[str, int]]) -> None:
    width = max(len(name) for name in rows)
    print(f"\n{title:<{width}}  {'cases':>6}" + "".join(f"  {c:>6}" for c in _CLASSES))
    totals: Counter[str] = Counter()
    for name, counts in rows.items():
        totals.update(counts)
        cells = "".join(f"  {counts.get(c, 0):>6}" for c in _CLASSES)
        print(f"{name:<{width}}  {sum(counts.values()):>6}{cells}")
    cells = "".join(f"  {totals.get(c, 0):>6}" for c in _CLASSES)
    print(f"{'total':<{width}}  {sum(totals.values()):>6}{cells}")


def print_report(result: dict[str, Any]) -> None:
    print(
        f"schema fuzzing: {result['cases']} cases in {result['seconds']} s, "
        f"{result['server_errors']} server errors, {result['problems']} broken rules"
    )
    _table("route", result["by_route"])
    _table("fault", result["by_variant"])
    if result["examples"]:
        print("\nbroken rules (one request each):")
        for problem, example in result["examples"].items():
            print(f"- {problem}\n    {example}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=5000, help="requests (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="Hypothesis seed (default %(default)s)")
    parser.add_argument(
        "--json", action="store_true", help='print {"cases", "server_errors", ...} only'
    )
    args = parser.parse_args()
    result = run(args.cases, args.seed)
    if args.json:
        keys = ("cases", "server_errors", "problems", "seconds")
        print(json.dumps({k: result[k] for k in keys}))
    else:
        print_report(result)
    sys.exit(1 if result["server_errors"] or result["problems"] else 0)


if __name__ == "__main__":
    main()
