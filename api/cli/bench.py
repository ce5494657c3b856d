"""``hippo bench``: the benchmarks of a source checkout (``bench/NAME.py``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from hippocampus.api.cli.common import UsageError


def register(sub: Any) -> None:
    """The command, added to the ``hippo`` parser (without the common flags)."""
    p = sub.add_parser(
        "bench",
        help="run a benchmark (bench/NAME.py) of a source checkout; none: list them",
        description="Run one of the benchmarks in bench/ (each prints a table), or list them.",
    )
    p.add_argument("name", metavar="NAME", nargs="?", help="the benchmark; none: list them")
    p.add_argument("options", metavar="OPTION", nargs=argparse.REMAINDER, help="passed on to it")
    p.set_defaults(run=bench)


_BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


def _benches() -> dict[str, str]:
    """The runnable benchmarks of the source checkout: name -> first docstring line."""
    found: dict[str, str] = {}
    if not _BENCH_DIR.is_dir():
        return found
    for path in sorted(_BENCH_DIR.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if 'if __name__ == "__main__"' not in text:
            continue
        doc = text.split('"""', 2)[1] if text.startswith('"""') else ""
        found[path.stem] = " ".join(doc.strip().splitlines()[0].split()) if doc.strip() else ""
    return found


def bench(args: argparse.Namespace) -> int:
    import subprocess

    benches = _benches()
    if not benches:
        print(
            f"error: no benchmarks here: they are in a source checkout ({_BENCH_DIR})",
            file=sys.stderr,
        )
        return 1
    if args.name is None:
        width = max(len(name) for name in benches)
        for name, summary in benches.items():
            print(f"{name:<{width}}  {summary}")
        print("\nrun one: hippo bench NAME [its options]; hippo bench NAME --help for them")
        return 0
    if args.name not in benches:
        raise UsageError(f"no benchmark {args.name!r}; one of: {', '.join(benches)}")
    # Each benchmark is its own program (bench/NAME.py): run with this interpreter
    # from the checkout, its options passed on untouched.
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{args.name}", *args.options],
        cwd=_BENCH_DIR.parent,
        check=False,
    )
    return done.returncode
