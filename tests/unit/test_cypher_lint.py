"""The Cypher lint is wired: it passes the project's statements and fails misspelled
labels, relationship types, properties and procedures (``make cypher-lint`` runs it
in ``make test``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = ROOT / "tools" / "cypher-lint" / "lint.py"
MODULES = ROOT / "tools" / "cypher-lint" / "node_modules" / "@neo4j-cypher" / "language-support"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not MODULES.is_dir(),
    reason="the Cypher lint needs node and `make cypher-lint` (npm ci) to have run",
)


def lint(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(LINT), *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_every_statement_and_browser_query_of_the_project_passes() -> None:
    done = lint(ROOT / "cypher")
    assert done.returncode == 0, done.stdout + done.stderr
    assert " 0 problems" in done.stdout


MISTAKES = {
    "label": ("MATCH (m:Memroy {collection: $collection}) RETURN m.id", "Label Memroy"),
    "procedure": (
        "CALL db.index.vector.queryNode($index, 5, $vector) YIELD node RETURN node",
        "Procedure db.index.vector.queryNode",
    ),
    "relationship_type": ("MATCH (m:Memory)-[r:ASSOCIATE]-(o:Memory) RETURN r", "ASSOCIATE"),
    "property": ("MATCH (m:Memory {collection: $collection}) RETURN m.confidance", "confidance"),
    "direction": ("MATCH (c:Concept)-[:ABOUT]->(m:Memory) RETURN m.id", "ABOUT"),
    "plugin_function": ("RETURN apoc.coll.sum([1, 2]) AS total", "apoc.coll.sum"),
    "syntax": ("MATCH (m:Memory) RETRUN m", "Invalid input"),
    "semantics": ("MATCH (m:Memory) RETURN n.id", "Variable `n` not defined"),
}


@pytest.fixture(scope="module")
def mistakes_linted(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """Every mistake in a file of its own, linted in one run (node starts once)."""
    folder = tmp_path_factory.mktemp("mistakes")
    for name, (text, _) in MISTAKES.items():
        (folder / f"{name}.cypher").write_text(text + "\n", encoding="utf-8")
    (folder / "clean.cypher").write_text(
        "MATCH (m:Memory {collection: $collection, id: $id})-[r:ABOUT]->(c:Concept)\n"
        "RETURN m.content, r.weight, c.name\n",
        encoding="utf-8",
    )
    return lint(folder)


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_a_mistake_fails_the_lint(
    mistakes_linted: subprocess.CompletedProcess[str], name: str
) -> None:
    assert mistakes_linted.returncode == 1, mistakes_linted.stdout + mistakes_linted.stderr
    lines = [line for line in mistakes_linted.stdout.splitlines() if f"{name}.cypher:1:" in line]
    assert lines, mistakes_linted.stdout
    assert any(MISTAKES[name][1] in line for line in lines), lines


def test_undefined_parameters_are_not_reported(
    mistakes_linted: subprocess.CompletedProcess[str],
) -> None:
    assert "clean.cypher" not in mistakes_linted.stdout
