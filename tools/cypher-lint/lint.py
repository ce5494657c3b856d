"""Lint Cypher files with Neo4j's language support (``lint.mjs`` beside this file).

Usage: ``python tools/cypher-lint/lint.py [PATH ...]`` — files, or folders searched
for ``*.cypher`` (default: the repository's ``cypher/``).

The database schema the statements are checked against is derived from the
Python models (:func:`hippocampus.store.neo4j.graph_model.lint_schema`). Every
diagnostic fails the lint, warnings included: the language support reports an
unknown label, relationship type or property key as a warning, and a misspelled
label must fail the build. Undefined ``$parameters`` are not reported (the
statements get their values at run time).

Exit codes: 0 clean, 1 diagnostics, 2 the lint could not run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from hippocampus.store.neo4j.graph_model import lint_schema

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RUNNER = HERE / "lint.mjs"
MODULES = HERE / "node_modules" / "@neo4j-cypher" / "language-support"


def cypher_files(paths: list[Path]) -> list[Path]:
    """The ``.cypher`` files named or found under ``paths``, sorted."""
    found: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found.update(path.rglob("*.cypher"))
        elif path.is_file():
            found.add(path)
        else:
            raise FileNotFoundError(path)
    return sorted(found)


def lint(files: list[Path]) -> dict[Path, list[dict[str, object]]]:
    """Diagnostics per file (only files that have some).

    Raises:
        RuntimeError: node or the language support is missing, or the runner failed.
    """
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not on PATH; the Cypher lint needs Node.js 18 or later")
    if not MODULES.is_dir():
        raise RuntimeError(
            f"{MODULES.relative_to(ROOT)} is missing: run `make cypher-lint` "
            "(it installs the pinned language support with npm ci)"
        )
    request = {
        "schema": lint_schema(),
        "queries": [{"name": str(f), "text": f.read_text(encoding="utf-8")} for f in files],
    }
    done = subprocess.run(
        [node, str(RUNNER)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=HERE,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the lint runner failed:\n{done.stderr.strip()}")
    results = json.loads(done.stdout)["results"]
    return {Path(r["name"]): r["diagnostics"] for r in results if r["diagnostics"]}


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or [ROOT / "cypher"]
    try:
        files = cypher_files(paths)
    except FileNotFoundError as e:
        print(f"cypher-lint: no such file or folder: {e}", file=sys.stderr)
        return 2
    if not files:
        print("cypher-lint: no .cypher files found", file=sys.stderr)
        return 2
    try:
        found = lint(files)
    except RuntimeError as e:
        print(f"cypher-lint: {e}", file=sys.stderr)
        return 2
    for path, diagnostics in found.items():
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        for d in diagnostics:
            print(f"{shown}:{d['line']}:{d['column']}: {d['severity']}: {d['message']}")
    count = sum(len(d) for d in found.values())
    print(f"cypher-lint: {len(files)} files, {count} problems")
    return 1 if count else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
