"""The Cypher the Neo4j store runs: one statement per file under ``cypher/``.

``statement("memory/add_memories")`` is the text of
``cypher/memory/add_memories.cypher``, read from the installed package data once.
The files are part of the package, never built from input: every value goes in
as a ``$parameter``.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from typing import LiteralString

_NAME = re.compile(r"^[a-z]+/[a-z_]+$")


@functools.cache
def statement(name: str) -> LiteralString:
    """The text of ``cypher/<name>.cypher``.

    Raises:
        ValueError: ``name`` is not ``area/verb_noun``.
        FileNotFoundError: no such statement.
    """
    if not _NAME.match(name):
        raise ValueError(f"{name!r} is not a statement name (area/verb_noun)")
    area, verb = name.split("/")
    path = importlib.resources.files("hippocampus.cypher").joinpath(area, f"{verb}.cypher")
    # The driver asks for a LiteralString so that no input is ever formatted into
    # a query; a package file is exactly as fixed as a literal (and mypy, which
    # reads LiteralString as str, needs no cast to accept it).
    text: LiteralString = path.read_text(encoding="utf-8")
    return text
