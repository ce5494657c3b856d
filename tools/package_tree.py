"""The installed package's layout, built from the checkout as a tree of links.

The project keeps its folders where they are (``engine/``, ``api/``,
``cypher/``) and installs them under one name, ``hippocampus``, by the
package-dir mapping in ``pyproject.toml``. Python follows that mapping at run
time; static tools (mypy, import-linter) read folders, not mappings. For them
this script lays out ``<out>/hippocampus/...`` as the wheel would, with one
link per source file, so they see the names the code imports.

    python tools/package_tree.py build/package
"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIPPED = {"__pycache__", "node_modules"}


def package_dirs() -> dict[str, Path]:
    """Each mapped package name and its folder, from pyproject.toml."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    return {name: ROOT / folder for name, folder in mapping.items()}


def build(out: Path) -> int:
    """Lay the tree out afresh under ``out``; returns how many files it links."""
    if out.exists():
        shutil.rmtree(out)
    linked = 0
    for name, folder in package_dirs().items():
        target = out.joinpath(*name.split("."))
        for source in sorted(folder.rglob("*.py")) + sorted(folder.rglob("py.typed")):
            relative = source.relative_to(folder)
            if SKIPPED.intersection(relative.parts):
                continue
            link = target / relative
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(source)
            linked += 1
    return linked


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: package_tree.py OUT", file=sys.stderr)
        return 2
    build(Path(argv[0]).resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
