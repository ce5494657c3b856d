"""One installed name: the wheel holds ``hippocampus`` and nothing else at its top.

The folders stay where the project keeps them (``engine/``, ``api/``,
``cypher/``); ``pyproject.toml`` maps them under ``hippocampus``. These tests
build the wheel as ``pip install .`` would, and read every source file's
imports, so a new folder left out of the mapping, or an import of the old
top-level names, fails here rather than on a user's machine.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OLD_NAMES = {"engine", "api", "cypher"}
SOURCES = ("engine", "api", "bench", "tests", "tools")


def _setuptools() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools: dict[str, object] = config["tool"]["setuptools"]
    return setuptools


def _folders_as_packages() -> set[str]:
    """Every folder under a mapped root that holds a file, named as installed."""
    mapping = _setuptools()["package-dir"]
    assert isinstance(mapping, dict)
    names: set[str] = set()
    for name, folder in mapping.items():
        base = ROOT / folder
        tracked = subprocess.run(
            ["git", "ls-files", folder], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
        for path in tracked:
            parent = (ROOT / path).parent.relative_to(base)
            names.add(".".join([name, *parent.parts]) if parent.parts else name)
        assert base.is_dir()
    return names


def test_the_package_list_names_every_folder_under_the_one_name() -> None:
    setuptools = _setuptools()
    packages = setuptools["packages"]
    assert isinstance(packages, list)
    assert set(packages) == _folders_as_packages()
    assert all(p == "hippocampus" or p.startswith("hippocampus.") for p in packages)


def _source_copy(into: Path) -> Path:
    """The files git knows of (tracked, or new and not ignored) copied into
    ``into``: a wheel built there holds what a clean clone's would, not what an
    older build left in the checkout's ``build/`` (a deleted file included)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


@pytest.mark.slow
def test_the_wheel_installs_one_top_level_name_with_its_data(tmp_path: Path) -> None:
    source = _source_copy(tmp_path / "source")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--quiet", "--wheel-dir", str(tmp_path), str(source)],
        check=True, capture_output=True,
    )
    (wheel,) = tmp_path.glob("hippocampus-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"hippocampus"}
    assert "hippocampus/store/embedded/schema.sql" in names
    assert "hippocampus/cypher/recall/search_vectors.cypher" in names
    assert "hippocampus/cypher/browser/guide.html" in names
    assert "hippocampus/api/explore/index.html" in names
    statements = [n for n in names if n.endswith(".cypher")]
    tracked = [p for p in (ROOT / "cypher").rglob("*.cypher")]
    assert len(statements) == len(tracked)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "hippo = hippocampus.api.cli:main" in text


def _top_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_source_imports_the_old_top_level_names() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for folder in SOURCES
        for path in sorted((ROOT / folder).rglob("*.py"))
        if "node_modules" not in path.parts and _top_level_imports(path) & OLD_NAMES
    ]
    assert offenders == []
